"""What each version sends, proved at the model boundary.

- With offloading and summarization off, v2's wrappers send exactly what v1 sends: every call's
  system prompt, messages (reported usage and tool-call ids included) and tool schemas, word for
  word. v2's one other difference is the tool it adds (``search_archive``, last in its list: the
  snapshots show it), so this test gives that v2 v1's tools; a second run keeps the tool and checks
  that everything else v1 sends is still there, in the same order, call by call.
- With its defaults on the same session, v2 sends less (the test above could fail).
- Golden snapshots: each version's system prompt, tool schemas and fixed cost per call
  (``tests/snapshots/<version>.json``). A change to a prompt or a tool's docstring changes what
  every request carries (and the lessons' token counts): the test names the version and the part
  that changed. After a change you mean, run ``make update-snapshots`` and commit the files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, messages_to_dict
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from flawedcode.agents import AGENTS, AgentV2, BaseAgent, make_agent
from flawedcode.config import V2Config
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace, make_tools

SNAPSHOTS = Path(__file__).parent / "snapshots"
SESSION = [  # large docs and tables: offloading acts at once, summaries within a few turns
    "List ChartBook dataframes",
    "Get docs for yield_curve/repo_public",
    "Load 30 rows of repo_public with columns sofr, bgcr, tgcr, effr, iorb, on_rrp_rate and sofr_volume_bn",
    "Get docs for treasury_yields",
    "Load 50 rows of treasury_yields with columns yield_1m, yield_3m, yield_6m, yield_1y, yield_2y, yield_5y, yield_10y and yield_30y",
    "Get docs for fed_yield_curve",
    "Get docs for money_markets/sofr",
    "What was my original goal?",
]


class Requests(BaseCallbackHandler):
    """Every chat-model request as the model receives it: messages and bound tools."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        params = kwargs.get("invocation_params") or {}
        self.calls.append({"messages": [_without_ids(messages_to_dict(batch)) for batch in messages],
                           "tools": params.get("tools") or []})


def _without_ids(value: Any) -> Any:
    """Message ids are random per run; everything else must match."""
    if isinstance(value, dict):
        return {key: _without_ids(item) for key, item in value.items() if key != "id"}
    if isinstance(value, list):
        return [_without_ids(item) for item in value]
    return value


class V2WithV1Tools(AgentV2):
    """v2's wrappers around v1's tools (no search_archive)."""

    def build_tools(self) -> list[BaseTool]:
        return make_tools(self.workspace)


def requests_of(version: str | type[BaseAgent], folder: Path, config: Any = None) -> list[dict[str, Any]]:
    recorder = Requests()
    model = OfflineModel(max_input_tokens=DEFAULT_BUDGET_TOKENS, overflow="truncate", callbacks=[recorder])
    workspace = Workspace.create(folder / "ws", folder / "scratch", folder / "archives")
    agent_class = AGENTS[version] if isinstance(version, str) else version
    agent = agent_class(model=model, workspace=workspace, config=config, conversation_id="same-conversation")
    for request in SESSION:
        agent.send(request)
    return recorder.calls


def tool_names(call: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in call["tools"]]


def test_v2_with_offload_and_summaries_off_sends_exactly_what_v1_sends(tmp_path: Path) -> None:
    config = V2Config.model_validate({"offload": {"enabled": False}, "summarization": {"enabled": False}})
    v1 = requests_of("v1", tmp_path / "v1")
    v2 = requests_of(V2WithV1Tools, tmp_path / "v2", config)
    assert len(v2) == len(v1) > len(SESSION), "the same number of model calls"
    for number, (sent_by_v1, sent_by_v2) in enumerate(zip(v1, v2), start=1):
        assert sent_by_v2 == sent_by_v1, f"call {number}: v2's wrappers changed what the model received"


def test_v2_with_its_archive_tool_and_nothing_on_sends_v1s_conversation(tmp_path: Path) -> None:
    config = V2Config.model_validate({"offload": {"enabled": False}, "summarization": {"enabled": False}})
    v1 = requests_of("v1", tmp_path / "v1")
    v2 = requests_of("v2", tmp_path / "v2", config)
    assert len(v2) == len(v1)
    for number, (sent_by_v1, sent_by_v2) in enumerate(zip(v1, v2), start=1):
        assert tool_names(sent_by_v2) == [*tool_names(sent_by_v1), "search_archive"], f"call {number}: tools"
        assert sent_by_v2["tools"][:-1] == sent_by_v1["tools"], f"call {number}: the shared tools' schemas differ"
        assert [_content(batch) for batch in sent_by_v2["messages"]] == [_content(batch) for batch in sent_by_v1["messages"]], (
            f"call {number}: v2 sent another conversation than v1")


def _content(messages: list[dict[str, Any]]) -> list[tuple[str, Any, list[Any]]]:
    """What a message says (its type, text and tool calls by name and arguments), not its reported usage or ids."""
    return [(m["type"], m["data"]["content"], [(c["name"], c["args"]) for c in m["data"].get("tool_calls") or []])
            for m in messages]


def test_v2_with_its_defaults_sends_less_than_v1_on_the_same_session(tmp_path: Path) -> None:
    v1 = requests_of("v1", tmp_path / "v1")
    v2 = requests_of("v2", tmp_path / "v2")
    size = lambda calls: sum(len(json.dumps(call["messages"])) for call in calls)  # noqa: E731
    # Measured 2026-12-06: v2 sends 0.500 of v1's characters (138,653 / 277,216), since it computes each saved
    # load's figures with a script over the saved rows rather than describing them from its preview.
    assert size(v2) < 0.6 * size(v1), "offloading and summaries shrink what v2 sends"
    assert any("[Offloaded: scratch/" in json.dumps(call["messages"]) for call in v2)


# --- golden snapshots ---------------------------------------------------------------------------

def snapshot_of(version: str, folder: Path) -> dict[str, Any]:
    """What every request of ``version`` carries besides the conversation."""
    agent = make_agent(version, model=OfflineModel(), workspace=Workspace.create(folder / version))
    return {
        "version": version,
        "system_prompt": agent.config.system_prompt,
        "tools": [convert_to_openai_tool(tool) for tool in agent.tools],
        "fixed_tokens": agent.fixed_tokens,
    }


@pytest.mark.parametrize("version", list(AGENTS))
def test_each_version_sends_its_snapshot_system_prompt_and_tool_schemas(version: str, tmp_path: Path) -> None:
    current = snapshot_of(version, tmp_path)
    path = SNAPSHOTS / f"{version}.json"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(json.dumps(current, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    stored = json.loads(path.read_text(encoding="utf-8"))
    for part in ("system_prompt", "fixed_tokens"):
        assert current[part] == stored[part], f"{version}'s {part} changed: run `make update-snapshots` if you meant it"
    assert [t["function"]["name"] for t in current["tools"]] == [t["function"]["name"] for t in stored["tools"]], (
        f"{version}'s tools changed: run `make update-snapshots` if you meant it")
    for tool, stored_tool in zip(current["tools"], stored["tools"]):
        assert tool == stored_tool, f"{version}'s {tool['function']['name']} schema changed: `make update-snapshots` if you meant it"
