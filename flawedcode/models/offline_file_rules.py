"""The file and code rules of the offline model's routing table (the table itself: offline_intents.py).

Each rule is a row of ``offline_intents.toml`` and a planner ``_plan_<name>(clause, context)`` returning tasks; three
rows also need a test here (``_is_run_tests``, ``_is_show_function``, ``_is_search_files``). Their phrases are data
(``offline_answers.toml``, ``[files]``). Scripts and tests run with ``RUN_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from flawedcode.models.offline_cues import data_file
from flawedcode.models.offline_plan import Clause, Context, Step, Task, calls, has_any, reply
from flawedcode.models.teaching.workspace import RUN_TESTS as RUN_TESTS_CODE  # pytest if installed, else each test_*.py run

WORDS = {key: tuple(value) if isinstance(value, list) else value for key, value in data_file("offline_answers.toml")["files"].items()}
RUN_TIMEOUT_SECONDS = 60
"""run_python timeout for scripts and tests (a busy machine needs more than the tool's default 10 s)."""


def run_tests_step() -> Step:
    """The call that runs the project's tests (``RUN_TESTS_CODE``)."""
    return Step("run_python", {"code": RUN_TESTS_CODE, "command": "python -m pytest -q", "timeout": RUN_TIMEOUT_SECONDS})


def _plan_fix_code(clause: Clause, context: Context) -> list[Task]:
    return [Task("fix", steps=[run_tests_step()])]


def _plan_write_file(clause: Clause, context: Context) -> list[Task]:
    path = clause.paths[0]
    content = clause.code if clause.code is not None else _content_for(clause.text, path, clause.quoted)
    if content is None:
        return [reply(f"What should I write to {path}? Give the text in quotes or after a colon.")]
    return [calls(Step("write_file", {"path": path, "content": content}), path=path)]


def _content_for(text: str, path: str, quoted: list[str]) -> str | None:
    """The text to write: quoted, else after a colon (after the path, then before it), else after 'saying'."""
    if quoted:
        return quoted[0]
    before, _, after = text.partition(path) if path in text else ("", "", text)
    content = next((part.split(":", 1)[1].strip() for part in (after, before) if ":" in part and part.split(":", 1)[1].strip()), None)
    said = re.search(r"\b(?:saying|that says|which says|reading|with the (?:text|words|line)|containing)\s+(?:that\s+)?(.+)$", after,
                     re.IGNORECASE)  # 'save a note to notes.txt saying sofr averaged 5.1 in 2024'
    content = content or (said.group(1).strip() if said else None)
    return content + "\n" if content else None


def _plan_run_code(clause: Clause, context: Context) -> list[Task]:
    return [calls(Step("run_python", {"code": clause.code if clause.code.endswith("\n") else clause.code + "\n", "timeout": RUN_TIMEOUT_SECONDS}))]


def _is_run_tests(clause: Clause, context: Context) -> bool:
    test_paths = [path for path in clause.paths if PurePosixPath(path).name.startswith("test")]
    if re.search(r"\bdo (?:the )?tests pass\b|\bpytest\b", clause.norm):
        return True
    asks_to_run = re.search(WORDS["run_verbs"] + r"|\bcheck whether\b|\bcheck if\b", clause.norm)
    if asks_to_run and (re.search(WORDS["test_words"], clause.norm) or test_paths):
        return not [path for path in clause.paths if path.endswith(".py") and path not in test_paths]
    return False


def _plan_run_tests(clause: Clause, context: Context) -> list[Task]:
    return [Task("tests", steps=[run_tests_step()])]


def _plan_run_script(clause: Clause, context: Context) -> list[Task]:
    script = next((path for path in clause.paths if path.endswith(".py")), None)
    if script is None and re.search(r"\bit\b", clause.norm) and context.last_path and context.last_path.endswith(".py"):
        script = context.last_path
    if script is None:
        return [Task("find_file", steps=[Step("list_files", {"path": "."})], detail={"hint": "analy", "then": "run"})]
    return [calls(Step("run_python", {"code": run_script_code(script), "command": f"python {script}", "timeout": RUN_TIMEOUT_SECONDS}), path=script)]


def run_script_code(script: str) -> str:
    return f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n"


def _function_name(clause: Clause) -> str | None:
    text = clause.text
    for path in clause.paths:
        text = text.replace(path, " ")
    names = [name for name in re.findall(r"\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+)\b", text) if not name.isupper()]
    return names[0].lower() if names else None


def _is_show_function(clause: Clause, context: Context) -> bool:
    if _literal_call(clause.text) is not None:  # 'and daily_returns([100.0, 110.0])?': a call to run (only a project's function runs)
        return True
    if clause.mentions.dataframes or clause.mentions.columns or _is_search_files(clause, context):
        return False
    if re.search(WORDS["function_words"], clause.norm):
        return True
    # with a path, 'open analyze.py and tell me what X is' is the file
    return not clause.paths and _function_name(clause) is not None and has_any(clause.norm, WORDS["read_verbs"] + ("what does",))


def _plan_show_function(clause: Clause, context: Context) -> list[Task]:
    if (call := _literal_call(clause.text)) is not None:  # 'what does moving_average([2, 4, 6], window=2) return?': run it, never its source
        return [calls(Step("run_python", {"code": call_code(call), "timeout": RUN_TIMEOUT_SECONDS}))]
    name = _function_name(clause)
    words = [word for word in re.findall(r"[a-z]{4,}", clause.norm) if word not in WORDS["function_stop"]]
    pattern = rf"def \w*{re.escape(name)}\w*" if name else r"^\s*def \w+"
    return [Task("function", steps=[Step("search_files", {"pattern": pattern})],
                 detail={"name": name, "words": words, "test": "test" in clause.norm})]


def call_code(call: str) -> str:
    """Code that runs one of the project's functions on literal arguments (its module found by its ``def``) and prints the result."""
    name = call.split("(")[0]
    return (f"import importlib, pathlib, sys\nsys.path.insert(0, '.')\ncall = {call!r}\n"
            f"module = next((path.stem for path in sorted(pathlib.Path('.').glob('*.py')) if 'def {name}(' in path.read_text()), None)\n"
            f"print('No .py file of this project defines {name}(), so I ran nothing.' if module is None else\n"
            "      f'{call} returns {eval(call, vars(importlib.import_module(module)))!r}')\n")


def _literal_call(text: str) -> str | None:
    """The call ``name(...)`` a message quotes when every argument is a literal (a list, a number, a string); else None."""
    for match in re.finditer(r"(?<![\w.\]])[a-z_][a-z0-9_]*\(.*\)", text):  # never a method: "df['rate'].mean()"
        try:
            node = ast.parse(match.group(0), mode="eval").body
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or not (node.args or node.keywords):
                continue
            for value in [*node.args, *(keyword.value for keyword in node.keywords)]:
                ast.literal_eval(value)  # a name or an expression is no literal: raises
            return match.group(0)
        except (SyntaxError, ValueError):
            continue
    return None


def _plan_search_archive(clause: Clause, context: Context) -> list[Task]:
    query = clause.quoted[0] if clause.quoted else search_words(clause.text, drop=WORDS["archive_drop"])
    return [calls(Step("search_archive", {"query": query or "goal"}))]


def _is_search_files(clause: Clause, context: Context) -> bool:
    return has_any(clause.norm, WORDS["search_verbs"]) and bool(_search_pattern(clause))


def _plan_search_files(clause: Clause, context: Context) -> list[Task]:
    roles = {"pattern": _search_pattern(clause)}
    if target := next((path for path in clause.paths if path != roles["pattern"]), None):
        roles["path"] = target
    return [calls(Step("search_files", roles))]


def _search_pattern(clause: Clause) -> str | None:
    if clause.quoted:
        return clause.quoted[0]
    if grep := re.search(r"\bgrep\s+(?:-\w+\s+)*([^\s]+)", clause.text):
        return grep.group(1)
    return next(iter(search_words(clause.text).split()), None)


def search_words(text: str, drop: tuple[str, ...] = ()) -> str:
    words = [word for word in re.findall(r"[A-Za-z0-9_./-]+", text) if word.lower() not in WORDS["search_stopwords"] and word.lower() not in drop]
    return " ".join((["TODO"] if re.search(r"\btodos?\b", text, re.IGNORECASE) else []) + words)


def _plan_list_files(clause: Clause, context: Context) -> list[Task]:
    folder = next((path for path in ("scratch", "archives") if re.search(rf"\b{path}\b", clause.norm)), ".")
    return [calls(Step("list_files", {"path": folder}))]


def _plan_read_file(clause: Clause, context: Context) -> list[Task]:
    if not clause.paths and context.last_path and re.search(r"\bit\b", clause.norm):
        return [calls(Step("read_file", {"path": context.last_path}), path=context.last_path)]
    if not clause.paths:
        hint = next(hint for phrase, hint in WORDS["named"].items() if phrase in clause.norm)
        return [Task("find_file", steps=[Step("list_files", {"path": "."})], detail={"hint": hint, "then": "read"})]
    tasks = []
    for path in clause.paths:
        roles: dict = {"path": path}
        if lines := re.search(r"\blines?\s+(\d+)\s*(?:-|to|through)\s*(\d+)", clause.norm):
            roles["offset"], roles["limit"] = int(lines.group(1)) - 1, int(lines.group(2)) - int(lines.group(1)) + 1
        elif re.match(r"^head\b", clause.norm):
            roles["limit"] = 10
        elif re.search(WORDS["about_words"], clause.norm):  # a question about the file: described, not quoted
            roles.update({"limit": 1} if path.endswith(".csv") else {})  # a CSV by its header line
            tasks.append(Task("about_file", steps=[Step("read_file", roles)], path=path))
            continue
        tasks.append(calls(Step("read_file", roles), path=path))
    return tasks
