"""The offline model's plan vocabulary: clauses, steps, tasks and what a plan may know about the conversation.

A ``Clause`` is one request of a message, read; a ``Step`` one tool call by intent and argument roles
(``fill_arguments`` spells them as the bound tool's schema does); a ``Task`` what one clause asks for
(``calls``, ``reply``, ``data``, ``find_file``, ``function``, ``fix``, ``recall``, ...); the ``Context``
what planning may read (vocabulary, bound tools, window, earlier messages, what earlier clauses named).
"""

from __future__ import annotations

import re
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.models.offline_cues import table
from flawedcode.models.offline_dates import form, read_days
from flawedcode.models.offline_entities import Mentions, Vocabulary
from flawedcode.models.offline_periods import Period, read_periods
from flawedcode.models.offline_words import COMMON_WORDS, normalize

TOOL_NAMES_BY_INTENT: dict[str, tuple[str, ...]] = {intent: tuple(names) for intent, names in table()["route"]["tools"].items()}
"""Which tool names can carry out an intent (ours first, then Deep Agents' names)."""
PARAMETER_NAMES_BY_ROLE: dict[str, tuple[str, ...]] = {role: tuple(names) for role, names in table()["route"]["roles"].items()}
"""How a role is spelled in different tools' schemas: arguments are filled by the schema's own names."""
PATTERNS = {name: form(pattern, {"{verbs}": "|".join(table()["route"]["action_verbs"])}) for name, pattern in table()["route"]["patterns"].items()}
"""The shapes a message is split and read by (``[route.patterns]``): paths, code, quotes, connectors, goals, clause breaks."""
PATH_PATTERN, CODE_BLOCK, QUOTED, LEADING_CONNECTORS, GOAL_START, CLAUSE_BREAK = (PATTERNS[name] for name in (
    "path", "code_block", "quoted", "leading_connectors", "goal_start", "clause_break"))
KNOWN_WORDS = frozenset(table()["route"]["known_words"])
"""Words never corrected as typos."""


@dataclass
class Step:
    """One planned tool call: an intent and its arguments by role."""

    intent: str
    roles: dict[str, Any] = field(default_factory=dict)


ToolResult = namedtuple("ToolResult", "name args content")
"""One tool call after the latest request and what came back: the tool's name, its arguments (a dict) and the result's text."""


@dataclass
class Task:
    """What one clause asks for (see the module docstring for the kinds)."""

    kind: str
    steps: list[Step] = field(default_factory=list)
    text: str = ""
    ask: Any = None
    path: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    rule: str = ""


def reply(text: str) -> Task:
    return Task("reply", text=text)


def calls(*steps: Step, path: str | None = None) -> Task:
    return Task("calls", steps=list(steps), path=path)


@dataclass
class Context:
    """What planning may read."""

    vocabulary: Vocabulary
    tool_names: set[str] = field(default_factory=set)
    window_tokens: int = DEFAULT_BUDGET_TOKENS
    earlier: list[BaseMessage] = field(default_factory=list)
    truncated: bool = False
    previous_ask: Any = None
    recent_asks: list[Any] = field(default_factory=list)  # data asks of the last few requests, oldest first
    previous_rule: str = ""
    previous_frames: list[Any] = field(default_factory=list)
    last_path: str | None = None
    catalog_root: str | None = None
    clause_count: int = 1
    system: list[BaseMessage] = field(default_factory=list)
    input_tokens: int = 0
    """The exact input token count of the request being answered (system prompt, tools, visible messages)."""


@dataclass
class Clause:
    """One request inside a message, read."""

    text: str
    norm: str
    mentions: Mentions
    periods: list[Period]
    rest: str
    code: str | None = None
    paths: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    date_problems: list[str] = field(default_factory=list)
    """Days written that are not one real day (ambiguous, impossible): said instead of any figure."""


def has_any(text: str, phrases: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(re.search(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])", lowered) for phrase in phrases)


HELD = re.compile(r"\x00(\d+)\x00")


def split_clauses(text: str) -> list[str]:
    """The requests in one message, in order (code blocks are never split, nor is a sentence stating a goal)."""
    blocks: list[str] = []

    def hold(match: re.Match[str]) -> str:
        blocks.append(match.group(0))
        return f"\x00{len(blocks) - 1}\x00"

    held = QUOTED.sub(hold, CODE_BLOCK.sub(hold, text.replace("\x00", " ")))  # NUL marks the held parts
    sentences = re.split(r"(?<=[.!?;])\s+(?=[A-Za-z0-9(])|;|\n+(?!\s*\x00)", held)
    parts: list[str] = []
    for sentence in (sentence for sentence in sentences if sentence.strip(" ,.")):
        parts += [sentence] if GOAL_START.match(sentence) else [part for part in CLAUSE_BREAK.split(sentence) if part]
    clauses = []
    for part in parts:
        part = LEADING_CONNECTORS.sub("", part.strip(" ,")).strip()
        for _ in range(2):  # a quote inside a code block was held twice; a placeholder never holds another
            part = HELD.sub(lambda match: blocks[int(match.group(1))], part)
        if part.strip(" .?!,:"):
            clauses.append(part)
    return clauses or [text]


def read_clause(text: str, vocabulary: Vocabulary, default_year: int | None = None) -> Clause:
    """One request of a message, read: its days and periods, what it names, its code, paths and quoted words."""
    code_match = CODE_BLOCK.search(text)
    code = next(group for group in code_match.groups() if group is not None) if code_match else None
    outside_code = CODE_BLOCK.sub(" ", text)
    days = read_days(normalize(outside_code, vocabulary.known_words | KNOWN_WORDS | COMMON_WORDS))
    norm = days.text
    end = max((ref.end for ref in vocabulary.frames if ref.end), default="2024-12-31")
    periods, rest = read_periods(norm, end, default_year)
    paths = [match.group(1).rstrip(".") for match in PATH_PATTERN.finditer(outside_code)]
    quoted = [match.group(1) for match in QUOTED.finditer(outside_code)]
    return Clause(text, norm, vocabulary.find(rest), periods, rest, code, list(dict.fromkeys(paths)), quoted, days.problems)


def tool_name_for(intent: str, tool_schemas: dict[str, dict[str, Any]] | set[str]) -> str | None:
    """The bound tool that carries out an intent (an intent outside the table is a tool's own name), or None."""
    return next((name for name in TOOL_NAMES_BY_INTENT.get(intent, (intent,)) if name in tool_schemas), None)


def fill_arguments(schema: dict[str, Any], roles: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments named as this tool's schema names them; None if a required one has no value."""
    parameters = schema.get("function", {}).get("parameters", {})
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    arguments: dict[str, Any] = {}
    for role, value in roles.items():
        name = next((candidate for candidate in PARAMETER_NAMES_BY_ROLE.get(role, (role,)) if candidate in properties
                     and candidate not in arguments), None)
        if name is not None and value is not None:
            arguments[name] = value
    if "command" in arguments and "code" in arguments:
        del arguments["command"]
    return arguments if required <= set(arguments) else None
