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

Reported versus counted (``ServerCalibration``, which the log hands each answered call). When the provider reports usage,
each call keeps its reported input tokens beside the exact count, and the
ratio of the two (``CallRecord.reported_ratio``):

- **Truncation.** A server counts with its own tokenizer (0.8-1.2x flawedcode's,
  higher or lower, and the ratio moves as the mix of prose, JSON and code
  changes), so a lower report alone is not truncation. Only the agent's own
  calls are compared, each with the one before it (no summary or compaction
  between, ``REWRITES_HISTORY``), after the server's ratio has been learned.
  A call reads as truncation (``truncation_evidence``) when the prompt grew by
  ``MIN_GROWTH_TOKENS`` or more and the server's count by less than
  ``GROWTH_SHARE`` of that, or the count fell by ``FALL_SHARE`` while the prompt
  did not shrink; with no comparable call, when the ratio is below
  ``TRUNCATION_RATIO`` of the steady one. Never when the count is at or above
  what was sent, when it is about what was added since the last call (a server
  that counts only what it had not cached, ``UNCACHED_SHARE``), or when it is
  below ``MIN_TRUNCATED_WINDOW`` (a placeholder, not a window). **A second
  reading** within ``READINGS_WINDOW`` agent calls confirms it
  (``CONFIRMING_READINGS``; right after a reading, a ratio still ``FALL_SHARE``
  below the steady one is one): Ollama, at its ``num_ctx``, keeps the count flat
  while the prompt grows. The calls are
  marked ``truncated``, a ``truncated`` event is recorded where it started (the
  chart marks it), ``truncated_window_tokens`` keeps the most the server took
  (v2 then lowers its budget to fit), and one warning line says how the
  evidence was read (``notices.warn_once``)::

      warning: the model (llama3.1) truncated the prompt: it reported 3,895 input tokens for the 5,754 flawedcode
      sent (v2, call 6) and 3,901 for 6,210 (call 7). Read as truncation on two calls in a row (call 6: the prompt
      grew by 1,571 tokens and the server's count grew by 12; ...; its other calls counted 1.02x flawedcode's tokens) ...

- **Calibration.** When the last ``CALIBRATION_CALLS`` ratios agree within
  ``STEADY_SPREAD`` (a different tokenizer, not truncation), their median
  becomes ``token_factor`` when it is above 1 (the server counts more
  than flawedcode): the summary trigger then compares the count times this
  factor. A server that counts fewer tokens never raises the trigger.
- **Reasoning tokens** (``output_token_details.reasoning``: hidden, billed as
  output) are kept per call and count in the output totals and the cost.

