"""The three agent versions on the lesson's session, offline, on an 8K budget.

Each behaviour runs across every version where it applies (CONTRIBUTING.md, point 7):
v0 forgets, v1 remembers until its window overflows, v2 manages its context.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.agents import AgentError, AgentV2, make_agent
from flawedcode.config import ContextSize, V2Config
from flawedcode.context.summarize import is_summary
from flawedcode.demo import GOAL_QUESTION, LESSON_STEPS
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace

LESSON = ["List ChartBook dataframes", *LESSON_STEPS[1:-1]]  # the lesson's requests (a plain first one); then the goal question
BUDGET = 8192


def new_agent(version: str, tmp_path: Path, **kwargs):
    workspace = Workspace.create(tmp_path / f"ws-{version}", tmp_path / "scratch", tmp_path / "archives")
    model = kwargs.pop("model", None) or OfflineModel(max_input_tokens=BUDGET)
    return make_agent(version, model=model, workspace=workspace, **kwargs)


def run(agent, steps: list[str]) -> list[str]:
    return [agent.send(step) for step in steps]


@pytest.mark.parametrize("version", ["v0", "v1", "v2"])
def test_every_version_uses_the_tools_for_the_lesson(version: str, tmp_path: Path) -> None:
    agent = new_agent(version, tmp_path)
    replies = run(agent, LESSON)
    assert "5 dataframes" in replies[0]
    assert "repo_public" in replies[1]
    assert "mean 4.642" in replies[3], "the SOFR average, computed from the 50 rows (v2: from its offload preview)"
    assert "treasury_yields" in replies[4]


@pytest.mark.parametrize(("version", "remembers"), [("v0", False), ("v1", True), ("v2", True)])
def test_what_did_you_just_read(version: str, remembers: bool, tmp_path: Path) -> None:
    agent = new_agent(version, tmp_path)
    agent.send("Get docs for money_markets/sofr")
    reply = agent.send("What did you just read?")
    if remembers:
        assert "sofr" in reply.lower()
    else:
        assert "don't know" in reply.lower() or "do not know" in reply.lower()


def test_v1_overflows_the_budget_and_loses_its_goal(tmp_path: Path) -> None:
    agent = new_agent("v1", tmp_path)
    run(agent, LESSON)
    reply = agent.send(GOAL_QUESTION)
    assert max(call.input_tokens for call in agent.token_log) > BUDGET
    assert "don't know" in reply.lower()
    assert "List ChartBook dataframes" not in reply


def test_v2_stays_under_budget_offloads_summarizes_and_keeps_its_goal(tmp_path: Path) -> None:
    agent = new_agent("v2", tmp_path)
    run(agent, LESSON)
    reply = agent.send(GOAL_QUESTION)
    assert "List ChartBook dataframes" in reply
    calls = agent.token_log
    assert all(call.input_tokens <= BUDGET for call in calls)
    kinds = [event.kind for event in agent.events]
    assert "offload" in kinds
    offload = next(event for event in agent.events if event.kind == "offload")
    assert offload.detail["path"].startswith("scratch/chartbook_get_docs_yield_curve_repo_public_")
    # pushed further, it summarizes, archives, and still knows its goal
    run(agent, ["Get docs for effr", "Load 40 rows of EFFR", "Get docs for fed_yield_curve", "Load 30 rows of treasury_yields"])
    assert agent.log.count("summarize") >= 1
    assert all(call.input_tokens <= BUDGET for call in agent.token_log)
    assert "List ChartBook dataframes" in agent.send(GOAL_QUESTION)
    assert is_summary(agent.messages[0])
    assert agent.archive.messages(), "what left the context is in the archive"


def test_v2_recovers_an_offloaded_detail(tmp_path: Path) -> None:
    agent = new_agent("v2", tmp_path)
    agent.send("Get docs for yield_curve/repo_public")
    reply = agent.send("Read the saved repo_public docs file and tell me what is_quarter_end means")
    assert any(event.kind == "recovery" for event in agent.events)
    assert "quarter" in reply.lower()


def test_v2_recovers_an_archived_number(tmp_path: Path) -> None:
    agent = new_agent("v2", tmp_path)
    run(agent, LESSON + ["Get docs for effr", "Load 40 rows of EFFR", "Get docs for fed_yield_curve", "Load 30 rows of treasury_yields"])
    assert agent.log.count("summarize") >= 1
    reply = agent.send("What was the average SOFR rate you reported?")
    assert "4.642" in reply


def test_overflow_error_triggers_a_summary_and_one_retry(tmp_path: Path) -> None:
    config = V2Config(budget_tokens=BUDGET)
    config.summarization.trigger = [ContextSize(type="tokens", value=100_000)]  # never before the call
    config.offload.enabled = False
    agent = new_agent("v2", tmp_path, model=OfflineModel(max_input_tokens=6000, overflow="error"), config=config)
    run(agent, LESSON)
    kinds = [event.kind for event in agent.events]
    assert "overflow_retry" in kinds and "summarize" in kinds
    assert all(call.input_tokens <= 6000 for call in agent.token_log)


def test_v1_on_an_erroring_window_fails_with_one_clear_line(tmp_path: Path) -> None:
    agent = new_agent("v1", tmp_path, model=OfflineModel(max_input_tokens=4000, overflow="error"))
    with pytest.raises(AgentError) as raised:
        run(agent, LESSON)
    assert "\n" not in str(raised.value) and "v1" in str(raised.value)
    assert agent.messages, "the messages of the failed turn are kept"


def test_repair_patches_an_interrupted_tool_call(tmp_path: Path) -> None:
    agent = new_agent("v2", tmp_path)
    agent.messages = [
        HumanMessage("List ChartBook dataframes"),
        AIMessage("", tool_calls=[{"name": "chartbook_list", "args": {}, "id": "interrupted"}]),
    ]
    agent.send("Get docs for money_markets/sofr")
    assert any(event.kind == "repair" for event in agent.events)
    patched = [m for m in agent.messages if isinstance(m, ToolMessage) and m.tool_call_id == "interrupted"]
    assert len(patched) == 1 and patched[0].content.startswith("Error: this tool call was interrupted")


def test_two_v2_agents_archive_the_same_folder_at_once(tmp_path: Path) -> None:
    config = V2Config(budget_tokens=BUDGET)
    config.summarization.trigger = [ContextSize(type="messages", value=6)]
    config.summarization.keep = ContextSize(type="messages", value=2)
    agents = [new_agent("v2", tmp_path / str(i), config=config, conversation_id="shared") for i in range(2)]
    for agent in agents:  # both write into one archive folder, as two notebooks might
        agent.archive.archive_root = agents[0].archive.archive_root
        agent.archive.folder = agents[0].archive.folder
    threads = [threading.Thread(target=run, args=(agent, LESSON)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    parts = agents[0].archive.parts()
    assert [part.number for part in parts] == list(range(1, len(parts) + 1))
    assert sum(agent.log.count("archive") for agent in agents) == len(parts)


def test_v2_config_extends_v1_config() -> None:
    assert issubclass(AgentV2.config_class, make_agent("v1").config_class)


def test_clear_starts_a_new_conversation_with_its_own_archive(tmp_path: Path) -> None:
    config = V2Config(budget_tokens=BUDGET)
    config.summarization.trigger = [ContextSize(type="messages", value=6)]
    agent = new_agent("v2", tmp_path, config=config)
    run(agent, LESSON)
    first_id, first_parts = agent.conversation_id, len(agent.archive.parts())
    assert first_parts >= 1
    agent.reset()
    assert agent.messages == [] and agent.conversation_id != first_id
    assert agent.archive.parts() == [] and agent.archive.folder.name == agent.conversation_id
    assert "don't know" in agent.send(GOAL_QUESTION).lower()


def test_the_step_limit_lets_every_version_call_the_model_as_often_as_v1(tmp_path: Path) -> None:
    """A hook is no step of the agent's: at a 7-step limit every version makes v1's 4 model calls (3 rounds of tools)
    before it stops. While their hook nodes counted, v2 and v3 stopped after 2 (at 25 steps: 6 model calls, v1's 13)."""
    from flawedcode.lessons import lesson_agent

    request = ("get docs for money_markets/sofr, then load 50 rows of SOFR data, then tell me the average SOFR rate in 2024; "
               "get docs for money_markets/effr, then load 50 rows of EFFR data, then tell me the average EFFR in 2024")
    calls = {}
    for version in ("v1", "v2", "v3"):
        agent = lesson_agent(version, budget_tokens=BUDGET, folder=tmp_path / version, watch=False, config={"recursion_limit": 7})
        assert agent.send(request) == "I stopped after 7 steps without a final answer."
        calls[version] = len(agent.token_log)
    assert calls == {"v1": 4, "v2": 4, "v3": 4}
