"""The demo project's asks: why a named test fails, which function is wrong, a file's rows.

Sessions work on a copy of ``data/demo_project``. ``read_ask(text)`` reads one ask into a typed
``WorkspaceAsk`` (None: not a workspace ask, so data questions are never taken); ``next_call(ask,
outputs)`` is the next tool call it needs given the outputs so far (run the tests, with pytest when
present, else the project's own fallback; then read the module the failing assertion calls); and
``answer(ask, outputs)`` writes the reply from those outputs only:

- why a test fails: its failing assertion line and where it is, pytest's own explanation line, the
  function the assertion calls, shown from the module's source; a test that passed is said to pass;
- which function is wrong: the function the failing assertions call, shown, with the tests that call it;
- a CSV's rows: its line count from read_file's header (one line read), minus the header line.

Tool results are passed in as text already resolved (an offloaded run read back: ``seen.py``).
Plain functions: a message's text and tool outputs in, a typed ask and a reply out.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from flawedcode.models.teaching.request import Intent
from flawedcode.models.teaching.seen import read_test_run

TEST_NAME = re.compile(r"(?<![\w/])test_\w+(?![\w.])")
IDENTIFIER = re.compile(r"\b[a-z]\w*_\w+\b")
SECTION = re.compile(r"^_{3,} (?P<test>[\w.:\[\]-]+) _{3,}$", re.MULTILINE)
ASSERT_LINE = re.compile(r"^>\s+(?P<line>.+)$", re.MULTILINE)
EXPLAIN_LINE = re.compile(r"^E\s+(?P<line>.+)$", re.MULTILINE)
LOCATION = re.compile(r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?P<error>\w+)$", re.MULTILINE)
CALLED = re.compile(r"<function (?P<function>\w+) at 0x[0-9a-f]+> = (?P<module>\w+)\.(?P=function)\b")
READ_HEADER = re.compile(r"^# (?P<path>\S+) \(lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\)")
FAIL_WORDS = {"fail", "fails", "failing", "failed", "broken", "break", "breaks", "passing", "pass", "passes", "red", "green"}
WRONG_WORDS = {"wrong", "bug", "buggy", "broken", "faulty", "incorrect", "culprit"}
ROW_WORDS = {"rows", "records", "lines", "row", "entries"}
RUN_TESTS = ("import glob, runpy, sys, traceback\ntry:\n    import pytest\nexcept ImportError:  # no pytest: the project's own fallback,"
             " python test_*.py\n    failed = 0\n    for path in sorted(glob.glob('test_*.py')):\n"
             "        print(f'pytest is not installed: python {path}')\n        try:\n            runpy.run_path(path, run_name='__main__')\n"
             "        except Exception:\n            failed += 1\n            traceback.print_exc(file=sys.stdout)\n"
             "            print(f'FAILED {path} - {sys.exc_info()[0].__name__}')\n    sys.exit(1 if failed else 0)\n"
             "sys.exit(pytest.main(['-q']))\n")


@dataclass(frozen=True)
class WorkspaceAsk:
    kind: Intent  # TEST_WHY, FUNCTION_WRONG or FILE_ROWS (request.py's intents)
    test: str | None = None  # the test named
    function: str | None = None  # the function named
    path: str | None = None  # the file named
    words: tuple[str, ...] = ()  # the ask's other words, to pick tests it describes ('volatility')


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_.]+", text.lower().replace("'", ""))


def read_ask(text: str) -> WorkspaceAsk | None:
    """The workspace ask a message makes, or None."""
    words = words_of(text)
    bag = set(words)
    test = next(iter(TEST_NAME.findall(text)), None)
    if test and bag & FAIL_WORDS:
        return WorkspaceAsk(Intent.TEST_WHY, test=test)
    if bag & {"test", "tests"} and bag & FAIL_WORDS and bag & {"why", "explain", "cause", "reason"}:
        return WorkspaceAsk(Intent.TEST_WHY, words=tuple(word for word in words if len(word) > 4))
    named = [name for name in IDENTIFIER.findall(text) if not name.startswith("test_")]
    if bag & WRONG_WORDS and (named or bag & {"function", "functions", "which", "where", "wheres"}):
        return WorkspaceAsk(Intent.FUNCTION_WRONG, function=named[0] if named else None)
    csv = next((word for word in words if word.endswith(".csv")), None)
    if bag & ROW_WORDS and (csv or "csv" in bag) and bag & {"how", "count", "number"}:
        return WorkspaceAsk(Intent.FILE_ROWS, path=csv)
    return None


def next_call(ask: WorkspaceAsk, outputs: list[str]) -> tuple[str, dict] | None:
    """The next tool call the ask needs, given the outputs of the calls made so far (in order)."""
    if ask.kind is Intent.FILE_ROWS:
        if ask.path is None and not outputs:
            return "list_files", {"path": "."}
        path = ask.path or project_csv(outputs[0])
        done = len(outputs) >= (1 if ask.path else 2)
        return None if done or path is None else ("read_file", {"path": path, "limit": 1})
    if not outputs:
        return "run_python", {"code": RUN_TESTS, "timeout": 60}
    if len(outputs) == 1 and (called := called_functions(outputs[0], ask)):
        module = called[0].split(".")[0]
        return "read_file", {"path": f"{module}.py", "limit": 2000}
    return None


def project_csv(listing: str) -> str | None:
    """The one CSV a list_files listing shows (None if none or several)."""
    files = [line.split(" (")[0].strip() for line in listing.splitlines()[1:] if line.split(" (")[0].strip().endswith(".csv")]
    return files[0] if len(files) == 1 else None


def failing_sections(output: str) -> dict[str, str]:
    """pytest's failure report, one section per failing test (its name: the text under its ``____ name ____`` line)."""
    marks = list(SECTION.finditer(output))
    ends = [mark.start() for mark in marks[1:]] + [output.find("short test summary") if "short test summary" in output else len(output)]
    return {mark["test"].split("::")[-1]: output[mark.end():end] for mark, end in zip(marks, ends)}  # none: a saved run not read back yet


