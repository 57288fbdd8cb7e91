"""Cache-stable compaction: the context stays small and the prompt cache keeps serving it.

A provider's prompt cache serves the longest prefix a request shares with an earlier
one. v2's summary rewrites the start of the conversation, so every summary breaks
the cache from the first message on. Here the history has three regions, and
compaction only ever *appends* to the first two:

    [pinned goal] [summary blocks and turn digests] [kept requests] | [plan reminder?] [current turn]
     never moves   each written once, appended        verbatim         what changes from call to call

(The system prompt, tool schemas and memory block come before all of it; see ``loadout.py``.)

Before each model call (``maybe_compact``; settings in ``StableCompactionConfig``):

1. **Clear answered tool results in batches** (Anthropic's ``clear_tool_uses``): once the
   context reaches ``clear_trigger`` of the budget, the tool results of earlier turns
   (before the latest request; never ``write_todos``'s) are archived, then replaced in
   place by a stub, when together they free at least ``clear_at_least`` tokens (a cache
   break must pay for itself). A stub is written once and never rewritten::

       [Compacted: this chartbook_get_docs result (5,465 characters, 1,571 tokens) left the context to keep
       it within budget; archives/<conversation>/0003.md holds it word for word: read_file(path='...')
       or search_archive(query).]

2. **Digest old turns, by code**: at a new request, the turns before the last
   ``keep_turns`` (default 0) are archived and each becomes one digest, appended after
   the blocks (no model call)::

       [Conversation summary 7 | turn digest]
       Tools: chartbook_load_data
       Last request: Load SOFR data and report the average rate (answered).
       Numbers reported:
       - money_markets/sofr rate (percent), 2024-08-07 to 2024-12-31, 100 values: mean 4.8944.

   A digest keeps of the answer only its sentences with a decimal figure (at most
   ``DIGEST_FIGURES_CHARS``, 160), else its first ``DIGEST_ANSWER_CHARS`` (60) as
   ``Answer: ...``: the request line already says what was done, and the archive holds the rest
   (``search_archive`` with the request's words finds the turn; a digest names no path: 15 tokens
   in every request, for a pointer the search gives anyway).
   The ``Last request: ... (answered).`` line is the one a summary block ends its story with, so a
   follow-up ("and for EFFR?") reads the requests before it from the digests; ``keep_requests``
   (default 0) keeps the latest ones verbatim besides (each turn would re-send and re-write them).
   A note the user asked to keep is listed under ``User notes (verbatim):``.
3. **Consolidate rarely, from cache**: at the start of a turn, when the blocks pass
   ``summaries_max`` (650) tokens, one summary replaces them (a ``consolidate`` event).
   The summary call **reuses the live prefix**: the leading part of what the previous agent
   call sent (same system text, tools, pinned goal and blocks; not that call's turn, which
   the summary does not need) plus the instruction last (``prompts/summary_v3.md``), so a
   provider serves almost all of it from cache::

       [Conversation summary 12]
       Archive: archives/<conversation>/0014.md holds messages 31-48 word for word (search_archive or read_file recovers details).

       <the model's summary, under ``summary_chars`` characters>

4. **When one turn alone grows too large** (the context reaches ``summary_trigger``, 80%), the
   messages after the blocks and before the kept tail (``keep``; never cutting an AI message
   from its tool results, never past the latest request) get one summary block the same way.
5. After any of these the caller's ``on_boundary`` runs (the loadout and the memory block may
   change there, when the prefix changes anyway), and the plan is put back in view when it
   left it (see ``todos.py``).

A failed or blank summary changes nothing (the clearing already done stays; it was
archived first). Every message that leaves is archived before it leaves: what leaves is taken
from the messages as they stand at that point of the step, matched to the last request's copies by
id (never by position, which an earlier digest in the same step has moved).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.config import StableCompactionConfig
from flawedcode.context.archive import ArchiveError, ConversationArchive
from flawedcode.context.todos import EXCLUDED_FROM_CLEARING, TodoList, is_reminder, with_plan_in_view
from flawedcode.formats import ANSWER_LINE, ARCHIVE_LINE, COMPACTED_PREFIX, GOAL_PINNED, LAST_REQUEST_LINE, SUMMARY_PREFIX
from flawedcode.infra.redact import redact_text
from flawedcode.telemetry import SUMMARY_TAG, EventKind, SessionLog
from flawedcode.tokens import TokenCounter

PROMPT_FILE = Path(__file__).resolve().parent.parent / "prompts" / "summary_v3.md"
CLEARED_RESULT = (COMPACTED_PREFIX + "this {tool} result ({characters:,} characters, {tokens:,} tokens) left the context "
                  "to keep it within budget; {path} holds it word for word: read_file(path='{path}') or search_archive(query).]")
"""What replaces a cleared tool result (the same text v2's compaction writes, so every reader knows it)."""
SUMMARY_HEADER = re.compile(rf"^{re.escape(SUMMARY_PREFIX)} (\d+)")


@dataclass
class CompactionStep:
    """What ``maybe_compact`` did to one history."""

    messages: list[AnyMessage]
    cleared: int = 0
    digested: int = 0
    summarized: bool = False
    consolidated: bool = False
    reminded: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    archive_path: str | None = None
    reason: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.cleared or self.digested or self.summarized or self.reminded)


