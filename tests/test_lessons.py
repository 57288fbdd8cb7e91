"""The lesson helper and where files go: one call builds a lesson's agent; installed, nothing lands in the package."""

from __future__ import annotations

import pytest

from flawedcode import paths
from flawedcode.config import ConfigError, V2Config
from flawedcode.demo import LESSON_STEPS
from flawedcode.lessons import LESSON_BUDGET, is_offline, lesson_agent, lesson_model, projector_table, run_task
from flawedcode.models import OfflineModel


# --- lesson_agent ---------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["v0", "v1", "v2"])
def test_lesson_agent_is_the_version_on_an_offline_window_equal_to_the_budget(version, tmp_path):
    agent = lesson_agent(version, folder=tmp_path)
    assert agent.version == version and agent.budget_tokens == LESSON_BUDGET
    assert isinstance(agent.model, OfflineModel) and agent.model.max_input_tokens == LESSON_BUDGET
    assert agent.model.overflow == "truncate"
    assert agent.workspace.root == (tmp_path / version).resolve() and (tmp_path / version / "analyze.py").exists()
    assert agent.workspace.scratch_dir == (tmp_path / "scratch").resolve()
    assert agent.conversation_id == version and agent.log.agent_name == version


def test_agents_in_one_folder_get_their_own_workspace_and_conversation(tmp_path):
    first, second = lesson_agent("v2", folder=tmp_path), lesson_agent("v2", folder=tmp_path, name="v2")
    assert first.workspace.root != second.workspace.root
    assert (first.conversation_id, second.conversation_id) == ("v2", "v2-2")
    assert first.workspace.archive_dir == second.workspace.archive_dir


def test_settings_come_from_a_dict_or_a_config_and_are_validated(tmp_path):
    agent = lesson_agent("v2", folder=tmp_path, budget_tokens=12_000,
                         config={"summarization": {"trigger": {"type": "fraction", "value": 0.5}}})
    assert agent.budget_tokens == 12_000 and agent.model.max_input_tokens == 12_000
    assert agent.log.trigger_tokens == 6_000
    assert lesson_agent("v2", folder=tmp_path, config=V2Config(budget_tokens=4096)).model.max_input_tokens == 4096
    with pytest.raises(ConfigError, match="summarization: unknown setting"):
        lesson_agent("v1", folder=tmp_path, config={"summarization": {"enabled": False}})
    with pytest.raises(ValueError, match="Unknown agent 'v9'"):
        lesson_agent("v9", folder=tmp_path)


def test_the_model_comes_from_the_argument_then_flawedcode_model_then_offline(monkeypatch):
    assert lesson_model("offline:16000").max_input_tokens == 16_000, "other specs go to get_model unchanged"
    monkeypatch.setenv("FLAWEDCODE_MODEL", "offline:9000")
    assert lesson_model().max_input_tokens == 9000 and is_offline()
    monkeypatch.delenv("FLAWEDCODE_MODEL")
    assert lesson_model(budget_tokens=5000).max_input_tokens == 5000
    assert not is_offline("openai:gpt-4o-mini")


def test_the_watcher_keeps_what_each_call_received(tmp_path):
    agent = lesson_agent("v1", folder=tmp_path)
    agent.send(LESSON_STEPS[0])
    views = agent.context_watcher.views
    assert [view.total_tokens for view in views] == [call.input_tokens for call in agent.token_log]
    assert [view.call_index for view in views] == [call.index for call in agent.token_log]
    assert all(view.goal_in_window for view in views) and agent.context_watcher.goal == LESSON_STEPS[0]


def test_v0_loses_the_goal_at_its_second_request(tmp_path):
    agent = lesson_agent("v0", folder=tmp_path)
    agent.send(LESSON_STEPS[0])
    agent.send(LESSON_STEPS[1])
    (event,) = [event for event in agent.events if event.kind == "goal_lost"]
    assert event.turn == 2, "v0 starts every request from nothing: the goal is gone at once"


