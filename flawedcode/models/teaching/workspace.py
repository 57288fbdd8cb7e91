"""The demo project's asks, alone or as follow-ups: how the tests went, why one fails, which function is wrong and why, what the script prints (as it
is, or with one function changed), a CSV's rows and its first or last row.

``read_ask(text, earlier)`` reads an ask (None: not a workspace ask) against the messages before it: "which ones failed?" takes the last test run
in view (a saved run read back counts), "why is that wrong?" the last function a reply showed, "what would it print ...?" the last script run; with
nothing in view to refer to, it says so. ``next_call(ask, outputs)`` is the next tool call, ``answer(ask, outputs)`` the reply from the outputs
only (texts: ``workspace.toml``). A function is wrong, by its code, when its docstring names another of the module's functions ('daily returns')
its body never calls; "what would it print if it used daily returns" reruns the script in memory with it given daily_returns(its input)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flawedcode.models.teaching.readers import knowledge
from flawedcode.models.teaching.request import Intent
from flawedcode.models.teaching.seen import FALLBACK_OK, Seen, read_test_run, resolve
from flawedcode.models.teaching.seen import PAGE as READ_HEADER

DATA = tomllib.loads(Path(__file__).with_name("workspace.toml").read_text(encoding="utf-8"))
W, SAY, RUN_TESTS = {name: set(words) for name, words in DATA["words"].items()}, DATA["say"], DATA["scripts"]["run_tests"]
TEST_NAME = re.compile(r"(?<![\w/])test_\w+(?![\w.])")
IDENTIFIER = re.compile(r"(?<![/\w])[a-z]\w*_\w+\b(?![/.])")  # a function's name, not a dataframe's key ('money_markets/sofr')
SECTION = re.compile(r"^_{3,} (?P<test>[\w.:\[\]-]+) _{3,}$", re.MULTILINE)
FAILURE = re.compile(r"^>\s+(?P<line>.+)\n(?:.*\n)*?E\s+(?P<says>.+)\n(?:.*\n)*?(?P<file>[\w./-]+\.py):(?P<at>\d+): \w+$", re.MULTILINE)
CALLED = re.compile(r"<function (?P<function>\w+) at 0x[0-9a-f]+> = (?P<module>\w+)\.(?P=function)\b")
FILE = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\.(?:csv|py|md|txt|json|jsonl|yaml|toml)(?!\w)")  # a file named, as written
SCRIPT_IN_CODE = re.compile(r"['\"](?P<path>[\w.-]+\.py)['\"]")
MAIN, CHANGED = "\nif __name__ == ", "--- with the change:"


@dataclass(frozen=True)
class WorkspaceAsk:
    kind: Intent  # TEST_RUN, TEST_WHY, TEST_FIND, FUNCTION_WRONG, SCRIPT_OUTPUT or FILE_ROWS (request.py's intents)
    test: str | None = None  # the test named, or counted among the last run's failing ones ('the second one')
    function: str | None = None  # the function named, or the last one a reply showed ('it', 'that')
    path: str | None = None  # the file named (or the script run last, for 'it')
    words: tuple[str, ...] = ()  # the ask's words: the tests it describes, the output lines or CSV columns it names
    run: str | None = None  # the last test run in view, whole: a follow-up answers from it
    rows: tuple[str, ...] = ()  # 'first', 'last' or both ('what date range'): the CSV rows asked
    what_if: bool = False  # 'what would it print if it used daily returns': the script run again with one change (TEST_FIND: 'does it pass?')
    unresolved: bool = False  # 'why is that wrong?' with nothing in view to refer to


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_.]+", text.lower().replace("'", ""))


def read_ask(text: str, earlier: Sequence[Any] = ()) -> WorkspaceAsk | None:
    """The workspace ask a message makes, read against the messages before it, or None."""
    words, (results, shown) = words_of(text), history(earlier)
    bag, path = set(words), next(iter(FILE.findall(text)), None)
    if path and bag & W["write"]:
        return None  # 'write a file notes.md saying: the bug is in ...': a file to write, not a question about the tests
    run = next((item.content for item in reversed(results) if item.name == "run_python" and read_test_run(item.content).known), None)
    named = [name for name in IDENTIFIER.findall(text) if not name.startswith("test_")]
    failing, ordinals = list(failing_sections(run or "")), DATA["words"]["ordinals"]  # 'the second one': of the last run's failing tests
    index = next((ordinals.index(word) if word in ordinals else -1 for word in words if word in ordinals or word == "last"), len(failing))
    test = next(iter(TEST_NAME.findall(text)), None) or (failing[index] if -len(failing) <= index < len(failing) else None)
    ask = WorkspaceAsk(Intent.TEST_WHY, test, named[0] if named else None, path, tuple(word for word in words if len(word) > 2), run)
    if test and bag & (W["fail"] | W["why"]):
        return ask
    topic = tuple(word for word in ask.words if word not in W["not_topic"] | W["fail"] | W["tests"] | W["asking"])  # 'which test checks X'
    after_tests = results and (results[-1].content == run or str(results[-1].args.get("path", "")).startswith("test_"))
    other = test or path or bag & (W["why"] | W["wrong"] | W["fix"] | W["data"] | set(knowledge().frame_ids)) or bag & W["fail"] and not topic \
        or re.search(r"\b(?:19|20)\d\d\b|\b\d+[- ]?(?:y|m|yr|year|mo|month)s?\b", text)  # 'quick test: what was the max 10y in 2024?' is data
    if (bag & W["find"] and bag & W["tests"] or after_tests and bag & W["them"] and topic) and not other:  # not 'how many tests?', a run
        return replace(ask, kind=Intent.TEST_FIND, words=topic, what_if=bool(bag & W["fail"]))  # what_if: whether it passed is asked too
    if bag & (W["wrong"] | W["fix"] - {"make"}) and (named or bag & W["which"]):  # 'which line would I change to fix it?' too
        return replace(ask, kind=Intent.FUNCTION_WRONG)
    pronoun = any(word in W["one"] and (words[i + 1:] or ["one"])[0] in W["after_one"] for i, word in enumerate(words))  # 'that', not 'that file'
    if pronoun and (bag & W["wrong"] or bag & W["why"] and (shown or run)) and not (run and bag & (W["fail"] - W["wrong"])):
        return replace(ask, kind=Intent.FUNCTION_WRONG, function=shown, unresolved=shown is None and run is None)
    fails = (bag & W["fail"] - W["passing"] or bag & W["fail"] and (run or not bag & W["tests"])) and (  # 'do the tests pass?': a run;
        run or shown or path or bag & (W["tests"] | W["script"]) or len(words) <= 12)  # not 'the coffee machine broke' in a long data ask
    if (fails or bag & W["wrong"] and bag & W["tests"]) and not bag & W["fix"]:  # 'make the failing tests pass': a fix
        return ask if bag & (W["why"] | W["wrong"]) else replace(ask, kind=Intent.TEST_RUN)
    rows = tuple(end for end in ("first", "last") if bag & W[end]) if (path or ".csv").endswith(".csv") else ()  # a CSV's rows asked
    if (path or "csv" in bag) and (bag & W["rows"] and bag & W["count"] or rows):
        return replace(ask, kind=Intent.FILE_ROWS, rows=rows)
    script = path if path and path.endswith(".py") and not path.startswith("test_") else None
    ran = next((found["path"] for item in reversed(results) if (found := SCRIPT_IN_CODE.search(str(item.args.get("code", ""))))), None)
    said = bag & (W["prints"] | W["script"])  # a verb and a noun: 'what does the report give', not 'which median did you report'
    target = script or bag & W["script"] and len(said) > 1 or bag & W["one"] and (ran or bag & W["would"])  # 'what would it print'
    if target and bag & W["prints"] and bag & W["asking"] or ran and bag & W["would"] and bag & W["using"]:  # 'and if it used X?'
        return replace(ask, kind=Intent.SCRIPT_OUTPUT, path=script or ran, what_if=bool(bag & W["would"]), function=ask.function or shown)
    return None


def history(earlier: Sequence[Any]) -> tuple[list[Seen], str | None]:
    """What was seen before the ask: tool results (one read back counts whole), and the function last shown or named ('it', 'that')."""
    calls = {call["id"]: call for message in earlier for call in getattr(message, "tool_calls", None) or []}
    results = [Seen(calls.get(m.tool_call_id, {}).get("name", m.name), calls.get(m.tool_call_id, {}).get("args", {}), m.text)
               for m in earlier if m.type == "tool"]
    said = [re.findall(r"\bdef (\w+)\(", m.text) if m.type == "ai" else IDENTIFIER.findall("\n".join(line for line in m.text.splitlines()
            if not m.text.startswith("[") or line.startswith(("Last request", "Requests")))) for m in earlier if m.type in ("ai", "human")]
    return resolve(results), next((name for names in reversed(said) for name in reversed(names) if not name.startswith("test_")), None)


def next_call(ask: WorkspaceAsk, outputs: list[str]) -> tuple[str, dict] | None:
    """The next tool call the ask needs, given the outputs of the calls made so far (in order)."""
    if ask.kind in (Intent.FILE_ROWS, Intent.SCRIPT_OUTPUT):
        path, done = file_and_outputs(ask, outputs)
        if path is None:
            return None if outputs else ("list_files", {"path": "."})
        header = READ_HEADER.match(done[0]) if done else None
        if ask.kind is Intent.FILE_ROWS:
            row = ask.rows[len(done) - 1] if header and 0 < len(done) <= len(ask.rows) else None  # the header line, then each row
            return ("read_file", {"path": path, "offset": int(header["n"]) - 1 if row == "last" else 1, "limit": 1}) if row else \
                None if done else ("read_file", {"path": path, "limit": 1})
        if ask.what_if and not done:
            return "read_file", {"path": path, "limit": 2000}
        f, g = (change_of(ask, body_of(done[0])) or (None, None)) if ask.what_if else ("", "")
        if len(done) == ask.what_if and f is not None:
            changes = ("", f"\n_{f} = {f}\n{f} = lambda first, *args, **kwargs: _{f}({g}(first), *args, **kwargs)\n")[:1 + ask.what_if]
            return "run_python", {"code": DATA["scripts"]["run_script"].format(script=path, changes=changes), "timeout": 60}
        return None
    if ask.kind is Intent.TEST_FIND:  # the tests' names (a script lists them), then a run when how one went is asked and none is in view
        return ("run_python", {"code": DATA["scripts"]["list_tests"], "timeout": 60}) if not outputs else ("run_python", {
            "code": RUN_TESTS, "timeout": 60}) if ask.what_if and not test_run_for(ask, outputs) else None
    outputs = [ask.run, *outputs] if ask.run else outputs
    if not outputs and not ask.unresolved:
        return "run_python", {"code": RUN_TESTS, "timeout": 60}
    called = called_functions(outputs[0], ask) if len(outputs) == 1 and ask.kind is not Intent.TEST_RUN else []
    return ("read_file", {"path": f"{called[0].split('.')[0]}.py", "limit": 2000}) if called else None


def file_and_outputs(ask: WorkspaceAsk, outputs: list[str]) -> tuple[str | None, list[str]]:
    """The file the ask is about (named, else the project's one script or CSV in the listing) and the outputs after the listing."""
    if ask.path:
        return ask.path, outputs
    names = [line.split(" (")[0] for line in outputs[0].splitlines()[1:]] if outputs else []
    files = [name for name in names if name.endswith(".csv" if ask.kind is Intent.FILE_ROWS else ".py") and not name.startswith("test")]
    return files[0] if len(files) == 1 else None, outputs[1:]


def tests_found(ask: WorkspaceAsk, outputs: list[str]) -> str:
    """The tests whose names hold the ask's words (all of them when it names none), each with how it went in the last run."""
    listed, run = re.findall(r"^(\S+\.py)::(test_\w+)$", outputs[0] if outputs else "", re.MULTILINE), test_run_for(ask, outputs)
    names, report = [name for _, name in listed], read_test_run(run or "")
    held = {name: [w for w in ask.words if w.rstrip("s") in {part.rstrip("s") for part in name.split("_")[1:]}] for name in names}
    found, files = [name for name in names if len(held[name]) == len(ask.words)], ", ".join(dict.fromkeys(path for path, _ in listed))
    lines = [SAY["tests_in"].format(files=files, count=len(names), names=", ".join(names))]
    if not found:
        return f"{SAY['none_found'].format(words=repr(' '.join(ask.words)))} {lines[0]}" if names else SAY["no_tests"]
    if ask.words:
        lines = [SAY["found"].format(names=", ".join(found), words=repr(" ".join(ask.words)))]
    failed, passed = {test.split("::")[-1] for test in report.failing}, set(names) if report.summary else set(FALLBACK_OK.findall(run or ""))
    return "\n".join(lines + [SAY["status"].format(when="earlier in our conversation" if ask.run else "I just made", name=name, how=SAY[
        "statuses"][1 if name in failed else 0 if name in passed else 2]) for name in found if report.known])


def test_run_for(ask: WorkspaceAsk, outputs: list[str]) -> str | None:
    return ask.run or next((output for output in outputs[1:] if read_test_run(output).known), None)


def failing_sections(output: str) -> dict[str, str]:
    """pytest's failure report, one section per failing test (its name: the text under its ``____ name ____`` line)."""
    parts = SECTION.split(output.split("short test summary")[0])  # none in a saved run not read back yet
    return {name.split("::")[-1]: text for name, text in zip(parts[1::2], parts[2::2])}


def tests_asked(ask: WorkspaceAsk, sections: dict[str, str]) -> list[str]:
    """The failing tests the ask is about: the one named, else those whose names hold the ask's words."""
    return [ask.test] * (ask.test in sections) if ask.test else [n for n in sections if any(w in n for w in ask.words if w[4:])] or list(sections)


def called_functions(output: str, ask: WorkspaceAsk) -> list[str]:
    """``module.function`` the asked failing tests' assertions call, most called first."""
    sections = failing_sections(output)
    texts = [sections[name] for name in tests_asked(ask, sections)] if ask.kind is Intent.TEST_WHY else list(sections.values())
    counts = Counter(f"{module}.{function}" for text in texts for function, module in CALLED.findall(text))
    return [name for name, _ in counts.most_common() if not ask.function or name.endswith(f".{ask.function}")]


def body_of(read: str) -> str:
    """A read_file result's text, without its header and continuation lines."""
    return "\n".join(line for line in read.splitlines()[1 if READ_HEADER.match(read) else 0:] if not line.startswith("# ... "))


def functions_in(source: str) -> dict[str, ast.FunctionDef]:  # the module's top-level functions by name (none if it does not parse)
    try:
        return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    except SyntaxError:
        return {}


def unused_namesake(functions: dict[str, ast.FunctionDef], name: str) -> str | None:
    """Another of the module's functions that ``name``'s docstring names ('daily returns') and its body never calls."""
    node, doc = functions[name], f" {' '.join(words_of(ast.get_docstring(functions[name]) or ''))} "
    calls = {getattr(call.func, "id", getattr(call.func, "attr", "")) for call in ast.walk(node) if isinstance(call, ast.Call)}
    return next((other for other in functions if other not in (name, *calls) and f" {other.replace('_', ' ')} " in doc), None)


def diagnosis(source: str, name: str) -> str:
    """Why ``name`` is wrong, where its code says so (its docstring names a function its body never calls), else that it can't tell."""
    functions = functions_in(source)
    if name not in functions or (other := unused_namesake(functions, name)) is None:
        return SAY["undiagnosed"]
    node, argument = functions[name], functions[name].args.args[0].arg if functions[name].args.args else "its input"
    call = next((call for call in ast.walk(node) if isinstance(call, ast.Call) and any(getattr(a, "id", "") == argument for a in call.args)), None)
    return SAY["docstring"].format(doc=(ast.get_docstring(node) or "").split("\n")[0], other=other, argument=argument,
                                   call=ast.unparse(call) if call else "its result", words=other.replace("_", " "))


def change_of(ask: WorkspaceAsk, source: str) -> tuple[str, str] | None:
    """(f, g) for 'what would it print if it used g': g, the module's function the ask's words name most (a tie: None); f,
    the function under discussion, else the one whose docstring names g and never calls it. None without a main block."""
    functions, said = functions_in(source), {part.rstrip("s") for word in ask.words for part in word.split("_")}
    if "fixed" in said and ask.function in functions and (fix := unused_namesake(functions, ask.function)):  # 'if that's fixed':
        return (ask.function, fix) if MAIN in source else None  # the change its code's diagnosis names
    scores = Counter({g: len(said & {part.rstrip("s") for part in g.split("_")}) for g in functions if g != ask.function})
    (g, best), *rest = scores.most_common() or [(None, 0)]
    f = ask.function if ask.function in functions else next((f for f in functions if unused_namesake(functions, f) == g), None)
    return (f, g) if MAIN in source and g and best == g.count("_") + 1 and f and not (rest and rest[0][1] == best) else None


def answer(ask: WorkspaceAsk, outputs: list[str]) -> str:
    """The reply, from the outputs only."""
    if ask.kind is Intent.TEST_FIND:
        return tests_found(ask, outputs)
    if ask.kind in (Intent.FILE_ROWS, Intent.SCRIPT_OUTPUT):
        return (count_rows if ask.kind is Intent.FILE_ROWS else script_output)(ask, *file_and_outputs(ask, outputs))
    outputs = [ask.run, *outputs] if ask.run else outputs
    if ask.unresolved or not outputs:
        return SAY["no_referent"] if ask.unresolved else "I could not run the tests (no tool to run Python)."
    run, sections, called = read_test_run(outputs[0]), failing_sections(outputs[0]), called_functions(outputs[0], ask)
    if not run.known or not sections and not ask.test:  # no failure report (the project's fallback runner): the runner's own words
        return run.describe()
    summary, lead = f"(pytest's summary line: {run.summary})" * bool(run.summary), [SAY["run_earlier"]] if ask.run else []
    if ask.kind is Intent.FUNCTION_WRONG:
        callers = ", ".join(name for name, text in sections.items() if called and called[0].split(".")[-1] in text)
        lead.append(SAY["wrong" if called else "not_called" if ask.function else "no_called"].format(failed=f"{len(sections)} test"
                    + "s" * (len(sections) != 1), function=called[0] if called else ask.function, callers=callers, summary=summary))
    else:
        lead += explain_tests(ask, sections, summary, run)
    module = body_of(outputs[1]) if len(outputs) > 1 else ""  # the module the failing assertions call, read
    if called and ask.kind is Intent.TEST_RUN:
        lead.append(SAY["called"].format(function=called[0]))
    elif called and (node := functions_in(module).get(name := called[0].split(".")[-1])):
        source = "\n".join(module.splitlines()[node.lineno - 1:node.end_lineno])
        lead.append(f"{called[0]} ({called[0].split('.')[0]}.py):\n```python\n{source}\n```\n" + SAY["shown"].format(why=diagnosis(module, name)))
    return "\n".join(lead)


def explain_tests(ask: WorkspaceAsk, sections: dict[str, str], summary: str, run) -> list[str]:
    """Each failing test asked, with its failing line and pytest's explanation; a named test that passed, said."""
    failing = dict.fromkeys([name.split("::")[-1] for name in run.failing] + list(sections))  # all named, with a report or not
    if ask.test and ask.test not in failing:
        return [f"{ask.test} {'passes: it is not among the failing tests' if run.summary else 'is not named in the test output'} {summary}."]
    asked = tests_asked(ask, failing) if ask.kind is Intent.TEST_WHY else list(failing)  # 'which ones fail?': all, by no word of it
    return [f"{len(asked)} test{'s' * (len(asked) > 1)} {'you asked about ' * (len(asked) < len(failing))}failed {summary}:"] + [
        f"- {name}" + (": the failing line" + SAY["failure"].format(**found.groupdict()) if (found := FAILURE.search(sections.get(name, ""))) else "")
        for name in asked]


def script_output(ask: WorkspaceAsk, script: str | None, done: list[str]) -> str:
    """What the script printed: the lines whose labels the ask names (else all); with a change, the lines that changed."""
    change = change_of(ask, body_of(done[0])) if ask.what_if and done else None
    if script is None or ask.what_if and change is None:
        return SAY["no_script" if script is None else "no_main" if done and MAIN not in body_of(done[0]) else "no_change"].format(script=script)
    if len(done) <= ask.what_if or not done[-1].startswith("# exit code"):  # no tool to run it, or an error said instead
        return f"I could not run {script}. {done[-1].strip() if done else ''}".strip()
    code, _, printed = done[-1].partition("\n")
    before, _, after = (lines.splitlines() for lines in printed.partition(CHANGED + "\n"))
    if ask.what_if:
        was = {line.split(":")[0]: line.split(":", 1)[-1].strip() for line in before}
        lines = [f"{line}  (as the code is: {was.get(line.split(':')[0], 'not printed')})" for line in after if line not in before] \
            if code == "# exit code 0" else printed.strip().splitlines()[-1:]  # the change broke it: its error
        return "\n".join([SAY["broke" if code != "# exit code 0" else "changed" if lines else "unchanged"].format(
            script=script, function=change[0], other=change[1]), *lines])
    scores = [sum(any(w.startswith(x) or x.startswith(w) for x in words_of(line.split(":")[0]) if len(x) > 2) for w in ask.words) for line in before]
    asked = [line for line, score in zip(before, scores) if score and score == max(scores)] or before
    return "\n".join([SAY["prints"].format(script=script, code=code.removeprefix("# exit code ")), *asked])


def count_rows(ask: WorkspaceAsk, path: str | None, done: list[str]) -> str:
    """A CSV's rows from read_file's line count (its first line read), and the row asked, by the columns the ask names."""
    if not (reads := [output for output in done if READ_HEADER.match(output)]):
        return SAY["no_csv"] if path is None else (done[-1].strip().splitlines() or ["I could not read the file."])[0] if done else SAY["no_csv"]
    lines, rows, columns = int(READ_HEADER.match(reads[0])["n"]), ask.rows[:len(reads) - 1], reads[0].splitlines()[1].split(",")
    text = SAY["rows" if path.endswith(".csv") else "lines"].format(path=path, lines=lines, rows=lines - 1, read=SAY["read"][bool(rows)])
    for row, read, pairs in ((row, read, list(zip(columns, read.splitlines()[1].split(",")))) for row, read in zip(rows, reads[1:])):
        text += SAY["row"].format(row=row, line=READ_HEADER.match(read)["a"], values=", ".join(
            " ".join(pair) for pair in [pair for pair in pairs if pair[0].lower() in ask.words] or pairs))
    return text
