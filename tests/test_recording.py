"""Every model call is counted at the model boundary, whoever makes it (telemetry.ModelCallRecorder).

A witness model keeps its own tally of every request it answers; each agent's SessionLog must
account for exactly those requests (count and tokens), with the purpose of each call.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import PrivateAttr

from flawedcode.agents import AgentError, BaseAgent, make_agent
from flawedcode.bench.peers import PEERS
from flawedcode.bench.tasks import load_tasks
from flawedcode.models import OfflineModel
from flawedcode.telemetry import SUMMARY_TAG
from flawedcode.tools import Workspace

BUDGET = 8192
LONG_SESSION = [step.say for step in load_tasks(["long_session"])[0].all_steps()]


class WitnessModel(OfflineModel):
    """The offline model, keeping its own list of (tokens received) for every request it answers."""

    _received: list[int] = PrivateAttr(default_factory=list)

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        counter = self.token_counter()
        system = [message for message in messages if isinstance(message, SystemMessage)]
        rest = [message for message in messages if not isinstance(message, SystemMessage)]
        tokens = sum(counter.count_message(message) for message in system) + counter.count_tools(kwargs.get("tools"))
        self._received.append(tokens + counter.count_messages(rest))
        return super()._generate(messages, stop, run_manager, **kwargs)


def workspace(tmp_path: Path, name: str = "ws") -> Workspace:
    return Workspace.create(tmp_path / name / "project", tmp_path / name / "scratch", tmp_path / name / "archives")


def send_all(agent: BaseAgent, steps: list[str]) -> str | None:
    """Send every step; a failed turn ends the session (as in the benchmark). Returns the error, if any."""
    for step in steps:
        try:
            agent.send(step)
        except AgentError as error:
            return str(error)
    return None


@pytest.mark.slow  # the long session, once per agent
@pytest.mark.parametrize("name", ["v2", *PEERS])
def test_every_call_of_the_long_session_is_in_the_totals(name: str, tmp_path: Path) -> None:
    if name == "deepagents":
        pytest.importorskip("deepagents")
    model = WitnessModel(max_input_tokens=BUDGET, overflow="truncate")
    agent_class = PEERS.get(name)
    agent = agent_class(model, workspace=workspace(tmp_path), conversation_id=f"{name}-t") if agent_class else \
        make_agent(name, model=model, workspace=workspace(tmp_path), conversation_id=f"{name}-t")
    send_all(agent, LONG_SESSION)
    totals = agent.log.totals()
    assert totals["model_calls"] == len(model._received) > 0, "a call reached the model without reaching the log"
    assert totals["input_tokens"] == sum(model._received)
    assert totals["peak_context_tokens"] == max(model._received)
    assert totals["agent_calls"] + totals["summary_calls"] + totals["internal_calls"] == totals["model_calls"]
    if name in ("v2", "lc-summarization", "lc-summarization-tuned", "deepagents"):
        assert totals["summary_calls"] > 0 and totals["summary_input_tokens"] > 0, "its summary calls are counted"


@pytest.fixture(scope="module")
def v2_after_20_steps(tmp_path_factory: pytest.TempPathFactory) -> tuple[BaseAgent, WitnessModel]:
    """v2 (8K) after the long session's first 20 steps, summarized on the way: run once for the two tests that only read
    its log and its calls (each ran the same session on its own before)."""
    model = WitnessModel(max_input_tokens=BUDGET)
    agent = make_agent("v2", model=model, workspace=workspace(tmp_path_factory.mktemp("v2-20")))
    send_all(agent, LONG_SESSION[:20])
    return agent, model


def test_v2_summary_calls_are_counted_once(v2_after_20_steps: tuple[BaseAgent, WitnessModel]) -> None:
    agent, model = v2_after_20_steps
    summaries = [call for call in agent.log.calls if call.purpose == "summary"]
    assert len(summaries) == agent.log.count("summarize") > 0
    assert len(agent.log.calls) == len(model._received)


class SneakyMiddleware(AgentMiddleware):
    """Calls the model behind the agent's back: directly, from a copy, from a bare thread, and tagged as a summary."""

    def __init__(self, model: OfflineModel) -> None:
        super().__init__()
        self.model = model

    def before_model(self, state: Any, runtime: Any) -> None:
        question = [HumanMessage("List ChartBook dataframes")]
        self.model.invoke(question)
        self.model.model_copy().invoke(question)
        thread = threading.Thread(target=lambda: self.model.invoke(question))
        thread.start()
        thread.join()
        self.model.invoke(question, config={"tags": [SUMMARY_TAG]})
        return None


