"""Intents as data: the rows of ``offline_intents.toml``, one scorer, and the planners registered by row name.

``ranked(text, tool_names)`` is the scorer: the rows whose cues are found in a request's
normalized text, best first (lower ``rank``, then more cues found, then table order). The row
format, and how another module adds an intent (``register_intent``), are in docs/offline-model.md
("Intents as data").
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CUE_FILE = Path(__file__).with_name("offline_intents.toml")

Planner = Callable[[Any, Any], list[Any] | None]
"""(clause, context) -> tasks, or None to let the next row plan it (offline_plan.Clause, Context, Task)."""
Answer = Callable[[Any, list[Any], Any], str]
"""(task, tool results, context) -> the reply text."""


@dataclass(frozen=True)
class Intent:
    """One row of the cue table (the fields: docs/offline-model.md, "Intents as data")."""

    name: str
    cues: tuple[str, ...] = ()
    needs_tools: tuple[str, ...] = ()
    min_score: int = 1
    rank: int = 0
    all: tuple[tuple[str, ...], ...] = ()
    none: tuple[str, ...] = ()
    guard: tuple[str, ...] = ()
    plan: str = ""
    task: str = ""
    reply: str = ""
    labels: tuple[str, ...] = ()

    def score(self, text: str) -> int | None:
        """How many cues are found; None when fewer than ``min_score``, a group of ``all`` has none or a ``none`` cue is found."""
        if any(_found(cue, text) for cue in self.none) or any(not any(_found(cue, text) for cue in group) for group in self.all):
            return None
        score = sum(1 for cue in self.cues if _found(cue, text))
        return score if score >= self.min_score else None

    def label(self, text: str) -> str:
        """The label of the first cue found (a row whose cues are a table of label = cue)."""
        return next(label for label, cue in zip(self.labels, self.cues, strict=True) if _found(cue, text))


_rows: dict[str, Intent] = {}
"""The cue table: the package's own rows (read on first use) and any added since."""
_planners: dict[str, Planner] = {}
_answers: dict[str, Answer] = {}


@cache
def _pattern(cue: str) -> re.Pattern[str]:
    return re.compile(cue[3:] if cue.startswith("re:") else r"(?<![\w])" + re.escape(cue.lower()) + r"(?![\w])")


def _found(cue: str, text: str) -> bool:
    return _pattern(cue).search(text) is not None


@cache
def data_file(name: str) -> dict[str, Any]:
    """One of the offline model's TOML files beside this module, parsed once."""
    return tomllib.loads(Path(__file__).with_name(name).read_text(encoding="utf-8"))


def table() -> dict[str, Any]:
    """The package's own cue file, parsed (its other sections are lists the planners and parsers read)."""
    return data_file(CUE_FILE.name)


def message(name: str, **values: Any) -> str:
    """The reply ``name`` of ``[messages]`` in the cue file, its ``{names}`` filled in."""
    return fill(table()["messages"][name], **values)


def fill(template: str, **values: Any) -> str:
    """A reply template filled in: ``values``, and the messages that have no ``{names}`` of their own (``{can_do}``)."""
    return template.format(**{key: text for key, text in table()["messages"].items() if "{" not in text} | values)


def read_cue_file(path: Path) -> list[Intent]:
    """The rows of one TOML cue file."""
    rows = table() if Path(path) == CUE_FILE else tomllib.loads(Path(path).read_text(encoding="utf-8"))
    return [_row(row) for row in rows.get("intent", [])]


def _row(row: dict[str, Any]) -> Intent:
    """A TOML row as an Intent (its ``cues`` may be a table of label = cue)."""
    cues = row.get("cues", ())
    fields = {key: tuple(map(tuple, value)) if key == "all" else tuple(value) if isinstance(value, list) else value
              for key, value in row.items() if key != "cues"}
    return Intent(**({"min_score": 1 if cues else 0} | fields), cues=tuple(cues.values() if isinstance(cues, dict) else cues),
                  labels=tuple(cues) if isinstance(cues, dict) else ())


def register_planner(name: str, planner: Planner, answer: Answer | None = None) -> None:
    """The planner (and answer) of the rows that plan as ``name``."""
    _planners[name] = planner
    if answer is not None:
        _answers[name] = answer


def register_intent(intent: Intent, planner: Planner, answer: Answer | None = None) -> None:
    """A row, its planner and its answer, in one call."""
    _rows[intent.name] = intent
    register_planner(intent.plan or intent.name, planner, answer)


def ranked(text: str, tool_names: set[str]) -> list[Intent]:
    """The rows found in a request's normalized text whose tools are bound, best first."""
    _read_own_rows()
    scored = []
    for order, intent in enumerate(_rows.values()):
        score = None if intent.needs_tools and not set(intent.needs_tools) & tool_names else intent.score(text)
        if score is not None:
            scored.append((intent.rank, -score, order, intent))
    return [intent for *_, intent in sorted(scored, key=lambda item: item[:3])]


def planner_for(intent: Intent) -> Planner | None:
    """The planner registered for a row (by its ``plan`` name, else its own), if any."""
    return _planners.get(intent.plan or intent.name)


def answer_for(kind: str) -> Answer | None:
    """The answer function registered for a task kind, if any."""
    return _answers.get(kind)


def row(name: str) -> Intent:
    """The row called ``name``."""
    _read_own_rows()
    return _rows[name]


@cache
def _read_own_rows() -> None:
    for intent in read_cue_file(CUE_FILE):
        _rows.setdefault(intent.name, intent)
