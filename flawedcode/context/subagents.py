"""Isolated sub-agents: ``task(description)`` runs a child agent in a context of its own.

The parent hands a self-contained piece of work to a child (DeerFlow's sub-agents,
Deep Agents' ``task``). Rules:

- **Isolated.** The child starts from an empty history with only ``description``;
  it has its own conversation id, its own budget, turn limit (graph steps) and
  summary trigger from ``SubagentConfig`` (never the parent's: a child that inherits
  its parent's trigger summarizes at the parent's size), and no ``task`` tool (no
  nesting). It works in the same folders, so files it writes are there, but on a workspace
  object of its own (``Workspace.scoped``): it can never switch the parent's scratch/ or
  archive scope. Its id is the parent's plus ``-task<n>``, ``n`` unique per runner; a parent id
  too long for that is shortened and marked with a hash of it, so the id is still a folder name.
- **Bounded.** At most ``max_tasks_per_turn`` (8) ``task`` calls run in one parent turn (more are
  refused with one line saying so) and at most ``max_concurrent`` (2) children run at once (the
  rest wait); the tool's description tells the model both numbers.
- **A short answer.** The parent receives at most ``result_tokens`` (64; at most ~300) tokens of the
  child's final message (when longer: its last paragraph, where the conclusion is, after "[...] "; when
  that alone is too long, a quarter from its start and the rest from its end around "[...]"), then one
  line naming the transcript::

      [Sub-agent 2 transcript: archives/<conversation>/0003.md]

- **Never empty.** When the child's last message is empty (a known failure of
  sub-agents) or the child failed, the answer says so and quotes the start of its
  last tool result, so the parent always has something true to work with.
- **Archived.** The child's whole transcript is appended to the parent's archive as
  one part before the answer returns, so ``search_archive`` and ``read_file`` find it.
- **Counted.** Every call the child made is added to the parent's session log as an
  ``internal`` call (the benchmark counts every call); the parent's own peak is only
  its own calls.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from flawedcode.config import SubagentConfig
from flawedcode.context.archive import ConversationArchive
from flawedcode.infra.safefs import MAX_NAME_CHARS
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import TokenCounter

PARAGRAPH = "\n\n"
TRANSCRIPT_LINE = "[Sub-agent {number} transcript: {path}]"
"""The line after a child's answer: where its whole transcript is (read_file or search_archive finds it there)."""


class ChildAgent(Protocol):
    messages: list[AnyMessage]
    log: SessionLog

    def send(self, text: str) -> str: ...


@dataclass
class SubagentRun:
    """One ``task`` call: what the parent received and what the child did."""

    number: int
    description: str
    answer: str
    transcript_path: str | None
    messages: int
    peak_tokens: int
    calls: int
    error: str | None = None


