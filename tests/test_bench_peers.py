"""Peers run as their authors intend; the headline metrics measure the strategy; the same command, the same numbers."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from flawedcode.bench import PEERS, load_task_file, run, run_benchmark, run_one
from flawedcode.bench.peers import v2_keep_tokens, v2_trigger_tokens
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace

GOAL_TASKS = """
tasks:
  - name: goal_long
    category: goal_retention
    goal: List ChartBook dataframes
    facts: ["4.642"]
    steps:
      - List ChartBook dataframes
      - Load 50 rows of SOFR data
      - Get docs for yield_curve/repo_public
      - Now get docs for money_markets/sofr
      - Get docs for treasury_yields
      - Get docs for fed_yield_curve
      - say: What was my original goal?
        probe: goal
      - say: What was the average SOFR rate you found?
        probe: fact
"""


def write(tmp_path: Path, text: str, name: str = "tasks.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def new_workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "project", tmp_path / "scratch", tmp_path / "archives")


# --- Deep Agents, as its documentation shows ---------------------------------------------------------

@pytest.fixture
def deep_agent(tmp_path: Path):
    pytest.importorskip("deepagents")
    return PEERS["deepagents"](OfflineModel(max_input_tokens=8192), workspace=new_workspace(tmp_path),
                               conversation_id="deep-1")


def test_deepagents_sends_only_the_new_message_and_keeps_the_conversation_in_its_checkpointer(deep_agent) -> None:
    sent = []
    stream = deep_agent.graph.stream
    deep_agent.graph.stream = lambda state, config, **kwargs: (sent.append((state, config)), stream(state, config, **kwargs))[1]
    deep_agent.send("Get docs for money_markets/sofr")
    reply = deep_agent.send("What did you just read?")
    assert [len(state["messages"]) for state, _ in sent] == [1, 1]
    assert {config["configurable"]["thread_id"] for _, config in sent} == {"deep-1"}
    assert "sofr" in reply.lower(), "the second turn saw the first one, through the checkpointer"
    assert deep_agent.graph.get_state(sent[0][1]).values["messages"][0].content == "Get docs for money_markets/sofr"


def test_deepagents_history_file_is_in_the_run_folder_and_readable_with_its_tools(deep_agent) -> None:
    steps = ["List ChartBook dataframes", "Get docs for yield_curve/repo_public", "Now get docs for money_markets/sofr",
             "Load 50 rows of SOFR data", "Get docs for treasury_yields", "Get docs for fed_yield_curve"]
    for step in steps:
        deep_agent.send(step)
    assert deep_agent.log.totals()["summary_calls"] > 0
    history = deep_agent.workspace.root / "conversation_history" / "session_deep-1.md"
    assert history.is_file() and "List ChartBook dataframes" in history.read_text()
    assert "## Summarized at turn " in history.read_text(), "no wall-clock time reaches the model"
    summary = next(message.content for message in _next_request(deep_agent, "What was my original goal?")
                   if "/conversation_history/session_deep-1.md" in message.content)
    assert "saved to /conversation_history/session_deep-1.md" in summary, "its summary names the file ..."
    page = deep_agent.backend.read("/conversation_history/session_deep-1.md")  # ... which its read_file tool reads
    assert "List ChartBook dataframes" in str(page)
    assert deep_agent.workspace.root / "conversation_history" in deep_agent.recovery_paths()


def _next_request(agent, text: str) -> list:
    """The messages Deep Agents sends the model for ``text`` (its summary included)."""
    seen = []
    agent.recorder.observers.append(lambda purpose, messages, tools: seen.append(messages) if purpose == "agent" else None)
    agent.send(text)
    return [message for message in seen[0] if isinstance(message.content, str)]


def test_a_failing_deepagents_run_is_recorded_with_its_step_and_the_suite_goes_on(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("deepagents")
    import flawedcode.bench.runner as runner

    monkeypatch.setattr(runner, "bench_model", lambda spec: OfflineModel(max_input_tokens=3500, overflow="error"))
    tasks = load_task_file(write(tmp_path, GOAL_TASKS))
    records = run(["deepagents", "v1"], tasks, 2, tmp_path / "out", progress=False)
    deep = [record for record in records if record["agent"] == "deepagents"]
    assert len(deep) == 2 and all(record["error"] and record["failed_step"] is not None for record in deep)
    assert all(not probe["reached"] and not probe["in_context"] for probe in deep[0]["probes"])
    assert len([record for record in records if record["agent"] == "v1"]) == 2, "the suite went on after the failure"


# --- the tuned peers, and what summary.json says about every agent -----------------------------------

def test_tuned_peers_fire_where_v2_does_and_summary_json_states_every_setting(tmp_path: Path) -> None:
    agents = ["v2", "lc-summarization", "lc-summarization-tuned", "lc-context-editing", "lc-context-editing-tuned"]
    run_benchmark(agents, tasks_file=write(tmp_path, GOAL_TASKS), runs=1, out_dir=tmp_path / "out", progress=False)
    metadata = json.loads((tmp_path / "out" / "summary.json").read_text())["metadata"]
    settings = metadata["agents"]
    trigger = v2_trigger_tokens(8192)
    assert settings["v2"]["trigger_tokens"] == trigger and settings["v2"]["config"]["summarization"]["keep"]
    tuned = settings["lc-summarization-tuned"]
    assert tuned["strategy"]["fires_at_request_tokens"] == trigger
    assert tuned["strategy"]["trigger"] == ["tokens", trigger - tuned["fixed_tokens"]]
    assert tuned["strategy"]["keep"] == ["tokens", v2_keep_tokens(8192)]
    assert tuned["strategy"]["token_counter"].startswith("exact")
    default = settings["lc-summarization"]["strategy"]
    assert default["keep"] == ["messages", 20] and default["token_counter"].startswith("approximate")
    assert settings["lc-context-editing-tuned"]["strategy"]["token_counter"].startswith("exact")
    assert settings["lc-context-editing"]["strategy"]["keep"] == 3
    assert metadata["models"] == ["offline"] and metadata["budget_tokens"] == [8192]
    assert set(metadata["packages"]) >= {"langchain", "langgraph", "deepagents", "tiktoken"}
    assert metadata["flawedcode_version"] and metadata["date"] and "git_commit" in metadata


# --- metrics that measure the strategy -----------------------------------------------------------------

def test_goal_and_fact_probes_look_at_what_the_model_received(tmp_path: Path) -> None:
    tasks = load_task_file(write(tmp_path, GOAL_TASKS))
    v1 = run_one(tasks[0], "v1", 1, tmp_path / "out")
    v2 = run_one(tasks[0], "v2", 1, tmp_path / "out")
    by_kind = {name: {probe.kind: probe for probe in record.probes} for name, record in (("v1", v1), ("v2", v2))}
    assert not by_kind["v1"]["goal"].in_context, "v1's first request fell out of the 8K window it sends into"
    assert not by_kind["v1"]["goal"].recoverable, "and v1 keeps no archive"
    assert by_kind["v2"]["goal"].in_context, "v2's summary repeats the goal verbatim"
    fact = by_kind["v2"]["fact"]
    assert fact.text == "4.642" and fact.recoverable and (fact.in_context or "4.642" in _archived_text(tmp_path))


def _archived_text(tmp_path: Path) -> str:
    return "\n".join(path.read_text() for path in (tmp_path / "out" / "workspaces" / "v2").rglob("archives/**/*.md"))


# --- the same command, the same numbers ------------------------------------------------------------

def test_the_same_suite_twice_gives_the_same_summary_numbers(tmp_path: Path) -> None:
    agents = ["v1", "v2", "lc-summarization-tuned"] + (["deepagents"] if PEERS["deepagents"] and _has_deepagents() else [])
    tasks_file = write(tmp_path, GOAL_TASKS)
    summaries = []
    for attempt in ("first", "second"):
        run_benchmark(agents, tasks_file=tasks_file, runs=1, out_dir=tmp_path / attempt, progress=False)
        summaries.append(json.loads((tmp_path / attempt / "summary.json").read_text()))
    first, second = summaries
    for key in ("agents", "tasks", "categories", "runs_counted"):
        assert first[key] == second[key], key
    assert first["agents"]["v2"]["total_input_tokens"] > 0


def _has_deepagents() -> bool:
    try:
        import deepagents  # noqa: F401
    except ImportError:
        return False
    return True


# --- one home for run records --------------------------------------------------------------------

def test_scoring_and_the_runner_share_the_run_record_and_scoring_never_imports_the_runner() -> None:
    import flawedcode.bench.records as records
    import flawedcode.bench.runner as runner
    import flawedcode.bench.scoring as scoring

    def imported(module) -> set[str]:
        tree = ast.parse(Path(module.__file__).read_text())
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}

    assert "flawedcode.bench.runner" not in imported(scoring)
    assert "flawedcode.bench.records" in imported(scoring) and "flawedcode.bench.records" in imported(runner)
    assert runner.RunRecord is records.RunRecord is scoring.RunRecord
