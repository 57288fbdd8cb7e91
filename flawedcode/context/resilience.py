"""What can go wrong while v2 manages its context, handled in one place (v2 adds it in one line).

v2's lesson is two steps: ``maybe_summarize`` before each model call and ``maybe_offload`` after
each tool call (``agents/v2.py``). ``with_guards(lesson, ...)`` returns the middleware list v2 runs:
the lesson's own middleware is a member of that list (its hooks are the ones that run, as Deep Agents
composes its middlewares), and each guard stands beside it, before or after, with one job. No guard
holds the lesson or calls its methods. In the order LangChain runs them:

| middleware | hook | its one job |
| --- | --- | --- |
| ``RepairToolCallsMiddleware`` | before_model | 7. a tool call left without a result gets one |
| ``SummaryBackoffGuard`` | (hears the log's events) | 1. pauses the summary step after a failure |
| ``WindowGuard`` | wrap_model_call | 4. a server seen truncating lowers the budget |
| ``ClockStart`` | wrap_tool_call | the lesson's offload time counts as overhead |
| the lesson (``ManageContext``) | before_model, wrap_tool_call | summarize (reads ``budget.summaries_paused``), offload |
| ``ClockStop`` | wrap_tool_call | (the tool's own time is not the lesson's) |
| ``CompactionGuard`` | before_model | 2. a context still over budget is compacted |
| ``OverflowRetryGuard`` | wrap_model_call | 3, 4. a refused request: learn the window, summarize, retry once |
| ``RecoveryNotes`` | wrap_tool_call | a read of scratch/ or archives/ is a ``recovery`` event |
| ``ReadBackPagingMiddleware`` | wrap_tool_call | 6. a read-back is paged to fit |

Each ``before_model`` hook is a node of LangChain's graph, and LangGraph counts nodes against the
turn's step limit; no hook's node is counted (``agents/common.py``'s ``graph_steps``), so a turn runs
the model and the tools exactly as often as v1's, which has no hook.
Each guard below answers one way the plain steps fail:

1. **A summarizer that keeps failing** (a server down, a blank reply): back off. After a failed or
   blank summary the next attempt waits ``SummaryBackoff.first_wait_calls`` (2) agent calls, then 4,
   8, ... (at most ``max_wait_calls``, 32); a summary that works resets the wait, so a failing
   summarizer is not called before every model call.
2. **No summary at all, and the context over budget**: compact, with no model. While no summary is
   written and the context (times the server's token calibration) is over the budget, ``compact``
   brings it back under the trigger: it archives first, then replaces the oldest tool results (those
   the model has already answered first) with a stub naming the archive::

       [Compacted: this chartbook_get_docs result (5,465 characters, 1,571 tokens) left the context to keep it
       within budget; archives/<conversation>/0003.md holds it word for word: read_file(path='archives/...') or
       search_archive(query).]

   and if that is not enough, replaces the oldest messages by a summary message written without a
   model (the same header: goal verbatim, archive line; its body lists one line per archived
   message). A ``compact`` event is recorded. So the budget holds even when every summary fails.
3. **The server refuses the request** (``ContextOverflowError``): summarize (even below the triggers;
   else compact to clearly less than was sent) and retry the call once (an ``overflow_retry`` event).
4. **A window smaller than the budget**: when the overflow error names the server's window (or how
   many tokens were too many), the budget is lowered to fit it (one warning line, a
   ``budget_lowered`` event); the same when a server that silently truncates shows how much it takes
   (``telemetry.ServerCalibration`` observes it).
5. **A server that counts more tokens than flawedcode**: the trigger and the budget are compared
   with flawedcode's count times the server's steady ratio (``ContextBudget.calibration``).
6. **Reading an offloaded result back re-inflates the context**: ``readback.py`` pages the read to fit
   under the trigger.
7. **A tool call left without a result** (an interrupted turn): ``repair.py`` patches it with a
   stand-in result before the next model call.
8. **A result that cannot be sent or saved** (a lone surrogate) or a scratch file that cannot be
   written: handled inside ``maybe_offload`` itself (``offload.py``), which never loses the result.

Every guard records what it did as a context event; none of them changes what a call receives
while nothing goes wrong (``tests/test_v2_equivalence.py``).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from flawedcode.config import ContextSize
from flawedcode.context.archive import ArchiveError, ConversationArchive
from flawedcode.context.budget import ContextBudget
from flawedcode.context.readback import ReadBackPagingMiddleware
from flawedcode.context.repair import RepairToolCallsMiddleware
from flawedcode.context.summarize import (
    archive_once,
    build_summary_message,
    choose_cutoff,
    digest_message,
    is_summary,
    maybe_summarize,
    original_goal,
    summary_number,
)
from flawedcode.formats import COMPACTED_PREFIX
from flawedcode.models import context_overflow_from, input_window, learn_window
from flawedcode.notices import warn_once
from flawedcode.telemetry import ContextEvent, EventKind, SessionLog
from flawedcode.tokens import TokenCounter

COMPACTED_TOOL_RESULT = (
    COMPACTED_PREFIX + "this {tool} result ({characters:,} characters, {tokens:,} tokens) left the context to keep it "
    "within budget; {path} holds it word for word: read_file(path='{path}') or search_archive(query).]"
)
"""What replaces a tool result that compaction moved to the archive."""
COMPACTED_SUMMARY_TEXT = "No model summary was written (the summarizer failed); each archived message in one line:"
"""The first line of the body of a summary message written by compaction."""


# --- 1. when summaries fail: back off ------------------------------------------------------

@dataclass
class SummaryBackoff:
    """After a failed summary, wait before the next attempt: 2 agent calls, then 4, 8, ... (reset by a success)."""

    first_wait_calls: int = 2
    max_wait_calls: int = 32
    failures: int = 0
    retry_at_call: int = 0

    def allows(self, call_index: int) -> bool:
        """May a summary be attempted before agent call ``call_index``?"""
        return call_index >= self.retry_at_call

    def failed(self, call_index: int) -> int:
        """Note a failure before call ``call_index``; returns how many agent calls to wait."""
        wait = min(self.first_wait_calls * 2**self.failures, self.max_wait_calls)
        self.failures += 1
        self.retry_at_call = call_index + wait + 1
        return wait

    def succeeded(self) -> None:
        self.failures, self.retry_at_call = 0, 0


# --- 2. when no summary is written: compaction, with no model ------------------------------------

@dataclass
class CompactionOutcome:
    """What ``compact`` did: the new history (or the old one), what it archived, and the token counts."""

    messages: list[AnyMessage]
    compacted: bool
    reason: str
    tokens_before: int = 0
    tokens_after: int = 0
    archive_path: str | None = None
    stubbed: int = 0
    removed: int = 0


def compaction_order(messages: Sequence[AnyMessage]) -> list[int]:
    """Tool results that may become stubs, in the order they go: oldest first, the newest round's last."""
    last_ai = max((i for i, message in enumerate(messages) if isinstance(message, AIMessage)), default=-1)
    results = [i for i, message in enumerate(messages) if isinstance(message, ToolMessage)
               and isinstance(message.content, str) and not message.content.startswith(COMPACTED_PREFIX)]
    answered = [i for i in results if i < last_ai]  # the model has read these already
    return answered + [i for i in results if i > last_ai]