class SneakyAgent(BaseAgent):
    version = "sneaky"

    def build_middleware(self) -> list[AgentMiddleware]:
        return [SneakyMiddleware(self.model)]

    def send(self, text: str) -> str:
        return self.run_turn(self.messages, text)


def test_calls_a_library_makes_on_its_own_are_counted_as_internal(tmp_path: Path) -> None:
    model = WitnessModel(max_input_tokens=BUDGET)
    agent = SneakyAgent(model, workspace=workspace(tmp_path))
    agent.send("List ChartBook dataframes")
    purposes = [call.purpose for call in agent.log.calls]
    assert len(purposes) == len(model._received)
    assert purposes.count("agent") == 2  # the tool call, then the answer
    assert purposes.count("summary") == 2  # one tagged call before each agent call
    assert purposes.count("internal") == 6
    assert agent.log.totals()["input_tokens"] == sum(model._received)


def test_a_model_shared_by_two_agents_is_recorded_by_the_one_running(tmp_path: Path) -> None:
    model = WitnessModel(max_input_tokens=BUDGET)
    first = make_agent("v1", model=model, workspace=workspace(tmp_path, "a"))
    second = make_agent("v1", model=model, workspace=workspace(tmp_path, "b"))
    first.send("List ChartBook dataframes")
    second.send("Get docs for money_markets/sofr")
    second.send("What did you just read?")
    assert len(first.log.calls) + len(second.log.calls) == len(model._received)
    assert len(first.log.calls) == 2 and len(second.log.calls) == 3


def test_a_refused_request_is_recorded_with_its_error(tmp_path: Path) -> None:
    model = OfflineModel(max_input_tokens=600, overflow="error")  # smaller than the system prompt and tools
    agent = make_agent("v1", model=model, workspace=workspace(tmp_path))
    with pytest.raises(AgentError, match="context"):
        agent.send("List ChartBook dataframes")
    (call,) = agent.log.calls
    assert call.purpose == "agent" and call.error.startswith("ContextOverflowError")
    assert agent.budget_tokens == 600 and call.over_budget, "the budget was lowered to the 600-token window"
    assert call.input_tokens > 600 and agent.token_log == []
    assert agent.log.totals()["failed_calls"] == 1


def test_each_call_says_what_its_fixed_part_was(tmp_path: Path) -> None:
    agent = make_agent("v1", model=OfflineModel(max_input_tokens=BUDGET), workspace=workspace(tmp_path))
    agent.send("List ChartBook dataframes")
    assert {call.fixed_tokens for call in agent.log.calls} == {agent.fixed_tokens}


def test_the_context_chart_shows_every_call(v2_after_20_steps: tuple[BaseAgent, WitnessModel]) -> None:
    from flawedcode.charts import chart_data, plot_context

    agent, _ = v2_after_20_steps  # its model is the offline model that also keeps what it received
    data = chart_data(agent)["v2"]
    assert len(data["points"]) + len(data["side_calls"]) == len(agent.log.calls)
    assert {purpose for _, _, purpose in data["side_calls"]} == {"summary"}
    (squares,) = [line for line in plot_context(agent).axes[0].get_lines() if line.get_gid() == "side:v2"]
    assert list(squares.get_ydata()) == [tokens for _, tokens, _ in data["side_calls"]]
