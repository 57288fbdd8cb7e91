"""Two peers that show the model its budget, run as their authors describe them, on the same model and tools.

- ``anthropic-context-awareness``: Anthropic's *context awareness* (Claude Sonnet 4.5 and later; documented
  at https://platform.claude.com/docs/en/build-with-claude/context-windows, "Context awareness", and its
  successor for a whole agentic loop, https://platform.claude.com/docs/en/build-with-claude/task-budgets).
  At the start of the conversation the model is told its window, ``<budget:token_budget>W</budget:token_budget>``
  (here: at the end of the system prompt, W = the budget); after each tool call it is told what is left,
  ``<system_warning>Token usage: N/W; R remaining</system_warning>`` (N: the request about to be sent, without
  this note; R = max(W - N, 0)). Nothing else changes: v1's memory (the whole history goes back every turn),
  no compaction. The note is a system message after the tool results of each step, kept in the history (it is
  written once and never rewritten, so it costs its tokens and no cache break). What the model does with the
  number is up to the model; the offline teaching model has no tool here to act with, so the peer measures
  what showing the budget costs.
- ``codex-context-windows``: Codex's model-managed context windows (``Feature::TokenBudget`` in
  openai/codex codex-rs/core: PR #27438 "token budget context", #27488 the ``new_context`` tool, #29255 the
  reminder, #29295, #29494 the ``<context_window>`` lineage block, #29743 "reset context for token budget
  compaction", #39827 the notes and history tools; the config reference: "rather than repeatedly compressing
  context into a single summary, it uses notes and searchable history"). Every window opens with the lineage
  block and the window's size (a system message, ``prompts/peers/codex_budget_notes.toml``); the system prompt
  gains the guidance of ``prompts/peers/codex_context_windows.md``; the model gets Codex's eleven tools
  (``new_context``, ``get_context_remaining``, ``notes_*`` and ``history_*``, with Codex's descriptions).
  The harness:

  1. ``auto_compact_token_limit`` is 90% of the window (Codex's default share, as ``codex-compaction``); when
     ``reminder_threshold_tokens`` (a quarter of that limit) or fewer remain before it, one reminder per
     window (a system message, ``{n_remaining}`` expanded);
  2. at the limit, once per window, the fallback prompt "Write notes immediately." and a fallback buffer
     (up to the budget) in which the model may still act;
  3. a new window starts (no summary call: "skips model/server summarization and installs a fresh context
     window") when the model called ``new_context``, or at the limit after the fallback, or when a request
     would exceed the budget, unless the window holds nothing but the turn being worked on (a new window would
     start that turn again, and again: the request is sent as it is): the old window is archived word for word (``archives/<conversation>/
     context_windows/wN.md``, what ``history_*`` read), and the new one holds its lineage block and the
     request being worked on. Codex carries nothing of the old window; the request is the one exception made
     here (Codex's own first request of a reset window carries no task state, openai/codex issue #43335, and
     the offline model cannot recover a request from notes), documented as such.

  Notes are files under ``archives/<conversation>/notes/`` (Codex keeps them on its backend), so a fact a
  note holds counts as recoverable. The offline teaching model drives the tools with one generic rule
  (``flawedcode/models/offline_windows.py``): a system note after the request that says the window is
  running out (or asks for notes), with a tool offered that writes notes and one that starts a new context
  window, makes it write the summary it would write of what it sees, then start the new window; in a window
  whose context names a previous one, it reads its notes before anything else, and reads them as a summary.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from flawedcode.bench.field_peers import CODEX_AUTO_COMPACT_SHARE, replace_history
from flawedcode.bench.peers import PeerAgent
from flawedcode.config import PROMPTS_DIR
from flawedcode.telemetry import EventKind

PEER_PROMPTS = PROMPTS_DIR / "peers"

# --- Anthropic: context awareness ------------------------------------------------------------------

BUDGET_TAG = "<budget:token_budget>{window}</budget:token_budget>"
"""What the model is told of its window at the start (Anthropic's tag)."""
USAGE_WARNING = "<system_warning>Token usage: {used}/{window}; {remaining} remaining</system_warning>"
"""What it is told after each tool call (Anthropic's format)."""


def usage_warning(used: int, window: int) -> str:
    return USAGE_WARNING.format(used=used, window=window, remaining=max(window - used, 0))


def needs_usage_warning(messages: list[AnyMessage]) -> bool:
    """True when the last message is a tool result: the step's results are in and no note follows them yet."""
    return bool(messages) and isinstance(messages[-1], ToolMessage)


class UsageWarningMiddleware(AgentMiddleware):
    """After each step's tool results, one ``<system_warning>`` note with the request's size (kept in the history)."""

    def __init__(self, agent: PeerAgent) -> None:
        super().__init__()
        self.agent = agent

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        agent, messages = self.agent, list(state["messages"])
        if not needs_usage_warning(messages):
            return None
        used = agent.fixed_tokens + agent.counter.count_messages(messages)
        return {"messages": [SystemMessage(usage_warning(used, agent.budget_tokens))]}


class AnthropicContextAwarenessPeer(PeerAgent):
    """Anthropic's context awareness: the window at the start, the usage after each tool call; v1's memory."""

    version = "anthropic-context-awareness"

    def prepare(self) -> None:
        tag = BUDGET_TAG.format(window=self.budget_tokens)
        self.config = self.config.model_copy(update={"system_prompt": f"{self.config.system_prompt.rstrip()}\n\n{tag}\n"})

    def strategy(self) -> dict[str, Any]:
        return {"source": "Anthropic, Context windows: context awareness (platform.claude.com/docs/en/build-with-claude/"
                          "context-windows); task budgets (.../task-budgets)",
                "start": BUDGET_TAG.format(window=self.budget_tokens) + " at the end of the system prompt",
                "after_each_tool_call": USAGE_WARNING, "memory": "v1's (the whole history, every turn)",
                "note_kept_in_history": True}

    def build_middleware(self) -> list[AgentMiddleware]:
        return [UsageWarningMiddleware(self)]


# --- Codex: model-managed context windows -------------------------------------------------------



@functools.cache
def texts() -> dict[str, Any]:
    """What the peer shows the model (``prompts/peers/codex_budget_notes.toml``), read on first use."""
    return tomllib.loads((PEER_PROMPTS / "codex_budget_notes.toml").read_text(encoding="utf-8"))

REMINDER_SHARE = 0.25
"""``reminder_threshold_tokens`` as a share of the automatic limit (Codex reads it from per-model metadata)."""
MAX_NOTE_BYTES = 65_536
HISTORY_ITEM_CHARS = 2_000
HISTORY_MAX_ITEMS = 20


class ContextWindows:
    """One thread's windows and notes: what the middleware rolls over and what the eleven tools read and write."""

    def __init__(self, folder: Path, thread: str) -> None:
        self.folder, self.thread = folder, thread
        self.number = 1
        self.archived: dict[str, list[tuple[str, str]]] = {}
        self.new_window_requested = False
        self.reminded = self.fallback_given = False
        self.tokens_left = 0

    @property
    def current(self) -> str:
        return f"w{self.number}"

    def block(self, window_tokens: int, limit_tokens: int) -> str:
        previous = texts()["previous_line"].format(previous=f"w{self.number - 1}") if self.number > 1 else ""
        return texts()["window"].format(thread=self.thread, first="w1", current=self.current, previous_line=previous,
                                      window_tokens=f"{window_tokens:,}", limit_tokens=f"{limit_tokens:,}")

    def archive(self, messages: list[AnyMessage]) -> Path:
        """Keep the closing window word for word (one item per message) and move to the next one."""
        items = [item_of(message) for message in messages]
        self.archived[self.current] = items
        path = self.folder / "context_windows" / f"{self.current}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(f"## item {number} ({role})\n{text}" for number, (role, text) in enumerate(items, 1)),
                        encoding="utf-8")
        self.number += 1
        self.new_window_requested = self.reminded = self.fallback_given = False
        return path

    def note_path(self, path: str) -> Path | None:
        parts = Path(path.strip().lstrip("/")).parts
        if not parts or any(part in ("..", ".") for part in parts):
            return None
        return self.folder / "notes" / Path(*parts)


