"""The real OpenAI path, tested for real against a loopback OpenAI-compatible server.

The server (http.server in a thread on 127.0.0.1) answers /v1/chat/completions:
first with a tool call, then, once it sees the tool's result, with a text answer
quoting it. Usage numbers come back in every response. No test leaves the machine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.models import explain_model_error, get_model
from flawedcode.tools import Workspace, make_tools


class FakeOpenAI:
    """A tiny OpenAI-compatible chat server; ``mode`` picks its behaviour."""

    def __init__(self, mode: str = "tool-then-answer") -> None:
        self.mode = mode
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                status, payload = server.respond(body)
                if status == "hang":
                    time.sleep(3)
                    status = 200
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def respond(self, body: dict) -> tuple[int | str, dict]:
        last = body["messages"][-1]
        if self.mode == "fail-after-tool" and last["role"] == "tool":
            return 500, {"error": {"message": "the GPU caught fire", "type": "server_error"}}
        if self.mode == "hang":
            return "hang", {}
        if last["role"] == "tool":
            first_line = last["content"].splitlines()[0]
            message = {"role": "assistant", "content": f"The catalog starts with {first_line}"}
            return 200, completion(message, "stop", prompt_tokens=812, completion_tokens=17)
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "chartbook_list", "arguments": "{}"}}]}
        return 200, completion(message, "tool_calls", prompt_tokens=640, completion_tokens=12)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(message: dict, finish_reason: str, prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


@pytest.fixture
def tools(tmp_path: Path) -> list:
    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    return make_tools(workspace)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as running:
        yield running


def test_openai_model_drives_the_agent_through_a_loopback_server(server, tools):
    model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout=5)
    agent = create_agent(model, tools, system_prompt="You are FlawedCode.")
    result = agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    call, tool_result, answer = result["messages"][1:]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["name"] == "chartbook_list"
    assert isinstance(tool_result, ToolMessage) and "money_markets/sofr" in tool_result.content
    assert answer.content == f"The catalog starts with {tool_result.content.splitlines()[0]}"
    assert call.usage_metadata["input_tokens"] == 640 and call.usage_metadata["output_tokens"] == 12
    assert answer.usage_metadata["total_tokens"] == 829
    assert answer.response_metadata["model_provider"] == "openai"
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini"
    assert [tool["function"]["name"] for tool in sent["tools"]][:3] == [
        "chartbook_list", "chartbook_get_docs", "chartbook_load_data"]
    assert model.profile["max_input_tokens"] == 128_000


def test_a_model_that_fails_mid_run_gives_one_clear_line(tools):
    with FakeOpenAI("fail-after-tool") as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout=5)
        agent = create_agent(model, tools)
        with pytest.raises(Exception) as caught:
            agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    message = explain_model_error(caught.value)
    assert message.startswith("The model server returned HTTP 500:") and "GPU caught fire" in message
    assert "\n" not in message


def test_a_model_that_times_out_gives_one_clear_line(tools):
    with FakeOpenAI("hang") as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, timeout=0.5)
        agent = create_agent(model, tools)
        with pytest.raises(Exception) as caught:
            agent.invoke({"messages": [HumanMessage("List ChartBook dataframes")]})
    assert explain_model_error(caught.value) == "The model server did not answer in time: try again, or raise the timeout."
