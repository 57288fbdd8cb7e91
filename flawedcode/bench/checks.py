"""Evaluate a task's declarative checks against one reply (and the run's workspace).

``evaluate(check, reply, workspace_root)`` returns a ``CheckResult``. Text
checks ignore case and collapse whitespace, so a reply that wraps a line still
passes. ``has_number`` finds numbers such as ``4.8944``, ``-0.25``, ``1,250``
or ``13550.3%`` (dates like ``2024-12-31`` do not count as numbers).
``goal_kept(reply, goal)`` is the goal-retention probe. A ``regex`` check runs with
a time limit (``REGEX_SECONDS``), and a step's regex checks share one
(``REGEX_SECONDS_PER_REPLY``); a pattern that runs out of time fails, and its
result says so in ``note``. ``evaluate_step`` runs a step's checks under that shared limit.

A ``figures`` check is judged against the full data, never against what the agent
was shown: ``expected_figures`` loads the last ``rows`` rows of the dataframe from
the catalog and lists every figure the reply must state: the first and last date,
and per column its mean, min (and its date), max (and its date) and latest value.
A column's figures count only where the reply speaks of that column: from each
mention of its name to the next mention of another column asked (the whole reply
when one column was asked and it is not named), so a figure of one column never
counts for another. A figure is stated when a number there is within
``FIGURE_TOLERANCE`` (half of the fourth decimal) of it, so ``4.5297`` and ``4.53``
state 4.5300 but ``4.53`` does not state 4.5297; a date is stated when it appears
there (for a min or max reached on several days, any of them); the first and last
date loaded may appear anywhere. The result's ``score`` is
the share of figures stated (1.0: as complete as the data), ``missing`` the first
few that were not. The check passes only at 1.0.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex

from flawedcode.bench.tasks import REGEX_SECONDS, REGEX_SECONDS_PER_REPLY, Check, Figures, NumberRange
from flawedcode.catalog import Catalog
from flawedcode.figures import figures, pairs

NUMBER = re.compile(r"(?<![\w.-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w-])|(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")


@dataclass
class CheckResult:
    """The outcome of one check on one step."""

    step: int
    kind: str
    expected: Any
    passed: bool
    note: str | None = None  # why a check could not be decided (a regex that ran out of time)
    score: float | None = None  # figures: the share of the expected figures the reply stated
    missing: list[str] = field(default_factory=list)  # figures: the first few it did not state

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        for optional in ("note", "score", "missing"):
            if not record[optional]:
                del record[optional]
        if self.score is not None:
            record["score"] = self.score
        return record


FIGURE_TOLERANCE = 0.5e-4
"""A number states a figure when it is this close: the figure to the four decimals the tool prints."""
MISSING_SHOWN = 5
"""How many missing figures a result names."""


@dataclass(frozen=True)
class Expected:
    """One figure a reply must state: a number (``value``) or a date (any of ``dates``), and its name."""

    label: str
    column: str | None = None
    value: float | None = None
    dates: tuple[str, ...] = ()


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def numbers_in(text: str) -> list[float]:
    """Every number stated in ``text`` (thousands separators allowed; dates excluded)."""
    return [float(match.replace(",", "")) for match in NUMBER.findall(text)]


def evaluate(check: Check, reply: str, workspace_root: Path | None, step: int = 0,
             regex_seconds: float | None = None) -> CheckResult:
    if check.figures is not None:
        return evaluate_figures(check.figures, reply, step)
    regex_seconds = REGEX_SECONDS if regex_seconds is None else regex_seconds
    if check.kind == "regex" and regex_seconds <= 0:
        return CheckResult(step=step, kind=check.kind, expected=check.expected, passed=False,
                           note=f"the step's regex checks used up their {REGEX_SECONDS_PER_REPLY:g} s; counted as failed")
    try:
        passed, note = passes(check, reply, workspace_root, regex_seconds), None
    except TimeoutError:
        passed, note = False, f"the regex took more than {regex_seconds:.2g} s on this reply; counted as failed"
    return CheckResult(step=step, kind=check.kind, expected=check.expected, passed=passed, note=note)


def evaluate_step(checks: Sequence[Check], reply: str, workspace_root: Path | None, step: int = 0) -> list[CheckResult]:
    """Every check of one step, its regex checks sharing ``REGEX_SECONDS_PER_REPLY`` between them."""
    deadline, results = time.monotonic() + REGEX_SECONDS_PER_REPLY, []
    for check in checks:
        seconds = min(REGEX_SECONDS, deadline - time.monotonic())
        results.append(evaluate(check, reply, workspace_root, step, regex_seconds=seconds))
    return results


def passes(check: Check, reply: str, workspace_root: Path | None, regex_seconds: float | None = None) -> bool:
    kind, value = check.kind, getattr(check, check.kind)
    if kind == "contains":
        return normalize(value) in normalize(reply)
    if kind == "not_contains":
        return normalize(value) not in normalize(reply)
    if kind == "regex":  # raises TimeoutError after REGEX_SECONDS (catastrophic backtracking)
        return regex.search(value, reply, flags=regex.IGNORECASE, timeout=REGEX_SECONDS if regex_seconds is None else regex_seconds) is not None
    if kind == "has_number":
        return has_number(reply, value if isinstance(value, NumberRange) else None) == bool(value)
    if kind == "file_exists":
        return workspace_root is not None and _exists_inside(workspace_root, value)
    raise ValueError(f"unknown check kind {kind!r}")


def evaluate_figures(wanted: Figures, reply: str, step: int = 0) -> CheckResult:
    """A ``figures`` check: which of the data's figures the reply states (module docstring)."""
    expected = expected_figures(wanted)
    parts = column_parts(reply, wanted.columns)
    missing = [item.label for item in expected
               if not stated(item, parts.get(item.column, "") if item.column else reply)]
    score = round(1 - len(missing) / len(expected), 4) if expected else 1.0
    return CheckResult(step=step, kind="figures", expected=wanted.model_dump(), passed=not missing, score=score,
                       missing=missing[:MISSING_SHOWN])


