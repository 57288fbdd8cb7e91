"""Intents as data: cue rows in ``offline_intents.toml``, one scorer, and a planner registered per intent.

A row of the table (``flawedcode/models/offline_intents.toml``, or a TOML file of your own given to
``add_cue_file``)::

    [[intent]]
    name = "context_window"                    # the planner registered under this name plans it
    cues = ["context window", "how full"]      # phrases, whole words, case ignored; "re:" starts a regex
    needs_tools = []                           # tried only when one of these tools is bound ([] = always)
    min_score = 1                              # how many cues must be found

The scorer (``best_intent``) scores every row that has a registered planner and a bound tool: one
point per cue found in the request's normalized text (offline_words.normalize: lower case, typos
fixed). The highest score at or above ``min_score`` wins; a tie goes to the row read first. These
rows are tried **before** the built-in routing table (``offline_intents.INTENT_RULES``), so a row
is how a module teaches the offline model a new kind of request without editing its parser.

Adding an intent from another module (v3's ``write_todos``, for example)::

    from flawedcode.models.offline_cues import Intent, register_intent
    from flawedcode.models.offline_plan import Step, Task

    def plan_todos(clause, context):          # Clause and Context: offline_plan.py
        return [Task("write_todos", steps=[Step("write_todos", {"todos": [...]})])]

    def answer_todos(task, results, context):  # results: the ToolResults of the task's steps
        return "I wrote the plan: ..."

    register_intent(Intent("write_todos", cues=("todo", "to-do list", "plan the steps"),
                           needs_tools=("write_todos",)), plan_todos, answer=answer_todos)

A ``Step``'s intent is a tool name when it is not one of ``offline_plan.TOOL_NAMES_BY_INTENT``'s
intents; its roles are filled by the bound tool's own parameter names (``fill_arguments``). The
task's ``kind`` selects the answer function (without one, each tool result is quoted). Register at
import time of the module that adds the tool; ``needs_tools`` keeps the intent silent for agents
that do not bind it. Rows may instead live in your own TOML file: ``add_cue_file(path)`` and
``register_planner(name, planner, answer=...)``.
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

Planner = Callable[[Any, Any], list[Any]]
"""(clause, context) -> tasks (offline_plan.Clause, Context, Task)."""
Answer = Callable[[Any, list[Any], Any], str]
"""(task, tool results, context) -> the reply text."""


@dataclass(frozen=True)
class Intent:
    """One row of the cue table."""

    name: str
    cues: tuple[str, ...]
    needs_tools: tuple[str, ...] = ()
    min_score: int = 1

    def score(self, text: str) -> int:
        return sum(1 for cue in self.cues if _pattern(cue).search(text))


_rows: dict[str, Intent] = {}
"""The cue table: the package's own rows (read on first use) and any added since."""
_planners: dict[str, Planner] = {}
_answers: dict[str, Answer] = {}


@cache
def _pattern(cue: str) -> re.Pattern[str]:
    if cue.startswith("re:"):
        return re.compile(cue[3:])
    return re.compile(r"(?<![\w])" + re.escape(cue.lower()) + r"(?![\w])")


def read_cue_file(path: Path) -> list[Intent]:
    """The rows of one TOML cue file."""
    rows = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("intent", [])
    return [Intent(row["name"], tuple(row.get("cues", ())), tuple(row.get("needs_tools", ())), int(row.get("min_score", 1)))
            for row in rows]


def add_cue_file(path: Path) -> None:
    """Add (or replace, by name) the rows of a TOML cue file."""
    for intent in read_cue_file(path):
        _rows[intent.name] = intent


def register_planner(name: str, planner: Planner, answer: Answer | None = None) -> None:
    """The planner (and answer) for the row called ``name``."""
    _planners[name] = planner
    if answer is not None:
        _answers[name] = answer


def register_intent(intent: Intent, planner: Planner, answer: Answer | None = None) -> None:
    """A row, its planner and its answer, in one call."""
    _rows[intent.name] = intent
    register_planner(intent.name, planner, answer)


def best_intent(text: str, tool_names: set[str]) -> tuple[str, Planner] | None:
    """The row that wins for a request's normalized text, with its planner; None when no row reaches its minimum."""
    _read_own_rows()
    best: tuple[int, str] | None = None
    for name, intent in _rows.items():
        if name not in _planners or (intent.needs_tools and not set(intent.needs_tools) & tool_names):
            continue
        score = intent.score(text)
        if score >= intent.min_score and (best is None or score > best[0]):
            best = (score, name)
    return (best[1], _planners[best[1]]) if best else None


def answer_for(kind: str) -> Answer | None:
    """The answer function registered for a task kind, if any."""
    return _answers.get(kind)


@cache
def _read_own_rows() -> None:
    for intent in read_cue_file(CUE_FILE):
        _rows.setdefault(intent.name, intent)
