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


KIND_TEXTS = {kind.value for kind in EventKind}
TAKES_A_KIND = ("record_event", "ContextEvent", "count", "_event", "_count_since")


def _kind_texts_in(node: ast.AST) -> list[str]:
    """The event kinds written as bare strings in ``node`` (a constant, or a tuple, list or set of them)."""
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [element.value for element in elements
            if isinstance(element, ast.Constant) and isinstance(element.value, str) and element.value in KIND_TEXTS]


def kinds_written_as_strings(source: str) -> list[tuple[int, str]]:
    """(line, kind) wherever ``source`` names an event kind by its text instead of its ``EventKind`` member:
    passed to a function that takes a kind, compared with an ``.kind``, or looked up in ``.events``."""
    found, tree = [], ast.parse(source)
    word_sets = {id(argument) for node in ast.walk(tree) if isinstance(node, ast.Call) for argument in node.args}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in TAKES_A_KIND:
            found += [(node.lineno, text) for argument in node.args[:2] for text in _kind_texts_in(argument)]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr in ("kind", "events") for side in sides):
                found += [(node.lineno, text) for side in sides for text in _kind_texts_in(side)]
        elif isinstance(node, ast.Dict | ast.Set) and id(node) not in word_sets:  # frozenset({"clear"}): words, not kinds
            keys = node.keys if isinstance(node, ast.Dict) else node.elts
            texts = [text for key in keys if key is not None for text in _kind_texts_in(key)]
            if texts and len(texts) == len(keys):  # a table keyed by event kinds (the charts' markers)
                found += [(node.lineno, text) for text in texts]
    return found


def test_the_package_names_every_event_kind_by_its_member_not_its_text() -> None:
    stray = [f"{path.relative_to(PACKAGE)}:{line}: {kind!r}" for path in sorted(PACKAGE.rglob("*.py"))
             for line, kind in kinds_written_as_strings(path.read_text(encoding="utf-8"))]
    assert not stray, "write EventKind.<MEMBER> instead of the text: " + ", ".join(stray)
    assert not [path for path in PACKAGE.rglob("*.py") if 'record_event("' in path.read_text(encoding="utf-8")]


def test_the_stray_kind_check_finds_each_way_of_writing_a_kind_as_text() -> None:
    source = '''
log.record_event("offload", 1, 0)
n = log.count('summarize')
if event.kind == "compact": pass
if event.kind in ("digest", "clear"): pass
if "summarize" in call.events: pass
MARKERS = {"offload": 1, "truncated": 2}
BELOW = {"recovery"}
fine = {"offload": 1, "tool": 2}, task.kind == "data", log.record_event(EventKind.OFFLOAD, 1, 0), frozenset({"clear"})
'''
    assert sorted(kind for _, kind in kinds_written_as_strings(source)) == sorted([
        "offload", "summarize", "compact", "digest", "clear", "summarize", "offload", "truncated", "recovery"])