def item_of(message: BaseMessage) -> tuple[str, str]:
    role = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}.get(message.type, message.type)
    text = message.text
    if isinstance(message, AIMessage) and message.tool_calls:
        text = "\n".join([text, *(f"[call {call['name']} {call['args']}]" for call in message.tool_calls)]).strip()
    return role, text


def make_window_tools(windows: ContextWindows) -> list[BaseTool]:
    """Codex's eleven model-facing tools over one thread's windows and notes."""

    def new_context() -> str:
        windows.new_window_requested = True
        return texts()["new_context_result"]

    def get_context_remaining() -> str:
        return texts()["remaining"].format(n_remaining=f"{windows.tokens_left:,}")

    def notes_write_file(path: str, text: str) -> str:
        target = windows.note_path(path)
        if target is None:
            return f"Error: invalid notes path {path!r}"
        if len(text.encode("utf-8")) > MAX_NOTE_BYTES:
            return f"Error: notes are limited to {MAX_NOTE_BYTES:,} UTF-8 bytes"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return f"Wrote {path} ({len(text.splitlines())} lines)."

    def notes_append_to_file(path: str, text: str) -> str:
        target = windows.note_path(path)
        if target is None:
            return f"Error: invalid notes path {path!r}"
        before = target.read_text(encoding="utf-8") if target.is_file() else ""
        return notes_write_file(path, f"{before}\n{text}" if before else text)

    def notes_read_file(path: str, start_line: int | None = None, stop_line: int | None = None) -> str:
        target = windows.note_path(path)
        if target is None or not target.is_file():
            return f"Error: note not found: {path}"
        lines = target.read_text(encoding="utf-8").splitlines()
        first = (start_line or 1) - 1
        return "\n".join(lines[first: stop_line or len(lines)])

    def notes_list_files_by_prefix(prefix: str = "") -> str:
        root = windows.folder / "notes"
        names = sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()) if root.is_dir() else []
        shown = [name for name in names if name.startswith(prefix)]
        return "\n".join(f"- {name}" for name in shown) or "No notes."

    def notes_search_contents(query: str) -> str:
        root = windows.folder / "notes"
        hits = [f"{path.relative_to(root).as_posix()}:{number}: {line}" for path in sorted(root.rglob("*")) if path.is_file()
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if query in line] if root.is_dir() else []
        return "\n".join(hits[:HISTORY_MAX_ITEMS]) or f"No notes matched {query!r}."

    def history_list_windows() -> str:
        rows = [f"{window}: {len(items)} items" for window, items in windows.archived.items()]
        return "\n".join([*rows, f"{windows.current}: (current)"])

    def history_list_items(window_id: str | None = None, limit: int = HISTORY_MAX_ITEMS) -> str:
        rows = [f"[{window}] {number} role={role}: {' '.join(text.split())[:120]}"
                for window, items in windows.archived.items() if window_id in (None, window)
                for number, (role, text) in enumerate(items, 1)]
        return "\n".join(rows[-limit:]) or "No matches."

    def history_read_item(window_id: str, item_id: int) -> str:
        items = windows.archived.get(window_id, [])
        if not 1 <= item_id <= len(items):
            return "No matches."
        role, text = items[item_id - 1]
        return f"[{window_id}] {item_id} role={role}\n{text[:HISTORY_ITEM_CHARS * 10]}"

    def history_search_contents(query: str, window_id: str | None = None) -> str:
        rows = [f"[{window}] {number} role={role}: {text[:HISTORY_ITEM_CHARS]}"
                for window, items in windows.archived.items() if window_id in (None, window)
                for number, (role, text) in enumerate(items, 1) if query in text]
        return "\n".join(rows[:HISTORY_MAX_ITEMS]) or "No matches."

    functions: list[Callable[..., str]] = [
        new_context, get_context_remaining, notes_write_file, notes_append_to_file, notes_read_file,
        notes_list_files_by_prefix, notes_search_contents, history_list_windows, history_list_items,
        history_read_item, history_search_contents]
    return [tool(function, description=texts()["descriptions"][function.__name__]) for function in functions]