The offline teaching model is not checked: it forgets the oldest messages by
design (that is lesson 1's context rot, which the lab marks as "goal lost") and
reports exactly what it saw.

Every usage figure a provider or a recording reports is checked where it is read
(``prompt_cache.token_figure``): a negative, NaN, fractional or absurdly large one
is ignored with one warning line, and the call is priced from flawedcode's own
count; the log's prices are checked when it is made (``price_figure``).

The cost (``totals()["estimated_cost_usd"]``) uses the provider's reported
tokens where it gave them and the exact counts otherwise; it is ``None`` when
the model's prices are unknown (never guessed). Cached input is priced at the
model's cached price (``flawedcode.prompt_cache``): the provider's
``cached_tokens`` when it reported them; none when it reported usage without
them (it billed what it reported); the cache model's when it reported no usage
(the offline model, a cost preview). A usage whose
every figure is 0 is taken as no report (unknown), never as a free call, and so
is a 0 for a prompt (or a reply) that was not empty: the exact count is priced.

Prompt caching (``flawedcode.prompt_cache``): the recorder captures each
request as blocks (the fixed system+tools block, then one digest and exact
count per message: ``CallRecord.prompt_blocks``); ``SessionLog`` feeds them to
a ``SessionCache`` of the log's ``cache_scheme`` (the model profile's) as each call
is recorded, so every ``CallRecord`` carries the breakpoints it marks
(``cache_marks``, from the agent's ``cache_breakpoints``), its ``cached_tokens``,
``cache_write_tokens``, ``cache_miss_reason`` and ``oracle_tokens`` (the physical
limit); ``totals()`` sums them and prices the calls under every scheme
(``cache_weighted_by_scheme``, ``cache_misses_by_scheme``, ``cache_weighted_by_turn``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import LLMResult

from flawedcode.infra.safe_text import shown_name
from flawedcode.notices import warn_once
from flawedcode.prompt_cache import (
    DEFAULT_BREAKPOINTS,
    DEFAULT_SCHEME,
    BadFigure,
    Block,
    BlockMaker,
    CallCache,
    SessionCache,
    analyze_every_scheme,
    breakpoint_positions,
    cache_totals,
    call_cost_usd,
    price_figure,
    scheme_named,
    token_figure,
)
from flawedcode.tokens import TokenCounter

CallPurpose = Literal["agent", "summary", "internal"]
PURPOSES: tuple[CallPurpose, ...] = ("agent", "summary", "internal")
SUMMARY_TAG = "flawedcode:summary"
"""Tag a summary call with this (``model.invoke(..., config={"tags": [SUMMARY_TAG]})``) to record it as ``summary``."""
LANGCHAIN_SUMMARY_SOURCE = ("lc_source", "summarization")
"""The metadata LangChain's (and Deep Agents') summarization puts on its summary calls."""
MAX_UNCLAIMED = 256
"""How many boundary records stay claimable by a later ``record_call`` of the same reply."""
TRUNCATION_RATIO = 0.6
"""With no comparable previous call: a report below this share of the server's steady ratio reads as truncation
(tokenizers differ by 0.8-1.2x, so a change of mix moves the ratio by at most about 1.5x)."""
MIN_GROWTH_TOKENS = 256
GROWTH_SHARE = 0.4
"""Or: the prompt grew by at least 256 tokens and the server's count by less than 0.4 of that (any tokenizer counts
added text at 0.8x or more)."""
FALL_SHARE = 0.10
"""Or: the prompt did not shrink and the server's count fell by more than 10%."""
UNCACHED_SHARE = 1.5
"""A report no bigger than 1.5x what was added since the previous call counts only the part the server had not
cached (Ollama's and llama.cpp's prompt counts skip a reused prefix): not truncation."""
MIN_TRUNCATED_WINDOW = 1_024
"""A server that truncates keeps its window, and none serves fewer than 1,024 tokens: a smaller report (a proxy's
placeholder usage) never reads as truncation."""
CONFIRMING_READINGS = 2
READINGS_WINDOW = 10
"""Truncation is confirmed (budget lowered, one warning) on the second call that reads as it within 10 agent calls,
never on the first."""
FIRST_CALL_TRUNCATION_RATIO = 0.5
"""With no steady ratio yet, only a report below half the count reads as truncation."""
CALIBRATION_CALLS = 3
"""How many recent untruncated calls must agree before their ratio calibrates the trigger."""
STEADY_SPREAD = 0.10
"""They agree when the largest ratio is within 10% of the smallest."""
NOTICEABLE_CALIBRATION = 0.10
"""A steady ratio more than 10% away from 1 gets one warning line."""
SELF_DECLARED_TRUNCATION = "flawedcode"
"""The offline teaching model's provider: it forgets by design (lesson 1) and says so itself, so it is not checked."""


class EventKind(StrEnum):
    """Every kind of context event, in one place (a member equals its text: ``EventKind.OFFLOAD == "offload"``).

    ``SessionLog.record_event`` refuses any other kind, so a misspelt kind fails where it is written.
    """

    # v2's lesson (context/offload.py, context/summarize.py, context/archive.py)
    OFFLOAD = "offload"
    OFFLOAD_FAILED = "offload_failed"
    SUMMARIZE = "summarize"
    SUMMARY_FAILED = "summary_failed"
    ARCHIVE = "archive"
    ARCHIVE_FAILED = "archive_failed"
    RECOVERY = "recovery"
    # the guards (context/resilience.py, readback.py, repair.py, budget.py, budget_guard.py)
    COMPACT = "compact"
    COMPACT_FAILED = "compact_failed"
    OVERFLOW_RETRY = "overflow_retry"
    BUDGET_LOWERED = "budget_lowered"
    READBACK_PAGED = "readback_paged"
    REPAIR = "repair"
    TOOL_CALL_CUT_OFF = "tool_call_cut_off"
    BUDGET_GUARD = "budget_guard"
    BUDGET_GUARD_FAILED = "budget_guard_failed"
    # what the log itself observes (a server's counts) and the lessons' watcher
    CALIBRATE = "calibrate"
    TRUNCATED = "truncated"
    GOAL_LOST = "goal_lost"
    GOAL_RECALLED = "goal_recalled"  # a later reply gave the goal back (lab/window.py's ContextWatcher)
    # the benchmark's peers (bench/peers.py, bench/field_peers.py)
    MASK = "mask"
    # v3 (context/stable.py)
    CLEAR = "clear"
    CLEAR_FAILED = "clear_failed"
    DIGEST = "digest"
    DIGEST_FAILED = "digest_failed"
    CONSOLIDATE = "consolidate"
    PLAN_REMINDER = "plan_reminder"


REWRITES_HISTORY = frozenset({EventKind.SUMMARIZE, EventKind.COMPACT, EventKind.OVERFLOW_RETRY, EventKind.BUDGET_LOWERED,
                              EventKind.MASK, EventKind.CLEAR, EventKind.DIGEST, EventKind.CONSOLIDATE, EventKind.REPAIR})
"""Events after which a call is not the previous prompt grown: it is compared with the steady ratio only."""


@dataclass
class ContextEvent:
    """One thing a context wrapper did (or failed to do)."""

    kind: EventKind
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
    cache_marks: list[int] | None = None
    """The blocks this request marks as cache breakpoints (its agent's ``cache_breakpoints``; ``prompt_cache``)."""
    cache_miss_reason: str | None = None
    """Why it read less from the cache than it re-sent (a ``prompt_cache.MissReason``); None: a full hit."""

    def cache(self) -> CallCache:
        """This call's prompt-cache figures (under its log's ``cache_scheme``)."""
        return CallCache(self.input_tokens, self.shared_messages, 0, self.cached_tokens, self.cache_write_tokens,
                         self.oracle_tokens, self.reported_cached_tokens, self.prompt_blocks is not None,
                         self.cache_miss_reason, self.turn)


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
    _pending_events: list[str] = field(default_factory=list, repr=False)
    _unclaimed: OrderedDict[int, tuple[Any, CallRecord]] = field(default_factory=OrderedDict, repr=False)
    listeners: list[Callable[[SessionLog], None]] = field(default_factory=list, repr=False)
    call_observers: list[Callable[[CallRecord, str], None]] = field(default_factory=list, repr=False)
    """Called with each answered call and the model's name, before it is appended (``ServerCalibration.observe``)."""
    event_observers: list[Callable[[ContextEvent], None]] = field(default_factory=list, repr=False)
    """Called with each context event as it is recorded (``resilience.SummaryBackoffGuard.observe``)."""
    cache_scheme: str = DEFAULT_SCHEME
    """The ``prompt_cache`` scheme its provider bills by (its profile's ``cache_scheme``): each call's cache figures."""
    cache_breakpoints: tuple[str, ...] = DEFAULT_BREAKPOINTS
    """Where its agent marks cache breakpoints (``prompt_cache.Breakpoint``; read by the ``anthropic`` schemes)."""
    prompt_cache: SessionCache = field(default_factory=SessionCache, repr=False)

    def __post_init__(self) -> None:
        self.prompt_cache = SessionCache(scheme_named(self.cache_scheme))
        for name in ("price_input_per_million", "price_output_per_million", "price_cached_input_per_million",
                     "price_cache_write_per_million"):  # a cost is never NaN, negative or absurd (BadFigure)
            setattr(self, name, price_figure(getattr(self, name), name))

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

    def record_event(self, kind: EventKind | str, tokens_before: int, tokens_after: int, **detail: Any) -> ContextEvent:
        """Record what a wrapper did; ``kind`` is an ``EventKind`` (its text is accepted; anything else is refused)."""
        try:
            kind = EventKind(kind)
        except ValueError:
            raise ValueError(f"unknown context event kind {kind!r}: add it to flawedcode.telemetry.EventKind") from None
        event = ContextEvent(kind, self.turn, self.agent_call_count, tokens_before, tokens_after, detail)
        self.events.append(event)
        self._pending_events.append(kind)
        for observer in self.event_observers:
            observer(event)
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
            reported_input_tokens=_reported_count(usage, "input_tokens", input_tokens),
            reported_output_tokens=_reported_count(usage, "output_tokens", output_tokens),
            budget_tokens=self.budget_tokens, trigger_tokens=self.trigger_tokens,
            purpose=purpose, events=pending, fixed_tokens=fixed_tokens,
            over_budget=bool(self.budget_tokens and input_tokens > self.budget_tokens), error=error,
            reasoning_tokens=_usage_figure(usage, "output_token_details", "reasoning") or 0,
            reported_cached_tokens=_reported_cache_read(usage), prompt_blocks=prompt_blocks,
        )
        record.cache_marks = breakpoint_positions(prompt_blocks, self.cache_breakpoints) if prompt_blocks else None
        cache = self.prompt_cache.observe(prompt_blocks, input_tokens, purpose=purpose, turn=self.turn,
                                          failed=error is not None, reported_cached_tokens=record.reported_cached_tokens,
                                          at=record.time, marks=record.cache_marks)
        record.shared_messages, record.cached_tokens = cache.shared_messages, cache.cached_tokens
        record.cache_write_tokens, record.oracle_tokens = cache.write_tokens, cache.oracle_tokens
        record.cache_miss_reason = None if cache.miss_reason is None else str(cache.miss_reason)
        if error is None and _provider_of(message) != SELF_DECLARED_TRUNCATION:
            for observer in self.call_observers:
                observer(record, _model_name_of(message))
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
            "offloads": self.count(EventKind.OFFLOAD),
            "summaries": self.count(EventKind.SUMMARIZE),
            "wrapper_seconds": round(self.wrapper_seconds, 6),
            "estimated_cost_usd": self.cost_usd(),
            "reasoning_tokens": sum(call.reasoning_tokens for call in self.calls),
            "truncated_calls": sum(1 for call in self.calls if call.truncated),
            **cache_totals([call.cache() for call in self.calls], analyze_every_scheme(self.calls)),
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


@dataclass
class ServerCalibration:
    """What a server's own token counts reveal (see "Reported versus counted" above), learned from the calls a log records.

    The agent makes one for its log (``watching``: the log hands it each answered call) and passes it on
    explicitly: v2's wrappers read ``token_factor`` and ``truncated_window_tokens`` from their ``ContextBudget``
    (``context/budget.py``), never from the log. What it finds is recorded in the log (a ``calibrate`` or
    ``truncated`` event, the calls marked ``truncated``) for the charts and the benchmark; nothing reads it back.
    """

    log: SessionLog = field(repr=False, compare=False)
    """Where its findings are recorded."""
    token_factor: float = 1.0
    """The server's steady reported/counted ratio when above 1 (the summary trigger uses it); else 1."""
    truncated_window_tokens: int | None = None
    """The most input tokens (in flawedcode's count) a truncating server took: its window, as observed."""
    _ratios: list[float] = field(default_factory=list, repr=False)
    _truncating: bool = field(default=False, repr=False)
    _previous_agent_usage: tuple[int, int, int] | None = field(default=None, repr=False)
    """The last agent call's (counted, reported, index): what the next one is compared with."""
    _readings: list[tuple[CallRecord, str]] = field(default_factory=list, repr=False)
    """Calls that read as truncation before it was confirmed, each with how it was read."""

    @classmethod
    def watching(cls, log: SessionLog) -> ServerCalibration:
        """A calibration that ``log`` hands every answered call to."""
        calibration = cls(log)
        log.call_observers.append(calibration.observe)
        return calibration

    def observe(self, record: CallRecord, model_name: str = "the model") -> None:
        """Set ``record``'s ratio; weigh it as truncation evidence; calibrate (see the module docstring)."""
        reported, counted = record.reported_input_tokens, record.input_tokens
        if not reported or counted <= 0:
            return
        ratio = reported / counted
        record.reported_ratio = round(ratio, 4)
        if record.purpose != "agent":  # like with like: only the agent's own calls are compared, with each other
            return
        previous = self._previous_agent_usage
        if set(record.events) & REWRITES_HISTORY:  # a summary or compaction between: not the same prompt grown
            previous = None
        self._previous_agent_usage = (counted, reported, record.index)
        just_read = bool(self._readings) and previous is not None and self._readings[-1][0].index == previous[2]
        evidence = self.truncation_evidence(reported, counted, previous, persisting=self._truncating or just_read)
        if evidence is None:
            self._truncating = False
            self._ratios = [*self._ratios, ratio][-CALIBRATION_CALLS:]
            self._calibrate(model_name)
            return
        if self._truncating:  # confirmed before and still going on
            self._mark_truncated(record, reported)
            return
        self._readings = [(call, how) for call, how in self._readings if record.index - call.index <= READINGS_WINDOW]
        self._readings.append((record, evidence))
        if len(self._readings) >= CONFIRMING_READINGS:  # one reading is not enough: a tokenizer can surprise once
            self._confirm_truncation(model_name)

    def truncation_evidence(self, reported: int, counted: int, previous: tuple[int, int, int] | None,
                            persisting: bool = False) -> str | None:
        """How this call reads as truncation (a phrase for the warning), or None when it does not.

        Never when the server reported at least what was sent. Against the previous
        agent call (no summary or compaction between): the prompt grew by
        ``MIN_GROWTH_TOKENS`` or more and the server's count by less than
        ``GROWTH_SHARE`` of that, or the prompt did not shrink and the count fell by
        more than ``FALL_SHARE``. Right after such a reading (``persisting``): the
        ratio is still more than ``FALL_SHARE`` below the steady one (what was
        dropped is still missing). With no comparable call, against the server's own
        steady ratio (learned first): below ``TRUNCATION_RATIO`` of it; on the very
        first call, below ``FIRST_CALL_TRUNCATION_RATIO``.
        """
        if reported >= counted or reported < MIN_TRUNCATED_WINDOW:
            return None  # at least what was sent; or fewer tokens than any server serves (a report not to be trusted)
        steady = self.steady_ratio()
        number = previous[2] + 1 if previous is not None else None
        if previous is not None and steady is not None:
            grown, counted_growth = counted - previous[0], reported - previous[1]
            if 0 < grown and reported <= UNCACHED_SHARE * max(steady, 1.0) * grown:
                return None  # it counted only what it had not cached (Ollama, llama.cpp do): nothing was dropped
            if grown >= MIN_GROWTH_TOKENS and counted_growth < GROWTH_SHARE * grown:
                moved = f"fell by {-counted_growth:,}" if counted_growth < 0 else f"grew by {counted_growth:,}"
                return f"call {number}: the prompt grew by {grown:,} tokens and the server's count {moved}"
            if grown >= 0 and reported < previous[1] * (1 - FALL_SHARE):
                return f"call {number}: the server's count fell from {previous[1]:,} to {reported:,} tokens"
        if persisting and steady is not None and reported < (1 - FALL_SHARE) * steady * counted:
            return (f"{f'call {number}: ' if number is not None else ''}it still reported {reported / counted:.2f}x "
                    f"the tokens sent")
        if previous is not None:
            return None
        if steady is None:
            if reported < FIRST_CALL_TRUNCATION_RATIO * counted:
                return f"it reported {reported:,} input tokens for the {counted:,} sent"
            return None
        if reported < TRUNCATION_RATIO * steady * counted:
            return f"it reported {reported / counted:.2f}x the tokens sent, where it counts {steady:.2f}x"
        return None

    def steady_ratio(self) -> float | None:
        """The median reported/counted ratio of recent agent calls that read as no truncation (None before the first)."""
        if not self._ratios:
            return None
        ordered = sorted(self._ratios)
        return ordered[len(ordered) // 2]

    def _confirm_truncation(self, model_name: str) -> None:
        """Repeated evidence: mark the calls, the chart's marker (recorded in the log), ``truncated_window_tokens``, one warning line."""
        (first, first_evidence), (last, evidence) = self._readings[0], self._readings[-1]
        self._truncating = True
        steady = self.steady_ratio() or 1.0
        event = ContextEvent(EventKind.TRUNCATED, first.turn, max(first.index, 0), first.input_tokens,
                             int((first.reported_input_tokens or 0) / steady),
                             {"reported": first.reported_input_tokens, "sent": first.input_tokens, "model": model_name,
                              "evidence": [reading for _, reading in self._readings]})
        self.log.events.append(event)
        first.events.append(event.kind)
        for call, _ in self._readings:
            self._mark_truncated(call, call.reported_input_tokens or 0)
        in_a_row = "in a row" if last.index == first.index + 1 else "of this conversation"
        warn_once(f"truncated:{model_name}",
                  f"the model ({model_name}) truncated the prompt: it reported {first.reported_input_tokens:,} input "
                  f"tokens for the {first.input_tokens:,} flawedcode sent ({self.log.agent_name}, call {first.index}) "
                  f"and {last.reported_input_tokens:,} for {last.input_tokens:,} (call {last.index}). Read as "
                  f"truncation on two calls {in_a_row} ({first_evidence}; {evidence}; its other calls counted "
                  f"{steady:.2f}x flawedcode's tokens), so it silently dropped part of the conversation; give its real "
                  "window with --window (Ollama: its num_ctx), or lower the budget.")

    def _mark_truncated(self, record: CallRecord, reported: int) -> None:
        record.truncated = True
        taken = int(reported / (self.steady_ratio() or 1.0))
        self.truncated_window_tokens = max(self.truncated_window_tokens or 0, taken)

    def _calibrate(self, model_name: str) -> None:
        if len(self._ratios) < CALIBRATION_CALLS or max(self._ratios) > min(self._ratios) * (1 + STEADY_SPREAD):
            return
        steady = self.steady_ratio() or 1.0
        calibration = round(max(1.0, steady), 3)
        if abs(calibration - self.token_factor) > 0.01:
            self.token_factor = calibration
            self.log.record_event(EventKind.CALIBRATE, 0, 0, ratio=round(steady, 3), model=model_name)
        if abs(steady - 1.0) > NOTICEABLE_CALIBRATION:
            trigger = "the summary trigger now uses the server's count" if steady > 1 else "the budget stays in flawedcode's count"
            warn_once(f"calibrated:{model_name}",
                      f"the model server counts {steady:.2f}x the input tokens flawedcode counts (a different "
                      f"tokenizer): {trigger}.")


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


def _usage_figure(usage: dict[str, Any], *path: str) -> int | None:
    """One figure of a provider's (or a recording's) usage, checked (``prompt_cache.token_figure``); None when it
    gave none, or gave one no bill can hold: then one warning line, and flawedcode's own count is used."""
    value: Any = usage
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None:
        return None
    what = ".".join(path)
    try:
        return token_figure(value, f"usage {what}")
    except BadFigure as refused:
        warn_once(f"bad-usage:{what}", f"ignored a usage figure the model reported: {refused}; "
                                       "the call is counted and priced from flawedcode's own count")
        return None


def _reported_count(usage: dict[str, Any], key: str, counted: int) -> int | None:
    """The provider's count, or None when it gave none (or a bad one), or 0 for what was not empty (a proxy that
    fills in zeros)."""
    value = _usage_figure(usage, key)
    return None if value is None or (value == 0 and counted > 0) else value


def _reported_cache_read(usage: dict[str, Any]) -> int | None:
    """LangChain's ``input_token_details.cache_read`` (OpenAI's ``prompt_tokens_details.cached_tokens``), if given."""
    return _usage_figure(usage, "input_token_details", "cache_read")


def _provider_of(message: AIMessage | None) -> str:
    return str((getattr(message, "response_metadata", None) or {}).get("model_provider") or "")


def _model_name_of(message: AIMessage | None) -> str:
    metadata = getattr(message, "response_metadata", None) or {}
    return shown_name(metadata.get("model_name") or metadata.get("model"), "the model")  # a server's name: escaped


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