# --- the regions ---------------------------------------------------------------------------

def is_summary_block(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and message.content.startswith(SUMMARY_PREFIX)


def goal_end(messages: Sequence[AnyMessage]) -> int:
    """1 when the first message is the pinned goal (a user request), else 0."""
    return 1 if messages and isinstance(messages[0], HumanMessage) and not is_summary_block(messages[0]) else 0


def prefix_end(messages: Sequence[AnyMessage]) -> int:
    """Index of the first message after the pinned goal and the summary blocks."""
    index = goal_end(messages)
    while index < len(messages) and is_summary_block(messages[index]):
        index += 1
    return index


def latest_request(messages: Sequence[AnyMessage]) -> int:
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)
                and not is_summary_block(m) and not is_reminder(m)), default=len(messages))


# --- 1. clearing ---------------------------------------------------------------------------

def is_cleared(message: ToolMessage) -> bool:
    return isinstance(message.content, str) and message.content.startswith(COMPACTED_PREFIX)


def clearable(messages: Sequence[AnyMessage], counter: TokenCounter, stub_tokens: int = 60) -> list[int]:
    """Answered tool results (before the latest request) whose stub would be smaller than they are."""
    start, end = prefix_end(messages), latest_request(messages)
    return [i for i in range(start, end) if isinstance(messages[i], ToolMessage) and not is_cleared(messages[i])
            and messages[i].name not in EXCLUDED_FROM_CLEARING and counter.count_message(messages[i]) > stub_tokens]


def cleared_stub(message: ToolMessage, archive_path: str, counter: TokenCounter) -> ToolMessage:
    text = message.content if isinstance(message.content, str) else str(message.content)
    stub = CLEARED_RESULT.format(tool=message.name or "tool", characters=len(text),
                                 tokens=counter.count_message(message), path=archive_path)
    return message.model_copy(update={"content": stub})


def clear_tool_results(messages: Sequence[AnyMessage], archive: ConversationArchive, counter: TokenCounter,
                       clear_at_least: int) -> tuple[list[AnyMessage], int, str | None]:
    """Archive, then stub, every clearable result, when together they free ``clear_at_least`` tokens."""
    messages = list(messages)
    chosen = clearable(messages, counter)
    freed = sum(counter.count_message(messages[i]) for i in chosen) - 60 * len(chosen)
    if not chosen or freed < clear_at_least:
        return messages, 0, None
    part = archive.append(archive.not_archived([messages[i] for i in chosen]) or [messages[i] for i in chosen])
    for i in chosen:
        messages[i] = cleared_stub(messages[i], part.display_path, counter)
    return messages, len(chosen), part.display_path


