"""Cache-stable compaction: the context stays small and the prompt cache keeps serving it.

A provider's prompt cache serves the longest prefix a request shares with an earlier
one. v2's summary rewrites the start of the conversation, so every summary breaks
the cache from the first message on. Here the history is kept in three regions, and
compaction only ever *appends* to the first two:

    [pinned goal] [summary block 1] ... [summary block k] | [plan reminder?] [recent conversation]
     never moves   each written once, never rewritten         what compaction works on

(The system prompt, tool schemas and memory block come before all of it; see ``loadout.py``.)

Before each model call (``maybe_compact``; settings in ``StableCompactionConfig``):

1. **Clear old tool results in batches** (Anthropic's ``clear_tool_uses``): once the
   context reaches ``clear_trigger`` of the budget, the tool results the model has
   already answered (before the latest user request) are archived, then replaced in
   place by a stub, but only when together they free at least ``clear_at_least``
   tokens: a cache break must be worth it. A stub is written once and never rewritten::

       [Compacted: this chartbook_get_docs result (5,465 characters, 1,571 tokens) left the context to keep
       it within budget; archives/<conversation>/0003.md holds it word for word: read_file(path='...')
       or search_archive(query).]

2. **Summarize by appending**: when the context still reaches ``summary_trigger``,
   the messages after the summary blocks and before the kept tail (``keep``; never
   cutting an AI message from its tool results, never the latest request) are archived
   and replaced by one new summary block after the existing ones. The summary call
   **reuses the live prefix**: the same system text, the same tools and the same leading
   messages the last agent call sent, plus the summary instruction last
   (``prompts/summary_v3.md``), so a provider serves it from cache. The block reads::

       [Conversation summary 3 | archive: archives/<conversation>/0004.md]
       Archive: archives/<conversation>/0004.md holds messages 31-48 word for word; recover details with search_archive(query) or read_file(path).

       <the model's summary of those messages>

3. **Consolidate rarely**: when the summary blocks together pass ``summaries_max``
   of the budget, the next summary covers them too and replaces them (one cache break,
   recorded as a ``consolidate`` event) instead of letting them grow without bound.

4. After a compaction the caller's ``on_boundary`` runs (the loadout and the memory
   block may change there, when the prefix is being rewritten anyway), and the plan
   reminder is re-inserted when the todo list left the view (see ``todos.py``).

A failed or blank summary changes nothing (the clearing already done stays; it was
archived first). Every message that leaves is archived before it leaves.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
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
from flawedcode.formats import ARCHIVE_LINE, COMPACTED_PREFIX, SUMMARY_PREFIX
from flawedcode.infra.redact import redact_text
from flawedcode.telemetry import SUMMARY_TAG, SessionLog
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
    summarized: bool = False
    consolidated: bool = False
    reminded: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    archive_path: str | None = None
    reason: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.cleared or self.summarized or self.reminded)


# --- the regions ---------------------------------------------------------------------------

def is_summary_block(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and message.content.startswith(SUMMARY_PREFIX)


def prefix_end(messages: Sequence[AnyMessage]) -> int:
    """Index of the first message after the pinned goal and the summary blocks."""
    index = 1 if messages and isinstance(messages[0], HumanMessage) and not is_summary_block(messages[0]) else 0
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


def summary_instruction(leaving: int, kept: int, consolidate: bool) -> HumanMessage:
    """The last message of a summary call (its text is data: ``prompts/summary_v3.md``)."""
    template = PROMPT_FILE.read_text(encoding="utf-8")
    scope = ("the earlier summary blocks and " if consolidate else "") + f"the {leaving} messages after them"
    return HumanMessage(template.format(scope=scope, leaving=leaving, kept=kept,
                                        consolidate="yes" if consolidate else "no"))


def request_summary(model: BaseChatModel, system_text: str, tools: Sequence[BaseTool], messages: Sequence[AnyMessage],
                    instruction: HumanMessage, counter: TokenCounter, log: SessionLog | None = None) -> str:
    """One summary call on the live prefix: same system text, same tools, same messages, instruction last."""
    request = [SystemMessage(system_text), *messages, instruction]
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


def summary_number(messages: Sequence[AnyMessage]) -> int:
    numbers = [int(match.group(1)) for m in messages if is_summary_block(m) and (match := SUMMARY_HEADER.match(m.content))]
    return max(numbers, default=0)


def summary_block(number: int, archive_path: str, first_seq: int, last_seq: int, text: str) -> HumanMessage:
    header = (f"{SUMMARY_PREFIX} {number} | archive: {archive_path}]\n{ARCHIVE_LINE}{archive_path} holds messages "
              f"{first_seq}-{last_seq} word for word; recover details with search_archive(query) or read_file(path).")
    return HumanMessage(f"{header}\n\n{redact_text(text)}", id=f"summary-block-{number}")


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
    failures: list[str] = field(default_factory=list)
    _request_id: str | None = field(default=None, repr=False)
    _plan_at_request: TodoList = field(default_factory=TodoList, repr=False)

    def fixed_tokens(self) -> int:
        return self.counter.count_system(self.system_text()) + self.counter.count_tools(self.tools())

    def tokens(self, messages: Sequence[AnyMessage]) -> int:
        return self.fixed_tokens() + self.counter.count_messages(messages)

    def maybe_compact(self, messages: Sequence[AnyMessage]) -> CompactionStep:
        """Clear, then summarize, then put the plan back in view; each only when its rule says so."""
        messages = list(messages)
        step = CompactionStep(messages, tokens_before=self.tokens(messages))
        if not self.config.enabled or not messages:
            step.tokens_after = step.tokens_before
            return step
        if step.tokens_before >= self.config.clear_trigger * self.budget_tokens:
            try:
                messages, step.cleared, step.archive_path = clear_tool_results(
                    messages, self.archive, self.counter, self.config.clear_at_least)
            except (ArchiveError, OSError) as error:
                self._failed(step, "clear_failed", str(error))
            if step.cleared:
                self._event("clear", step.tokens_before, self.tokens(messages), cleared=step.cleared,
                            archive=step.archive_path)
        if self.tokens(messages) >= self.config.summary_trigger * self.budget_tokens:
            messages = self._summarize(messages, step)
        if step.cleared or step.summarized:
            if self.on_boundary is not None:
                self.on_boundary()
        if self.todos is not None:
            messages = self._plan_in_view(messages, step)
        step.messages, step.tokens_after = messages, self.tokens(messages)
        return step

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
            self._event("plan_reminder", before, self.tokens(messages), version=self._plan_at_request.version)
        return messages

    def _summarize(self, messages: list[AnyMessage], step: CompactionStep) -> list[AnyMessage]:
        start = prefix_end(messages)
        blocks = [m for m in messages[:start] if is_summary_block(m)]
        consolidate = self.counter.count_messages(blocks) > self.config.summaries_max * self.budget_tokens
        cutoff = summary_cutoff(messages, int(self.config.keep * self.budget_tokens), self.counter)
        leaving = [m for m in messages[start:cutoff] if not is_reminder(m)]
        if not leaving:
            step.reason = "nothing to summarize"
            return messages
        instruction = summary_instruction(len(messages[start:cutoff]), len(messages) - cutoff, consolidate)
        before = self.tokens(messages)
        try:
            text = request_summary(self.model, self.system_text(), self.tools(), messages, instruction,
                                   self.counter, self.log)
        except Exception as error:  # noqa: BLE001 - a failed summary changes nothing but is recorded
            return self._failed(step, "summary_failed", f"{type(error).__name__}: {error}", messages)
        try:
            part = self.archive.append(self.archive.not_archived(messages[start:cutoff]) or messages[start:cutoff])
        except (ArchiveError, OSError) as error:
            return self._failed(step, "summary_failed", f"the archive could not be written: {error}", messages)
        block = summary_block(summary_number(messages) + 1, part.display_path, part.first_seq, part.last_seq, text)
        goal = messages[:1] if start > 0 and not is_summary_block(messages[0]) else []
        kept_blocks = [] if consolidate else blocks
        compacted = [*goal, *kept_blocks, block, *messages[cutoff:]]
        step.summarized, step.consolidated, step.archive_path = True, consolidate, part.display_path
        self._event("consolidate" if consolidate else "summarize", before, self.tokens(compacted),
                    archive=part.display_path, removed=cutoff - start, blocks=len(kept_blocks) + 1)
        return compacted

    def _event(self, kind: str, before: int, after: int, **detail: Any) -> None:
        if self.log is not None:
            self.log.record_event(kind, before, after, **detail)

    def _failed(self, step: CompactionStep, kind: str, error: str,
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
        log = self.compactor.log
        if log is not None:
            with log.timing_wrapper():
                step = self.compactor.maybe_compact(state["messages"])
        else:
            step = self.compactor.maybe_compact(state["messages"])
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
