"""Telemetry: a record of every model call and every context event in a session.

Each model call becomes a ``CallRecord``: when it happened, the tokens the
model received (counted exactly with tiktoken, and as the provider reported
them when it did), the tokens it produced, the budget and trigger lines at the
time, whether it went over the budget, which part of the agent made it
(``purpose``) and the context events that happened just before it. Each context
action (offload, summarize, archive, recovery read, repair, overflow retry, and
their failures) becomes a ``ContextEvent`` with tokens before and after.

Calls are recorded at the model boundary, so that none escapes:

- ``ModelCallRecorder`` is a LangChain callback handler. An agent attaches it to
  its chat model (``model.callbacks``, which still fires through ``bind_tools``)
  and passes it in every run's config (so any model a library builds inside the
  run inherits it). It sees every request exactly as the model receives it:
  the messages (system prompt included) and the bound tool schemas.
- ``purpose`` says who made the call, read in this order:

  1. ``summary``: the call carries the tag ``SUMMARY_TAG`` (v2's summarizer), or
     the metadata LangChain's summarization puts on its summary calls,
     ``lc_source: summarization`` (``SummarizationMiddleware``, Deep Agents);
  2. ``agent``: the call happens inside ``TelemetryMiddleware``, innermost
     around the agent's own model call;
  3. ``internal``: anything else a library does with a model (sub-agents, helpers).

- ``TelemetryMiddleware`` marks the agent's own call; it records the call itself
  only when no recorder saw it (a model built without one), so nothing is
  counted twice. A caller that records a call the recorder already saw (v2's
  summarizer does, for models without a recorder) gets the existing record back.

The charts and the benchmark read ``SessionLog`` and nothing else.

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

The offline teaching model is not checked: it forgets the oldest messages by
design (that is lesson 1's context rot, which the lab marks as "goal lost") and
reports exactly what it saw.

The cost (``totals()["estimated_cost_usd"]``) uses the provider's reported
tokens where it gave them and the exact counts otherwise; it is ``None`` when
the model's prices are unknown (never guessed). Cached input is priced at the
model's cached price (``flawedcode.prompt_cache``): the provider's
``cached_tokens`` when it reported them; none when it reported usage without
them (it billed what it reported); the cache model's when it reported no usage
(the offline model, a cost preview). A usage whose
every figure is 0 is taken as no report (unknown), never as a free call.

Prompt caching (``flawedcode.prompt_cache``): the recorder captures each
request as blocks (the fixed system+tools block, then one digest and exact
count per message: ``CallRecord.prompt_blocks``); ``SessionLog`` feeds them to
a ``SessionCache`` as each call is recorded, so every ``CallRecord`` carries its
``cached_tokens``, ``cache_write_tokens`` and ``oracle_tokens`` (the physical
limit), and ``totals()`` their sums (``cache_totals``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal
from uuid import UUID

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import LLMResult

from flawedcode.notices import warn_once
from flawedcode.prompt_cache import Block, BlockMaker, CallCache, SessionCache, cache_totals, call_cost_usd
from flawedcode.tokens import TokenCounter

CallPurpose = Literal["agent", "summary", "internal"]
PURPOSES: tuple[CallPurpose, ...] = ("agent", "summary", "internal")
SUMMARY_TAG = "flawedcode:summary"
"""Tag a summary call with this (``model.invoke(..., config={"tags": [SUMMARY_TAG]})``) to record it as ``summary``."""
LANGCHAIN_SUMMARY_SOURCE = ("lc_source", "summarization")
"""The metadata LangChain's (and Deep Agents') summarization puts on its summary calls."""
MAX_UNCLAIMED = 256
"""How many boundary records stay claimable by a later ``record_call`` of the same reply."""
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
SELF_DECLARED_TRUNCATION = "flawedcode"
"""The offline teaching model's provider: it forgets by design (lesson 1) and says so itself, so it is not checked."""


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
    purpose: str = "agent"  # "agent": the agent's own call; "summary": a summarizer's; "internal": anything else
    events: list[str] = field(default_factory=list)
    fixed_tokens: int | None = None  # of input_tokens: the system prompt and tool schemas (None: not known)
    over_budget: bool = False  # input_tokens > budget_tokens
    error: str | None = None  # the call failed (the request was still sent); one line
    reasoning_tokens: int = 0
    """Hidden reasoning tokens the provider reported (billed as output; not in ``output_tokens``, the visible count)."""
    reported_ratio: float | None = None
    """Reported input tokens / counted input tokens, when the provider reported them."""
    truncated: bool = False
    """The server reported far fewer input tokens than were sent: it dropped part of the prompt."""
    reported_cached_tokens: int | None = None
    """Input tokens the provider said it read from its prompt cache (None: it did not say)."""
    prompt_blocks: list[Block] | None = None
    """The request as a prompt cache sees it (``prompt_cache.request_blocks``); None when not captured."""
    shared_messages: int = 0
    """Leading blocks an earlier request of the session began with (``prompt_cache``)."""
    cached_tokens: int = 0
    """Of input_tokens: what a provider's prompt cache would serve (the model's figure)."""
    cache_write_tokens: int = 0
    """Of input_tokens: what this call writes to the cache."""
    oracle_tokens: int = 0
    """The physical limit of this call: fixed + goal + current turn (0 for summary and internal calls)."""

    def cache(self) -> CallCache:
        """This call's prompt-cache figures."""
        return CallCache(self.input_tokens, self.shared_messages, 0, self.cached_tokens, self.cache_write_tokens,
                         self.oracle_tokens, self.reported_cached_tokens, self.prompt_blocks is not None)


