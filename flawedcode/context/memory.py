"""Budgeted memory across conversations: ``memory.md``, facts the user asked to keep.

The file is Markdown a person can read and edit, one fact per line::

    # Memory (facts the user asked to keep; edit freely)
    - I prefer answers in basis points
    - [correction] The desk's limit is 3.5%, not 3%

Rules:

- ``save_memory(fact, correction=False)`` appends a fact (the tool of the same name).
  A fact already there (same words, any case) is not written twice. A correction
  is marked ``[correction]``; it supersedes what it corrects by being newer and
  always wins a slot.
- The file is written atomically (a temporary file renamed into place); secrets are
  redacted before writing (``flawedcode.infra`` redaction), like everything written.
- **Injected within a budget** (``budget_tokens``, default 500, DeerFlow's
  ``max_injection_tokens``): ``select_facts`` takes every correction first (newest
  first), then the other facts newest first, while the rendered block fits; what does
  not fit is named by count in the block's header, never silently dropped. A single
  fact longer than the budget is cut to fit with "...". The block is never longer
  than the budget: a property test checks it.
- The block is part of the fixed prefix (after the system prompt), rendered as::

      <memory file="memory.md" facts="7 of 9" tokens="142 of 500">
      User notes (verbatim):
      - [correction] The desk's limit is 3.5%, not 3%
      - I prefer answers in basis points
      </memory>

  ``User notes (verbatim):`` is the section the offline teaching model reads notes from.
- **Reloaded when the file changes** (``MemoryStore.block()`` compares the file's
  size, mtime and inode before each model call: one ``stat``). A change made by hand
  or by another conversation shows at the next call. A fact this conversation saves
  is already in its messages, so to keep the prefix (and the prompt cache) stable it
  joins the block at the next compaction boundary or conversation (``refresh="boundary"``).
- A new conversation starts with the block: the file outlives the conversation.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from flawedcode.infra.redact import redact_text
from flawedcode.paths import write_atomically
from flawedcode.tokens import TokenCounter, count_text

DEFAULT_MEMORY_TOKENS = 500
"""Most tokens the memory block may take in every request (DeerFlow's ``max_injection_tokens`` at 6% of 8K)."""
FILE_HEADER = "# Memory (facts the user asked to keep; edit freely)"
CORRECTION_MARK = "[correction] "
NOTES_HEADER = "User notes (verbatim):"
FACT_LINE = re.compile(r"^\s*[-*]\s+(.+?)\s*$")


@dataclass(frozen=True)
class Fact:
    text: str
    correction: bool = False

    def line(self) -> str:
        return f"- {CORRECTION_MARK if self.correction else ''}{self.text}"


def parse_memory(text: str) -> list[Fact]:
    """The facts of a memory.md text, in file order (lines that are not '- ...' are ignored)."""
    facts = []
    for line in text.splitlines():
        match = FACT_LINE.match(line)
        if match:
            body = match.group(1)
            correction = body.lower().startswith(CORRECTION_MARK.strip().lower())
            body = body[len(CORRECTION_MARK.strip()):].strip() if correction else body
            if body:
                facts.append(Fact(body, correction))
    return facts


def render_block(facts: list[Fact], total: int, used_tokens: int, budget_tokens: int, file_name: str) -> str:
    lines = "\n".join(fact.line() for fact in facts)
    return (f'<memory file="{file_name}" facts="{len(facts)} of {total}" tokens="{used_tokens} of {budget_tokens}">\n'
            f"{NOTES_HEADER}\n{lines}\n</memory>")


def select_facts(facts: list[Fact], budget_tokens: int, counter: TokenCounter, file_name: str = "memory.md") -> str:
    """The memory block: corrections first, then the newest facts, within ``budget_tokens`` ('' if none fit)."""
    if not facts or budget_tokens <= 0:
        return ""
    newest_first = list(reversed(range(len(facts))))
    order = [i for i in newest_first if facts[i].correction] + [i for i in newest_first if not facts[i].correction]
    chosen: dict[int, Fact] = {}
    for index in order:
        trial = {**chosen, index: facts[index]}
        if _block_tokens(_shown(trial), len(facts), budget_tokens, counter, file_name) <= budget_tokens:
            chosen = trial
        elif not chosen:  # even one fact is too long alone: cut it to fit
            cut = _cut_to_fit(facts[index], len(facts), budget_tokens, counter, file_name)
            if cut is not None:
                chosen = {index: cut}
    if not chosen:
        return ""
    shown = _shown(chosen)
    used = _block_tokens(shown, len(facts), budget_tokens, counter, file_name)
    return render_block(shown, len(facts), used, budget_tokens, file_name)


def _shown(chosen: dict[int, Fact]) -> list[Fact]:
    """Corrections first (they win), then the rest, each group in file order."""
    ordered = [chosen[i] for i in sorted(chosen)]
    return [fact for fact in ordered if fact.correction] + [fact for fact in ordered if not fact.correction]


def _block_tokens(facts: list[Fact], total: int, budget_tokens: int, counter: TokenCounter, file_name: str) -> int:
    # the header names the count itself; a 4-digit placeholder keeps the count an upper bound
    return count_text(render_block(facts, total, 9999, budget_tokens, file_name), counter.encoding_name)


def _cut_to_fit(fact: Fact, total: int, budget_tokens: int, counter: TokenCounter, file_name: str) -> Fact | None:
    words = fact.text.split()
    low, high, best = 0, len(words), None
    while low <= high:
        middle = (low + high) // 2
        candidate = Fact(" ".join(words[:middle]) + " ...", fact.correction)
        if _block_tokens([candidate], total, budget_tokens, counter, file_name) <= budget_tokens:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best if best is not None and best.text != " ..." else None


def _signature(path: Path) -> tuple[int, int, int]:
    try:
        stat = path.stat()
    except OSError:
        return (-1, -1, -1)
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass
class MemoryStore:
    """One ``memory.md`` and the block injected from it (rules in the module docstring)."""

    path: Path
    budget_tokens: int = DEFAULT_MEMORY_TOKENS
    counter: TokenCounter = field(default_factory=TokenCounter)
    _signature: tuple[int, int, int] | None = field(default=None, repr=False)
    _own_write: tuple[int, int, int] | None = field(default=None, repr=False)
    _block: str = field(default="", repr=False)
    reloads: int = 0
    select: Any = None
    """Optional ``select(facts, budget_tokens) -> facts`` in place of ``select_facts``'s choice (lesson 6 builds one);
    a block it makes that is over the budget falls back to ``select_facts``."""

    def facts(self) -> list[Fact]:
        try:
            return parse_memory(self.path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return []

    def block(self, at_boundary: bool = False) -> str:
        """The memory block for the next request: reread when the file changed (by someone else, or at a boundary)."""
        signature = _signature(self.path)
        changed = signature != self._signature
        ours = signature == self._own_write  # our own save: already in the conversation
        if self._signature is None or (changed and (not ours or at_boundary)):
            self._block = self._select(self.facts())
            self._signature = signature
            self.reloads += 1
        return self._block

    def _select(self, facts: list[Fact]) -> str:
        if self.select is None or not facts:
            return select_facts(facts, self.budget_tokens, self.counter, self.path.name)
        chosen = list(self.select(list(facts), self.budget_tokens) or [])
        block = render_block(chosen, len(facts), 0, self.budget_tokens, self.path.name) if chosen else ""
        if count_text(block, self.counter.encoding_name) > self.budget_tokens:
            return select_facts(facts, self.budget_tokens, self.counter, self.path.name)
        return block

    def save(self, fact: str, correction: bool = False) -> str:
        """Append a fact (the tool's result text); a fact already kept is not written twice."""
        text = " ".join(redact_text(fact).split())
        if not text:
            return "Error: nothing to remember: the fact is empty."
        existing = self.facts()
        if any(item.text.lower() == text.lower() and item.correction == correction for item in existing):
            return f"Already in memory: {text!r}."
        lines = [FILE_HEADER, *(item.line() for item in existing), Fact(text, correction).line()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, "\n".join(lines) + "\n")
        except OSError as error:
            return f"Error: could not save to {self.path.name} ({error.strerror or error}); nothing was changed."
        self._own_write = _signature(self.path)
        kind = "correction" if correction else "fact"
        return f"Saved to {self.path.name} as a {kind}: {text!r}. It will be in memory in new conversations."


def make_save_memory_tool(store: MemoryStore) -> BaseTool:
    """The ``save_memory`` tool over one ``MemoryStore``."""

    def save_memory(fact: str, correction: bool = False) -> str:
        return store.save(fact, correction)

    return StructuredTool.from_function(
        save_memory, name="save_memory",
        description="Keep a fact the user asked you to remember, for later conversations (correction=true if it corrects one).",
    )


def same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return first.resolve() == second.resolve()