# --- lesson 4's helpers -------------------------------------------------------------------------------
def test_run_task_runs_a_bench_task_on_your_own_agent(tmp_path):
    from flawedcode.bench import load_tasks

    (task,) = load_tasks(["goal_short"])
    result = run_task(task, lesson_agent("v2", folder=tmp_path))
    assert result["task"] == "goal_short" and result["agent"] == "v2"
    assert result["goal_probes"] and all(probe["kept"] for probe in result["goal_probes"])
    assert result["success"] == all(check["passed"] for check in result["checks"]), "the probes passed (above)"


def test_projector_table_is_narrow():
    summary = {"agents": {"v1": {"success_rate": 0.5, "goal_retention": 0.25, "tokens_per_success": 40539.4,
                                 "peak_context_tokens": 9569, "calls_over_budget": 12},
                          "v2": {"success_rate": 1.0, "goal_retention": 1.0, "tokens_per_success": None,
                                 "peak_context_tokens": 6005, "calls_over_budget": 0}}}
    table = projector_table(summary).splitlines()
    assert table[0] == "| agent | success | goal kept | tokens per success | peak context | calls over budget |"
    assert table[2] == "| v1 | 50% | 25% | 40,539 | 9,569 | 12 |" and table[3] == "| v2 | 100% | 100% | - | 6,005 | 0 |"
    assert max(len(line) for line in table) < 90


# --- paths: a checkout, or an installed package -----------------------------------------------------
def test_in_a_checkout_data_and_outputs_are_the_repositorys(monkeypatch):
    for variable in ("FLAWEDCODE_DATA_DIR", "FLAWEDCODE_SCRATCH_DIR", "FLAWEDCODE_ARCHIVE_DIR", "FLAWEDCODE_RESULTS_DIR"):
        monkeypatch.delenv(variable, raising=False)
    assert paths.running_from_checkout()
    assert paths.data_dir() == paths.PROJECT_ROOT / "data"
    assert paths.scratch_dir() == paths.PROJECT_ROOT / "scratch" and paths.results_dir() == paths.PROJECT_ROOT / "results"


def test_installed_the_data_is_the_packaged_copy_and_outputs_go_under_the_current_folder(monkeypatch, tmp_path):
    site_packages = tmp_path / "site-packages"
    (site_packages / "flawedcode" / "data").mkdir(parents=True)
    monkeypatch.setattr(paths, "PROJECT_ROOT", site_packages)
    monkeypatch.setattr(paths, "PACKAGED_DATA_DIR", site_packages / "flawedcode" / "data")
    for variable in ("FLAWEDCODE_DATA_DIR", "FLAWEDCODE_SCRATCH_DIR", "FLAWEDCODE_ARCHIVE_DIR", "FLAWEDCODE_RESULTS_DIR"):
        monkeypatch.delenv(variable, raising=False)
    work = tmp_path / "course"
    work.mkdir()
    monkeypatch.chdir(work)
    assert not paths.running_from_checkout()
    assert paths.data_dir() == site_packages / "flawedcode" / "data"
    assert paths.demo_project_dir() == site_packages / "flawedcode" / "data" / "demo_project"
    assert (paths.scratch_dir(), paths.archive_dir(), paths.results_dir()) == (work / "scratch", work / "archives", work / "results")
    monkeypatch.setenv("FLAWEDCODE_RESULTS_DIR", str(tmp_path / "elsewhere"))
    assert paths.results_dir() == (tmp_path / "elsewhere").resolve()



def test_make_lab_allows_root_only_when_run_as_root():
    import os
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry_run = subprocess.run(["make", "-n", "lab", "BIN=.venv/bin"], cwd=paths.PROJECT_ROOT, capture_output=True, text=True,
                             timeout=60).stdout
    (command,) = [line for line in dry_run.splitlines() if "jupyter lab" in line]
    assert ("--allow-root" in command) == (os.getuid() == 0)
    assert command.rstrip().endswith("notebooks/")