def choose_stubs(messages: Sequence[AnyMessage], counter: TokenCounter, tokens: int, target_tokens: int,
                 stub_tokens: int = 60) -> list[int]:
    """The fewest tool results (in ``compaction_order``) whose stubs bring ``tokens`` down to ``target_tokens``."""
    chosen = []
    for index in compaction_order(messages):
        if tokens <= target_tokens:
            break
        saving = counter.count_message(messages[index]) - stub_tokens
        if saving > 0:
            chosen.append(index)
            tokens -= saving
    return chosen


def stub_for(message: ToolMessage, archive_path: str, counter: TokenCounter) -> ToolMessage:
    """The tool result, replaced by a stub naming the archive file that holds it (same id: archived once)."""
    text = message.content if isinstance(message.content, str) else str(message.content)
    stub = COMPACTED_TOOL_RESULT.format(tool=message.name or "tool", characters=len(text),
                                        tokens=counter.count_message(message), path=archive_path)
    return message.model_copy(update={"content": stub})


def model_free_summary(leaving: Sequence[AnyMessage], counter: TokenCounter, max_tokens: int) -> str:
    """A summary body written without a model: one line per message, newest kept when they do not all fit."""
    lines: list[str] = []
    used = counter.count_messages([HumanMessage(COMPACTED_SUMMARY_TEXT)])
    for message in reversed(leaving):
        name = f" {message.name}" if isinstance(message, ToolMessage) and message.name else ""
        calls = " ".join(f"-> {call['name']}" for call in getattr(message, "tool_calls", None) or [])
        text = digest_message(message, 160).content if isinstance(message.content, str) else ""
        line = f"- {message.type}{name}: {' '.join(part for part in (text, calls) if part)}"
        cost = counter.count_messages([HumanMessage(line)])
        if used + cost > max_tokens:
            break
        lines.insert(0, line)
        used += cost
    return "\n".join([COMPACTED_SUMMARY_TEXT, *lines])