# --- 2. the appended summary ---------------------------------------------------------------------

def summary_cutoff(messages: Sequence[AnyMessage], keep_tokens: int, counter: TokenCounter) -> int:
    """First index of the kept tail: at most ``keep_tokens`` newest messages, never past the latest request."""
    start, cutoff, kept = prefix_end(messages), len(messages), 0
    while cutoff > start and kept + counter.count_message(messages[cutoff - 1]) <= keep_tokens:
        cutoff -= 1
        kept += counter.count_message(messages[cutoff])
    cutoff = min(cutoff, latest_request(messages))
    while start < cutoff < len(messages) and isinstance(messages[cutoff], ToolMessage):
        cutoff -= 1  # an AI message and its tool results stay together
    return max(cutoff, start)


def summary_instruction(leaving: int, kept: int, consolidate: bool, max_chars: int = 600) -> HumanMessage:
    """The last message of a summary call (its text is data: ``prompts/summary_v3.md``)."""
    template = PROMPT_FILE.read_text(encoding="utf-8")
    scope = ("the earlier summary blocks and " if consolidate else "") + f"the {leaving} messages after them"
    return HumanMessage(template.format(scope=scope, max_chars=f"{max_chars:,}", consolidate="yes" if consolidate else "no"))


def consolidation_instruction(blocks: int, anchor: int, max_chars: int = 600) -> HumanMessage:
    """The last message of a consolidation call: the same template, naming the blocks to merge."""
    template = PROMPT_FILE.read_text(encoding="utf-8")
    scope = f"the {blocks} summary blocks after the first {anchor} messages"
    return HumanMessage(template.format(scope=scope, max_chars=f"{max_chars:,}", consolidate="yes"))