@dataclass
class SubagentRunner:
    """Runs children (``make_child(conversation_id)`` builds one) and keeps a record of each run."""

    make_child: Callable[[str], ChildAgent]
    archive: ConversationArchive
    log: SessionLog
    counter: TokenCounter
    config: SubagentConfig = field(default_factory=SubagentConfig)
    runs: list[SubagentRun] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _started: int = field(default=0, init=False, repr=False)  # children numbered so far (each number used once)
    _per_turn: dict[int, int] = field(default_factory=dict, init=False, repr=False)  # task calls run, by parent turn
    _slots: threading.BoundedSemaphore | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._slots = threading.BoundedSemaphore(self.config.max_concurrent)

    def run(self, description: str) -> str:
        """Run one child on ``description``; the parent's answer (at most ``result_tokens`` + the transcript line)."""
        description = " ".join(description.split())
        if not description:
            return "Error: the task needs a description of the work to delegate."
        number = self.reserve()
        if number is None:
            return (f"Error: at most {self.config.max_tasks_per_turn} task calls run in one turn; this one was not "
                    "run. Use the answers you have, or do this part yourself.")
        with self._slots:
            child, reply, error = self.start_child(number, description)
        transcript = [HumanMessage(f"[Sub-agent {number} task] {description}"), *getattr(child, "messages", [])]
        path = None
        try:
            path = self.archive.append(self.archive.not_archived(transcript) or transcript).display_path
        except OSError as failure:  # the answer still returns; it says the transcript could not be kept
            error = (error + "; " if error else "") + f"its transcript could not be archived ({failure})"
        child_log = getattr(child, "log", None) or SessionLog()
        peak = max((call.input_tokens for call in child_log.calls), default=0)
        with self._lock:
            self._count_calls(child_log)
        answer = self.clip(reply.strip()) or fallback_answer(transcript[1:], error)
        line = TRANSCRIPT_LINE.format(number=number, path=path or "(not archived)")
        with self._lock:
            self.runs.append(SubagentRun(number, description, answer, path, len(transcript) - 1, peak,
                                         len(child_log.calls), error))
        return f"{answer}\n{line}"

    def reserve(self) -> int | None:
        """The next child's number, or None when this turn has run its ``max_tasks_per_turn`` children."""
        with self._lock:
            turn = self.log.turn
            if self._per_turn.get(turn, 0) >= self.config.max_tasks_per_turn:
                return None
            self._per_turn[turn] = self._per_turn.get(turn, 0) + 1
            self._started += 1
            return self._started

    def child_id(self, number: int) -> str:
        """``<parent id>-task<number>``, the parent's part shortened (and marked by its hash) to stay a folder name."""
        parent, suffix = self.archive.conversation_id, f"-task{number}"
        if len(parent) + len(suffix) <= MAX_NAME_CHARS:
            return parent + suffix
        mark = "~" + hashlib.sha256(parent.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        return parent[:MAX_NAME_CHARS - len(mark) - len(suffix)].rstrip() + mark + suffix

    def start_child(self, number: int, description: str) -> tuple[Any, str, str | None]:
        """Build child ``number`` and run it on ``description``: (the child or None, its reply, what failed)."""
        child = None
        try:
            child = self.make_child(self.child_id(number))
            return child, child.send(description), None
        except Exception as failure:  # noqa: BLE001 - a failed child is reported, never raised into the parent
            return child, "", f"{type(failure).__name__}: {' '.join(str(failure).split())[:300]}"

    def clip(self, text: str) -> str:
        """``text`` within ``result_tokens`` tokens: when longer, its last paragraph (a child's conclusion)
        after "[...] " if that fits, else a little of its start and the rest from its end around " [...] "."""
        limit = self.config.result_tokens
        encoding = self.counter.encoding
        tokens = encoding.encode_ordinary(text)
        if len(tokens) <= limit:
            return text
        conclusion = f"[...] {text.rsplit(PARAGRAPH, 1)[-1].strip()}"
        if PARAGRAPH in text and len(encoding.encode_ordinary(conclusion)) <= limit:
            return conclusion
        room = limit - len(encoding.encode_ordinary(" [...] ")) - 2  # 2: a token may split differently at the seams
        head, tail = room // 4, room - room // 4  # most of it from the end, where the conclusion is
        return f"{encoding.decode(tokens[:head]).rstrip()} [...] {encoding.decode(tokens[-tail:]).lstrip()}"

    def _count_calls(self, child_log: SessionLog) -> None:
        for call in child_log.calls:
            self.log.calls.append(dataclasses.replace(call, purpose="internal", index=-1, turn=self.log.turn))
            self.log.summary_model_seconds += call.seconds


def fallback_answer(messages: list[AnyMessage], error: str | None) -> str:
    """A true, non-empty answer when the child wrote no final message."""
    why = f"the sub-agent failed ({error})" if error else "the sub-agent ended without a final message"
    last_result = next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)
    if last_result is not None:
        text = last_result.content if isinstance(last_result.content, str) else str(last_result.content)
        head = " ".join(text.split())[:300]
        return f"No answer: {why}. Its last tool result ({last_result.name or 'tool'}) began: {head}"
    calls = [call["name"] for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    return f"No answer: {why}" + (f"; it called {', '.join(calls)} with no result." if calls else "; it made no tool call.")


def make_task_tool(runner: SubagentRunner) -> BaseTool:
    """The ``task`` tool over one ``SubagentRunner``."""

    def task(description: str) -> str:
        return runner.run(description)

    limits = runner.config
    return StructuredTool.from_function(
        task, name="task",
        description=("Delegate self-contained work to a sub-agent with its own context; returns a short answer. "
                     f"At most {limits.max_tasks_per_turn} task calls per turn, {limits.max_concurrent} at a time."),
    )


def subagent_settings(config: SubagentConfig) -> dict[str, Any]:
    return config.model_dump()