def compact(messages: Sequence[AnyMessage], *, archive: ConversationArchive, counter: TokenCounter,
            target_tokens: int, budget_tokens: int, fixed_tokens: int = 0, keep: ContextSize | None = None,
            log: SessionLog | None = None) -> CompactionOutcome:
    """Bring the context under ``target_tokens`` with no model: archive first, then stub old tool results,
    then (if that is not enough) replace the oldest messages with a model-free summary message."""
    messages = list(messages)
    tokens_before = fixed_tokens + counter.count_messages(messages)
    unchanged = CompactionOutcome(messages, False, "within the target", tokens_before, tokens_before)
    if tokens_before <= target_tokens:
        return unchanged
    stubs = choose_stubs(messages, counter, tokens_before, target_tokens)
    stubbed_tokens = tokens_before - sum(counter.count_message(messages[i]) for i in stubs) + 60 * len(stubs)
    cutoff = 0
    if stubbed_tokens > target_tokens:  # stubs are not enough: the oldest messages go too
        cutoff = choose_cutoff(messages, keep or ContextSize(type="fraction", value=0.10), counter, budget_tokens)
        if cutoff == 1 and is_summary(messages[0]):
            cutoff = 0
    leaving = messages[:cutoff]
    to_archive = leaving + [messages[i] for i in stubs if i >= cutoff]
    if not to_archive:
        unchanged.reason = "nothing to compact"
        return unchanged
    try:
        part = archive_once(archive, to_archive)
    except ArchiveError as error:
        return _compaction_failed(unchanged, log, str(error))
    compacted = [stub_for(message, part.display_path, counter) if i in stubs else message
                 for i, message in enumerate(messages)]
    if cutoff:
        body = model_free_summary(leaving, counter, max(200, (keep.in_tokens(budget_tokens) if keep else 0) or 0))
        summary = build_summary_message(summary_number(leaving) + 1, original_goal(messages), part.display_path,
                                        part.first_seq, part.last_seq, body)
        compacted = [summary, *compacted[cutoff:]]
    tokens_after = fixed_tokens + counter.count_messages(compacted)
    if log is not None:
        log.record_event(EventKind.COMPACT, tokens_before, tokens_after, archive=part.display_path,
                         stubbed=len([i for i in stubs if i >= cutoff]), removed=cutoff)
    return CompactionOutcome(compacted, True, "compacted", tokens_before, tokens_after, part.display_path,
                             len([i for i in stubs if i >= cutoff]), cutoff)


