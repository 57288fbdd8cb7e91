"""Telemetry: a record of every model call and every context event in a session.

Each model call becomes a ``CallRecord``: when it happened, the tokens the
model received (counted exactly with tiktoken, and as the provider reported
them when it did), the tokens it produced, the budget and trigger lines at the
time, and the context events that happened just before it. Each context action
(offload, summarize, archive, recovery read, repair, overflow retry, and their
failures) becomes a ``ContextEvent`` with tokens before and after.

``TelemetryMiddleware`` is the thin LangChain adapter: it sits innermost around
the model call, so it sees exactly what the model sees. The charts and the
benchmark read ``SessionLog`` and nothing else.

Reported versus counted (``record_call``). When the provider reports usage,
each call keeps its reported input tokens beside the exact count, and the
ratio of the two (``CallRecord.reported_ratio``):

- **Truncation.** A server that reports far fewer input tokens than were sent
  (below ``TRUNCATION_RATIO`` of the steady ratio), or whose count grew by less
  than half of what was added (``GROWTH_SHARE``), dropped part of the prompt
  without saying so (Ollama does, at its ``num_ctx``). The call is marked
  ``truncated``, a ``truncated`` event is recorded where it starts (the chart
  marks it), ``truncated_window_tokens`` keeps the most the server took, and
  one warning line says so (``notices.warn_once``)::

      warning: the model (llama3.1) truncated the prompt: it reported 3,895 input tokens for the 5,754 flawedcode sent ...

- **Calibration.** When the last ``CALIBRATION_CALLS`` ratios agree within
  ``STEADY_SPREAD`` (a different tokenizer, not truncation), their median
  becomes ``token_calibration`` when it is above 1 (the server counts more
  than flawedcode): the summary trigger then compares the count times this
  factor. A server that counts fewer tokens never raises the trigger.
- **Reasoning tokens** (``output_token_details.reasoning``: hidden, billed as
  output) are kept per call and count in the output totals and the cost.

The cost (``totals()["estimated_cost_usd"]``) uses the provider's reported
tokens where it gave them and the exact counts otherwise; it is ``None`` when
the model's prices are unknown (never guessed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from flawedcode.notices import warn_once
from flawedcode.tokens import TokenCounter

TRUNCATION_RATIO = 0.9
"""A call whose reported input is below this share of the steady reported/counted ratio was truncated."""
MIN_GROWTH_TOKENS = 256
GROWTH_SHARE = 0.5
"""Or: the prompt grew by at least 256 tokens and the reported count by less than half as much."""
FIRST_CALL_TRUNCATION_RATIO = 0.5
"""With no steady ratio yet, only a report below half the count is taken as truncation."""
CALIBRATION_CALLS = 3
"""How many recent untruncated calls must agree before their ratio calibrates the trigger."""
STEADY_SPREAD = 0.10
"""They agree when the largest ratio is within 10% of the smallest."""
NOTICEABLE_CALIBRATION = 0.10
"""A steady ratio more than 10% away from 1 gets one warning line."""


@dataclass
class ContextEvent:
    """One thing a context wrapper did (or failed to do)."""

    kind: str
    turn: int
    call_index: int
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)


@dataclass
class CallRecord:
    """One model call: what went in, what came out, and the lines it was measured against."""

    index: int
    turn: int
    time: float
    seconds: float
    input_tokens: int
    output_tokens: int
    reported_input_tokens: int | None
    reported_output_tokens: int | None
    budget_tokens: int | None
    trigger_tokens: int | None
    purpose: str = "agent"  # "agent" for the agent's own calls, "summary" for summarizer calls
    events: list[str] = field(default_factory=list)
    reasoning_tokens: int = 0
    """Hidden reasoning tokens the provider reported (billed as output; not in ``output_tokens``, the visible count)."""
    reported_ratio: float | None = None
    """Reported input tokens / counted input tokens, when the provider reported them."""
    truncated: bool = False
    """The server reported far fewer input tokens than were sent: it dropped part of the prompt."""


@dataclass
class SessionLog:
    """Everything measured in one conversation; charts and the benchmark read this."""

    agent_name: str = "agent"
    budget_tokens: int | None = None
    trigger_tokens: int | None = None
    price_input_per_million: float | None = 0.0
    price_output_per_million: float | None = 0.0
    calls: list[CallRecord] = field(default_factory=list)
    events: list[ContextEvent] = field(default_factory=list)
    turn: int = 0
    wrapper_seconds: float = 0.0
    summary_model_seconds: float = 0.0
    agent_call_count: int = 0
    token_calibration: float = 1.0
    """The server's steady reported/counted ratio when above 1 (the summary trigger uses it); else 1."""
    truncated_window_tokens: int | None = None
    """The most input tokens (in flawedcode's count) a truncating server took: its window, as observed."""
    _pending_events: list[str] = field(default_factory=list, repr=False)
    _ratios: list[float] = field(default_factory=list, repr=False)
    _truncating: bool = field(default=False, repr=False)
    _last_usage: tuple[int, int] | None = field(default=None, repr=False)
    listeners: list[Callable[[SessionLog], None]] = field(default_factory=list, repr=False)

    # --- recording -------------------------------------------------------
    def start_turn(self) -> int:
        self.turn += 1
        return self.turn

    def end_turn(self) -> None:
        for listener in self.listeners:
            listener(self)

    def agent_calls(self) -> list[CallRecord]:
        return [call for call in self.calls if call.purpose == "agent"]

    def record_event(self, kind: str, tokens_before: int, tokens_after: int, **detail: Any) -> ContextEvent:
        event = ContextEvent(kind, self.turn, self.agent_call_count, tokens_before, tokens_after, detail)
        self.events.append(event)
        self._pending_events.append(kind)
        return event

    def record_call(self, input_tokens: int, output_tokens: int, message: AIMessage | None,
                    seconds: float, purpose: str = "agent") -> CallRecord:
        usage = getattr(message, "usage_metadata", None) or {}
        index, pending = -1, []
        if purpose == "agent":  # the events recorded since the last agent call happened before this one
            index, pending, self._pending_events = self.agent_call_count, self._pending_events, []
            self.agent_call_count += 1
        record = CallRecord(
            index=index, turn=self.turn, time=time.time(), seconds=seconds,
            input_tokens=input_tokens, output_tokens=output_tokens,
            reported_input_tokens=usage.get("input_tokens"), reported_output_tokens=usage.get("output_tokens"),
            budget_tokens=self.budget_tokens, trigger_tokens=self.trigger_tokens,
            purpose=purpose, events=pending,
            reasoning_tokens=int((usage.get("output_token_details") or {}).get("reasoning") or 0),
        )
        self.compare_reported_usage(record, _model_name_of(message))
        self.calls.append(record)
        if purpose == "summary":
            self.summary_model_seconds += seconds
        return record

    # --- reported versus counted ------------------------------------------------
    def compare_reported_usage(self, record: CallRecord, model_name: str = "the model") -> None:
        """Set ``record``'s ratio and truncation; record a ``truncated`` event and calibrate (see the module docstring)."""
        reported, counted = record.reported_input_tokens, record.input_tokens
        if not reported or counted <= 0:
            return
        ratio = reported / counted
        record.reported_ratio = round(ratio, 4)
        steady = self.steady_ratio()
        previous, self._last_usage = self._last_usage, (counted, reported)
        truncated = ratio < TRUNCATION_RATIO * steady if steady else ratio < FIRST_CALL_TRUNCATION_RATIO
        if steady and previous and counted - previous[0] >= MIN_GROWTH_TOKENS:  # it stopped growing with the prompt
            truncated = truncated or reported - previous[1] < GROWTH_SHARE * steady * (counted - previous[0])
        if truncated:
            self._note_truncation(record, reported, counted, steady or 1.0, model_name)
            return
        self._truncating = False
        self._ratios = [*self._ratios, ratio][-CALIBRATION_CALLS:]
        self._calibrate(model_name)

    def steady_ratio(self) -> float | None:
        """The median reported/counted ratio of recent untruncated calls (None before the first)."""
        if not self._ratios:
            return None
        ordered = sorted(self._ratios)
        return ordered[len(ordered) // 2]

    def _note_truncation(self, record: CallRecord, reported: int, counted: int, steady: float, model_name: str) -> None:
        record.truncated = True
        taken = int(reported / steady)
        self.truncated_window_tokens = max(self.truncated_window_tokens or 0, taken)
        if not self._truncating:  # the chart marks where truncation starts
            event = ContextEvent("truncated", self.turn, max(record.index, 0), counted, taken,
                                 {"reported": reported, "sent": counted, "model": model_name})
            self.events.append(event)
            record.events.append(event.kind)
        self._truncating = True
        warn_once(f"truncated:{model_name}",
                  f"the model ({model_name}) truncated the prompt: it reported {reported:,} input tokens for the "
                  f"{counted:,} flawedcode sent ({self.agent_name}, call {record.index}), so it silently dropped part "
                  "of the conversation; give its real window with --window (Ollama: its num_ctx), or lower the budget.")

    def _calibrate(self, model_name: str) -> None:
        if len(self._ratios) < CALIBRATION_CALLS or max(self._ratios) > min(self._ratios) * (1 + STEADY_SPREAD):
            return
        steady = self.steady_ratio() or 1.0
        calibration = round(max(1.0, steady), 3)
        if abs(calibration - self.token_calibration) > 0.01:
            self.token_calibration = calibration
            self.record_event("calibrate", 0, 0, ratio=round(steady, 3), model=model_name)
        if abs(steady - 1.0) > NOTICEABLE_CALIBRATION:
            trigger = "the summary trigger now uses the server's count" if steady > 1 else "the budget stays in flawedcode's count"
            warn_once(f"calibrated:{model_name}",
                      f"the model server counts {steady:.2f}x the input tokens flawedcode counts (a different "
                      f"tokenizer): {trigger}.")

    def cost_usd(self) -> float | None:
        """Estimated US dollars so far: reported tokens where the provider gave them, counts otherwise; None if unpriced."""
        if self.price_input_per_million is None or self.price_output_per_million is None:
            return None
        billed_in = sum(call.input_tokens if call.reported_input_tokens is None else call.reported_input_tokens
                        for call in self.calls)
        billed_out = sum(call.output_tokens + call.reasoning_tokens if call.reported_output_tokens is None
                         else call.reported_output_tokens for call in self.calls)
        return round((billed_in * self.price_input_per_million + billed_out * self.price_output_per_million) / 1e6, 6)

    @contextmanager
    def timing_wrapper(self) -> Iterator[None]:
        """Add the time spent inside a context wrapper to the overhead, less any summarizer model call in it."""
        started, model_seconds_before = time.perf_counter(), self.summary_model_seconds
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.wrapper_seconds += elapsed - (self.summary_model_seconds - model_seconds_before)

    # --- reading ---------------------------------------------------------
    def totals(self) -> dict[str, Any]:
        """Session totals: tokens in and out (agent and summary calls), peak context, counts and cost."""
        agent_calls = self.agent_calls()
        input_tokens = sum(call.input_tokens for call in self.calls)
        output_tokens = sum(call.output_tokens + call.reasoning_tokens for call in self.calls)  # reasoning is output
        summary_calls = [call for call in self.calls if call.purpose == "summary"]
        return {
            "model_calls": len(agent_calls),
            "summary_calls": len(summary_calls),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "summary_input_tokens": sum(call.input_tokens for call in summary_calls),
            "peak_context_tokens": max((call.input_tokens for call in agent_calls), default=0),
            "calls_over_budget": sum(1 for call in agent_calls if self.budget_tokens and call.input_tokens > self.budget_tokens),
            "offloads": self.count("offload"),
            "summaries": self.count("summarize"),
            "wrapper_seconds": round(self.wrapper_seconds, 6),
            "estimated_cost_usd": self.cost_usd(),
            "reasoning_tokens": sum(call.reasoning_tokens for call in self.calls),
            "truncated_calls": sum(1 for call in self.calls if call.truncated),
        }

    def count(self, kind: str) -> int:
        return sum(1 for event in self.events if event.kind == kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent_name,
            "budget_tokens": self.budget_tokens,
            "trigger_tokens": self.trigger_tokens,
            "calls": [asdict(call) for call in self.calls],
            "events": [asdict(event) for event in self.events],
            "totals": self.totals(),
        }


class TelemetryMiddleware(AgentMiddleware):
    """Records each model call into a ``SessionLog``. Put it last: it must see what the model sees."""

    def __init__(self, log: SessionLog, counter: TokenCounter) -> None:
        super().__init__()
        self.log = log
        self.counter = counter

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        with self.log.timing_wrapper():
            input_tokens = self.counter.count_request(request.system_prompt, request.tools, request.messages)
        started = time.perf_counter()
        response = handler(request)
        seconds = time.perf_counter() - started
        message = _last_ai_message(response)
        with self.log.timing_wrapper():
            output_tokens = self.counter.count_message(message) if message is not None else 0
        self.log.record_call(input_tokens, output_tokens, message, seconds)
        return response


def _model_name_of(message: AIMessage | None) -> str:
    metadata = getattr(message, "response_metadata", None) or {}
    return str(metadata.get("model_name") or metadata.get("model") or "the model")


def _last_ai_message(response: Any) -> AIMessage | None:
    if isinstance(response, AIMessage):
        return response
    messages = getattr(response, "result", None) or getattr(getattr(response, "model_response", None), "result", None) or []
    return next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
