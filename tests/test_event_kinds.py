"""Context events have one vocabulary: ``telemetry.EventKind``.

- ``SessionLog.record_event`` refuses a kind that is not an ``EventKind`` (a misspelt kind fails
  where it is written, not silently in a chart that never draws its marker).
- A member is its text, so logs, JSON and tables read the same as before.
- Every kind the charts draw and every kind a module of the package records is a member.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from flawedcode.charts import EVENT_MARKERS, LABEL_PRIORITY
from flawedcode.telemetry import EventKind, SessionLog

PACKAGE = Path(__file__).resolve().parents[1] / "flawedcode"


def test_an_unknown_kind_is_refused_with_one_line_naming_the_enum() -> None:
    log = SessionLog()
    with pytest.raises(ValueError, match=r"unknown context event kind 'ofload': add it to flawedcode.telemetry.EventKind"):
        log.record_event("ofload", 10, 5)
    assert log.events == []


def test_a_kind_is_its_text_in_logs_and_json() -> None:
    log = SessionLog()
    event = log.record_event(EventKind.OFFLOAD, 100, 10, tool="chartbook_get_docs")
    assert event.kind == "offload" and log.count("offload") == 1 and log.count(EventKind.OFFLOAD) == 1
    assert json.loads(json.dumps(log.to_dict(), default=str))["events"][0]["kind"] == "offload"
    assert log.record_event("summarize", 5, 1).kind is EventKind.SUMMARIZE, "the text is accepted and becomes the member"


def test_every_kind_the_charts_draw_is_a_member() -> None:
    assert set(EVENT_MARKERS) | set(LABEL_PRIORITY) <= set(EventKind)


def recorded_kinds() -> list[tuple[str, str]]:
    """(where, kind) for every literal kind the package passes to record_event or ContextEvent."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("record_event", "ContextEvent"):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((f"{path.name}:{node.lineno}", first.value))
                elif isinstance(first, ast.Attribute) and getattr(first.value, "id", "") == "EventKind":
                    found.append((f"{path.name}:{node.lineno}", EventKind[first.attr].value))
    return found


def test_every_kind_the_package_records_is_a_member() -> None:
    kinds = recorded_kinds()
    assert len(kinds) > 15
    unknown = [f"{where}: {kind!r}" for where, kind in kinds if kind not in set(EventKind)]
    assert not unknown, "add these to EventKind: " + ", ".join(unknown)
