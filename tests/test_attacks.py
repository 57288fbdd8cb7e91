"""Hardening, round 3: the attacks of the third review (a hostile student, a buggy model, a crashing machine).

Each test reproduces one attack and asserts what a user now sees instead. The sandbox's
attacks live in ``test_isolation.py``; the redactor's corpus in ``test_redact.py``.
Secret-shaped values are built from parts here, so no string in this file is a key.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.context import ConversationArchive, offload
from flawedcode.context.offload import scratch_file_name

RANDOM = random.Random(24)


def random_token(length: int) -> str:
    alphabet = string.ascii_letters + string.digits
    while True:
        made = "".join(RANDOM.choice(alphabet) for _ in range(length))
        if any(c.isdigit() for c in made) and any(c.isupper() for c in made) and any(c.islower() for c in made):
            return made


# --- a secret never reaches disk through a scratch file's name ---------------------------------------

SECRET_ARGUMENTS = [
    {"code": "import os; os.environ['OPENAI_API_KEY'] = 'sk-" + "proj-" + random_token(48) + "'"},
    {"path": "notes.txt", "content": "AKIA" + "Q7" + "Z3M2K4W6P2L5N7"},  # an AWS key id: '-'/'_' games do not matter
    {"query": "token " + random_token(32)},  # a key of no known shape: a random word never goes into a name
    {"pattern": "gh" + "p_" + random_token(36)},
]


@pytest.mark.parametrize("arguments", SECRET_ARGUMENTS)
def test_a_secret_in_a_tools_arguments_never_reaches_a_scratch_file_name_or_the_archive(tmp_path: Path, arguments) -> None:
    secret_words = [word for value in arguments.values() for word in
                    "".join(c if c.isalnum() else " " for c in value).split() if len(word) >= 12]
    result = "line\n" * 3000
    done = offload(result, "run_python", arguments, scratch_dir=tmp_path / "scratch")
    for word in secret_words:
        assert word not in done.path.name and word not in done.stub, (word, done.path.name)
        assert word[:12] not in done.path.name.replace("_", "")
    archive = ConversationArchive(tmp_path / "archives", "c1")
    archive.append([HumanMessage("go", id="h"), AIMessage("", id="a", tool_calls=[{"name": "run_python", "id": "t",
                                                                                  "args": {"path": "x"}}]),
                    ToolMessage(done.stub, tool_call_id="t", id="m")])
    for name in ("0001.jsonl", "0001.md"):
        text = (tmp_path / "archives" / "c1" / name).read_text()
        for word in secret_words:
            assert word not in text and word[:12] not in text.replace("_", ""), name


def test_a_scratch_file_name_still_says_what_it_holds() -> None:
    name = scratch_file_name("x" * 6000, "chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "repo_public"})
    assert name.startswith("chartbook_get_docs_yield_curve_repo_public_") and name.endswith(".txt")


# --- scratch/ is scoped per conversation, like archives/ -------------------------------------------------

def test_a_second_conversation_cannot_list_search_or_read_the_firsts_offloads(tmp_path: Path) -> None:
    from flawedcode.agents import make_agent
    from flawedcode.tools import Workspace

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    first = make_agent("v2", workspace=workspace)
    first.send("Get docs for yield_curve/repo_public")
    offloaded = [event for event in first.log.events if event.kind == "offload"]
    assert offloaded, "the docs were offloaded"
    path = offloaded[0].detail["path"]
    tools = {each.name: each for each in first.tools}
    assert "repo_public" in tools["read_file"].invoke({"path": path})
    second = make_agent("v2", workspace=Workspace(workspace.root, workspace.scratch_dir, workspace.archive_dir))
    others = {each.name: each for each in second.tools}
    assert others["read_file"].invoke({"path": path}).startswith("Error: ")
    assert "repo_public" not in others["list_files"].invoke({"path": "scratch"})
    assert "tri_party" not in others["search_files"].invoke({"pattern": "tri_party", "path": "scratch"})
    first.reset()  # a new conversation of the same agent: the old offloads are another conversation's now
    assert tools["read_file"].invoke({"path": path}).startswith("Error: ")


def test_tools_made_without_an_agent_cannot_read_another_sessions_archive_or_offloads(tmp_path: Path) -> None:
    from flawedcode.tools import Workspace, make_tools

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    (tmp_path / "archives" / "v2-0123456789").mkdir(parents=True)
    (tmp_path / "archives" / "v2-0123456789" / "0001.md").write_text("another session's plan\n")
    (tmp_path / "scratch" / "v2-0123456789").mkdir(parents=True)
    (tmp_path / "scratch" / "v2-0123456789" / "run_python_0123456789abcdef.txt").write_text("another session's result\n")
    tools = {each.name: each for each in make_tools(workspace)}
    assert tools["read_file"].invoke({"path": "archives/v2-0123456789/0001.md"}).startswith("Error: ")
    assert "plan" not in tools["search_files"].invoke({"pattern": "plan", "path": "archives"})
    assert "result" not in tools["search_files"].invoke({"pattern": "result", "path": "scratch"})
    assert tools["read_file"].invoke({"path": "scratch/v2-0123456789/run_python_0123456789abcdef.txt"}).startswith("Error: ")


# --- hostile input files: bounded reads, one short line ------------------------------------------------

def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    from flawedcode import cli

    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_short_line(code: int, err: str, *fragments: str, limit: int = 400) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[:2000]
    assert len(lines[0]) <= limit, len(lines[0])
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("command", [["chat", "--config"], ["demo", "--config"], ["bench", "--config"], ["bench", "--tasks-file"]])
def test_dev_zero_as_an_input_file_is_refused_unread_in_one_line(capsys, command) -> None:
    code, _, err = run_cli(capsys, *command, "/dev/zero")
    assert_one_short_line(code, err, "/dev/zero", "not a regular file")


@pytest.mark.parametrize("option", ["--config", "--tasks-file"])
def test_a_64_mb_input_file_is_refused_with_a_short_line(tmp_path: Path, capsys, option) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("w") as stream:
        stream.write("budget_tokens: 8192\nsystem_prompt: '")
        stream.write("x" * (64 * 1024**2))
        stream.write("'\n")
    code, _, err = run_cli(capsys, "bench", option, str(huge))
    assert_one_short_line(code, err, "huge.yaml", "larger than")


# --- bench --out: never someone else's folder, never two runs at once, a full disk in one line ------------

ONE_TASK = "tasks:\n  - name: tiny\n    category: file_ops\n    steps: ['List the files in the workspace']\n"


@pytest.fixture
def tiny_tasks(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(ONE_TASK)
    return path


def test_bench_out_never_replaces_or_deletes_what_it_did_not_write(tmp_path: Path, tiny_tasks: Path, capsys) -> None:
    out = tmp_path / "mine"
    (out / "workspaces" / "v0").mkdir(parents=True)
    (out / "workspaces" / "v0" / "thesis.tex").write_text("my thesis")
    (out / "summary.json").write_text('{"mine": true}')
    (out / "results.md").write_text("# my results")
    code, _, err = run_cli(capsys, "bench", "--agents", "v0", "--runs", "1", "--tasks-file", str(tiny_tasks), "--out", str(out))
    assert_one_short_line(code, err, "did not write")
    assert (out / "workspaces" / "v0" / "thesis.tex").read_text() == "my thesis"
    assert (out / "summary.json").read_text() == '{"mine": true}' and (out / "results.md").read_text() == "# my results"


def test_bench_reruns_into_its_own_folder_and_leaves_other_files(tmp_path: Path, tiny_tasks: Path, capsys) -> None:
    out = tmp_path / "bench"
    args = ("bench", "--agents", "v0", "--runs", "1", "--tasks-file", str(tiny_tasks), "--out", str(out))
    assert run_cli(capsys, *args)[0] == 0
    (out / "notes.txt").write_text("kept")
    assert run_cli(capsys, *args)[0] == 0
    assert (out / "notes.txt").read_text() == "kept" and (out / ".flawedcode-bench").is_file()


def test_a_second_bench_on_the_same_out_stops_at_once(tmp_path: Path, tiny_tasks: Path, capsys) -> None:
    from flawedcode.bench.outdir import claim

    out = tmp_path / "busy"
    script = ("import sys, time\nfrom flawedcode.bench.outdir import claim\n"
              "with claim(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)\n")
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", script, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = run_cli(capsys, "bench", "--agents", "v0", "--runs", "1", "--tasks-file", str(tiny_tasks), "--out", str(out))
        assert_one_short_line(code, err, "another flawedcode bench", str(holder.pid))
        assert not (out / "runs.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    with claim(out):  # the lock went with the process that held it
        pass


def test_a_full_disk_during_bench_is_one_line_and_the_same_command_resumes(tmp_path: Path, tiny_tasks: Path, capsys,
                                                                        monkeypatch) -> None:
    import errno

    from flawedcode.bench import records, runner

    out = tmp_path / "full"
    tasks = tmp_path / "two.yaml"
    tasks.write_text(ONE_TASK + "  - name: tiny2\n    category: file_ops\n    steps: ['List the files in the workspace']\n")
    args = ("bench", "--agents", "v0", "--runs", "1", "--tasks-file", str(tasks), "--out", str(out), "--no-resume")
    real_append, calls = records.append_run, []

    def append_then_fill(out_dir, record):
        calls.append(record.task)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(Path(out_dir) / "runs.jsonl"))
        real_append(out_dir, record)

    monkeypatch.setattr(runner, "append_run", append_then_fill)
    code, _, err = run_cli(capsys, *args)
    err = "\n".join(line for line in err.splitlines() if not line.startswith("benchmark:"))  # the progress bar
    assert_one_short_line(code, err, "disk is full", "run the same command again")
    assert [json.loads(line)["task"] for line in (out / "runs.jsonl").read_text().splitlines()] == ["tiny"]
    monkeypatch.setattr(runner, "append_run", real_append)
    code, table, _ = run_cli(capsys, *args[:-1])  # resume
    assert code == 0 and "tiny" in table
    assert sorted(json.loads(line)["task"] for line in (out / "runs.jsonl").read_text().splitlines()) == ["tiny", "tiny2"]


# --- hostile recordings: one line each, never a folder outside archives/, written 0600 -----------------------

HEADER = {"type": "header", "format": "flawedcode-recording/1", "model": "offline", "provider": "flawedcode",
          "window_tokens": 8192, "conversations": []}
GOOD_CALL = {"type": "call", "n": 1, "model": "offline", "request": {"messages": [{"role": "human", "content": "hi"}],
                                                                    "tools": []},
             "response": {"type": "ai", "data": {"content": "hello", "type": "ai"}}}
MALFORMED_RECORDINGS = {
    "a list header": [[1, 2, 3], GOOD_CALL],
    "a header without a format": [{"type": "header"}, GOOD_CALL],
    "a call without a request": [HEADER, {k: v for k, v in GOOD_CALL.items() if k != "request"}],
    "messages that are not a list": [HEADER, {**GOOD_CALL, "request": {"messages": "hi"}}],
    "a message that is a string": [HEADER, {**GOOD_CALL, "request": {"messages": ["hi"]}}],
    "a response that is a string": [HEADER, {**GOOD_CALL, "response": "hello"}],
    "a call that is a list": [HEADER, [GOOD_CALL]],
    "n that is text": [HEADER, {**GOOD_CALL, "n": "one"}],
    "tools that are numbers": [HEADER, {**GOOD_CALL, "request": {"messages": [], "tools": [1, 2]}}],
    "conversations that are a string": [{**HEADER, "conversations": "v1-abc"}, GOOD_CALL],
    "a conversation id climbing out": [{**HEADER, "conversations": ["v1-../../../escaped"]}, GOOD_CALL],
    "a conversation record with ..": [HEADER, {"type": "conversation", "id": ".."}, GOOD_CALL],
    "a tool call without a name": [HEADER, {**GOOD_CALL, "request": {"messages": [
        {"role": "ai", "content": "", "tool_calls": [{"args": {}}]}]}}],
}


@pytest.mark.parametrize("label", list(MALFORMED_RECORDINGS))
def test_a_malformed_recording_is_one_line_and_makes_no_folder_outside_archives(tmp_path: Path, capsys, monkeypatch,
                                                                            label: str) -> None:
    recording = tmp_path / "bad.jsonl"
    recording.write_text("".join(json.dumps(line) + "\n" for line in MALFORMED_RECORDINGS[label]))
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(tmp_path / "deep" / "er" / "archives"))
    monkeypatch.setenv("FLAWEDCODE_SCRATCH_DIR", str(tmp_path / "deep" / "er" / "scratch"))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("hello\n"))
    before = set(tmp_path.rglob("*"))
    code, _, err = run_cli(capsys, "chat", "--model", f"replay:{recording}", "--workspace", str(tmp_path / "ws"))
    assert_one_short_line(code, err, "bad.jsonl")
    assert not [path for path in set(tmp_path.rglob("*")) - before if "escaped" in path.name]


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00binary", b"[]\n"])
def test_an_empty_or_binary_recording_is_one_line(tmp_path: Path, capsys, content: bytes) -> None:
    recording = tmp_path / "odd.jsonl"
    recording.write_bytes(content)
    code, _, err = run_cli(capsys, "demo", "--out", str(tmp_path / "out"), "--model", f"replay:{recording}")
    assert_one_short_line(code, err, "odd.jsonl")


def test_dev_zero_as_a_recording_is_refused_unread(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, "demo", "--out", str(tmp_path / "out"), "--model", "replay:/dev/zero")
    assert_one_short_line(code, err, "/dev/zero", "not a regular file")


def test_a_recording_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    from flawedcode.models import get_model

    recording = tmp_path / "session.jsonl"
    recording.write_text("old\n")
    recording.chmod(0o644)
    model = get_model("offline", record=recording)
    model.invoke("hello")
    assert recording.stat().st_mode & 0o777 == 0o600
    assert json.loads(recording.read_text().splitlines()[0])["type"] == "header"


def test_a_folder_an_earlier_bench_wrote_without_the_marker_is_still_resumed(tmp_path: Path, tiny_tasks: Path, capsys) -> None:
    out = tmp_path / "older"
    args = ("bench", "--agents", "v0", "--runs", "1", "--tasks-file", str(tiny_tasks), "--out", str(out))
    assert run_cli(capsys, *args)[0] == 0
    (out / ".flawedcode-bench").unlink()  # as an older flawedcode left it
    assert run_cli(capsys, *args)[0] == 0


# --- the lab: a lone surrogate, a huge model name -------------------------------------------------------------

def test_a_lone_surrogate_never_breaks_the_labs_snapshot(tmp_path: Path) -> None:
    from flawedcode.lab import ContextLab

    lab = ContextLab(workspace_root=tmp_path / "ws") if "workspace_root" in ContextLab.__init__.__code__.co_varnames else ContextLab()
    lab.send("notes for caf\udce9.txt please")
    for attempt in range(2):  # and again: one bad character must not break every later save
        written = lab.snapshot().save(tmp_path / f"snap{attempt}")
        assert "caf\\xe9" in (tmp_path / f"snap{attempt}" / "state.txt").read_text(encoding="utf-8")
        assert all(path.stat().st_size > 0 for path in written)
    lab.send("and the next turn works")


def test_the_labs_snapshot_redacts_a_typed_key_and_never_replaces_files(tmp_path: Path) -> None:
    from flawedcode.lab import ContextLab

    key = "sk-proj-" + "Zq8wT3xLp0Vr7NcYb2Hs5KdFgJ1mA4eQ"
    lab = ContextLab()
    lab.send(f"my openai key is {key}, list the ChartBook dataframes")
    folder = tmp_path / "snap"
    folder.mkdir()
    (folder / "state.txt").write_text("the student's own notes")
    with pytest.raises(FileExistsError, match="already holds state.txt"):
        lab.snapshot().save(folder)
    assert (folder / "state.txt").read_text() == "the student's own notes"
    lab.snapshot().save(folder, overwrite=True)
    state = (folder / "state.txt").read_text(encoding="utf-8")
    assert key not in state and "list the ChartBook dataframes" in state


def test_a_100000_character_model_name_gives_a_short_error() -> None:
    from flawedcode.lab import ContextLab
    from flawedcode.models import ModelConfigError

    with pytest.raises(ModelConfigError) as raised:
        ContextLab(model="x" * 100_000)
    assert len(str(raised.value)) < 500 and "(100,0" in str(raised.value) and "characters)" in str(raised.value)


# --- smaller: a NUL in code, timeout True, a search over 30,000 files ------------------------------------------

@pytest.fixture
def tools(tmp_path: Path):
    from flawedcode.tools import Workspace, make_tools

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    return workspace, {each.name: each for each in make_tools(workspace)}


def test_code_with_a_nul_byte_says_why_it_cannot_run(tools) -> None:
    _, by_name = tools
    result = by_name["run_python"].invoke({"code": "print(1)\x00"})
    assert result.startswith("Error: ") and "NUL" in result and "127" not in result


@pytest.mark.parametrize("timeout", [True, False, "10", 2.5])
def test_a_timeout_that_is_not_a_whole_number_of_seconds_is_refused(tools, timeout) -> None:
    _, by_name = tools
    result = by_name["run_python"].invoke({"code": "print('ran')", "timeout": timeout})
    assert result.startswith("Error: ") and "ran" not in result, result


def test_search_files_over_many_files_keeps_its_time_limit_for_the_whole_walk(tools, monkeypatch) -> None:
    import time

    from flawedcode import tools as tools_module

    workspace, by_name = tools
    for folder in range(8):
        (workspace.root / "many" / f"f{folder}").mkdir(parents=True)
        for number in range(1000):
            (workspace.root / "many" / f"f{folder}" / f"{number}.txt").write_text("nothing here\n" * 5)
    monkeypatch.setattr(tools_module, "MAX_SEARCH_SECONDS", 0.1)  # the walk and the reads count, not only matching
    started = time.monotonic()
    result = by_name["search_files"].invoke({"pattern": "needle", "path": "many"})
    elapsed = time.monotonic() - started
    assert elapsed < 0.1 + 1.5, elapsed
    assert "stopped after 0.1 s" in result.splitlines()[-1], result[-300:]


# --- chat: escape sequences in file names, file contents and tool results never reach the terminal raw ----------

HOSTILE = ["\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07", "\x1b[2J\x1b[H", "\x1b]0;owned\x07", "\u202etxt.exe"]


def test_chat_prints_hostile_file_names_and_contents_escaped(tmp_path: Path, capsys, monkeypatch) -> None:
    import io

    from flawedcode.tools import Workspace

    workspace = tmp_path / "ws"
    Workspace.create(workspace, scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    for number, sequence in enumerate(HOSTILE):
        name = f"note{number}{sequence}.txt".replace("/", "_")
        (workspace / name).write_text(f"line with {sequence} inside\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("list the files in the workspace\nsearch for 'inside'\n"))
    monkeypatch.setenv("FLAWEDCODE_SCRATCH_DIR", str(tmp_path / "scratch"))
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(tmp_path / "archives"))
    code, out, err = run_cli(capsys, "chat", "--agent", "v2", "--workspace", str(workspace))
    assert code == 0, err[-500:]
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "note0" in out, out[-1500:]
