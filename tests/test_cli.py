"""The ``flawedcode`` command as a user runs it: the REPL on piped input, Ctrl-C, the demo, catalog, archive, errors.

One smoke test per command runs the real thing in a subprocess (``python -m flawedcode``:
the REPL on piped input, Ctrl-C at its prompt, ``--help``, and the demo, run once and shared by
the tests that read its output), with scratch/, archives/ and results/ in temporary folders;
everything else runs in-process through ``main(argv)``, which skips the interpreter's start and
the imports. Everything uses the offline model.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flawedcode import cli
from flawedcode.agents import AgentError, make_agent
from flawedcode.demo import LESSON_STEPS, run_session

METER = re.compile(r"^\[v2\] context [\d,]+/8,192 tokens \(\d+%\) \| turn: \d+ calls?(?: \+ \d+ summary)?, "
                   r"[\d,]+ in, [\d,]+ out \| this conversation: offloads \d+, summaries \d+$", re.MULTILINE)
TIMEOUT = 180


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_API_KEY", "FLAWEDCODE_MODEL")}
    env.update(FLAWEDCODE_SCRATCH_DIR=str(tmp_path / "scratch"), FLAWEDCODE_ARCHIVE_DIR=str(tmp_path / "archives"),
               FLAWEDCODE_RESULTS_DIR=str(tmp_path / "results"), PYTHONUNBUFFERED="1")
    env.pop("FLAWEDCODE_DEBUG", None)
    return env


def run_cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flawedcode", *args], input=stdin, capture_output=True, text=True,
                          env=cli_env(tmp_path), cwd=tmp_path, timeout=TIMEOUT)


def run_main(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


# --- the REPL ---------------------------------------------------------------------------------------
def test_chat_with_piped_input_shows_tool_calls_and_the_meter_and_exits_0(tmp_path):
    result = run_cli(tmp_path, "chat", stdin="List ChartBook dataframes\nclear\nquit\nnever read\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "you> List ChartBook dataframes" in out
    assert "  -> chartbook_list()  [" in out
    assert "money_markets/sofr" in out
    assert len(METER.findall(out)) == 1
    assert "(new conversation" in out
    assert "never read" not in out, "quit must stop reading"
    assert "Traceback" not in result.stderr
    assert "you> you>" not in out


def test_chat_shows_an_offload_and_exits_0_at_end_of_input(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Get docs for yield_curve/repo_public\n"))  # in-process: the smoke test above runs the real command
    code, out, err = run_main(capsys, "chat", "--agent", "v2")
    assert code == 0, err
    call = re.search(r"-> chartbook_get_docs\(pipeline='yield_curve', dataframe='repo_public'\)  \[([\d,]+) chars, offloaded\]", out)
    assert call, out
    assert re.search(rf"\* offload: chartbook_get_docs result, {call.group(1)} chars .* -> scratch/\S+\.txt", out)
    assert re.search(r"offloads 1, summaries 0$", out, re.MULTILINE)
    assert "Traceback" not in err


def test_chat_talks_to_v3_and_every_help_text_names_every_version(monkeypatch, capsys):
    from flawedcode.agents import AGENTS

    monkeypatch.setattr(sys, "stdin", io.StringIO("List the files in the project\n"))
    code, out, err = run_main(capsys, "chat", "--agent", "v3")
    assert code == 0 and "Traceback" not in err, err
    assert "FlawedCode REPL: agent v3" in out and "-> list_files(" in out and "README.md" in out
    assert re.search(r"^\[v3\] context [\d,]+/8,192 tokens", out, re.MULTILINE)
    parser = cli.build_parser()
    (chat,) = [action for action in parser._subparsers._group_actions[0].choices["chat"]._actions if action.dest == "agent"]
    assert list(chat.choices) == list(AGENTS) == ["v0", "v1", "v2", "v3"]
    assert "v0/v1/v2/v3" in parser.format_help()
    assert "v0,v1,v2,v3" in parser._subparsers._group_actions[0].choices["bench"].format_help()
    assert "[--agent v0|v1|v2|v3]" in cli.__doc__


def test_chat_ctrl_c_at_the_prompt_leaves_without_a_traceback(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "flawedcode", "chat", "--agent", "v1"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(tmp_path), cwd=tmp_path)
    try:
        banner = process.stdout.readline()  # the REPL is up
        assert banner.startswith("FlawedCode REPL: agent v1")
        assert "quit" in process.stdout.readline()  # and about to wait for input
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_a_failed_turn_prints_one_error_line_and_the_repl_goes_on(tmp_path, monkeypatch, capsys):
    agent = make_agent("v1", model="offline")
    real_send = agent.send

    def send(text: str) -> str:
        if text == "break please":
            raise AgentError("v1: the turn failed: the model server did not answer in time")
        return real_send(text)

    agent.send = send
    monkeypatch.setattr(cli, "build_chat_agent", lambda args: agent)
    monkeypatch.setattr(sys, "stdin", io.StringIO("break please\nList ChartBook dataframes\n"))
    code, out, err = run_main(capsys, "chat", "--agent", "v1")
    assert code == 0
    assert err.strip() == "error: v1: the turn failed: the model server did not answer in time"
    assert "money_markets/sofr" in out
    assert out.count("[v1] context") == 2


def test_python_dash_m_flawedcode_shows_help(tmp_path):
    result = run_cli(tmp_path, "--help")
    assert result.returncode == 0
    for command in ("chat", "demo", "bench", "catalog", "archive"):
        assert command in result.stdout


# --- the demo -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """`python -m flawedcode demo`, run once for the tests below (the lesson's whole session, v1 and v2)."""
    folder = tmp_path_factory.mktemp("demo")
    return run_cli(folder, "demo", "--out", str(folder / "demo")), folder / "demo"


def test_demo_prints_both_goal_answers_and_writes_the_chart_and_logs(demo):
    result, out_dir = demo
    assert result.returncode == 0, result.stderr
    answers = dict(re.findall(r"^  (v[12]): (.*)$", result.stdout, re.MULTILINE))
    assert LESSON_STEPS[0] in answers["v2"]
    assert LESSON_STEPS[0] not in answers["v1"] and "don't know" in answers["v1"]
    assert re.search(r"^\| v1 +\| +\d+ \|", result.stdout, re.MULTILINE)
    assert re.search(r"^\| v2 +\| +\d+ \|", result.stdout, re.MULTILINE)
    png = out_dir / "context_chart.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    logs = json.loads((out_dir / "demo_logs.json").read_text())
    assert set(logs["agents"]) == {"v1", "v2"}
    assert logs["agents"]["v1"]["totals"]["calls_over_budget"] > 0
    assert logs["agents"]["v2"]["totals"]["calls_over_budget"] == 0
    assert logs["agents"]["v2"]["replies"][-1] == answers["v2"]


def test_demo_numbers_the_requests_says_where_v1_lost_the_goal_and_what_to_do_next(demo):
    result, out_dir = demo
    numbered = re.findall(r"^  (\d+)\. (.*)$", result.stdout, re.MULTILINE)
    assert numbered == [(str(number), step) for number, step in enumerate(LESSON_STEPS, start=1)]
    logs = json.loads((out_dir / "demo_logs.json").read_text())
    lost_at = min(event["turn"] for event in logs["agents"]["v1"]["events"] if event["kind"] == "goal_lost")
    assert f"v1 lost the goal at step {lost_at}:" in result.stdout
    assert "v2 kept the goal in its context" in result.stdout and f"gave the goal back at step {len(LESSON_STEPS)}" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("Next: ")


# --- catalog ---------------------------------------------------------------------------------------
def test_catalog_list_docs_and_load(capsys):
    code, out, _ = run_main(capsys, "catalog", "list")
    assert code == 0 and len(out.splitlines()) == 5
    assert out.splitlines()[0].startswith("yield_curve/repo_public: ")
    code, out, _ = run_main(capsys, "catalog", "docs", "money_markets", "sofr")
    assert code == 0 and "`money_markets/sofr`" in out
    code, same, _ = run_main(capsys, "catalog", "docs", "money_markets/sofr")
    assert same == out
    code, out, _ = run_main(capsys, "catalog", "load", "money_markets", "sofr", "--columns", "rate", "--limit", "3",
                            "--start", "2024-01-01", "--end", "2024-02-01")
    assert code == 0
    assert out.splitlines()[0] == "date,rate" and len(out.splitlines()) == 4
    assert out.splitlines()[-1].startswith("2024-02-01,")


def test_catalog_mistakes_are_one_line_errors(capsys):
    assert_one_line_error(*run_main(capsys, "catalog", "docs", "yield_curve", "sofr")[::2], "money_markets/sofr")
    assert_one_line_error(*run_main(capsys, "catalog", "load", "money_markets", "sofr", "--columns", "rat")[::2], "rate")
    assert_one_line_error(*run_main(capsys, "catalog", "load", "money_markets", "sofr", "--start", "2025-06-01")[::2], "2024-12-31")


# --- archive ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def _summarized(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A v2 session long enough to be summarized, run once for the archive tests below (they only read its archive):
    its conversation id and its archive folder."""
    folder = tmp_path_factory.mktemp("summarized")
    with pytest.MonkeyPatch.context() as patch:  # the outputs land here, as conftest sends a test's to its own folders
        for variable, name in (("SCRATCH", "scratch"), ("ARCHIVE", "archives"), ("RESULTS", "results")):
            patch.setenv(f"FLAWEDCODE_{variable}_DIR", str(folder / name))
        agent = make_agent("v2", model="offline")
        run_session(agent, LESSON_STEPS[:5] + ("Get docs for fed_yield_curve", "Load 100 rows of EFFR data"))
        assert agent.archive.parts(), "precondition: the session was summarized at least once"
    return agent.conversation_id, folder / "archives"


@pytest.fixture
def summarized_conversation(_summarized: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> str:
    """A v2 session long enough to be summarized; its archive is this test's FLAWEDCODE_ARCHIVE_DIR."""
    conversation, archives = _summarized
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(archives))
    return conversation