def stated(item: Expected, text: str) -> bool:
    if item.value is not None:
        return any(abs(number - item.value) <= FIGURE_TOLERANCE for number in numbers_in(text))
    return any(date in text for date in item.dates)


def column_parts(reply: str, columns: list[str]) -> dict[str, str]:
    """Per column, the parts of the reply that speak of it (from each mention to the next other column's)."""
    mentions = sorted((match.start(), column) for column in columns
                      for match in re.finditer(rf"(?<![\w]){re.escape(column)}(?![\w])", reply, flags=re.IGNORECASE))
    parts: dict[str, str] = {}
    for position, (start, column) in enumerate(mentions):
        end = mentions[position + 1][0] if position + 1 < len(mentions) else len(reply)
        parts[column] = parts.get(column, "") + " " + reply[start:end]
    if len(columns) == 1 and columns[0] not in parts:
        parts[columns[0]] = reply
    return parts


def expected_figures(wanted: Figures) -> list[Expected]:
    """Every figure of the last ``rows`` rows of ``columns``, computed from the catalog's full data."""
    return list(_expected(wanted.dataframe, wanted.rows, tuple(wanted.columns), tuple(wanted.statistics), wanted.dates))


@lru_cache(maxsize=256)
def _expected(dataframe: str, rows: int, columns: tuple[str, ...], statistics: tuple[str, ...],
              dates: bool) -> tuple[Expected, ...]:
    catalog = _catalog()
    pipeline, name = catalog.resolve(dataframe)
    loaded = catalog.rows(pipeline, name, columns)[-rows:]
    date_column = catalog.info(pipeline, name).date_column
    items: list[Expected] = []
    for column in columns:
        found = figures(pairs(loaded, column, date_column))
        if not found["count"]:
            continue
        for statistic in statistics:
            items.append(Expected(f"{column} {statistic}", column, value=found[statistic]))
            if dates and statistic in ("min", "max"):
                days = tuple(date for date, value in pairs(loaded, column, date_column) if value == found[statistic])
                items.append(Expected(f"{column} {statistic} date", column, dates=days))
    if dates and loaded:
        first, last = str(loaded[0][date_column])[:10], str(loaded[-1][date_column])[:10]
        items[:0] = [Expected("first date", dates=(first,)), Expected("last date", dates=(last,))]
    return tuple(items)


@lru_cache(maxsize=1)
def _catalog() -> Catalog:
    return Catalog()


def has_number(reply: str, bounds: NumberRange | None = None) -> bool:
    low = bounds.min if bounds and bounds.min is not None else float("-inf")
    high = bounds.max if bounds and bounds.max is not None else float("inf")
    return any(low <= value <= high for value in numbers_in(reply))


def goal_kept(reply: str, goal: str) -> bool:
    """A goal probe passes when the reply contains the goal (case and spacing ignored)."""
    return normalize(goal) in normalize(reply)


def _exists_inside(root: Path, relative: str) -> bool:
    """True when ``relative`` names an existing path inside ``root`` (a path leaving it never passes)."""
    path = (root / relative).resolve()
    return path.is_relative_to(root.resolve()) and path.exists()
