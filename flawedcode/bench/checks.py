"""Evaluate a task's declarative checks against one reply (and the run's workspace).

``evaluate(check, reply, workspace_root)`` returns a ``CheckResult``. Text
checks ignore case and collapse whitespace, so a reply that wraps a line still
passes. ``has_number`` finds numbers such as ``4.8944``, ``-0.25``, ``1,250``
or ``13550.3%`` (dates like ``2024-12-31`` do not count as numbers).
``goal_kept(reply, goal)`` is the goal-retention probe. A ``regex`` check runs with
a time limit (``REGEX_SECONDS``), and a step's regex checks share one
(``REGEX_SECONDS_PER_REPLY``); a pattern that runs out of time fails, and its
result says so in ``note``. ``evaluate_step`` runs a step's checks under that shared limit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import regex

from flawedcode.bench.tasks import REGEX_SECONDS, REGEX_SECONDS_PER_REPLY, Check, NumberRange

NUMBER = re.compile(r"(?<![\w.-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w-])|(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")


@dataclass
class CheckResult:
    """The outcome of one check on one step."""

    step: int
    kind: str
    expected: Any
    passed: bool
    note: str | None = None  # why a check could not be decided (a regex that ran out of time)

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        if record["note"] is None:
            del record["note"]
        return record


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def numbers_in(text: str) -> list[float]:
    """Every number stated in ``text`` (thousands separators allowed; dates excluded)."""
    return [float(match.replace(",", "")) for match in NUMBER.findall(text)]


def evaluate(check: Check, reply: str, workspace_root: Path | None, step: int = 0,
             regex_seconds: float | None = None) -> CheckResult:
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
