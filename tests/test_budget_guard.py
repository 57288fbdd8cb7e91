"""v2 holds its budget: no request over it, at any budget from 4,096 up, on every built-in task (context/budget_guard.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.agents import AgentV2
from flawedcode.bench.tasks import load_tasks
from flawedcode.config import OffloadConfig, V2Config
from flawedcode.context.budget_guard import fit_to_budget, is_stub
from flawedcode.formats import STUB_PREFIX
from flawedcode.lessons import lesson_model
from flawedcode.tokens import TokenCounter
from flawedcode.tools import Workspace

COUNTER = TokenCounter()
TASKS = load_tasks(None)


def v2_at(budget: int, folder: Path, name: str = "guard") -> AgentV2:
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    return AgentV2(lesson_model("offline", budget), workspace=workspace, conversation_id=name,
                   config=V2Config(budget_tokens=budget))


def over_budget(agent: AgentV2) -> list[int]:
    return [call.input_tokens for call in agent.log.calls if call.input_tokens > agent.budget_tokens]


def run_task(agent: AgentV2, task) -> None:
    for step in task.all_steps():
        agent.send(step.say)


def table(rows: int, seed: int) -> str:
    return "date,rate,volume\n" + "\n".join(f"2024-01-{day % 28 + 1:02d},{seed + day / 7:.4f},{seed * 13 + day}"
                                            for day in range(rows))


def turn(results: list[int]) -> list:
    """A goal, an earlier turn with one result, then the current turn with results of these row counts."""
    messages = [HumanMessage("Load the rates"), AIMessage("", tool_calls=[{"id": "old", "name": "chartbook_load_data",
                                                                           "args": {"rows": 40}}]),
                ToolMessage(table(40, 1), tool_call_id="old"), AIMessage("Done."), HumanMessage("Now load more")]
    for number, rows in enumerate(results):
        messages += [AIMessage("", tool_calls=[{"id": f"c{number}", "name": "chartbook_load_data", "args": {"rows": rows}}]),
                     ToolMessage(table(rows, number + 2), tool_call_id=f"c{number}")]
    return messages


def test_the_last_resort_stubs_the_current_turns_largest_result_first(tmp_path):
    messages = turn([10, 60, 20])
    total = COUNTER.count_messages(messages)
    largest = COUNTER.count_message(messages[8])  # the 60-row result of this turn
    fitted, stubbed = fit_to_budget(messages, total - largest // 2, 0, COUNTER, tmp_path, OffloadConfig())
    assert stubbed == 1 and fitted[8].text.startswith(STUB_PREFIX)
    assert fitted[2] == messages[2], "the earlier turn's result stays while the current turn's can go"
    saved = next(tmp_path.iterdir())
    assert saved.read_text(encoding="utf-8") == messages[8].text, "the whole result is saved before it leaves"
    assert COUNTER.count_messages(fitted) <= total - largest // 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=8),
       budget=st.integers(min_value=1_500, max_value=12_000))
def test_fitted_messages_never_exceed_the_budget_when_stubs_can_make_room(tmp_path, rows, budget):
    messages = turn(rows)
    fitted, _ = fit_to_budget(messages, budget, 0, COUNTER, tmp_path, OffloadConfig())
    every_result_stubbed, _ = fit_to_budget(messages, 0, 0, COUNTER, tmp_path, OffloadConfig())
    floor = COUNTER.count_messages(every_result_stubbed)
    assert COUNTER.count_messages(fitted) <= max(budget, floor)
    assert all(is_stub(message) for message in every_result_stubbed if isinstance(message, ToolMessage))


def test_a_turn_of_many_small_loads_offloads_by_the_turns_total(tmp_path):
    agent = v2_at(8_192, tmp_path)
    agent.send("Load 24 rows of SOFR data, then 24 rows of EFFR data, then 24 rows of money_markets/sofr, "
               "then 24 rows of money_markets/effr")
    by_total = [event for event in agent.log.events if event.kind == "offload" and event.detail.get("reason") == "turn_total"]
    assert by_total, "each load is under the threshold; together they are over the turn's share"
    assert all(event.detail["turn_results_tokens"] > 2 * OffloadConfig().threshold_tokens for event in by_total)
    assert over_budget(agent) == []


def test_a_result_stubbed_by_the_turns_total_can_be_read_back_by_its_stub_path(tmp_path):
    agent = v2_at(8_192, tmp_path)
    agent.send("Load 24 rows of SOFR data, then 24 rows of EFFR data, then 24 rows of money_markets/sofr, "
               "then 24 rows of money_markets/effr")
    paths = [event.detail["path"] for event in agent.log.events if event.detail.get("reason") == "turn_total"]
    assert paths
    read_file = next(tool for tool in agent.tools if tool.name == "read_file")
    for path in paths:  # scratch/ is this conversation's folder: the stub must point into it, where read_file looks
        assert not read_file.invoke({"path": path}).startswith("Error"), path
    agent.reset("another")
    agent.send("Load 24 rows of SOFR data, then 24 rows of EFFR data, then 24 rows of money_markets/sofr, "
               "then 24 rows of money_markets/effr")
    later = [event.detail["path"] for event in agent.log.events if event.detail.get("reason") == "turn_total"][len(paths):]
    assert later and all(not read_file.invoke({"path": path}).startswith("Error") for path in later)


def test_a_large_workspace_file_is_read_in_pages(tmp_path):
    agent = v2_at(8_192, tmp_path)
    lines = [f"line {number}: " + "alpha beta gamma 12.5 13.75 " * 5 for number in range(500)]
    (agent.workspace.root / "big.txt").write_text("\n".join(lines), encoding="utf-8")
    agent.send("Read big.txt")
    read = next(message for message in agent.messages if isinstance(message, ToolMessage))
    first_line = read.text.splitlines()[0]
    assert first_line.startswith("# big.txt (lines 1-") and first_line.endswith("of 500)")
    assert "read_file(path='big.txt', offset=" in read.text.splitlines()[-1]
    assert any(event.kind == "readback_paged" for event in agent.log.events)
    assert over_budget(agent) == []


@pytest.mark.parametrize("budget", [4_096, 16_384])
def test_v2_is_never_over_budget_on_any_builtin_task(tmp_path, budget):
    for task in TASKS:
        agent = v2_at(budget, tmp_path / task.name, task.name)
        run_task(agent, task)
        assert over_budget(agent) == [], f"{task.name} at {budget:,}: {len(over_budget(agent))} calls over"


@pytest.mark.slow
@pytest.mark.parametrize("budget", [5_000, 6_000, 8_192, 11_000, 24_000, 32_768])
def test_v2_is_never_over_budget_on_any_builtin_task_more_budgets(tmp_path, budget):
    test_v2_is_never_over_budget_on_any_builtin_task(tmp_path, budget)
