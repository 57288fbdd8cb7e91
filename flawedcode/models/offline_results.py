"""How the offline model carries out its tasks and answers from tool results (docs/offline-model.md).

``next_step(task, results, context)`` is the next tool call a task needs given what its calls returned so far
(None when it has what it needs); ``answer_task`` writes its part of the reply from those results: catalog lines,
docs, rows (offline_answers.py), offload stubs, errors (relayed with what to do), files, searches and runs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from flawedcode.catalog import parse_column_table
from flawedcode.models import offline_memory as memory
from flawedcode.models.offline_answers import SAY, answer_data, answer_period_gap, call_label, data_next_step, describe_stub, relay_error
from flawedcode.models.offline_cues import answer_for
from flawedcode.models.offline_file_rules import RUN_TIMEOUT_SECONDS, run_script_code
from flawedcode.models.offline_introspect import FAILING_CALL, report_test_run, seen_of
from flawedcode.models.offline_plan import Context, Step, Task, ToolResult
from flawedcode.models.offline_stats import CONTINUATION, READ_HEADER, offload_path
from flawedcode.models.teaching import introspect, workspace

QUOTED_AS: dict[str, list] = SAY["quoted"]
"""How answer_one quotes a tool's result: its lead line and at most how many lines (others: '<tool> returned:', 12)."""
LIST_LINE = re.compile(r"^(?P<key>[\w.-]+/[\w.-]+): (?P<title>.*?) \((?P<detail>\d[\d,]* rows.*)\)\s*$", re.MULTILINE)


def paths_named(text: str) -> list[str]:
    """scratch/ and archives/ paths a text names, in order."""
    return list(dict.fromkeys(re.findall(r"(?<![\w/])((?:scratch|archives)/[\w/-]*[\w-]\.[a-z]+)(?![\w])", text)))


def next_step(task: Task, results: list[ToolResult], context: Context) -> Step | None:
    if task.kind == "data":
        return data_next_step(task, results, context)
    if task.kind == "workspace":  # the demo project's asks (teaching/workspace.py)
        call = workspace.next_call(task.detail["ask"], [result.content for result in results])
        return Step(*call) if call else None
    if len(results) < len(task.steps):
        return task.steps[len(results)]
    if task.kind == "find_file" and len(results) == 1:
        return _found_file_step(task, results[0])
    if task.kind == "function" and len(results) == 1:
        hit = _function_hit(task, results[0].content)
        return Step("read_file", {"path": hit[0], "limit": 2000}) if hit else None
    if task.kind == "docs" and len(results) == 1 and (path := offload_path(results[0].content)) and task.detail.get("columns"):
        if "search_files" in context.tool_names:
            return Step("search_files", {"pattern": "|".join(task.detail["columns"]), "path": path})
        return Step("read_file", {"path": path, "limit": 2000})
    if task.kind == "fix" and len(results) == 1 and (failing := FAILING_CALL.search(results[0].content)):
        return Step("read_file", {"path": f"{failing['module']}.py", "limit": 2000})
    return None


def _found_file_step(task: Task, listing: ToolResult) -> Step | None:
    files = [line.split(" (")[0] for line in listing.content.splitlines()[1:] if not line.endswith("/")]
    hint = task.detail.get("hint", "")
    if (chosen := next((path for path in files if hint.lower() in path.lower() and not (hint == ".py" and "test" in path)), None)) is None:
        return None
    if task.detail.get("then") == "run":
        return Step("run_python", {"code": run_script_code(chosen), "command": f"python {chosen}", "timeout": RUN_TIMEOUT_SECONDS})
    return Step("read_file", {"path": chosen})


def _function_hit(task: Task, content: str) -> tuple[str, int, str] | None:
    """The ``path:line: def name`` search hit of the function asked: by name, else the best overlap with the request's words."""
    hits = [(match["path"], int(match["line"]), match["name"]) for match in
            re.finditer(r"^(?P<path>[^:\n]+):(?P<line>\d+):[ \t]*def (?P<name>\w+)", content, re.MULTILINE)]
    if not hits:
        return None
    if name := task.detail.get("name"):
        return next((hit for hit in hits if hit[2] == name), hits[0])
    words, wants_test = task.detail.get("words", []), task.detail.get("test", False)

    def score(hit: tuple[str, int, str]) -> tuple[int, int]:
        return sum(word.rstrip("s")[:6] in hit[2] for word in words) + (hit[2].startswith("test") == wants_test), -hit[1]

    best = max(hits, key=score)
    return best if score(best)[0] > 1 or (score(best)[0] > 0 and not words) or any(word[:6] in best[2] for word in words) else None