class ContextWindowMiddleware(AgentMiddleware):
    """Codex's token-budget harness: reminder, fallback prompt, and a fresh window (no summary) when due."""

    def __init__(self, agent: CodexContextWindowsPeer) -> None:
        super().__init__()
        self.agent = agent

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        agent, windows, messages = self.agent, self.agent.windows, list(state["messages"])
        tokens = agent.fixed_tokens + agent.counter.count_messages(messages)
        limit = agent.limit_tokens()
        windows.tokens_left = max(limit - tokens, 0)
        fits_fallback = tokens + agent.counter.count_message(SystemMessage(texts()["fallback"])) <= agent.budget_tokens
        if windows.new_window_requested or (tokens >= limit and (windows.fallback_given or not fits_fallback)):
            return self.new_window(messages, tokens)
        if tokens >= limit:
            windows.fallback_given = True
            return {"messages": [SystemMessage(texts()["fallback"])]}
        if not windows.reminded and windows.tokens_left <= agent.reminder_tokens():
            windows.reminded = True
            return {"messages": [SystemMessage(texts()["reminder"].format(n_remaining=f"{windows.tokens_left:,}"))]}
        return None

    def new_window(self, messages: list[AnyMessage], tokens: int) -> dict[str, Any] | None:
        agent, windows = self.agent, self.agent.windows
        at = next((index for index in range(len(messages) - 1, -1, -1) if isinstance(messages[index], HumanMessage)), None)
        if at is None or all(isinstance(message, SystemMessage) for message in messages[:at]):
            windows.new_window_requested = False
            return None  # the window holds only the turn being worked on: a new one would start it again, and again
        request = messages[at]
        path = windows.archive(messages)
        fresh = [SystemMessage(agent.window_block()), request]
        agent.log.record_event(EventKind.COMPACT, tokens, agent.fixed_tokens + agent.counter.count_messages(fresh),
                               strategy="codex-new-window", window=windows.current,
                               archive=path.relative_to(agent.workspace.archive_dir).as_posix())
        return replace_history(fresh)