def test_archive_list_search_and_show_after_a_v2_session(summarized_conversation, capsys):
    conversation = summarized_conversation
    code, out, _ = run_main(capsys, "archive", "list")
    assert code == 0
    assert re.search(rf"^{conversation}: \d+ part\(s\), \d+ message\(s\)$", out, re.MULTILINE)
    assert re.search(rf"part 1: \S*archives/{conversation}/0001.md \(messages", out), out
    code, out, _ = run_main(capsys, "archive", "search", "list the ChartBook dataframes", "--conversation", conversation)
    assert code == 0 and f"archives/{conversation}/0001.md [message 1, human]: " in out and "list the ChartBook dataframes" in out
    code, out, _ = run_main(capsys, "archive", "show", conversation, "--part", "1")
    assert code == 0
    assert out.startswith(f"# Archive part 1 of conversation {conversation}")
    assert f"### [1] human\n\n{LESSON_STEPS[0]}" in out
    assert_one_line_error(*run_main(capsys, "archive", "show", conversation, "--part", "99")[::2], "no part 99")
    assert_one_line_error(*run_main(capsys, "archive", "show", conversation[:-1] + "x")[::2], conversation)


def test_archive_list_when_empty_and_a_missing_dir_is_an_error_not_an_empty_archive(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, out, _ = run_main(capsys, "archive", "list", "--dir", str(tmp_path / "empty"))
    assert code == 0 and "No archived conversations" in out
    for action in (["list"], ["search", "sofr"], ["show", "v2-x"]):
        assert_one_line_error(*run_main(capsys, "archive", *action, "--dir", str(tmp_path / "nothing"))[::2], "no such folder")


def test_archive_paths_printed_under_dir_are_files_you_can_open(summarized_conversation, tmp_path, capsys, monkeypatch):
    archives = Path(os.environ["FLAWEDCODE_ARCHIVE_DIR"])
    monkeypatch.chdir(tmp_path)  # elsewhere: a path relative to the archive folder would not resolve from here
    code, out, _ = run_main(capsys, "archive", "list", "--dir", str(archives))
    listed = re.findall(r"part \d+: (\S+) \(messages", out)
    assert code == 0 and listed and all(Path(path).is_file() for path in listed), out
    code, out, _ = run_main(capsys, "archive", "search", "ChartBook", "--dir", str(archives))
    found = re.findall(r"^- (\S+) \[message", out, re.MULTILINE)
    assert code == 0 and found and all(Path(path).is_file() for path in found), out


def test_archive_show_into_a_closed_pipe_exits_0_without_an_error(summarized_conversation, tmp_path):
    env = {**cli_env(tmp_path), "FLAWEDCODE_ARCHIVE_DIR": os.environ["FLAWEDCODE_ARCHIVE_DIR"]}
    for _ in range(3):  # it used to fail about one time in three
        shown = subprocess.run(f"{sys.executable} -m flawedcode archive show {summarized_conversation} | head -n 2",
                               shell=True, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=TIMEOUT,
                               executable="/bin/bash")
        assert shown.stdout.startswith("# Archive part 1") and shown.stderr == "", shown.stderr
        piped = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m flawedcode archive show "
                                f"{summarized_conversation} | head -c 10 >/dev/null"], capture_output=True, text=True, env=env,
                               cwd=tmp_path, timeout=TIMEOUT)
        assert piped.returncode == 0 and "Broken pipe" not in piped.stderr, piped.stderr