def tests_asked(ask: WorkspaceAsk, output: str) -> list[str]:
    """The failing tests the ask is about: the one named, else those whose names hold the ask's words."""
    sections = failing_sections(output)
    if ask.test:
        return [ask.test] if ask.test in sections else []
    return [name for name in sections if any(word in name for word in ask.words)] or list(sections)


def called_functions(output: str, ask: WorkspaceAsk) -> list[str]:
    """``module.function`` the asked failing tests' assertions call, most called first."""
    sections = failing_sections(output)
    texts = [sections[name] for name in tests_asked(ask, output)] if ask.kind is Intent.TEST_WHY else list(sections.values())
    counts = Counter(f"{module}.{function}" for text in texts for function, module in CALLED.findall(text))
    if ask.function:
        return [name for name in counts if name.endswith(f".{ask.function}")]
    return [name for name, _ in counts.most_common()]


def function_source(read: str, function: str) -> str | None:
    """A function's lines in a read_file result, as ``ast`` finds them."""
    header = READ_HEADER.match(read)
    body = read.splitlines()[1:] if header else read.splitlines()
    body = [line for line in body if not line.startswith("# ... ")]
    try:
        tree = ast.parse("\n".join(body))
    except SyntaxError:
        return None
    node = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == function), None)
    return None if node is None else "\n".join(body[node.lineno - 1:node.end_lineno])


def answer(ask: WorkspaceAsk, outputs: list[str]) -> str:
    """The reply, from the outputs only."""
    if ask.kind is Intent.FILE_ROWS:
        return count_rows(ask, outputs)
    if not outputs:
        return "I could not run the tests (no tool to run Python)."
    run = read_test_run(outputs[0])
    if not run.known:
        return run.describe()
    parts = explain_tests(ask, outputs[0], run) if ask.kind is Intent.TEST_WHY else [wrong_function_head(ask, outputs[0], run)]
    called = called_functions(outputs[0], ask)
    if called and len(outputs) > 1 and (source := function_source(outputs[1], called[0].split(".")[-1])):
        parts.append(f"{called[0]} ({called[0].split('.')[0]}.py):\n```python\n{source}\n```\n"
                     "Its result is outside what the tests expect, so the bug is there. I can show it, but I can't edit code.")
    return "\n".join(part for part in parts if part)


def explain_tests(ask: WorkspaceAsk, output: str, run) -> list[str]:
    summary = f"(pytest's summary line: {run.summary})" if run.summary else ""
    asked = tests_asked(ask, output)
    if ask.test and not asked:
        ran = ask.test in output or run.summary
        state = "passes: it is not among the failing tests" if ran and run.summary else "is not named in the test output"
        return [f"{ask.test} {state} {summary}".strip() + "."]
    if not asked:
        return [f"No test failed {summary}.".replace(" .", ".")]
    sections = failing_sections(output)
    parts = [f"{len(asked)} test{'s' if len(asked) > 1 else ''} you asked about fail{'s' if len(asked) == 1 else ''} {summary}:".strip()]
    for name in asked:
        text = sections[name]
        line = ASSERT_LINE.search(text)
        where = LOCATION.search(text)
        explained = EXPLAIN_LINE.search(text)
        parts.append(f"- {name}: the failing line" + (f" ({where['file']}, line {where['line']})" if where else "")
                     + (f": {line['line'].strip()}" if line else "") + (f"; pytest says: {explained['line'].strip()}" if explained else ""))
    return parts


def wrong_function_head(ask: WorkspaceAsk, output: str, run) -> str:
    called = called_functions(output, ask)
    sections = failing_sections(output)
    if not called:
        named = f"{ask.function} is not called by a failing test" if ask.function else "No failing assertion names a function it calls"
        return f"{named} (pytest's summary line: {run.summary})." if run.summary else named + "."
    callers = [name for name, text in sections.items() if called[0].split(".")[-1] in text]
    failed = f"{len(sections)} test{'s' if len(sections) != 1 else ''} failed"
    return (f"{failed}: the failing tests ({', '.join(callers)}) assert on what {called[0]} returns: that function is the "
            f"one to fix (pytest's summary line: {run.summary}).")


def count_rows(ask: WorkspaceAsk, outputs: list[str]) -> str:
    read = outputs[-1] if outputs else ""
    header = READ_HEADER.match(read)
    if header is None:
        return "I could not tell which CSV file you mean: name it (e.g. data.csv)." if not ask.path and len(outputs) < 2 else \
            (read.strip().splitlines()[0] if read.strip() else "I could not read the file.")
    lines = int(header["n"])
    return (f"{header['path']} has {lines:,} lines: a header line and {lines - 1:,} data rows "
            "(from read_file's line count; I read only its first line).")
