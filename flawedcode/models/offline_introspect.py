"""Questions about the offline model's own context and the coding workspace, answered from what it sees.

Planners (and answers) for cue-table rows (``offline_intents.toml``): how full its window is (the exact
input token count), which results it offloaded or archived (the stubs and archive files it can see),
what is failing in the project (from the test output; it never edits code), the previous request, and
a file's row count (without dumping it). Each reply says when something fell out of its window.
"""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.messages import HumanMessage, ToolMessage

from flawedcode.formats import ARCHIVE_LINE, COMPACTED_PREFIX, STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.models.offline_cues import register_planner
from flawedcode.models.offline_file_rules import run_tests_step
from flawedcode.models.offline_memory import is_summary_message, text_of
from flawedcode.models.offline_plan import Clause, Context, Step, Task, ToolResult, reply
from flawedcode.models.offline_stats import READ_HEADER

ARCHIVE_FILE = re.compile(r"archives/[\w./-]+?\.(?:jsonl|md)")
FAILED_TEST = re.compile(r"^FAILED (?P<test>\S+?)(?: - (?P<why>.*))?$", re.MULTILINE)
ASSERT_LINE = re.compile(r"^>\s+(?P<line>.+)$", re.MULTILINE)
LOCATION = re.compile(r"^(?P<file>[\w./-]+\.py):(?P<line>\d+): (?P<error>\w+)$", re.MULTILINE)
FAILING_CALL = re.compile(r"<function (?P<function>\w+) at 0x[0-9a-f]+> = (?P<module>\w+)\.(?P=function)\b")
"""pytest's assertion rewrite naming the function a failing assertion called (``<function f at 0x..> = module.f``)."""
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\w+)\n\s+(?P<code>.+)$', re.MULTILINE)
"""A traceback frame (the python test_*.py fallback prints these instead of pytest's report)."""


def _seen(context: Context) -> str:
    cut = ("older messages fell out of my window, so I can't see what happened before them" if context.truncated
           else "nothing has fallen out of my window yet")
    count = len(context.earlier) + 1
    return f"I see {count} message{'s' if count > 1 else ''} of our conversation; {cut}"


def plan_context_window(clause: Clause, context: Context) -> list[Task]:
    used = context.input_tokens / context.window_tokens if context.window_tokens else 0.0
    return [reply(f"My input for this reply is {context.input_tokens:,} tokens of my {context.window_tokens:,}-token "
                  f"window ({used:.0%} full), counted exactly: the system prompt, the tool schemas and the messages "
                  f"I can see. {_seen(context)}.")]


def plan_offloaded(clause: Clause, context: Context) -> list[Task]:
    stubs = [text_of(message).splitlines()[0] for message in context.earlier
             if isinstance(message, ToolMessage) and text_of(message).lstrip().startswith(STUB_PREFIX)]
    if not stubs:
        return [reply(f"No tool result I can see was moved to scratch/: there is no offload stub in my context. "
                      f"{_seen(context)}.")]
    listed = "\n".join(f"- {stub.strip().removeprefix(STUB_PREFIX).rstrip(']')}" for stub in stubs)
    return [reply(f"{len(stubs)} tool result{'s' if len(stubs) > 1 else ''} I can see {'were' if len(stubs) > 1 else 'was'} "
                  f"moved to scratch/ (path | size):\n{listed}\n{_seen(context)}.")]


def plan_archived(clause: Clause, context: Context) -> list[Task]:
    files: list[str] = []
    for message in context.earlier:
        text = text_of(message)
        if text.startswith((SUMMARY_PREFIX, COMPACTED_PREFIX)) or ARCHIVE_LINE in text:
            files += [path for path in ARCHIVE_FILE.findall(text) if path not in files]
    if not files:
        return [reply(f"Nothing I can see has been archived: no summary or compacted result naming an archive file is "
                      f"in my context. {_seen(context)}.")]
    return [reply("The archive files named in my context:\n" + "\n".join(f"- {path}" for path in files)
                  + f"\n{_seen(context)}.")]


def plan_failing_tests(clause: Clause, context: Context) -> list[Task]:
    return [Task("failing_tests", steps=[run_tests_step()])]


def answer_failing_tests(task: Task, results: list[ToolResult], context: Context) -> str:
    return report_test_run(results[0].content) if results else "I could not run the tests (no tool to run Python)."


def report_test_run(output: str) -> str:
    """What a test run says: each failing test, the first failing line and the function it calls (or that none failed)."""
    failed = FAILED_TEST.findall(output)
    if not failed:
        summary = next((line for line in reversed(output.splitlines()) if re.search(r"\b(?:passed|failed|error)", line)), "")
        return f"No test failed. The test run says: {summary.strip() or output.strip()[:300]}"
    lines = [f"{len(failed)} test{'s' if len(failed) > 1 else ''} failed:"]
    lines += [f"- {test}" + (f": {why.strip()}" if why else "") for test, why in failed]
    asserts = ASSERT_LINE.findall(output)
    locations = LOCATION.findall(output)
    called = sorted({f"{module}.{function}" for function, module in FAILING_CALL.findall(output)})
    frames = [frame for frame in FRAME.finditer(output) if Path(frame["file"]).name.startswith("test_")]
    if asserts:
        where = f" ({locations[0][0]}, line {locations[0][1]})" if locations else ""
        lines.append(f"The first failing line{where}: {asserts[0].strip()}")
    elif frames:
        frame = frames[-1]
        lines.append(f"It stopped in {frame['function']} ({Path(frame['file']).name}, line {frame['line']}): "
                     f"{frame['code'].strip()}")
    if called:
        lines.append(f"The function the failing assertions call: {', '.join(called)}; its result is outside what "
                     "the tests expect, so the bug is most likely there. I can show it, but I can't edit code.")
    return "\n".join(lines)


def plan_count_rows(clause: Clause, context: Context) -> list[Task] | None:
    if not clause.paths:
        return None  # 'how many rows does sofr have': a data question
    return [Task("count_rows", steps=[Step("read_file", {"path": clause.paths[0], "limit": 1})], path=clause.paths[0])]


def answer_count_rows(task: Task, results: list[ToolResult], context: Context) -> str:
    content = results[0].content if results else ""
    header = READ_HEADER.match(content)
    if header is None:
        return content.strip().splitlines()[0] if content.strip() else f"I could not read {task.path}."
    lines = int(header["n"])
    if str(task.path).endswith(".csv"):
        return (f"{task.path} has {lines:,} lines: a header line and {lines - 1:,} data rows (from read_file's line "
                f"count; I read only its first line).")
    return f"{task.path} has {lines:,} lines (from read_file's line count; I read only its first line)."


def plan_previous_request(clause: Clause, context: Context) -> list[Task]:
    """'what was my last question?': the latest earlier request it can see, word for word."""
    requests = [text_of(message).strip() for message in context.earlier if isinstance(message, HumanMessage)
                and not is_summary_message(message)]
    if not requests:
        where = "it fell out of my window" if context.truncated else "this is the first request I can see"
        return [reply(f"I can't see an earlier request from you: {where}. {_seen(context)}.")]
    return [reply(f'Your last request before this one was: "{requests[-1]}". {_seen(context)}.')]


register_planner("context_window", plan_context_window)
register_planner("previous_request", plan_previous_request)
register_planner("offloaded", plan_offloaded)
register_planner("archived", plan_archived)
register_planner("failing_tests", plan_failing_tests, answer=answer_failing_tests)
register_planner("count_rows", plan_count_rows, answer=answer_count_rows)