class CodexContextWindowsPeer(PeerAgent):
    """Codex's model-managed context windows: notes, searchable history, ``new_context``; no summaries."""

    version = "codex-context-windows"

    def prepare(self) -> None:
        folder = self.workspace.archive_dir / self.conversation_id
        self.windows = ContextWindows(folder, self.conversation_id)
        guidance = (PEER_PROMPTS / "codex_context_windows.md").read_text(encoding="utf-8").strip()
        self.config = self.config.model_copy(update={"system_prompt": f"{self.config.system_prompt.rstrip()}\n\n{guidance}\n"})

    def build_tools(self) -> list[BaseTool]:
        return [*super().build_tools(), *make_window_tools(self.windows)]

    def limit_tokens(self) -> int:
        """Codex's ``auto_compact_token_limit``: 90% of the window."""
        return int(CODEX_AUTO_COMPACT_SHARE * self.budget_tokens)

    def reminder_tokens(self) -> int:
        return int(REMINDER_SHARE * self.limit_tokens())

    def window_block(self) -> str:
        return self.windows.block(self.budget_tokens, self.limit_tokens())

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = self.limit_tokens()
        return [ContextWindowMiddleware(self)]

    def send(self, text: str) -> str:
        if not self.messages:  # the first window's initial context
            self.messages = [SystemMessage(self.window_block())]
        return self.run_turn(self.messages, text)

    def strategy(self) -> dict[str, Any]:
        return {"source": "openai/codex codex-rs/core Feature::TokenBudget (PRs #27438, #27488, #29255, #29295, #29494, "
                          "#29743, #39827)",
                "auto_compact_token_limit": self.limit_tokens(), "reminder_threshold_tokens": self.reminder_tokens(),
                "fallback_prompt": texts()["fallback"], "summary_calls": "none: a new window starts without a summary",
                "tools": list(texts()["descriptions"]), "carried_into_a_new_window": "its lineage block and the request being worked on",
                "notes_and_history": "archives/<conversation>/notes/, archives/<conversation>/context_windows/",
                "texts": ["prompts/peers/codex_budget_notes.toml", "prompts/peers/codex_context_windows.md"]}


BUDGET_PEERS: dict[str, type[PeerAgent]] = {peer.version: peer for peer in (AnthropicContextAwarenessPeer, CodexContextWindowsPeer)}
"""The peers that show the model its budget, by name."""

__all__ = ["BUDGET_PEERS", "ContextWindows", "make_window_tools", "needs_usage_warning", "usage_warning"]
