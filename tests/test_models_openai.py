"""The real OpenAI path, tested for real: langchain-openai's client against a loopback imitation server.

The server (``openai_imitation.ImitationServer``) answers /v1/chat/completions with
the offline model's decisions in OpenAI's format: a tool call, then, once it sees
the tool's result, a text answer. Usage numbers come back in every response. No
test leaves the machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from openai_imitation import ImitationServer

from flawedcode.models import explain_model_error, get_model
from flawedcode.tools import Workspace, make_tools


@pytest.fixture
def tools(tmp_path: Path) -> list:
    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    return make_tools(workspace)


def test_openai_model_drives_the_agent_through_a_loopback_server(tools):
    with ImitationServer() as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout_seconds=5)
        agent = create_agent(model, tools, system_prompt="You are FlawedCode.")
        result = agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    call, tool_result, answer = result["messages"][1:]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == "chartbook_list"
    assert isinstance(tool_result, ToolMessage) and "money_markets/sofr" in tool_result.content
    assert "5 dataframes" in answer.content
    first_usage = server.responses[0][1]["usage"]
    assert call.usage_metadata["input_tokens"] == first_usage["prompt_tokens"] > 0
    assert call.usage_metadata["output_tokens"] == first_usage["completion_tokens"]
    assert answer.response_metadata["model_provider"] == "openai"
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini"
    assert [tool["function"]["name"] for tool in sent["tools"]][:3] == [
        "chartbook_list", "chartbook_get_docs", "chartbook_load_data"]
    assert model.profile["max_input_tokens"] == 128_000


def test_a_model_that_fails_mid_run_gives_one_clear_line(tools):
    crash = (500, {"error": {"message": "the GPU caught fire", "type": "server_error"}})
    with ImitationServer(errors={2: crash}) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout_seconds=5)
        agent = create_agent(model, tools)
        with pytest.raises(Exception) as caught:
            agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    message = explain_model_error(caught.value)
    assert message.startswith("The model server returned HTTP 500:") and "GPU caught fire" in message
    assert "\n" not in message


def test_a_model_that_times_out_gives_one_clear_line(tools):
    with ImitationServer(stall=(1,)) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout_seconds=0.5)
        agent = create_agent(model, tools)
        with pytest.raises(Exception) as caught:
            agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    assert explain_model_error(caught.value) == (
        "The model server did not answer within 0.5 s: it may be stalled or overloaded. "
        "Try again, or raise the timeout (--timeout, or timeout_seconds in the config).")