ANSWERS: dict[str, Callable[[Task, list[ToolResult], Context], str]] = {
    "reply": lambda task, results, context: task.text,
    "goal": lambda task, results, context: introspect.answer("goal", seen_of(context)),
    "last_action": lambda task, results, context: introspect.answer("last_action", seen_of(context)),
    "data": lambda task, results, context: answer_data(task, results, context.vocabulary),
    "period_gap": lambda task, results, context: answer_period_gap(task, context.vocabulary),
    "recall": lambda task, results, context: memory.answer_recall_from_archive(task, results, context),
    "note_recall": lambda task, results, context: memory.answer_note_from_archive(results),
    "fix": lambda task, results, context: _fix_answer(results),
    "function": lambda task, results, context: (_show_function(task, results[-1]) if len(results) >= 2 else
                                               SAY["no_function"] + "".join(answer_one(result, task) for result in results[:1])),
    "about_file": lambda task, results, context: _describe_file(results[0]),
    "workspace": lambda task, results, context: workspace.answer(task.detail["ask"], [result.content for result in results]),
    "tests": lambda task, results, context: "\n\n".join(part(results[0].content) for part in (report_test_run, _describe_run)),
}
"""The answer of each task kind; a kind registered in offline_cues comes first, and any other quotes each result."""


def answer_task(task: Task, results: list[ToolResult], context: Context) -> str:
    if (answer := answer_for(task.kind) or ANSWERS.get(task.kind)) is not None:
        return answer(task, results, context)
    if task.kind == "docs" and any(result.name == "search_files" for result in results):
        # The saved copy's matching rows answer the question; the stub that led to them would only bury them.
        results = [result for result in results if not offload_path(result.content.strip())] or results
    return "\n\n".join(answer_one(result, task) for result in results)


def answer_one(result: ToolResult, task: Task | None = None) -> str:
    content = result.content.strip()
    if content.startswith("Error"):
        return relay_error(result)
    if offload_path(content):
        return describe_stub(result)
    name = result.name
    if name == "chartbook_list":
        return _describe_catalog(task, content)
    if name == "chartbook_get_docs" or (name == "read_file" and content.startswith("# scratch/") and "\n| " in content):
        return _describe_docs(result, content) + _asked_column_rows(task, content)
    if name in ("run_python", "execute"):
        return _describe_run(content)
    if name == "write_file":
        return content.splitlines()[0] + "."
    if name == "search_files" and task is not None and task.kind == "docs":
        return _quote("From the saved docs:", content)
    if name == "search_files" and (not content or content.lower().startswith("no match")):
        return f"search_files found no match: {content[:200]}"
    if name == "search_files":
        return _quote(f"search_files found {len(content.splitlines())} matching lines:", content)
    lead, max_lines = QUOTED_AS.get(name, (f"{name} returned:", 12))
    return _quote(lead, content, max_lines)


def _describe_catalog(task: Task | None, content: str) -> str:
    entries = [(m["key"], m["title"], m["detail"]) for m in LIST_LINE.finditer(content)]
    if not entries:
        return _quote("chartbook_list returned:", content)
    every = len(entries)
    if pipelines := task.detail.get("pipelines", []) if task is not None else []:
        entries = [entry for entry in entries if entry[0].split("/")[0] in pipelines] or entries
    listed = "; ".join(f"{key} ({title}, {detail})" for key, title, detail in entries)
    if len(entries) < every:  # a pipeline asked for ('the yield_curve dataframes'): its count, never said as the catalog's
        return f"The ChartBook catalog has {every} dataframes; {len(entries)} in {', '.join(pipelines)}: {listed}."
    return f"The ChartBook catalog has {every} dataframes: {listed}."


def _describe_docs(result: ToolResult, content: str) -> str:
    """Docs described: their title, description and the columns of their data dictionary (``catalog.parse_column_table``)."""
    title = next((line[2:].strip() for line in content.splitlines() if line.startswith("# ")), "")
    columns = list(parse_column_table(content))
    text = f"Docs from {call_label(result)}: {title or 'untitled'}." + (f" {about}" if (about := _docs_section(content, "Description")) else "")
    return text + (f" Columns ({len(columns)}): {', '.join(columns)}." if columns else " I found no column table in what I can see.")


def _docs_section(content: str, title: str) -> str | None:
    """The first paragraph under a docs page's ``## title`` heading."""
    section = re.search(rf"^## {title}\s*\n+(.+?)(?:\n\n|\Z)", content, re.MULTILINE | re.DOTALL)
    return section.group(1).strip() if section else None