# --- the first hour: --version, --budget, bench --help, the workspace on exit ---------------------------
def test_version_and_bench_help_lists_every_built_in_task(capsys):
    from flawedcode import __version__
    from flawedcode.bench.tasks import load_tasks

    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.strip() == f"flawedcode {__version__}"
    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    out = capsys.readouterr().out
    assert "built-in tasks for --tasks" in out
    assert all(task.name in out for task in load_tasks())


def chat_in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, stdin: str, *args: str) -> tuple[int, str, str]:
    """``flawedcode chat ARGS`` on piped ``stdin``, in this process (the smoke tests above run the real command)."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    return run_main(capsys, "chat", *args)


def test_chat_budget_sets_the_meter_and_refuses_a_budget_below_the_fixed_cost(tmp_path, capsys, monkeypatch):
    code, out, err = chat_in_process(monkeypatch, capsys, "List ChartBook dataframes\n", "--budget", "4,096")
    assert code == 0 and "budget 4,096 tokens" in out and "/4,096 tokens" in out, err
    with pytest.raises(SystemExit) as exited:
        cli.main(["chat", "--budget", "100"])
    assert_one_line_error(exited.value.code, capsys.readouterr().err, "at least 1,024 tokens")


def test_the_repl_removes_an_unchanged_temporary_workspace_and_keeps_one_the_agent_wrote_to(capsys, monkeypatch):
    _, quiet, _ = chat_in_process(monkeypatch, capsys, "List ChartBook dataframes\n")
    assert "nothing in it changed: removed" in quiet
    _, wrote, _ = chat_in_process(monkeypatch, capsys, "save a note to notes.txt saying buy bonds\n")
    kept = re.search(r"\(workspace kept, because this session changed (.+): (\S+)\)$", wrote, re.MULTILINE)
    assert kept and "notes.txt" in kept.group(1), wrote
    assert (Path(kept.group(2)) / "notes.txt").is_file()
    shutil.rmtree(kept.group(2))


def test_clear_starts_the_conversation_counters_again(capsys, monkeypatch):
    _, out, _ = chat_in_process(monkeypatch, capsys, "Get docs for yield_curve/repo_public\nclear\nList ChartBook dataframes\n",
                                "--agent", "v2")
    counts = re.findall(r"this conversation: offloads (\d+)", out)
    assert counts == ["1", "0"], out


def test_a_line_at_the_terminal_limit_is_announced_when_there_is_no_line_editing(monkeypatch, capsys):
    monkeypatch.setattr(cli, "line_editing", lambda: False)
    monkeypatch.setattr("builtins.input", lambda prompt: "x" * (cli.TERMINAL_LINE_LIMIT - 1))
    assert len(cli.read_request(interactive=True)) == cli.TERMINAL_LINE_LIMIT - 1
    assert "the end of a longer paste was cut by the terminal" in capsys.readouterr().err
    monkeypatch.setattr("builtins.input", lambda prompt: "short")
    cli.read_request(interactive=True)
    assert capsys.readouterr().err == ""


# --- bench (parsing only; the benchmark has its own tests) ----------------------------------------
def test_bench_passes_the_parsed_options_and_prints_the_table(monkeypatch, tmp_path, capsys):
    import flawedcode.bench
    from flawedcode.charts import save_comparison_chart

    received = {}

    def fake_run_benchmark(**options):
        received.update(options)
        return "| agent | success |\n| --- | --- |\n| v2 | 100% |"

    monkeypatch.setattr(flawedcode.bench, "run_benchmark", fake_run_benchmark)
    code, out, _ = run_main(capsys, "bench", "--agents", "v0, v2", "--tasks", "goal_short,sofr_average", "--runs", "2",
                            "--model", "offline", "--out", str(tmp_path / "b"), "--concurrency", "3", "--no-resume")
    assert code == 0
    model = received.pop("model")  # the model options (--model, --timeout, --record, --window), one object
    assert str(model) == "offline" and model.timeout_seconds is None and model.record_path is None
    assert callable(received.pop("before_spending"))
    assert received.pop("chart") is save_comparison_chart, "the command draws comparison.png (the benchmark draws nothing)"
    assert received == {"agents": ["v0", "v2"], "task_names": ["goal_short", "sofr_average"], "runs": 2,
                        "out_dir": tmp_path / "b", "concurrency": 3, "resume": False}
    assert "| v2 | 100% |" in out
    run_main(capsys, "bench", "--tasks-file", "suite.yaml")
    assert received["tasks_file"] == "suite.yaml" and received["resume"] is True


# --- bad arguments -----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, fragment", [
    (["chat", "--agent", "v9"], "v9"),
    (["chat", "--model", "nonsense:x"], "nonsense:x"),
    (["bench", "--runs", "0"], "--runs"),
    (["bench", "--agents", "v7"], "v7"),
    (["bench", "--tasks", "a", "--tasks-file", "b.yaml"], "not allowed with"),
    (["catalog", "load", "money_markets", "sofr", "--limit", "ten"], "ten"),
    (["archive"], "required"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_arguments_give_one_line_errors(args, fragment, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    try:
        code = cli.main(args)
    except SystemExit as exit_:  # argparse exits
        code = exit_.code
    assert_one_line_error(code, capsys.readouterr().err, fragment)


def test_a_malformed_config_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    config = tmp_path / "flawedcode.yaml"
    config.write_text("summarization:\n  trigger: [{type: percent, value: 0.5}]\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert_one_line_error(*run_main(capsys, "chat", "--config", str(config))[::2], "summarization.trigger[0].type")
