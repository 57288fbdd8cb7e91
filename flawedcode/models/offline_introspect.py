"""Questions about the offline model's own context and the coding workspace, answered from what it sees.

Planners (and answers) for cue-table rows (``offline_intents.toml``): how full its window is (the exact
input token count), which results it offloaded or archived (the stubs and archive files it can see),
how many tests the project has (from a test run) and the previous request (what is failing and a
file's row count: teaching/workspace.py). Each reply says when something fell out of its window; the
replies are data (``offline_introspect.toml``).
"""

from __future__ import annotations

import re
from pathlib import Path

from flawedcode.models.offline_cues import data_file, register_planner
from flawedcode.models.offline_file_rules import run_tests_step
from flawedcode.models.offline_plan import Clause, Context, Task, ToolResult, reply
from flawedcode.models.teaching import introspect
from flawedcode.models.teaching.seen import read_test_run

SAY: dict[str, str] = data_file("offline_introspect.toml")["say"]
ARCHIVE_FILE = re.compile(r"archives/[\w./-]+?\.(?:jsonl|md)")
TOTALS = re.compile(r"\b(\d+) (passed|failed|errors?|skipped)\b")
FAILED_TEST = re.compile(r"^FAILED (?P<test>\S+?)(?: - (?P<why>.*))?$", re.MULTILINE)
ASSERT_LINE = re.compile(r"^>\s+(?P<line>.+)$", re.MULTILINE)
LOCATION = re.compile(r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?P<error>\w+)$", re.MULTILINE)
FAILING_CALL = re.compile(r"<function (?P<function>\w+) at 0x[0-9a-f]+> = (?P<module>\w+)\.(?P=function)\b")
"""pytest's assertion rewrite naming the function a failing assertion called (``<function f at 0x..> = module.f``)."""
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\w+)\n\s+(?P<code>.+)$', re.MULTILINE)
"""A traceback frame (the python test_*.py fallback prints these instead of pytest's report)."""


def plan_count_tests(clause: Clause, context: Context) -> list[Task]:
    return [Task("count_tests", steps=[run_tests_step()])]


def answer_count_tests(task: Task, results: list[ToolResult], context: Context) -> str:
    """'how many tests are there': the totals the run reports (pytest's summary line, or the fallback's 'ok' lines), then its report."""
    if not results:
        return SAY["no_test_run"]
    output = results[0].content
    summary = next((line for line in reversed(output.splitlines()) if TOTALS.search(line)), "")
    counts = [(int(count), kind) for count, kind in TOTALS.findall(summary)]
    if counts:
        head = f"{sum(count for count, _ in counts)} tests ran: {', '.join(f'{count} {kind}' for count, kind in counts)}."
    else:  # the project's own runner stops at its first failure: only the tests before it are known
        passed = len(re.findall(r"^ok\s+test_\w+", output, re.MULTILINE))
        head = SAY["fallback_totals"].format(passed=passed, stopped=SAY["fallback_stopped"] if "Traceback" in output else "")
    return f"{head}\n{report_test_run(output)}"


def report_test_run(output: str) -> str:
    """What a test run says: each failing test, the first failing line and the function it calls (or that none failed)."""
    failed = FAILED_TEST.findall(output)
    run = read_test_run(output)  # the runner's own summary line (teaching/seen.py): never "none failed" without it
    if not failed:
        return run.describe()
    lines = [f"{len(failed)} test{'s' if len(failed) > 1 else ''} failed:"]
    lines += [f"- {test}" + (f": {why.strip()}" if why else "") for test, why in failed]
    if run.summary:
        lines.append(f"pytest's summary line: {run.summary}")
    asserts = ASSERT_LINE.findall(output)
    locations = LOCATION.findall(output)
    called = sorted({f"{module}.{function}" for function, module in FAILING_CALL.findall(output)})
    frames = [frame for frame in FRAME.finditer(output) if Path(frame["file"]).name.startswith("test_")]
    if asserts:
        where = f" ({locations[0][0]}, line {locations[0][1]})" if locations else ""
        lines.append(f"The first failing line{where}: {asserts[0].strip()}")
    elif frames:
        frame = frames[-1]
        lines.append(f"It stopped in {frame['function']} ({Path(frame['file']).name}, line {frame['line']}): {frame['code'].strip()}")
    if called:
        lines.append(f"The function the failing assertions call: {', '.join(called)}; its result is outside what "
                     "the tests expect, so the bug is most likely there. I can show it, but I can't edit code.")
    return "\n".join(lines)


def seen_of(context: Context) -> introspect.Seen:
    """What the model sees before the question, for the teaching model's answers about the conversation."""
    example = context.vocabulary.frames[-1].key if context.vocabulary.frames else "money_markets/sofr"
    return introspect.Seen(context.earlier, context.system, context.truncated, context.input_tokens, context.window_tokens, example)


for _kind in ("context_window", "previous_request", "offloaded", "archived", "tool_calls"):  # answers: teaching/introspect.py
    register_planner(_kind, lambda clause, context, kind=_kind: [reply(introspect.answer(kind, seen_of(context)))])
register_planner("count_tests", plan_count_tests, answer=answer_count_tests)