@dataclass
class SessionLog:
    """Everything measured in one conversation; charts and the benchmark read this."""

    agent_name: str = "agent"
    budget_tokens: int | None = None
    trigger_tokens: int | None = None
    price_input_per_million: float | None = 0.0
    price_output_per_million: float | None = 0.0
    price_cached_input_per_million: float | None = None
    """US dollars per million input tokens read from the prompt cache (None: the input price)."""
    price_cache_write_per_million: float | None = None
    """US dollars per million input tokens written to the cache (None: writes cost the input price)."""
    calls: list[CallRecord] = field(default_factory=list)
    events: list[ContextEvent] = field(default_factory=list)
    turn: int = 0
    wrapper_seconds: float = 0.0
    summary_model_seconds: float = 0.0
    agent_call_count: int = 0
    boundary_agent_calls: int = 0  # agent calls recorded by a ModelCallRecorder (TelemetryMiddleware reads it)
    token_calibration: float = 1.0
    """The server's steady reported/counted ratio when above 1 (the summary trigger uses it); else 1."""
    truncated_window_tokens: int | None = None
    """The most input tokens (in flawedcode's count) a truncating server took: its window, as observed."""
    _pending_events: list[str] = field(default_factory=list, repr=False)
    _ratios: list[float] = field(default_factory=list, repr=False)
    _truncating: bool = field(default=False, repr=False)
    _last_usage: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    _unclaimed: OrderedDict[int, tuple[Any, CallRecord]] = field(default_factory=OrderedDict, repr=False)
    listeners: list[Callable[[SessionLog], None]] = field(default_factory=list, repr=False)
    prompt_cache: SessionCache = field(default_factory=SessionCache, repr=False)

    # --- recording -------------------------------------------------------
    def start_turn(self) -> int:
        self.turn += 1
        return self.turn

    def end_turn(self) -> None:
        for listener in self.listeners:
            listener(self)

    def agent_calls(self) -> list[CallRecord]:
        """The agent's own calls that the model answered (a refused request is in ``calls``, with its error)."""
        return [call for call in self.calls if call.purpose == "agent" and call.error is None]

    def record_event(self, kind: str, tokens_before: int, tokens_after: int, **detail: Any) -> ContextEvent:
        event = ContextEvent(kind, self.turn, self.agent_call_count, tokens_before, tokens_after, detail)
        self.events.append(event)
        self._pending_events.append(kind)
        return event

    def record_call(self, input_tokens: int, output_tokens: int, message: AIMessage | None,
                    seconds: float, purpose: str = "agent", *, fixed_tokens: int | None = None,
                    error: str | None = None, at_boundary: bool = False,
                    prompt_blocks: list[Block] | None = None) -> CallRecord:
        """Record one model call. A call already recorded at the model boundary (same reply object) is not recorded twice."""
        if not at_boundary and message is not None:
            seen = self._unclaimed.pop(id(message), None)
            if seen is not None and seen[0] is message:
                return seen[1]
        usage = reported_usage(message)
        index, pending = -1, []
        if purpose == "agent":  # the events recorded since the last agent call happened before this one
            index, pending, self._pending_events = self.agent_call_count, self._pending_events, []
            self.agent_call_count += 1
        record = CallRecord(
            index=index, turn=self.turn, time=time.time(), seconds=seconds,
            input_tokens=input_tokens, output_tokens=output_tokens,
            reported_input_tokens=usage.get("input_tokens"), reported_output_tokens=usage.get("output_tokens"),
            budget_tokens=self.budget_tokens, trigger_tokens=self.trigger_tokens,
            purpose=purpose, events=pending, fixed_tokens=fixed_tokens,
            over_budget=bool(self.budget_tokens and input_tokens > self.budget_tokens), error=error,
            reasoning_tokens=int((usage.get("output_token_details") or {}).get("reasoning") or 0),
            reported_cached_tokens=_reported_cache_read(usage), prompt_blocks=prompt_blocks,
        )
        cache = self.prompt_cache.observe(prompt_blocks, input_tokens, purpose=purpose, turn=self.turn,
                                          failed=error is not None, reported_cached_tokens=record.reported_cached_tokens)
        record.shared_messages, record.cached_tokens = cache.shared_messages, cache.cached_tokens
        record.cache_write_tokens, record.oracle_tokens = cache.write_tokens, cache.oracle_tokens
        if error is None and _provider_of(message) != SELF_DECLARED_TRUNCATION:
            self.compare_reported_usage(record, _model_name_of(message))
        self.calls.append(record)
        if purpose != "agent":  # model time spent inside a wrapper is not the wrapper's own overhead
            self.summary_model_seconds += seconds
        if at_boundary:
            self.boundary_agent_calls += purpose == "agent"
            if message is not None:
                self._unclaimed[id(message)] = (message, record)
                while len(self._unclaimed) > MAX_UNCLAIMED:
                    self._unclaimed.popitem(last=False)
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
        previous = self._last_usage.get(record.purpose)  # compare like with like: agent with agent calls
        self._last_usage[record.purpose] = (counted, reported)
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
        total = 0.0
        for call in self.calls:
            if call.error is not None:  # a refused request is not billed
                continue
            billed_in = call.input_tokens if call.reported_input_tokens is None else call.reported_input_tokens
            billed_out = (call.output_tokens + call.reasoning_tokens if call.reported_output_tokens is None
                          else call.reported_output_tokens)
            cache = replace(call.cache(), input_tokens=billed_in)
            if call.reported_input_tokens is not None and call.reported_cached_tokens is None:
                cache = CallCache(billed_in)  # the provider billed what it reported, and reported no cache read
            total += call_cost_usd(cache, billed_out, self.price_input_per_million, self.price_output_per_million,
                                   self.price_cached_input_per_million, self.price_cache_write_per_million)
        return round(total, 6)

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
        """Session totals over every call (agent, summary and internal): tokens, peak, calls over budget, cost."""
        input_tokens = sum(call.input_tokens for call in self.calls)
        output_tokens = sum(call.output_tokens + call.reasoning_tokens for call in self.calls)  # reasoning is output
        by_purpose = {purpose: [call for call in self.calls if call.purpose == purpose] for purpose in PURPOSES}
        return {
            "model_calls": len(self.calls),
            "agent_calls": len(by_purpose["agent"]),
            "summary_calls": len(by_purpose["summary"]),
            "internal_calls": len(by_purpose["internal"]),
            "failed_calls": sum(1 for call in self.calls if call.error),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "summary_input_tokens": sum(call.input_tokens for call in by_purpose["summary"]),
            "summary_output_tokens": sum(call.output_tokens for call in by_purpose["summary"]),
            "internal_input_tokens": sum(call.input_tokens for call in by_purpose["internal"]),
            "peak_context_tokens": max((call.input_tokens for call in self.calls), default=0),
            "calls_over_budget": sum(1 for call in self.calls if self.budget_tokens and call.input_tokens > self.budget_tokens),
            "offloads": self.count("offload"),
            "summaries": self.count("summarize"),
            "wrapper_seconds": round(self.wrapper_seconds, 6),
            "estimated_cost_usd": self.cost_usd(),
            "reasoning_tokens": sum(call.reasoning_tokens for call in self.calls),
            "truncated_calls": sum(1 for call in self.calls if call.truncated),
            **cache_totals(call.cache() for call in self.calls),
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


_AGENT_CALL: ContextVar[SessionLog | None] = ContextVar("flawedcode_agent_call", default=None)
"""Set by ``TelemetryMiddleware`` while the agent's own model call runs (to the log it belongs to)."""
_ACTIVE_LOG: ContextVar[SessionLog | None] = ContextVar("flawedcode_active_log", default=None)
"""Set by ``ModelCallRecorder.active()`` while an agent runs a turn, so a model shared by two agents
is recorded only by the one running."""


@dataclass
class _Started:
    purpose: CallPurpose
    input_tokens: int
    fixed_tokens: int
    started: float
    prompt_blocks: list[Block] | None = None


class ModelCallRecorder(BaseCallbackHandler):
    """Records every call of the chat models it is attached to (or passed to) into one ``SessionLog``.

    ``observers`` are called with ``(purpose, messages, tools)`` as each request starts: the
    benchmark reads what the model received at a probe this way.
    """

    raise_error = False  # a bug here must never break the agent's turn

    def __init__(self, log: SessionLog, counter: TokenCounter) -> None:
        super().__init__()
        self.log = log
        self.counter = counter
        self.observers: list[Callable[[CallPurpose, list[BaseMessage], list[Any]], None]] = []
        self._started: dict[UUID, _Started] = {}
        self.blocks = BlockMaker(counter)

    # --- where it listens --------------------------------------------------------
    def attach(self, model: BaseChatModel) -> BaseChatModel:
        """Add this recorder to ``model.callbacks`` (kept alongside any callbacks already there); returns the model."""
        callbacks = model.callbacks
        if isinstance(callbacks, BaseCallbackManager):
            manager = callbacks.copy()
            manager.add_handler(self, inherit=True)
            model.callbacks = manager
        elif self not in (callbacks or []):
            model.callbacks = [*(callbacks or []), self]
        return model

    @contextmanager
    def active(self) -> Iterator[None]:
        """While this runs, a model shared with another agent is recorded by this recorder only."""
        token = _ACTIVE_LOG.set(self.log)
        try:
            yield
        finally:
            _ACTIVE_LOG.reset(token)

    def _mine(self) -> bool:
        active = _ACTIVE_LOG.get()
        return active is None or active is self.log

    # --- LangChain callbacks ---------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID,
                            tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
                            **kwargs: Any) -> None:
        if not self._mine() or run_id in self._started:
            return
        request = messages[0] if messages else []
        tools = list((kwargs.get("invocation_params") or {}).get("tools") or [])
        purpose = self.purpose_of(tags or [], metadata or {})
        system = [message for message in request if isinstance(message, SystemMessage)]
        fixed = sum(self.counter.count_message(message) for message in system) + self.counter.count_tools(tools)
        conversation = [message for message in request if not isinstance(message, SystemMessage)]
        self._started[run_id] = _Started(purpose, fixed + self.counter.count_messages(conversation), fixed,
                                         time.perf_counter(), self.blocks.request_blocks(request, tools))
        for observer in self.observers:
            observer(purpose, list(request), tools)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._started.pop(run_id, None)
        if started is None:
            return
        message = _first_message(response)
        output_tokens = self.counter.count_message(message) if message is not None else 0
        self.log.record_call(started.input_tokens, output_tokens, message, time.perf_counter() - started.started,
                             started.purpose, fixed_tokens=started.fixed_tokens, at_boundary=True,
                             prompt_blocks=started.prompt_blocks)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._started.pop(run_id, None)
        if started is None:
            return
        text = " ".join(f"{type(error).__name__}: {error}".split())
        self.log.record_call(started.input_tokens, 0, None, time.perf_counter() - started.started, started.purpose,
                             fixed_tokens=started.fixed_tokens, error=text, at_boundary=True,
                             prompt_blocks=started.prompt_blocks)

    def purpose_of(self, tags: Sequence[str], metadata: dict[str, Any]) -> CallPurpose:
        """Which part made a call (the table in the module docstring, read top to bottom)."""
        key, value = LANGCHAIN_SUMMARY_SOURCE
        if SUMMARY_TAG in tags or metadata.get(key) == value:
            return "summary"
        if _AGENT_CALL.get() is self.log:
            return "agent"
        return "internal"