def _compaction_failed(outcome: CompactionOutcome, log: SessionLog | None, error: str) -> CompactionOutcome:
    outcome.reason = f"compact_failed: {error}"
    if log is not None:
        log.record_event(EventKind.COMPACT_FAILED, outcome.tokens_before, outcome.tokens_before, error=error)
    return outcome


# --- the guards, beside the lesson's middleware ---------------------------------------------------

RECOVERY_PREFIXES = ("scratch/", "archives/")


def with_guards(lesson: AgentMiddleware, *, archive: ConversationArchive, counter: TokenCounter,
                budget: ContextBudget, log: SessionLog, model: BaseChatModel,
                summary_model: BaseChatModel | None = None) -> list[AgentMiddleware]:
    """The middleware v2 runs: the lesson's own middleware in the list, each guard beside it with one job.

    In the order LangChain runs them (``before_model`` hooks first to last; ``wrap_*`` hooks first
    outermost): repair, back-off, window, then the lesson between the two ends of its overhead clock,
    then compaction, overflow retry, recovery notes and read-back paging (the table above). No guard
    calls the lesson's hooks: replace ``ManageContext.before_model`` and the agent changes with it.
    """
    clock = OverheadClock(log)
    return [
        RepairToolCallsMiddleware(log),
        SummaryBackoffGuard(budget, log),
        WindowGuard(budget),
        clock.start,
        lesson,
        clock.stop,
        CompactionGuard(archive=archive, counter=counter, budget=budget, log=log),
        OverflowRetryGuard(archive=archive, counter=counter, budget=budget, log=log, model=model,
                           summary_model=summary_model),
        RecoveryNotes(log),
        ReadBackPagingMiddleware(log, counter, budget),
    ]


def lower_budget(budget: ContextBudget, budget_tokens: int, source: str) -> None:
    """The model's window turned out smaller than the budget: manage to the window from now on (guard 4)."""
    if budget_tokens >= budget.tokens:
        return
    warn_once(f"budget-lowered:{budget.tokens}:{budget_tokens}:{source}",
              f"the model's window is smaller than the budget ({source}): lowered the budget from "
              f"{budget.tokens:,} to {budget_tokens:,} tokens")
    budget.lower(budget_tokens, source)


def adopt_observed_window(budget: ContextBudget) -> None:
    """A server seen truncating prompts took about so many tokens: lower the budget to fit (guard 4)."""
    observed = budget.calibration.truncated_window_tokens
    if observed and input_window(observed) < budget.tokens:  # it took that much, reply included
        lower_budget(budget, input_window(observed), f"the server truncated prompts to about {observed:,} tokens")


def compaction_target(budget: ContextBudget) -> int:
    """The token count compaction brings the context under (the lowest token trigger, else the budget)."""
    return budget.summarization.trigger_tokens(budget.tokens) or budget.tokens


def compact_to(messages: Sequence[AnyMessage], target: int, *, archive: ConversationArchive, counter: TokenCounter,
               budget: ContextBudget, log: SessionLog) -> list[AnyMessage] | None:
    """``compact`` with the budget's settings; the new history, or None if nothing changed."""
    compacted = compact(messages, archive=archive, counter=counter, target_tokens=target, budget_tokens=budget.tokens,
                        fixed_tokens=budget.fixed_tokens, keep=budget.summarization.keep, log=log)
    return compacted.messages if compacted.compacted else None


