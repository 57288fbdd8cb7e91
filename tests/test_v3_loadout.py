"""v3 sends what it uses: a tool a session never calls is deferred until ``load_tools`` names its group."""

from __future__ import annotations

from pathlib import Path

from flawedcode.agents import make_agent
from flawedcode.config import LoadoutConfig, V3Config
from flawedcode.context.loadout import TOOL_GROUPS
from flawedcode.lessons import lesson_model
from flawedcode.tools import Workspace

NEVER_USED_ON_THE_WORKLOADS = {"write_todos", "task", "save_memory", "run_python"}


def v3(tmp_path: Path, **loadout: bool):
    workspace = Workspace.create(tmp_path / "project", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    config = V3Config(budget_tokens=8192, loadout=LoadoutConfig(**loadout))
    return make_agent("v3", model=lesson_model("offline", 8192), workspace=workspace, config=config, conversation_id="t")


def sent_tools(agent) -> set[str]:
    return {tool.name for tool in agent.prefix.active_tools()}


def test_tools_never_used_on_the_workloads_are_not_sent_until_loaded(tmp_path: Path) -> None:
    agent = v3(tmp_path, defer_unused_tools=True)
    assert not NEVER_USED_ON_THE_WORKLOADS & sent_tools(agent)
    assert {"chartbook_list", "chartbook_get_docs", "chartbook_load_data", "read_file", "load_tools"} <= sent_tools(agent)
    loader = next(tool for tool in agent.prefix.tools if tool.name == "load_tools")
    assert all(f"group '{group}'" in loader.description for group in TOOL_GROUPS)
    agent.prefix.load_group("python")
    assert "run_python" in sent_tools(agent) and not {"write_todos", "task", "save_memory"} & sent_tools(agent)


def test_deferring_them_takes_their_schemas_off_every_call(tmp_path: Path) -> None:
    lean = v3(tmp_path / "lean", defer_unused_tools=True)
    whole = v3(tmp_path / "whole")  # the default sends them: cached schemas cost 0.1x (docs/benchmark.md)
    assert NEVER_USED_ON_THE_WORKLOADS <= sent_tools(whole)
    saved = whole.prefix.fixed_tokens() - lean.prefix.fixed_tokens()
    schemas = sum(whole.counter.count_tool(tool) for tool in whole.prefix.active_tools() if tool.name in NEVER_USED_ON_THE_WORKLOADS)
    assert saved > 0.8 * schemas  # load_tools' longer description takes back a little


def test_a_deferred_tool_is_loaded_before_the_offline_model_uses_it(tmp_path: Path) -> None:
    agent = v3(tmp_path, defer_unused_tools=True)
    reply = agent.send("Run analyze.py")
    calls = [call["name"] for message in agent.messages for call in getattr(message, "tool_calls", None) or []]
    assert calls[:2] == ["load_tools", "run_python"] and "exit code" in reply.lower()
