"""Evaluate a task's declarative checks against one reply (and the run's workspace).

``evaluate(check, reply, workspace_root)`` returns a ``CheckResult``. Text
checks ignore case and collapse whitespace, so a reply that wraps a line still
passes. ``has_number`` finds numbers such as ``4.8944``, ``-0.25``, ``1,250``
or ``13550.3%`` (dates like ``2024-12-31`` do not count as numbers).
``goal_kept(reply, goal)`` is the goal-retention probe.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flawedcode.bench.tasks import Check, NumberRange

NUMBER = re.compile(r"(?<![\w.-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w-])|(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")


@dataclass
class CheckResult:
    """The outcome of one check on one step."""

    step: int
    kind: str
    expected: Any
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def numbers_in(text: str) -> list[float]:
    """Every number stated in ``text`` (thousands separators allowed; dates excluded)."""
    return [float(match.replace(",", "")) for match in NUMBER.findall(text)]


def evaluate(check: Check, reply: str, workspace_root: Path | None, step: int = 0) -> CheckResult:
    passed = passes(check, reply, workspace_root)
    return CheckResult(step=step, kind=check.kind, expected=check.expected, passed=passed)


def passes(check: Check, reply: str, workspace_root: Path | None) -> bool:
    kind, value = check.kind, getattr(check, check.kind)
    if kind == "contains":
        return normalize(value) in normalize(reply)
    if kind == "not_contains":
        return normalize(value) not in normalize(reply)
    if kind == "regex":
        return re.search(value, reply, flags=re.IGNORECASE) is not None
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
