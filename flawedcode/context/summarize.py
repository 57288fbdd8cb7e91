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

What can go wrong (a summarizer that keeps failing, a context over budget with no summary, a
server that refuses the request or has a smaller window, a server that counts more tokens) is
handled around these steps, in ``resilience.py``; a failed summary here changes nothing.

Why summarize before archiving? The summary call has no side effects; doing it
first means a failed summary leaves neither the history nor the archive changed,
so the archive never holds a message twice. The archive is still written before
any message leaves the context.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import get_buffer_string

from flawedcode.config import ContextSize, SummarizationConfig
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.context.archive import ArchiveError, ArchivePart, ConversationArchive
from flawedcode.formats import ARCHIVE_LINE, GOAL_LINE, SUMMARY_PREFIX
from flawedcode.infra.redact import redact_text
from flawedcode.models import ModelConfigError
from flawedcode.telemetry import SUMMARY_TAG, EventKind, SessionLog
from flawedcode.tokens import TokenCounter


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
        digest = digest_message(message, digest_chars)
        cost = counter.count_message(digest)
        if used + cost > max_tokens:
            break
        digests.insert(0, digest)
        used += cost
    trimmed = digests + rest[full_from:]
    while trimmed and isinstance(trimmed[0], ToolMessage):  # a result whose call was trimmed away says nothing
        trimmed.pop(0)
    return pinned + trimmed


def digest_message(message: AnyMessage, max_chars: int) -> AnyMessage:
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
    With a ``log``, its own time (not the summary model's) counts as the wrappers' overhead.
    """
    with log.timing_wrapper() if log is not None else nullcontext():
        return _summarize_if_due(messages, model, archive, config, counter, budget_tokens, fixed_tokens, force,
                                 fallback_model, log, calibration)


def _summarize_if_due(messages: Sequence[AnyMessage], model: BaseChatModel, archive: ConversationArchive,
                      config: SummarizationConfig | None, counter: TokenCounter | None, budget_tokens: int,
                      fixed_tokens: int, force: bool, fallback_model: BaseChatModel | None, log: SessionLog | None,
                      calibration: float) -> SummaryOutcome:
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
        return _failed(unchanged, log, EventKind.SUMMARY_FAILED, str(error))
    try:
        part = archive_once(archive, leaving)
    except ArchiveError as error:
        return _failed(unchanged, log, EventKind.ARCHIVE_FAILED, str(error))
    summary = build_summary_message(summary_number(leaving) + 1, original_goal(messages), part.display_path, part.first_seq, part.last_seq, text)
    new_messages = [summary, *messages[cutoff:]]
    tokens_after = fixed_tokens + counter.count_messages(new_messages)
    if log is not None:
        log.record_event(EventKind.ARCHIVE, tokens_before, tokens_before, path=part.display_path, messages=len(leaving))
        log.record_event(EventKind.SUMMARIZE, tokens_before, tokens_after,
                         archive=part.display_path, removed=len(leaving), kept=len(messages) - cutoff)
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


def summary_number(messages: Sequence[AnyMessage]) -> int:
    for message in messages:
        if is_summary(message):
            match = re.match(rf"{re.escape(SUMMARY_PREFIX)} (\d+)", message.content)
            if match:
                return int(match.group(1))
    return 0


def _failed(outcome: SummaryOutcome, log: SessionLog | None, kind: EventKind, error: str) -> SummaryOutcome:
    outcome.reason = f"{kind}: {error}"
    if log is not None:
        log.record_event(kind, outcome.tokens_before, outcome.tokens_before, error=error)
    return outcome