def reported_usage(message: AIMessage | None) -> dict[str, Any]:
    """The provider's usage of a reply; ``{}`` when it gave none, or only zeros (unknown, never a free call)."""
    usage = getattr(message, "usage_metadata", None) or {}
    if not any(usage.get(key) for key in ("input_tokens", "output_tokens", "total_tokens")):
        return {}
    return dict(usage)


def _reported_cache_read(usage: dict[str, Any]) -> int | None:
    """LangChain's ``input_token_details.cache_read`` (OpenAI's ``prompt_tokens_details.cached_tokens``), if given."""
    value = (usage.get("input_token_details") or {}).get("cache_read")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def _provider_of(message: AIMessage | None) -> str:
    return str((getattr(message, "response_metadata", None) or {}).get("model_provider") or "")


def _model_name_of(message: AIMessage | None) -> str:
    metadata = getattr(message, "response_metadata", None) or {}
    return str(metadata.get("model_name") or metadata.get("model") or "the model")


def _first_message(response: LLMResult) -> AIMessage | None:
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            if isinstance(message, AIMessage):
                return message
    return None


class TelemetryMiddleware(AgentMiddleware):
    """Marks the agent's own model call for the recorder. Put it last: innermost, around the model call itself.

    When no ``ModelCallRecorder`` saw the call (the model has none attached), it counts and records
    the call itself, as it sees it: system prompt, tool schemas and messages.
    """

    def __init__(self, log: SessionLog, counter: TokenCounter) -> None:
        super().__init__()
        self.log = log
        self.counter = counter
        self.blocks = BlockMaker(counter)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        recorded_before = self.log.boundary_agent_calls
        started = time.perf_counter()
        marker = _AGENT_CALL.set(self.log)
        try:
            response = handler(request)
        finally:
            _AGENT_CALL.reset(marker)
        seconds = time.perf_counter() - started
        if self.log.boundary_agent_calls == recorded_before:
            with self.log.timing_wrapper():
                input_tokens = self.counter.count_request(request.system_prompt, request.tools, request.messages)
                system = [SystemMessage(request.system_prompt)] if request.system_prompt else []
                blocks = self.blocks.request_blocks([*system, *request.messages], request.tools)
                message = _last_ai_message(response)
                output_tokens = self.counter.count_message(message) if message is not None else 0
            self.log.record_call(input_tokens, output_tokens, message, seconds, prompt_blocks=blocks)
        return response


def _last_ai_message(response: Any) -> AIMessage | None:
    if isinstance(response, AIMessage):
        return response
    messages = getattr(response, "result", None) or getattr(getattr(response, "model_response", None), "result", None) or []
    return next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