def _asked_column_rows(task: Task | None, content: str) -> str:
    """The data-dictionary rows of the columns the request names, quoted (and any unit or source line asked)."""
    columns = task.detail.get("columns", []) if task is not None else []
    rows = [line.strip() for line in content.splitlines() if line.lstrip().startswith("|")
            and any(re.search(rf"(?<![\w])`?{re.escape(column)}`?(?![\w])", line.split("|")[1] if line.count("|") > 1 else line)
                    for column in columns)]
    text = "".join(f"\nFrom the docs: {row}" for row in rows[:5])
    if (source := _docs_section(content, "Source")) and task is not None and task.detail.get("source", True):
        text += f"\nSource: {source}"
    notes = [line.strip("- ").strip() for line in content.splitlines() if line.startswith("- ") and any(column in line for column in columns)]
    return text + "".join(f"\nNote: {note}" for note in notes[:2])


def _describe_file(read: ToolResult) -> str:
    """A file described, not quoted: a CSV by its header, Python by its docstring and definitions, text by its headings."""
    header = READ_HEADER.match(read.content)
    lines = [line for line in read.content.splitlines()[1:] if not CONTINUATION.match(line)]
    if header is None or not lines:
        return answer_one(read)
    path, total = header["path"], header["n"]
    if path.endswith(".csv"):
        return f"{path} has {total} lines; its header line is: {lines[0]} ({len(lines[0].split(','))} columns)."
    if not path.endswith(".py"):  # text: its title, first paragraph and section headings
        title = next((line.lstrip("# ") for line in lines if line.startswith("# ")), path)
        paragraph = " ".join(next((part for part in "\n".join(lines).split("\n\n") if not part.startswith("#")), "").split())
        sections = [line.lstrip("# ") for line in lines if line.startswith("## ")]
        return f"{path} ({total} lines): {title}. {paragraph}" + (f" Sections: {', '.join(sections)}." if sections else "")
    try:
        module = ast.parse("\n".join(lines))
    except SyntaxError:
        return answer_one(read)
    names = [f"{'class' if isinstance(node, ast.ClassDef) else 'def'} {node.name}" for node in module.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    about = (ast.get_docstring(module) or "").split("\n\n")[0].replace("\n", " ") or "It has no module docstring."
    seen = "" if header["b"] == total else f", of which I read lines 1-{header['b']}"
    return f"{path} ({total} lines{seen}): {about} Its top-level definitions ({len(names)}): {', '.join(names) or 'none'}."


def _describe_run(content: str) -> str:
    status, output = "finished", content.splitlines()
    if output and output[0].startswith("# exit code"):
        status, output = output[0].lstrip("# ").strip(), output[1:]
    shown = f" Output{' (last 20 lines)' if len(output) > 20 else ''}:\n" + "\n".join(output[-20:]) if output else ""
    return f"The code ran ({status}).{shown}"


def _show_function(task: Task, read: ToolResult) -> str:
    """The function asked (or the failing test calls), shown from the file read: its lines as ``ast`` finds them."""
    header = READ_HEADER.match(read.content)
    path, body = header["path"] if header else "the file", [line for line in read.content.splitlines()[1:] if not CONTINUATION.match(line)]
    try:
        found = sorted((node for node in ast.walk(ast.parse("\n".join(body))) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))),
                       key=lambda node: node.lineno)
    except SyntaxError:
        found = []
    hit = _function_hit(task, "\n".join(f"{path}:{node.lineno}: def {node.name}" for node in found))
    words = task.detail.get("words", []) if not task.detail.get("name") else []  # 'which function computes the total return':
    made = next(((node, line) for node in found for line in range(node.lineno, node.end_lineno + 1) for a, b in zip(words, words[1:])
                 if re.match(rf"\s*{a}_{b}s?\s*=[^=]", body[line - 1])), None)  # the one that assigns total_return, not daily_returns
    if (node := made[0] if made else next((node for node in found if hit and node.name == hit[2]), None)) is None:
        return _quote(f"I could not find that function; {path} holds:", read.content, max_lines=QUOTED_AS["read_file"][1])
    where = f"; line {made[1]} computes it: `{body[made[1] - 1].strip()}`" if made else ""
    return f"{node.name} in {path} (lines {node.lineno}-{node.end_lineno}{where}):\n```python\n" + "\n".join(
        body[node.lineno - 1:node.end_lineno]) + "\n```"


def _fix_answer(results: list[ToolResult]) -> str:
    """Asked to fix code: it cannot edit, so what the tests say and the function the failing test calls."""
    parts = [SAY["code_not_edited"], *(report_test_run(result.content) for result in results[:1])]
    if len(results) > 1:
        failing = FAILING_CALL.search(results[0].content)
        task = Task("function", detail={"name": failing["function"] if failing else None})
        parts.append("The function the failing test calls:\n" + _show_function(task, results[1]))
    return "\n\n".join(parts)


def _quote(lead: str, content: str, max_lines: int = 12) -> str:
    lines = content.splitlines()
    return f"{lead}\n" + "\n".join(lines[:max_lines]) + (f"\n(... {len(lines) - max_lines} more lines)" if len(lines) > max_lines else "")