def replace_history(messages: Sequence[AnyMessage] | None) -> dict[str, Any] | None:
    """A ``before_model`` state update that makes ``messages`` the history (None: leave it)."""
    return None if messages is None else {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


class WindowGuard(AgentMiddleware):
    """Guard 4: once a server is seen truncating prompts, the budget is lowered to its window.

    The server's counts are observed as each call is recorded, so the window is adopted as each model
    call returns: before the next call's summary step reads the budget.
    """

    def __init__(self, budget: ContextBudget) -> None:
        super().__init__()
        self.budget = budget

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        response = handler(request)
        adopt_observed_window(self.budget)
        return response


class SummaryBackoffGuard(AgentMiddleware):
    """Guard 1: after a failed summary, the budget pauses summaries for 2 agent calls, then 4, 8, ... (no hook of its own).

    It hears every event the log records (``SessionLog.event_observers``): a ``summary_failed`` starts or
    doubles the wait (noted in the event as ``next_attempt_after_calls``), a summary or compaction ends it.
    The lesson's summary step reads ``budget.summaries_paused`` and waits.
    """

    SUCCESSES = frozenset({EventKind.SUMMARIZE, EventKind.CLEAR, EventKind.DIGEST, EventKind.CONSOLIDATE})

    def __init__(self, budget: ContextBudget, log: SessionLog) -> None:
        super().__init__()
        self.budget = budget
        self.backoff = SummaryBackoff()
        log.event_observers.append(self.observe)

    def observe(self, event: ContextEvent) -> None:
        if event.kind == EventKind.SUMMARY_FAILED:
            event.detail["next_attempt_after_calls"] = self.backoff.failed(event.call_index)
        elif event.kind in self.SUCCESSES:
            self.backoff.succeeded()
        self.budget.summaries_resume_at_call = self.backoff.retry_at_call


class OverheadClock:
    """The lesson's offload step's own time, counted as wrapper overhead: ``start`` goes before the lesson, ``stop`` after.

    (Its summary step times itself: ``maybe_summarize`` and ``maybe_compact`` count their work into the log.)
    """

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.inner_seconds: dict[int, float] = {}  # per tool call: the time spent under the lesson (the tool's own)
        self.start, self.stop = ClockStart(self), ClockStop(self)


class ClockStart(AgentMiddleware):
    """Times the lesson's ``wrap_tool_call`` from outside, less the tool's own time."""

    def __init__(self, clock: OverheadClock) -> None:
        super().__init__()
        self.clock = clock

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        started, call_id = time.perf_counter(), id(request.tool_call)
        result = handler(request)
        inner = self.clock.inner_seconds.pop(call_id, 0.0)  # tools may run side by side: one entry per call
        self.clock.log.wrapper_seconds += time.perf_counter() - started - inner
        return result


class ClockStop(AgentMiddleware):
    """Times what runs under the lesson's ``wrap_tool_call`` (the tool), which is not the lesson's overhead."""

    def __init__(self, clock: OverheadClock) -> None:
        super().__init__()
        self.clock = clock

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        started = time.perf_counter()
        try:
            return handler(request)
        finally:
            self.clock.inner_seconds[id(request.tool_call)] = time.perf_counter() - started


class CompactionGuard(AgentMiddleware):
    """Guard 2, after the lesson's summary step: a context still over budget is compacted, with no model.

    Its node is no step of the agent's: the turn's step limit does not count it (``agents.common.graph_steps``).
    """

    def __init__(self, *, archive: ConversationArchive, counter: TokenCounter, budget: ContextBudget,
                 log: SessionLog) -> None:
        super().__init__()
        self.archive, self.counter, self.budget, self.log = archive, counter, budget, log

    def before_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        if not self.budget.summarization.enabled:
            return None
        with self.log.timing_wrapper():
            messages = state["messages"]
            factor = self.budget.calibration.token_factor
            if (self.budget.fixed_tokens + self.counter.count_messages(messages)) * factor <= self.budget.tokens:
                return None
            target = int(compaction_target(self.budget) / factor)
            return replace_history(compact_to(messages, target, archive=self.archive, counter=self.counter,
                                              budget=self.budget, log=self.log))


class OverflowRetryGuard(AgentMiddleware):
    """Guard 3 (and 4): a request the server refuses as too long is summarized (else compacted) and retried once."""

    def __init__(self, *, archive: ConversationArchive, counter: TokenCounter, budget: ContextBudget, log: SessionLog,
                 model: BaseChatModel, summary_model: BaseChatModel | None = None) -> None:
        super().__init__()
        self.archive, self.counter, self.budget, self.log = archive, counter, budget, log
        self.agent_model, self.summary_model = model, summary_model

    def shrink(self, messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
        """v2's summary, whatever the triggers say (else compaction to clearly less than was sent)."""
        adopt_observed_window(self.budget)
        budget = self.budget
        outcome = maybe_summarize(messages, self.summary_model or self.agent_model, archive=self.archive,
                                  config=budget.summarization, counter=self.counter, budget_tokens=budget.tokens,
                                  fixed_tokens=budget.fixed_tokens, force=True,
                                  fallback_model=self.agent_model if self.summary_model else None, log=self.log,
                                  calibration=budget.calibration.token_factor)
        if outcome.summarized:
            return outcome.messages
        if not budget.summarization.enabled:
            return None
        with self.log.timing_wrapper():
            target = min(int(compaction_target(budget) / budget.calibration.token_factor), outcome.tokens_before * 3 // 4)
            return compact_to(messages, target, archive=self.archive, counter=self.counter, budget=budget, log=self.log)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        try:
            return handler(request)
        except ContextOverflowError as error:
            overflow = context_overflow_from(error) or error
            fixed_tokens = self.budget.fixed_tokens
            with self.log.timing_wrapper():
                tokens_before = fixed_tokens + self.counter.count_messages(request.messages)
                self._learn_window(overflow, tokens_before)
            managed = self.shrink(request.messages)  # its summary and compaction time themselves
            tokens_after = fixed_tokens + self.counter.count_messages(managed) if managed else tokens_before
            self.log.record_event(EventKind.OVERFLOW_RETRY, tokens_before, tokens_after, error=str(error),
                                  summarized=managed is not None)
            if managed is None:
                raise
            response = handler(request.override(messages=managed))
            model_response = response if isinstance(response, ModelResponse) else ModelResponse(result=[response])
            for reply in model_response.result:  # the reply (and any results injected with it)
                if reply.id is None:  # an id lets the state update below replace it rather than repeat it
                    reply.id = f"overflow-retry-{uuid.uuid4().hex}"
            update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *managed, *model_response.result]
            return ExtendedModelResponse(model_response=model_response, command=Command(update={"messages": update}))

    def _learn_window(self, overflow: BaseException, tokens_sent: int) -> None:
        limit = getattr(overflow, "limit_tokens", None)
        excess = getattr(overflow, "excess_tokens", None)
        if not limit and excess:  # "N tokens too many": the window is what was sent (in the server's count) less N
            limit = math.ceil(tokens_sent * self.budget.calibration.token_factor) - int(excess)
        if not limit or limit <= 0:
            return
        source = f"the server's overflow error names a {limit:,}-token window"
        learn_window(self.agent_model, int(limit), source)
        lower_budget(self.budget, input_window(int(limit)), source)


class RecoveryNotes(AgentMiddleware):
    """After each tool call (inside the lesson's offload step): a read of scratch/ or archives/ is a ``recovery`` event."""

    def __init__(self, log: SessionLog) -> None:
        super().__init__()
        self.log = log

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        note_recovery(request.tool_call, self.log)
        return result


def note_recovery(call: dict[str, Any], log: SessionLog) -> None:
    """Record a ``recovery`` event when a tool call reads scratch/ or archives/ (or searches the archive)."""
    arguments = call.get("args") or {}
    path = str(arguments.get("path") or arguments.get("file_path") or "")
    if call["name"] == "search_archive" or path.startswith(RECOVERY_PREFIXES):
        log.record_event(EventKind.RECOVERY, 0, 0, tool=call["name"], target=path or arguments.get("query", ""))