def previous_request(live: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages the previous agent call sent: ``live`` before the previous turn's final answer."""
    request = latest_request(live)
    for index in range(request - 1, -1, -1):
        message = live[index]
        if isinstance(message, AIMessage) and not message.tool_calls:
            return list(live[:index])
        if isinstance(message, HumanMessage):
            break
    return list(live[:request])


def stable_prefix(live: Sequence[AnyMessage], previous: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The pinned goal and the blocks: the part of the previous request a consolidation needs (it began with them)."""
    end = prefix_end(live)
    return list(previous[:end]) if list(previous[:end]) == list(live[:end]) else list(previous)


def request_summary(model: BaseChatModel, system_text: str, tools: Sequence[BaseTool], messages: Sequence[AnyMessage],
                    instruction: HumanMessage, counter: TokenCounter, log: SessionLog | None = None,
                    leading: Sequence[AnyMessage] = ()) -> str:
    """One summary call on the live prefix: same system text, tools, leading data (memory) and messages, instruction last."""
    request = [SystemMessage(system_text), *leading, *messages, instruction]
    started = time.perf_counter()
    bound = model.bind_tools(list(tools)) if tools else model
    response = bound.invoke(request, config={"tags": [SUMMARY_TAG]})
    if log is not None:  # for a model without a recorder; a recorded call is not counted twice
        log.record_call(counter.count_messages(request), counter.count_message(response), response,
                        time.perf_counter() - started, purpose="summary")
    text = response.text.strip() if isinstance(response, AIMessage) else str(response).strip()
    if not text or (isinstance(response, AIMessage) and response.tool_calls and not text):
        raise ValueError("the summary was blank")
    return text


def leaving_messages(messages: Sequence[AnyMessage], live: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages that leave the context, each as the last request sent it (a cleared result whole again).

    Found by id, never by position: a digest or a consolidation earlier in the same step moves every index,
    and a slice of ``live`` taken at this step's positions would archive the wrong messages and lose others.
    """
    originals = {message.id: message for message in live if message.id}
    return [originals.get(message.id, message) if message.id else message for message in messages]


def summary_number(messages: Sequence[AnyMessage]) -> int:
    numbers = [int(match.group(1)) for m in messages if is_summary_block(m) and (match := SUMMARY_HEADER.match(m.content))]
    return max(numbers, default=0)


def summary_block(number: int, archive_path: str, first_seq: int, last_seq: int, text: str) -> HumanMessage:
    header = (f"{SUMMARY_PREFIX} {number}]\n{ARCHIVE_LINE}{archive_path} holds messages {first_seq}-{last_seq} "
              "word for word (search_archive or read_file recovers details).")
    return HumanMessage(f"{header}\n\n{redact_text(text)}", id=f"summary-block-{number}")


# --- 2b. turn digests: one line per old turn, written by code -----------------------------------------

def turn_starts(messages: Sequence[AnyMessage], start: int, end: int | None = None) -> list[int]:
    """Indices of the user requests in ``messages[start:end]`` (each starts a turn)."""
    end = len(messages) if end is None else end
    return [i for i in range(start, end) if isinstance(messages[i], HumanMessage)
            and not is_summary_block(messages[i]) and not is_reminder(messages[i])]


def digest_cutoff(messages: Sequence[AnyMessage], keep_turns: int) -> int:
    """Where the kept turns begin: the latest request and the ``keep_turns`` turns before it stay."""
    start = prefix_end(messages)
    starts = turn_starts(messages, start)
    if start < len(messages) and start not in starts:  # the rest of the goal's own turn (the goal is pinned)
        starts = [start, *starts]
    return starts[-(keep_turns + 1)] if len(starts) > keep_turns + 1 else start


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    turns: list[list[AnyMessage]] = []
    for message in messages:
        if (isinstance(message, HumanMessage) and not is_reminder(message)) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def turn_digest(number: int, archive_path: str, turn: Sequence[AnyMessage]) -> HumanMessage:
    """One old turn in a few lines, written by code (its request verbatim, its tools, its answer's start)."""
    request = next((m for m in turn if isinstance(m, HumanMessage) and not is_reminder(m)), None)
    request_text = " ".join(str(request.content).split()) if request is not None else GOAL_PINNED
    calls = [call["name"] for m in turn if isinstance(m, AIMessage) for call in m.tool_calls]
    answer = next((m for m in reversed(turn) if isinstance(m, AIMessage) and m.text.strip()), None)
    answer_text = " ".join(answer.text.split()) if answer is not None else "(no answer)"
    figures = [sentence for sentence in SENTENCE_END.split(answer_text) if FIGURE.search(sentence)]
    has_figure = bool(figures)
    answer_text = shorten(" ".join(figures), DIGEST_FIGURES_CHARS) if has_figure else shorten(answer_text, DIGEST_ANSWER_CHARS)
    lines = [f"{SUMMARY_PREFIX} {number} | turn digest]", *([f"Tools: {', '.join(dict.fromkeys(calls))}"] if calls else []),
             f"{LAST_REQUEST_LINE}{request_text} ({'answered' if answer is not None else 'not answered yet'})."]
    if is_note_like(request_text):
        lines += ["User notes (verbatim):", f"- {request_text}"]
    if has_figure:  # a figure: in the section summaries carry forward
        lines += ["Numbers reported:", f"- {answer_text}"]
    else:
        lines.append(f"{ANSWER_LINE}{answer_text}")
    return HumanMessage(redact_text("\n".join(lines)), id=f"turn-digest-{number}")


DIGEST_ANSWER_CHARS = 60
"""Most characters of an old answer a digest keeps (the request line already says what was done)."""
DIGEST_FIGURES_CHARS = 160
"""Most characters kept of an answer that reports figures (the numbers are what a later question needs)."""


FIGURE = re.compile(r"\d\.\d")
"""A decimal figure: a sentence that has one is kept in a digest (the figures are what a later question needs)."""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
KEPT_REQUEST_ID = "kept-request-"


def kept_request(request: AnyMessage) -> AnyMessage:
    """The previous request, kept verbatim after its digest (follow-ups such as 'and for EFFR?' lean on it)."""
    return request.model_copy(update={"id": f"{KEPT_REQUEST_ID}{request.id}"})


def is_kept_request(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and str(message.id or "").startswith(KEPT_REQUEST_ID)
NOTE_WORDS = re.compile(r"^\W*(?:please\s+)?(?:remember|note|keep in mind|don't forget|fyi|for the record|my name is|i prefer)\b",
                        re.IGNORECASE)


def is_note_like(text: str) -> bool:
    return bool(NOTE_WORDS.search(text)) and "?" not in text


# --- the whole step ----------------------------------------------------------------------------

@dataclass
class StableCompactor:
    """Everything ``maybe_compact`` needs between calls: settings, archive, model, the prefix and the plan."""

    model: BaseChatModel
    archive: ConversationArchive
    config: StableCompactionConfig
    counter: TokenCounter
    budget_tokens: int
    system_text: Callable[[], str]
    tools: Callable[[], list[BaseTool]]
    todos: TodoList | None = None
    log: SessionLog | None = None
    on_boundary: Callable[[], Any] | None = None
    leading: Callable[[], list[AnyMessage]] = list
    """What leads the conversation in every request (v3: the memory block), counted in the fixed part."""
    failures: list[str] = field(default_factory=list)
    _request_id: str | None = field(default=None, repr=False)
    _plan_at_request: TodoList = field(default_factory=TodoList, repr=False)

    def fixed_tokens(self) -> int:
        return (self.counter.count_system(self.system_text()) + self.counter.count_tools(self.tools())
                + self.counter.count_messages(self.leading()))

    def tokens(self, messages: Sequence[AnyMessage]) -> int:
        return self.fixed_tokens() + self.counter.count_messages(messages)

    def maybe_compact(self, messages: Sequence[AnyMessage]) -> CompactionStep:
        """Clear, digest old turns (or summarize), then put the plan back in view; each when its rule says so.

        With a ``log``, its own time (not the summary model's) counts as the wrappers' overhead.
        """
        with self.log.timing_wrapper() if self.log is not None else nullcontext():
            return self._compact(messages)

    def _compact(self, messages: Sequence[AnyMessage]) -> CompactionStep:
        messages = list(messages)
        step = CompactionStep(messages, tokens_before=self.tokens(messages))
        if not self.config.enabled or not messages:
            step.tokens_after = step.tokens_before
            return step
        live = messages  # what the last call sent: the summary call reuses it, so a cache serves it
        if step.tokens_before >= self.config.clear_trigger * self.budget_tokens:
            try:
                messages, step.cleared, step.archive_path = clear_tool_results(
                    messages, self.archive, self.counter, self.config.clear_at_least)
            except (ArchiveError, OSError) as error:
                self._failed(step, EventKind.CLEAR_FAILED, str(error))
            if step.cleared:
                self._event(EventKind.CLEAR, step.tokens_before, self.tokens(messages), cleared=step.cleared,
                            archive=step.archive_path)
        if self.consolidation_due(messages):
            messages = self._consolidate(live, messages, step)
        start, cut = prefix_end(messages), digest_cutoff(messages, self.config.keep_turns)
        if cut > start:
            messages = self._digest(messages, step, start, cut)
        if self.tokens(messages) >= self.config.summary_trigger * self.budget_tokens:  # one turn grew too large
            cutoff = summary_cutoff(messages, int(self.config.keep * self.budget_tokens), self.counter)
            messages = self._summarize(live, messages, step, cutoff, consolidate=False)
        if (step.cleared or step.summarized or step.digested) and self.on_boundary is not None:
            self.on_boundary()
        if self.todos is not None:
            messages = self._plan_in_view(messages, step)
        step.messages, step.tokens_after = messages, self.tokens(messages)
        return step

    def consolidation_due(self, messages: Sequence[AnyMessage]) -> bool:
        """At the start of a turn, the blocks take more than ``summaries_max`` tokens."""
        if not messages or latest_request(messages) != len(messages) - 1:
            return False
        start, anchor = prefix_end(messages), goal_end(messages)
        return (start - anchor >= 2
                and self.counter.count_messages(messages[anchor:start]) > self.config.summaries_max)

    def _consolidate(self, live: list[AnyMessage], messages: list[AnyMessage], step: CompactionStep) -> list[AnyMessage]:
        """Replace the blocks by one summary, written by a call on the previous request's prefix."""
        start, anchor = prefix_end(messages), goal_end(messages)
        previous = stable_prefix(live, previous_request(live))
        instruction = consolidation_instruction(start - anchor, anchor, self.config.summary_chars)
        before, merged = self.tokens(messages), messages[anchor:start]
        written = self._summary_and_archive(previous, instruction, merged, step)
        if written is None:
            return messages
        text, part = written
        block = summary_block(summary_number(messages) + 1, part.display_path, part.first_seq, part.last_seq, text)
        compacted = [*messages[:anchor], block, *messages[start:]]
        step.summarized, step.consolidated, step.archive_path = True, True, part.display_path
        self._event(EventKind.CONSOLIDATE, before, self.tokens(compacted), archive=part.display_path, merged=len(merged),
                    kept_blocks=anchor)
        return compacted

    def _digest(self, messages: list[AnyMessage], step: CompactionStep, start: int, cut: int) -> list[AnyMessage]:
        """Archive the turns in ``messages[start:cut]`` and append one digest message per turn after the blocks."""
        leaving = messages[start:cut]
        try:
            part = self.archive.append(self.archive.not_archived(leaving) or leaving)
        except (ArchiveError, OSError) as error:
            return self._failed(step, EventKind.DIGEST_FAILED, str(error), messages)
        number = summary_number(messages)
        turns = [turn for turn in split_turns(leaving) if not is_kept_request(turn[0])]  # kept ones have a digest
        digests = [turn_digest(number + offset + 1, part.display_path, turn) for offset, turn in enumerate(turns)]
        requests = [turn[0] for turn in split_turns(leaving) if isinstance(turn[0], HumanMessage) and not is_reminder(turn[0])]
        kept = [request if is_kept_request(request) else kept_request(request)
                for request in requests[-self.config.keep_requests:]] if self.config.keep_requests else []
        compacted = [*messages[:start], *digests, *kept, *messages[cut:]]
        step.digested, step.archive_path = len(digests), part.display_path
        self._event(EventKind.DIGEST, self.tokens(messages), self.tokens(compacted), archive=part.display_path,
                    turns=len(digests), removed=len(leaving))
        return compacted

    def _plan_in_view(self, messages: list[AnyMessage], step: CompactionStep) -> list[AnyMessage]:
        """The plan as it stood at the latest request, back in view before it when it is not (todos.py)."""
        request = latest_request(messages)
        request_id = messages[request].id if request < len(messages) else None
        if request_id is None or request_id != self._request_id:  # a new request: the plan as it stands now
            self._request_id, self._plan_at_request = request_id, self.todos.snapshot()
        if not self._plan_at_request.items:
            return messages
        before, count = self.tokens(messages), len(messages)
        messages = with_plan_in_view(messages, self._plan_at_request, request)
        step.reminded = len(messages) > count
        if step.reminded:
            self._event(EventKind.PLAN_REMINDER, before, self.tokens(messages), version=self._plan_at_request.version)
        return messages

    def _summarize(self, live: list[AnyMessage], messages: list[AnyMessage], step: CompactionStep, cutoff: int,
                   consolidate: bool) -> list[AnyMessage]:
        """One summary block for ``messages[start:cutoff]`` (and, consolidating, the blocks before them), made by a
        call on ``live`` (the messages before this step's clearing: the prefix the last request sent)."""
        start = prefix_end(messages)
        blocks = [m for m in messages[:start] if is_summary_block(m)]
        if cutoff <= start and not (consolidate and blocks):
            step.reason = "nothing to summarize"
            return messages
        instruction = summary_instruction(cutoff - start, len(messages) - cutoff, consolidate, self.config.summary_chars)
        before = self.tokens(messages)
        written = self._summary_and_archive(live, instruction, leaving_messages(messages[start:cutoff], live) or blocks, step)
        if written is None:
            return messages
        text, part = written
        block = summary_block(summary_number(messages) + 1, part.display_path, part.first_seq, part.last_seq, text)
        goal = messages[:1] if start > 0 and not is_summary_block(messages[0]) else []
        compacted = [*goal, *([] if consolidate else blocks), block, *messages[cutoff:]]
        step.summarized, step.consolidated, step.archive_path = True, consolidate, part.display_path
        self._event(EventKind.CONSOLIDATE if consolidate else EventKind.SUMMARIZE, before, self.tokens(compacted),
                    archive=part.display_path, removed=cutoff - start, blocks=1 if consolidate else len(blocks) + 1)
        return compacted

    def _summary_and_archive(self, request: list[AnyMessage], instruction: HumanMessage, leaving: list[AnyMessage],
                             step: CompactionStep) -> tuple[str, Any] | None:
        """The summary (asked on ``request``), then the archive part for ``leaving``; None (recorded) if either fails."""
        try:
            text = request_summary(self.model, self.system_text(), self.tools(), request, instruction, self.counter, self.log,
                                   self.leading())
        except Exception as error:  # noqa: BLE001 - a failed summary changes nothing but is recorded
            self._failed(step, EventKind.SUMMARY_FAILED, f"{type(error).__name__}: {error}")
            return None
        try:
            return text, self.archive.append(self.archive.not_archived(leaving) or leaving)
        except (ArchiveError, OSError) as error:
            # not the summarizer's failure: its back-off does not pause the next call, which tries again
            self._failed(step, EventKind.ARCHIVE_FAILED, f"the archive could not be written: {error}")
            return None

    def _event(self, kind: EventKind, before: int, after: int, **detail: Any) -> None:
        if self.log is not None:
            self.log.record_event(kind, before, after, **detail)

    def _failed(self, step: CompactionStep, kind: EventKind, error: str,
                messages: list[AnyMessage] | None = None) -> list[AnyMessage]:
        step.reason = f"{kind}: {error}"
        self.failures.append(step.reason)
        self._event(kind, step.tokens_before, step.tokens_before, error=error)
        return messages if messages is not None else step.messages


def maybe_compact(messages: Sequence[AnyMessage], compactor: StableCompactor) -> CompactionStep:
    """The plain-function form, for a notebook: ``maybe_compact(agent.messages, agent.compactor)``."""
    return compactor.maybe_compact(messages)


class StableCompactionMiddleware(AgentMiddleware):
    """Thin adapter: before each model call, ``maybe_compact``; the new history replaces the state's."""

    def __init__(self, compactor: StableCompactor) -> None:
        super().__init__()
        self.compactor = compactor

    def before_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        step = self.compactor.maybe_compact(state["messages"])  # it times itself
        if not step.changed:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *step.messages]}


def cache_break_index(before: Sequence[AnyMessage], after: Sequence[AnyMessage]) -> int:
    """Index of the first message that differs (how much of the earlier request a cache could still serve)."""
    for index, (old, new) in enumerate(zip(before, after)):
        if old.content != new.content or old.type != new.type:
            return index
    return min(len(before), len(after))


__all__ = [
    "CLEARED_RESULT", "CompactionStep", "StableCompactionConfig", "StableCompactionMiddleware", "StableCompactor",
    "cache_break_index", "clear_tool_results", "clearable", "is_summary_block", "maybe_compact", "prefix_end",
    "request_summary", "summary_block", "summary_cutoff", "summary_instruction",
]
