"""The file and code rules of the offline model's routing table (the table itself: offline_intents.py).

Each rule is a test ``_is_<name>(clause, context)`` and a planner ``_plan_<name>(clause, context)``
returning tasks. Scripts and tests run with ``RUN_TIMEOUT_SECONDS``; files named in words
("the readme", "the analysis script") are found in a listing first; a function is found
with ``search_files``; asked to fix code, it runs the tests and reads the failing function.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from flawedcode.models.offline_plan import Clause, Context, Step, Task, calls, has_any, reply

RUN_TIMEOUT_SECONDS = 60
"""run_python timeout for scripts and tests (a busy machine needs more than the tool's default 10 s)."""
RUN_TESTS_CODE = """\
import glob, runpy, sys, traceback
try:
    import pytest
except ImportError:  # no pytest here (make demo installs none): the project's own fallback, python test_*.py
    failed = 0
    for path in sorted(glob.glob('test_*.py')):
        print(f'pytest is not installed: python {path}')
        try:
            runpy.run_path(path, run_name='__main__')
        except Exception:
            failed += 1
            traceback.print_exc(file=sys.stdout)
            print(f'FAILED {path} - {sys.exc_info()[0].__name__}')
    sys.exit(1 if failed else 0)
sys.exit(pytest.main(['-q']))
"""
"""Run the project's tests: with pytest when it is installed, else each test file as a script (what its docstring says)."""

FIX_WORDS = r"\b(?:fix|repair|patch|debug|correct)\b.*\b(?:bug|code|function|calculation|formula|tests?|\w+\.py|volatility|it)\b|" \
            r"\bmake the (?:failing )?tests pass\b|^(?:fix|debug) \S+\.py"
RUN_VERBS = r"\b(?:run|execute|launch|kick off|start|python|try|eval)\b"
TEST_WORDS = r"\btests?\b|\bpytest\b|\btest suite\b|\bunit tests\b|\bthe checks\b"
READ_VERBS = ("read", "open", "show", "cat", "display", "print", "view", "look at", "see", "pull up", "head", "what is in", "contents")


def _is_fix_code(clause: Clause, context: Context) -> bool:
    return bool(re.search(FIX_WORDS, clause.norm)) and not clause.code


def _plan_fix_code(clause: Clause, context: Context) -> list[Task]:
    return [Task("fix", steps=[Step("run_python", {"code": RUN_TESTS_CODE, "command": "python -m pytest -q",
                                                   "timeout": RUN_TIMEOUT_SECONDS})])]


def _is_write_file(clause: Clause, context: Context) -> bool:
    return bool(clause.paths) and has_any(clause.norm, ("write", "save", "create", "overwrite", "put", "store", "jot down",
                                                        "make a file", "make file", "append", "record"))


def _plan_write_file(clause: Clause, context: Context) -> list[Task]:
    path = clause.paths[0]
    content = clause.code if clause.code is not None else _content_for(clause.text, path, clause.quoted)
    if content is None:
        return [reply(f"What should I write to {path}? Give the text in quotes or after a colon.")]
    return [calls(Step("write_file", {"path": path, "content": content}), path=path)]


def _content_for(text: str, path: str, quoted: list[str]) -> str | None:
    if quoted:
        return quoted[0]
    after = text.split(path, 1)[1] if path in text else text
    before = text.split(path, 1)[0]
    for part in (after, before):
        if ":" in part:
            content = part.split(":", 1)[1].strip()
            if content:
                return content + "\n"
    said = re.search(r"\b(?:saying|that says|which says|reading|with the (?:text|words|line)|containing)\s+(?:that\s+)?(.+)$", after,
                     re.IGNORECASE)  # 'save a note to notes.txt saying sofr averaged 5.1 in 2024'
    return said.group(1).strip() + "\n" if said and said.group(1).strip() else None


def _is_run_code(clause: Clause, context: Context) -> bool:
    return clause.code is not None and clause.code.strip() != ""


def _plan_run_code(clause: Clause, context: Context) -> list[Task]:
    return [calls(Step("run_python", {"code": clause.code if clause.code.endswith("\n") else clause.code + "\n",
                                      "timeout": RUN_TIMEOUT_SECONDS}))]


def _is_run_tests(clause: Clause, context: Context) -> bool:
    test_paths = [path for path in clause.paths if PurePosixPath(path).name.startswith("test")]
    if re.search(r"\bdo (?:the )?tests pass\b|\bpytest\b", clause.norm):
        return True
    if re.search(RUN_VERBS + r"|\bcheck whether\b|\bcheck if\b", clause.norm) and (re.search(TEST_WORDS, clause.norm) or test_paths):
        return not [path for path in clause.paths if path.endswith(".py") and path not in test_paths]
    return False


def _plan_run_tests(clause: Clause, context: Context) -> list[Task]:
    return [calls(Step("run_python", {"code": RUN_TESTS_CODE, "command": "python -m pytest -q", "timeout": RUN_TIMEOUT_SECONDS}))]


def _is_run_script(clause: Clause, context: Context) -> bool:
    if not re.search(RUN_VERBS, clause.norm):
        return False
    scripts = [path for path in clause.paths if path.endswith(".py")]
    return bool(scripts) or bool(re.search(r"\b(?:it|the script|the analysis|analysis script|the report)\b", clause.norm))


def _plan_run_script(clause: Clause, context: Context) -> list[Task]:
    script = next((path for path in clause.paths if path.endswith(".py")), None)
    if script is None and re.search(r"\bit\b", clause.norm) and context.last_path and context.last_path.endswith(".py"):
        script = context.last_path
    if script is None:
        return [Task("find_file", steps=[Step("list_files", {"path": "."})], detail={"hint": "analy", "then": "run"})]
    return [calls(Step("run_python", {"code": run_script_code(script), "command": f"python {script}",
                                      "timeout": RUN_TIMEOUT_SECONDS}), path=script)]


def run_script_code(script: str) -> str:
    return f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n"


def _function_name(clause: Clause) -> str | None:
    text = clause.text
    for path in clause.paths:
        text = text.replace(path, " ")
    names = [name for name in re.findall(r"\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+)\b", text) if not name.isupper()]
    return names[0].lower() if names else None


def _is_show_function(clause: Clause, context: Context) -> bool:
    if clause.mentions.dataframes or clause.mentions.columns or _is_search_files(clause, context):
        return False
    if re.search(r"\b(?:function|def|method|the code of|code for|the test for)\b", clause.norm):
        return True
    if clause.paths:
        return False  # 'open analyze.py and tell me what X is': the file
    return _function_name(clause) is not None and has_any(clause.norm, READ_VERBS + ("what does",))


def _plan_show_function(clause: Clause, context: Context) -> list[Task]:
    name = _function_name(clause)
    words = [word for word in re.findall(r"[a-z]{4,}", clause.norm) if word not in FUNCTION_STOP]
    pattern = rf"def \w*{re.escape(name)}\w*" if name else r"^\s*def \w+"
    wants_test = "test" in clause.norm
    return [Task("function", steps=[Step("search_files", {"pattern": pattern})],
                 detail={"name": name, "words": words, "test": wants_test})]


FUNCTION_STOP = frozenset("show display print open code function that computes compute calculate does what please "
                          "from with this into the volatility_ test see".split()) - {"volatility"}


def _is_search_archive(clause: Clause, context: Context) -> bool:
    return has_any(clause.norm, ("archive", "archives", "archived")) and has_any(
        clause.norm, ("search", "find", "look", "check", "recover", "grep"))


def _plan_search_archive(clause: Clause, context: Context) -> list[Task]:
    query = clause.quoted[0] if clause.quoted else search_words(clause.text, drop=ARCHIVE_DROP)
    return [calls(Step("search_archive", {"query": query or "goal"}))]


ARCHIVE_DROP = ("archive", "archives", "archived", "conversation", "said", "say", "about", "what", "we", "check", "look")


def _is_search_files(clause: Clause, context: Context) -> bool:
    return has_any(clause.norm, ("search", "grep", "look for", "find where", "occurrences", "where is", "where are",
                                 "which files mention", "anywhere", "find all")) and bool(_search_pattern(clause))


def _plan_search_files(clause: Clause, context: Context) -> list[Task]:
    roles = {"pattern": _search_pattern(clause)}
    target = next((path for path in clause.paths if path != roles["pattern"]), None)
    if target:
        roles["path"] = target
    return [calls(Step("search_files", roles))]


def _search_pattern(clause: Clause) -> str | None:
    if clause.quoted:
        return clause.quoted[0]
    grep = re.search(r"\bgrep\s+(?:-\w+\s+)*([^\s]+)", clause.text)
    if grep:
        return grep.group(1)
    words = search_words(clause.text).split()
    return words[0] if words else None


SEARCH_STOPWORDS = frozenset(
    "a an the for of in on to and or please can you could would me my our we i is are was were be where "
    "search find look grep occurrences show all any every files file project code workspace that which what "
    "used defined called mentioned mention mentions appears appear there it this these those with from word "
    "anywhere todos".split())


def search_words(text: str, drop: tuple[str, ...] = ()) -> str:
    words = [word for word in re.findall(r"[A-Za-z0-9_./-]+", text)
             if word.lower() not in SEARCH_STOPWORDS and word.lower() not in drop]
    if re.search(r"\btodos?\b", text, re.IGNORECASE):
        words = ["TODO"] + words
    return " ".join(words)


def _is_list_files(clause: Clause, context: Context) -> bool:
    if clause.has("list files"):
        return True
    return has_any(clause.norm, ("files", "folder", "directory", "project tree", "project structure", "workspace",
                                 "folder structure", "tree")) and has_any(
        clause.norm, ("list", "show", "what", "which", "see", "have")) and not clause.mentions.dataframes


def _plan_list_files(clause: Clause, context: Context) -> list[Task]:
    folder = next((path for path in ("scratch", "archives") if re.search(rf"\b{path}\b", clause.norm)), ".")
    return [calls(Step("list_files", {"path": folder}))]


def _is_read_file(clause: Clause, context: Context) -> bool:
    if clause.paths:
        return True
    if context.last_path and re.search(r"\bit\b", clause.norm) and has_any(clause.norm, READ_VERBS):
        return True
    return any(phrase in clause.norm for phrase in FILE_WORDS) and has_any(clause.norm, READ_VERBS + ("what", "in"))


FILE_WORDS = {"readme": "readme", "the test file": "test_", "the tests file": "test_", "the data file": ".csv",
              "the csv": ".csv", "analysis script": "analy"}


def _plan_read_file(clause: Clause, context: Context) -> list[Task]:
    if not clause.paths and context.last_path and re.search(r"\bit\b", clause.norm):
        return [calls(Step("read_file", {"path": context.last_path}), path=context.last_path)]
    if not clause.paths:
        hint = next(hint for phrase, hint in FILE_WORDS.items() if phrase in clause.norm)
        return [Task("find_file", steps=[Step("list_files", {"path": "."})], detail={"hint": hint, "then": "read"})]
    tasks = []
    for path in clause.paths:
        roles: dict = {"path": path}
        lines = re.search(r"\blines?\s+(\d+)\s*(?:-|to|through)\s*(\d+)", clause.norm)
        if lines:
            roles["offset"], roles["limit"] = int(lines.group(1)) - 1, int(lines.group(2)) - int(lines.group(1)) + 1
        elif re.match(r"^head\b", clause.norm):
            roles["limit"] = 10
        tasks.append(calls(Step("read_file", roles), path=path))
    return tasks


