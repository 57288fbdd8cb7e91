"""Summarize with archive: when the context is nearly full, older messages become a summary.

Before each model call (defaults in ``SummarizationConfig``):

1. ``should_summarize``: any trigger met? ``tokens`` (what the model would
   receive: system prompt + tool schemas + messages), ``messages`` (count), or
   ``fraction`` (of the budget). Triggers are OR'ed.
2. ``choose_cutoff``: the oldest messages go, the newest stay, by the keep policy
   (``messages`` / ``tokens`` / ``fraction`` of the budget). The cut never falls
   between an AI message and its tool results, and never after the latest user
   request (the model must still see what it is answering).
3. ``summarize``: the leaving messages are rendered (XML, as LangChain renders
   them), trimmed to ``trim_tokens_to_summarize`` (the earlier summary or the
   first request pinned first, older messages cut to one-line digests, the newest
   in full), and sent to the summary model (``model_name``, falling back to the run's
   own model if that one fails). A failed or blank summary changes nothing.
4. ``archive``: the leaving messages are written to the archive *before* they
   leave (see ``archive.py``). If the archive cannot be written, nothing changes.
5. The history becomes ``[summary message, *kept messages]``. The summary message reads::

       [Conversation summary 2 | archive: archives/<conversation>/0002.md]
       Original goal (verbatim): <the first user request, character for character>
       Archive: archives/<conversation>/0002.md holds messages 15-31 word for word; recover details with search_archive(query) or read_file(path).

       <the summary model's text>

   The original goal is copied by this code, not by the model, so it survives
   every summary verbatim (except a secret in it, which is redacted like everything
   written: ``[REDACTED:openai-key]``, see ``flawedcode.infra.redact``).

If the model still raises ``ContextOverflowError``, the wrapper summarizes
(even below the triggers) and retries the call once. When the error names the
server's window, the budget is first lowered to fit it (one warning line).

When no summary can be written (the middleware, ``SummarizeWithArchiveMiddleware``):

6. **Back off.** After a failed or blank summary the next attempt waits
   ``SummaryBackoff.first_wait_calls`` (2) agent calls, then 4, 8, ... (at most
   ``max_wait_calls``); a summary that works resets the wait. A failing
   summarizer is not called before every model call.
7. **Compact, with no model.** While no summary is written and the context
   (times the server's token calibration) is over the budget, ``compact`` brings
   it back under the trigger: it archives first, then replaces the oldest tool
   results (those the model has already answered first) with a stub naming the archive::

       [Compacted: this chartbook_get_docs result (5,465 characters, 1,571 tokens) left the context to keep it
       within budget; archives/<conversation>/0003.md holds it word for word: read_file(path='archives/...') or
       search_archive(query).]

   and if that is not enough, replaces the oldest messages by a summary message
   written without a model (the same header: goal verbatim, archive line; its
   body lists one line per archived message). A ``compact`` event is recorded.
   So the budget holds even when every summary fails.

A server that silently truncates (see ``telemetry.py``) shows how much it
takes; the budget is lowered to that too, and the summary trigger uses the
server's token count when it steadily counts more than flawedcode does.

Why summarize before archiving? The summary call has no side effects; doing it
first means a failed summary leaves neither the history nor the archive changed,
so the archive never holds a message twice. The archive is still written before
any message leaves the context.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.messages.utils import get_buffer_string
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from flawedcode.config import ContextSize, SummarizationConfig
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.context.archive import ArchiveError, ArchivePart, ConversationArchive
from flawedcode.formats import ARCHIVE_LINE, COMPACTED_PREFIX, GOAL_LINE, SUMMARY_PREFIX
from flawedcode.infra.redact import redact_text
from flawedcode.models import ModelConfigError, context_overflow_from, input_window, learn_window
from flawedcode.notices import warn_once
from flawedcode.telemetry import SUMMARY_TAG, SessionLog
from flawedcode.tokens import TokenCounter

COMPACTED_TOOL_RESULT = (
    COMPACTED_PREFIX + "this {tool} result ({characters:,} characters, {tokens:,} tokens) left the context to keep it "
    "within budget; {path} holds it word for word: read_file(path='{path}') or search_archive(query).]"
)
"""What replaces a tool result that compaction moved to the archive."""
COMPACTED_SUMMARY_TEXT = "No model summary was written (the summarizer failed); each archived message in one line:"
"""The first line of the body of a summary message written by compaction."""


@dataclass
class SummaryOutcome:
    """What ``maybe_summarize`` did: the new history (or the old one) and why."""

    messages: list[AnyMessage]
    summarized: bool
    reason: str
    tokens_before: int = 0
    tokens_after: int = 0
    archive_path: str | None = None
    summary_text: str = ""
    removed: list[AnyMessage] = field(default_factory=list)


# --- 1. when -------------------------------------------------------------------

def should_summarize(context_tokens: int, message_count: int, triggers: Sequence[ContextSize], budget_tokens: int) -> bool:
    """True when any trigger is met."""
    for trigger in triggers:
        if trigger.type == "messages" and message_count >= trigger.value:
            return True
        limit = trigger.in_tokens(budget_tokens)
        if limit is not None and context_tokens >= limit:
            return True
    return False


# --- 2. what leaves ----------------------------------------------------------------

def choose_cutoff(messages: Sequence[AnyMessage], keep: ContextSize, counter: TokenCounter, budget_tokens: int) -> int:
    """Index of the first message to keep; everything before it is summarized."""
    latest_request = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not is_summary(m)), default=len(messages))
    if keep.type == "messages":
        cutoff = max(len(messages) - int(keep.value), 0)
    else:
        keep_tokens = keep.in_tokens(budget_tokens) or 0
        cutoff, kept_tokens = len(messages), 0
        while cutoff > 0 and kept_tokens + counter.count_message(messages[cutoff - 1]) <= keep_tokens:
            cutoff -= 1
            kept_tokens += counter.count_message(messages[cutoff])
    cutoff = min(cutoff, latest_request)
    return safe_cutoff(messages, cutoff)


def safe_cutoff(messages: Sequence[AnyMessage], cutoff: int) -> int:
    """Move the cut back so that no AI message is separated from any of its tool results."""
    while 0 < cutoff < len(messages) and isinstance(messages[cutoff], ToolMessage):
        cutoff -= 1
    return cutoff


# --- 3. the summary ------------------------------------------------------------------

def is_summary(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and message.content.startswith(SUMMARY_PREFIX)


def original_goal(messages: Sequence[AnyMessage]) -> str | None:
    """The user's first request: from an earlier summary's goal line, else the first human message."""
    for message in messages:
        if is_summary(message):
            match = re.search(rf"^{re.escape(GOAL_LINE)}(.*)$", message.content, re.MULTILINE)
            if match:
                return match.group(1)
        elif isinstance(message, HumanMessage):
            return message.content if isinstance(message.content, str) else str(message.content)
    return None


def trim_for_summary(messages: Sequence[AnyMessage], max_tokens: int | None, counter: TokenCounter,
                     max_message_chars: int = 4000, digest_chars: int = 160) -> list[AnyMessage]:
    """What the summarizer reads, within ``max_tokens``: pinned start, one-line digests, newest in full.

    - Pinned first: the earlier summary, or the user's first request (the goal), so
      trimming never cuts the goal out of the summary (a trap seen in peers).
    - Then, in full, as many of the newest messages as fit in 3/4 of the budget.
    - Then, in the rest, the older messages as one-line digests (their first line),
      newest first while they fit, so their paths and actions are still named.
    A single huge message (say a 10 MB tool result) is cut to its head and tail;
    the archive keeps everything whole.
    """
    shortened = [_shorten(message, max_message_chars) for message in messages]
    if max_tokens is None:
        return shortened
    pinned = [message for message in shortened[:1] if isinstance(message, HumanMessage)]
    rest = shortened[len(pinned):]
    used = sum(counter.count_message(message) for message in pinned)
    if rest and used + counter.count_message(rest[-1]) > max_tokens:  # the newest alone is too big: cut it to fit
        rest[-1] = _shorten(rest[-1], max(400, max_tokens * 2))
    full_from = len(rest)
    while full_from > 0:
        cost = counter.count_message(rest[full_from - 1])
        if used + cost > max_tokens * 3 // 4 and full_from < len(rest):
            break
        full_from -= 1
        used += cost
    digests: list[AnyMessage] = []
    for message in reversed(rest[:full_from]):
        digest = _digest(message, digest_chars)
        cost = counter.count_message(digest)
        if used + cost > max_tokens:
            break
        digests.insert(0, digest)
        used += cost
    trimmed = digests + rest[full_from:]
    while trimmed and isinstance(trimmed[0], ToolMessage):  # a result whose call was trimmed away says nothing
        trimmed.pop(0)
    return pinned + trimmed


def _digest(message: AnyMessage, max_chars: int) -> AnyMessage:
    if not isinstance(message.content, str):
        return message
    lines = message.content.strip().splitlines()
    first = lines[0][:max_chars] if lines else ""
    more = " [...]" if len(lines) > 1 or len(message.content.strip()) > max_chars else ""
    return message.model_copy(update={"content": first + more})


def _shorten(message: AnyMessage, max_chars: int) -> AnyMessage:
    if not isinstance(message.content, str) or len(message.content) <= max_chars:
        return message
    half = max_chars // 2
    text = message.content
    cut = f"{text[:half]}\n[... {len(text) - max_chars:,} characters omitted here; the archive has them ...]\n{text[-half:]}"
    return message.model_copy(update={"content": cut})


def summarize(messages: Sequence[AnyMessage], model: BaseChatModel, config: SummarizationConfig,
              counter: TokenCounter, fallback_model: BaseChatModel | None = None,
              log: SessionLog | None = None) -> str:
    """Ask the summary model (then the fallback) for a summary; raise if both fail or return blank."""
    trimmed = trim_for_summary(messages, config.trim_tokens_to_summarize, counter)
    prompt = config.prompt_text().replace("{messages}", get_buffer_string(trimmed, format="xml"))
    errors: list[str] = []
    for candidate in [model, fallback_model]:
        if candidate is None:
            continue
        started = time.perf_counter()
        try:
            response = candidate.invoke([HumanMessage(prompt)], config={"tags": [SUMMARY_TAG]})
        except ModelConfigError:  # not a failure to wait out: a setting is wrong (e.g. a replay left its recording)
            raise
        except Exception as error:  # a summary model can fail in many ways; each is reported, none is fatal
            errors.append(f"{type(error).__name__}: {error}")
            continue
        text = response.text.strip() if isinstance(response, AIMessage) else str(response).strip()
        if log is not None:
            log.record_call(counter.count_messages([HumanMessage(prompt)]), counter.count_message(response),
                            response, time.perf_counter() - started, purpose="summary")
        if text:
            return text
        errors.append("the summary was blank")
    raise SummaryError("; ".join(errors) or "no summary model")


class SummaryError(RuntimeError):
    """No usable summary could be written; the history is left as it was."""


def build_summary_message(number: int, goal: str | None, archive_path: str, first_seq: int, last_seq: int, text: str) -> HumanMessage:
    """The summary message (format in the module docstring); a secret in the goal or the summary is redacted."""
    goal, text = (redact_text(goal) if goal is not None else None), redact_text(text)
    header = [f"{SUMMARY_PREFIX} {number} | archive: {archive_path}]"]
    if goal is not None:
        header.append(f"{GOAL_LINE}{goal}")
    header.append(f"{ARCHIVE_LINE}{archive_path} holds messages {first_seq}-{last_seq} word for word; "
                  "recover details with search_archive(query) or read_file(path).")
    return HumanMessage("\n".join(header) + "\n\n" + text)


# --- 4 + 5. the whole step -------------------------------------------------------------

def maybe_summarize(messages: Sequence[AnyMessage], model: BaseChatModel, *, archive: ConversationArchive,
                    config: SummarizationConfig | None = None, counter: TokenCounter | None = None,
                    budget_tokens: int = DEFAULT_BUDGET_TOKENS, fixed_tokens: int = 0, force: bool = False,
                    fallback_model: BaseChatModel | None = None, log: SessionLog | None = None,
                    calibration: float = 1.0) -> SummaryOutcome:
    """Summarize older messages if a trigger is met (or ``force``); archive them first. Never loses a message.

    ``fixed_tokens`` is what the model receives besides the messages (system prompt and tool schemas);
    ``calibration`` (>= 1) scales the count to the server's when it counts more tokens than flawedcode.
    """
    config = config or SummarizationConfig()
    counter = counter or TokenCounter()
    messages = list(messages)
    tokens_before = fixed_tokens + counter.count_messages(messages)
    unchanged = SummaryOutcome(messages, False, "below every trigger", tokens_before, tokens_before)
    server_tokens = math.ceil(tokens_before * calibration)
    if not config.enabled or not (force or should_summarize(server_tokens, len(messages), config.trigger, budget_tokens)):
        return unchanged
    cutoff = choose_cutoff(messages, config.keep, counter, budget_tokens)
    leaving = messages[:cutoff]
    if not leaving or (len(leaving) == 1 and is_summary(leaving[0])):
        unchanged.reason = "nothing old enough to summarize"
        return unchanged
    try:
        text = summarize(leaving, model, config, counter, fallback_model, log)
    except SummaryError as error:
        return _failed(unchanged, log, "summary_failed", str(error))
    try:
        part = archive_once(archive, leaving)
    except ArchiveError as error:
        return _failed(unchanged, log, "archive_failed", str(error))
    summary = build_summary_message(_summary_number(leaving) + 1, original_goal(messages), part.display_path, part.first_seq, part.last_seq, text)
    new_messages = [summary, *messages[cutoff:]]
    tokens_after = fixed_tokens + counter.count_messages(new_messages)
    if log is not None:
        log.record_event("archive", tokens_before, tokens_before, path=part.display_path, messages=len(leaving))
        log.record_event("summarize", tokens_before, tokens_after, archive=part.display_path, removed=len(leaving), kept=len(messages) - cutoff)
    return SummaryOutcome(new_messages, True, "summarized", tokens_before, tokens_after, part.display_path, text, leaving)


def archive_once(archive: ConversationArchive, leaving: Sequence[AnyMessage]) -> ArchivePart:
    """Archive the messages not archived before (a retried or rolled-back turn may offer some again)."""
    try:
        new, parts = archive.not_archived(leaving), archive.parts()  # kept in memory: no file is re-read here
    except (OSError, ValueError) as error:
        raise ArchiveError(f"cannot read the archive in {archive.folder}: {error}") from error
    if new or not parts:
        return archive.append(new or list(leaving))
    return parts[-1]


def _summary_number(messages: Sequence[AnyMessage]) -> int:
    for message in messages:
        if is_summary(message):
            match = re.match(rf"{re.escape(SUMMARY_PREFIX)} (\d+)", message.content)
            if match:
                return int(match.group(1))
    return 0


def _failed(outcome: SummaryOutcome, log: SessionLog | None, kind: str, error: str) -> SummaryOutcome:
    outcome.reason = f"{kind}: {error}"
    if log is not None:
        log.record_event(kind, outcome.tokens_before, outcome.tokens_before, error=error)
    return outcome


# --- 6. when summaries fail: back off ------------------------------------------------------

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


# --- 7. when no summary is written: compaction, with no model ------------------------------------

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
        text = _digest(message, 160).content if isinstance(message.content, str) else ""
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
        summary = build_summary_message(_summary_number(leaving) + 1, original_goal(messages), part.display_path,
                                        part.first_seq, part.last_seq, body)
        compacted = [summary, *compacted[cutoff:]]
    tokens_after = fixed_tokens + counter.count_messages(compacted)
    if log is not None:
        log.record_event("compact", tokens_before, tokens_after, archive=part.display_path,
                         stubbed=len([i for i in stubs if i >= cutoff]), removed=cutoff)
    return CompactionOutcome(compacted, True, "compacted", tokens_before, tokens_after, part.display_path,
                             len([i for i in stubs if i >= cutoff]), cutoff)


def _compaction_failed(outcome: CompactionOutcome, log: SessionLog | None, error: str) -> CompactionOutcome:
    outcome.reason = f"compact_failed: {error}"
    if log is not None:
        log.record_event("compact_failed", outcome.tokens_before, outcome.tokens_before, error=error)
    return outcome


# --- the middleware ----------------------------------------------------------------------

class SummarizeWithArchiveMiddleware(AgentMiddleware):
    """Thin adapter: before each model call ``maybe_summarize`` (backing off after failures), else ``compact``
    when over budget; on a context overflow, learn the window, summarize (or compact) and retry once."""

    def __init__(self, model: BaseChatModel, archive: ConversationArchive, config: SummarizationConfig,
                 counter: TokenCounter, budget_tokens: int, fixed_tokens: int, log: SessionLog,
                 summary_model: BaseChatModel | None = None) -> None:
        super().__init__()
        self.agent_model = model
        self.model = summary_model or model
        self.fallback_model = model if summary_model is not None else None
        self.archive = archive
        self.config = config
        self.counter = counter
        self.budget_tokens = budget_tokens
        self.fixed_tokens = fixed_tokens
        self.log = log
        self.backoff = SummaryBackoff()

    def run(self, messages: Sequence[AnyMessage], force: bool = False) -> SummaryOutcome:
        return maybe_summarize(messages, self.model, archive=self.archive, config=self.config, counter=self.counter,
                               budget_tokens=self.budget_tokens, fixed_tokens=self.fixed_tokens, force=force,
                               fallback_model=self.fallback_model, log=self.log, calibration=self.log.token_calibration)

    def trigger_tokens(self) -> int:
        """The token count summaries bring the context under (the lowest token trigger, else the budget)."""
        return self.config.trigger_tokens(self.budget_tokens) or self.budget_tokens

    def manage(self, messages: Sequence[AnyMessage], force: bool = False) -> list[AnyMessage] | None:
        """Summarize if due and allowed, else compact if over budget; the new history, or None if unchanged."""
        self._adopt_observed_window()
        call = self.log.agent_call_count
        outcome = None
        if force or self.backoff.allows(call):
            outcome = self.run(messages, force=force)
            if outcome.summarized:
                self.backoff.succeeded()
                return outcome.messages
            if outcome.reason.startswith("summary_failed") and self.log.events:
                self.log.events[-1].detail["next_attempt_after_calls"] = self.backoff.failed(call)
        if not self.config.enabled:
            return None
        tokens = outcome.tokens_before if outcome else self.fixed_tokens + self.counter.count_messages(messages)
        if not force and tokens * self.log.token_calibration <= self.budget_tokens:
            return None
        target = int(self.trigger_tokens() / self.log.token_calibration)
        if force:  # the server refused what was sent: send clearly less, whatever the trigger says
            target = min(target, tokens * 3 // 4)
        compacted = compact(messages, archive=self.archive, counter=self.counter, target_tokens=target,
                            budget_tokens=self.budget_tokens, fixed_tokens=self.fixed_tokens, keep=self.config.keep,
                            log=self.log)
        return compacted.messages if compacted.compacted else None

    def lower_budget(self, budget_tokens: int, source: str) -> None:
        """The model's window turned out smaller than the budget: manage to the window from now on."""
        if budget_tokens >= self.budget_tokens:
            return
        warn_once(f"budget-lowered:{self.budget_tokens}:{budget_tokens}:{source}",
                  f"the model's window is smaller than the budget ({source}): lowered the budget from "
                  f"{self.budget_tokens:,} to {budget_tokens:,} tokens")
        self.log.record_event("budget_lowered", self.budget_tokens, budget_tokens, source=source)
        self.budget_tokens = budget_tokens
        self.log.budget_tokens = budget_tokens
        if self.config.enabled:
            self.log.trigger_tokens = self.trigger_tokens()

    def _adopt_observed_window(self) -> None:
        observed = self.log.truncated_window_tokens
        if observed and input_window(observed) < self.budget_tokens:  # it took that much, reply included
            self.lower_budget(input_window(observed), f"the server truncated prompts to about {observed:,} tokens")

    def before_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        with self.log.timing_wrapper():
            managed = self.manage(state["messages"])
        if managed is None:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *managed]}

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        try:
            return handler(request)
        except ContextOverflowError as error:
            overflow = context_overflow_from(error) or error
            with self.log.timing_wrapper():
                tokens_before = self.fixed_tokens + self.counter.count_messages(request.messages)
                self._learn_window(overflow, tokens_before)
                managed = self.manage(request.messages, force=True)
            tokens_after = self.fixed_tokens + self.counter.count_messages(managed) if managed else tokens_before
            self.log.record_event("overflow_retry", tokens_before, tokens_after, error=str(error),
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
            limit = math.ceil(tokens_sent * self.log.token_calibration) - int(excess)
        if not limit or limit <= 0:
            return
        source = f"the server's overflow error names a {limit:,}-token window"
        learn_window(self.agent_model, int(limit), source)
        self.lower_budget(input_window(int(limit)), source)
