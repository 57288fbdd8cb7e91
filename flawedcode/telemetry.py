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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from flawedcode.tokens import TokenCounter


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


@dataclass
class SessionLog:
    """Everything measured in one conversation; charts and the benchmark read this."""

    agent_name: str = "agent"
    budget_tokens: int | None = None
    trigger_tokens: int | None = None
    price_input_per_million: float = 0.0
    price_output_per_million: float = 0.0
    calls: list[CallRecord] = field(default_factory=list)
    events: list[ContextEvent] = field(default_factory=list)
    turn: int = 0
    wrapper_seconds: float = 0.0
    summary_model_seconds: float = 0.0
    agent_call_count: int = 0
    _pending_events: list[str] = field(default_factory=list, repr=False)
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
        )
        self.calls.append(record)
        if purpose == "summary":
            self.summary_model_seconds += seconds
        return record

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
        output_tokens = sum(call.output_tokens for call in self.calls)
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
            "estimated_cost_usd": round(
                input_tokens * self.price_input_per_million / 1e6 + output_tokens * self.price_output_per_million / 1e6, 6
            ),
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


def _last_ai_message(response: Any) -> AIMessage | None:
    if isinstance(response, AIMessage):
        return response
    messages = getattr(response, "result", None) or getattr(getattr(response, "model_response", None), "result", None) or []
    return next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
