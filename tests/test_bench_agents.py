"""Your own agent in the same table; any category name; --config for bench and demo."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from flawedcode import cli
from flawedcode.bench import AgentSpecError, TaskFileError, load_task_file, resolve_agent, run_benchmark

MY_AGENT = '''
from flawedcode.agents import AgentV2


class StudentV3(AgentV2):
    """v2 with an earlier trigger: a student's v3."""

    version = "student-v3"

    def build_middleware(self):
        self.config.summarization.trigger[0].value = 0.5
        return super().build_middleware()


class CallsItselfV3(AgentV2):
    """A student's class that takes a built-in agent's name."""

    version = "v3"


class Helper:
    pass


def not_a_class():
    pass


class NeedsMore(AgentV2):
    version = "needs-more"

    def __init__(self, model, *, colour, **kwargs):
        super().__init__(model, **kwargs)
'''

CUSTOM_CATEGORY_TASKS = """
tasks:
  - name: my_goal
    category: my own category
    steps:
      - Find the average SOFR rate in 2024
      - Get docs for money_markets/sofr
      - say: What was my original goal?
        probe: goal
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_student_agent_file_runs_in_the_same_table(tmp_path: Path) -> None:
    agent_file = write(tmp_path, "my_agent.py", MY_AGENT)
    tasks_file = write(tmp_path, "tasks.yaml", CUSTOM_CATEGORY_TASKS)
    table = run_benchmark(["v2", f"{agent_file}:StudentV3"], tasks_file=tasks_file, runs=1, out_dir=tmp_path / "out",
                          progress=False)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert set(summary["agents"]) == {"v2", "student-v3"}
    mine = summary["agents"]["student-v3"]
    assert mine["goal_in_context"] == 1.0 and mine["total_input_tokens"] > 0
    assert summary["metadata"]["agents"]["student-v3"]["class"].endswith("StudentV3")
    assert summary["metadata"]["agents"]["student-v3"]["trigger_tokens"] == 4096
    row = next(line for line in table.splitlines() if line.startswith("| student-v3 |"))
    assert row.startswith("| student-v3 | - | - |") and "| 100% |" in row  # no v1 ran: no ratio to it; goal in context
    assert f"| {mine['total_input_tokens']:,} |" in row, "the row shows the student's own figures"
    assert summary["categories"]["my own category"]["success_rate"] == {"v2": 1.0, "student-v3": 1.0}
    assert "| my own category | 1 | 100% | 100% |" in table


def test_a_module_path_names_an_agent_too() -> None:
    entry = resolve_agent("flawedcode.agents.v1:AgentV1")
    assert entry.name == "v1" and entry.agent_class.__name__ == "AgentV1"


@pytest.mark.parametrize(("spec", "message"), [
    ("missing_agent.py:MyAgent", "'missing_agent.py:MyAgent': no such file missing_agent.py"),
    ("{folder}/my_agent.py:Nope", "has no 'Nope'; it defines: CallsItselfV3, Helper, NeedsMore, StudentV3"),
    ("{folder}/my_agent.py:CallsItselfV3", "CallsItselfV3 goes by the name 'v3', which is a built-in agent's"),
    ("{folder}/my_agent.py:Helper", "Helper is a class Helper, not an agent; subclass flawedcode.agents.BaseAgent"),
    ("{folder}/my_agent.py:not_a_class", "not_a_class is a function, not an agent"),
    ("{folder}/broken.py:Agent", "importing {folder}/broken.py failed: SyntaxError"),
    ("no_such_package.agents:Agent", "no module named 'no_such_package'"),
    ("v9", "unknown agent 'v9'; choose from v0, v1, v2, v3"),
    ("{folder}/my_agent.py:", "expected path/to/file.py:ClassName"),
])
def test_a_bad_agent_spec_is_one_clear_line(spec: str, message: str, tmp_path: Path, capsys, monkeypatch) -> None:
    write(tmp_path, "my_agent.py", MY_AGENT)
    write(tmp_path, "broken.py", "def oops(:\n")
    spec, message = spec.format(folder=tmp_path), message.format(folder=tmp_path)
    with pytest.raises(AgentSpecError) as error:
        resolve_agent(spec)
    assert message in str(error.value)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run_main(capsys, "bench", "--agents", f"v1,{spec}", "--out", str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1 and message in err


def test_two_agents_may_not_share_a_name(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="both go by the name 'v1'"):
        run_benchmark(["v1", "flawedcode.agents.v1:AgentV1"], tasks_file=write(tmp_path, "t.yaml", CUSTOM_CATEGORY_TASKS),
                      runs=1, out_dir=tmp_path / "out")


def test_any_category_name_loads_but_not_an_empty_one(tmp_path: Path) -> None:
    (task,) = load_task_file(write(tmp_path, "tasks.yaml", CUSTOM_CATEGORY_TASKS))
    assert task.category == "my own category"
    with pytest.raises(TaskFileError, match="task 'x', category: "):
        load_task_file(write(tmp_path, "empty.yaml", "tasks:\n  - {name: x, category: '', steps: [hi]}\n"))


def test_bench_config_is_read_as_chat_reads_it_and_tunes_the_peers(tmp_path: Path, capsys) -> None:
    config = write(tmp_path, "flawedcode.yaml", "budget_tokens: 6000\nsummarization:\n  trigger: [{type: fraction, value: 0.5}]\n")
    tasks_file = write(tmp_path, "tasks.yaml", CUSTOM_CATEGORY_TASKS)
    code, out, _ = run_main(capsys, "bench", "--agents", "v1,v2,lc-summarization-tuned", "--tasks-file", str(tasks_file),
                            "--runs", "1", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 0 and "Budget: 6,000 tokens." in out
    settings = json.loads((tmp_path / "out" / "summary.json").read_text())["metadata"]["agents"]
    assert settings["v1"]["budget_tokens"] == settings["v2"]["budget_tokens"] == 6000
    assert settings["v2"]["trigger_tokens"] == 3000
    assert settings["lc-summarization-tuned"]["strategy"]["fires_at_request_tokens"] == 3000


def test_a_config_setting_no_agent_knows_is_one_line(tmp_path: Path, capsys) -> None:
    config = write(tmp_path, "flawedcode.yaml", "sumarization: {enabled: false}\n")
    code, _, err = run_main(capsys, "bench", "--agents", "v1", "--config", str(config), "--out", str(tmp_path / "out"))
    assert code == 2 and "flawedcode.yaml: sumarization: unknown setting" in err and err.count("\n") == 1


def test_demo_reads_a_config_too(tmp_path: Path, capsys) -> None:
    config = write(tmp_path, "flawedcode.yaml", "budget_tokens: 6000\nsummarization:\n  trigger: [{type: fraction, value: 0.5}]\n")
    code, out, _ = run_main(capsys, "demo", "--config", str(config), "--out", str(tmp_path / "demo"))
    assert code == 0 and "6,000" in out
    logs = json.loads((tmp_path / "demo" / "demo_logs.json").read_text())
    assert logs["budget_tokens"] == 6000 and logs["agents"]["v2"]["trigger_tokens"] == 3000


def test_a_class_that_cannot_be_built_like_v2_is_one_clear_line(tmp_path: Path, capsys, monkeypatch) -> None:
    agent_file = write(tmp_path, "my_agent.py", MY_AGENT)
    tasks_file = write(tmp_path, "tasks.yaml", CUSTOM_CATEGORY_TASKS)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run_main(capsys, "bench", "--agents", f"{agent_file}:NeedsMore", "--tasks-file", str(tasks_file),
                            "--out", str(tmp_path / "out"))
    last_line = err.splitlines()[-1]  # after the progress bar
    assert code == 2 and last_line.startswith("flawedcode: error: ") and "Traceback" not in err
    assert "building it as NeedsMore(model, workspace=..." in last_line
    assert "missing 1 required keyword-only argument: 'colour'" in last_line


def test_the_shipped_example_agent_takes_a_name_no_built_in_agent_has() -> None:
    from flawedcode.bench.agent_specs import BUILTIN_AGENTS

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "my_agent.py"
    entry = resolve_agent(f"{example}:EarlySummaryAgent")
    assert entry.name == "student-early-summary" and entry.name not in BUILTIN_AGENTS
    assert "my_agent.py:EarlySummaryAgent" in (example.parent.parent / "commands.md").read_text(encoding="utf-8")
