"""The peers that show the model its budget behave as their authors describe (bench/budget_peers.py)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from flawedcode.bench.agent_specs import KNOWN_AGENTS
from flawedcode.bench.budget_peers import BUDGET_PEERS, ContextWindowMiddleware, ContextWindows, make_window_tools, usage_warning
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace

GOAL = "List ChartBook dataframes"


def new_workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "project", tmp_path / "scratch", tmp_path / "archives")


def peer(name: str, tmp_path: Path, budget: int = 8_192):
    return BUDGET_PEERS[name](OfflineModel(max_input_tokens=budget), workspace=new_workspace(tmp_path),
                              conversation_id=f"{name}-1")


def test_both_peers_are_built_in_agents():
    assert {"anthropic-context-awareness", "codex-context-windows"} <= set(KNOWN_AGENTS)


# --- Anthropic: context awareness -------------------------------------------------------------------

def test_the_usage_note_has_anthropics_format_and_never_a_negative_remainder():
    assert usage_warning(35_000, 200_000) == "<system_warning>Token usage: 35000/200000; 165000 remaining</system_warning>"
    assert usage_warning(9_000, 8_192).endswith("; 0 remaining</system_warning>")


def test_context_awareness_states_the_window_at_the_start_and_the_usage_after_each_tool_call(tmp_path):
    agent = peer("anthropic-context-awareness", tmp_path)
    assert agent.config.system_prompt.rstrip().endswith("<budget:token_budget>8192</budget:token_budget>")
    reply = agent.send(GOAL)
    notes = [index for index, message in enumerate(agent.messages) if isinstance(message, SystemMessage)]
    assert notes and all(isinstance(agent.messages[index - 1], ToolMessage) for index in notes)
    first = notes[0]
    used = agent.fixed_tokens + agent.counter.count_messages(agent.messages[:first])
    assert agent.messages[first].text == usage_warning(used, 8_192)
    assert "5 dataframes" in reply  # the note changes nothing the model answers
    calls = agent.log.agent_calls()
    assert calls[-1].input_tokens == agent.fixed_tokens + agent.counter.count_messages(agent.messages[:-1])


# --- Codex: model-managed context windows -------------------------------------------------------------

def window_tools(tmp_path: Path) -> tuple[ContextWindows, dict]:
    windows = ContextWindows(tmp_path / "thread", "thread-1")
    return windows, {tool.name: tool for tool in make_window_tools(windows)}


def test_codex_offers_its_eleven_tools_and_new_context_takes_no_arguments(tmp_path):
    windows, tools = window_tools(tmp_path)
    assert list(tools) == ["new_context", "get_context_remaining", "notes_write_file", "notes_append_to_file",
                           "notes_read_file", "notes_list_files_by_prefix", "notes_search_contents", "history_list_windows",
                           "history_list_items", "history_read_item", "history_search_contents"]
    assert tools["new_context"].args == {}
    assert tools["new_context"].invoke({}) == "A new context window will start without summarizing conversation history."
    assert windows.new_window_requested


def test_codex_notes_are_files_the_model_writes_appends_reads_and_searches(tmp_path):
    windows, tools = window_tools(tmp_path)
    assert tools["notes_write_file"].invoke({"path": "notes.md", "text": "goal: list\nnext: load sofr"}).startswith("Wrote")
    tools["notes_append_to_file"].invoke({"path": "notes.md", "text": "sofr mean 4.6420"})
    assert (tmp_path / "thread" / "notes" / "notes.md").read_text(encoding="utf-8").splitlines()[-1] == "sofr mean 4.6420"
    assert tools["notes_read_file"].invoke({"path": "notes.md", "start_line": 2, "stop_line": 2}) == "next: load sofr"
    assert tools["notes_search_contents"].invoke({"query": "4.6420"}) == "notes.md:3: sofr mean 4.6420"
    assert tools["notes_read_file"].invoke({"path": "../escape"}).startswith("Error")
    assert tools["notes_write_file"].invoke({"path": "../x", "text": "t"}).startswith("Error")


def test_codex_history_searches_and_reads_earlier_windows_word_for_word(tmp_path):
    windows, tools = window_tools(tmp_path)
    path = windows.archive([HumanMessage(GOAL), ToolMessage("yield_curve/repo_public: ...", tool_call_id="c1")])
    assert windows.current == "w2" and path.name == "w1.md" and GOAL in path.read_text(encoding="utf-8")
    assert tools["history_list_windows"].invoke({}) == "w1: 2 items\nw2: (current)"
    assert tools["history_search_contents"].invoke({"query": "repo_public"}).startswith("[w1] 2 role=tool")
    assert tools["history_read_item"].invoke({"window_id": "w1", "item_id": 1}) == f"[w1] 1 role=user\n{GOAL}"


def test_codex_starts_new_windows_without_a_summary_and_the_goal_survives_in_the_notes(tmp_path):
    agent = peer("codex-context-windows", tmp_path)
    for text in (GOAL, "Get docs for yield_curve/repo_public", "Load 30 rows of repo_public with columns sofr and bgcr",
                 "Get docs for treasury_yields", "Get docs for fed_yield_curve"):
        agent.send(text)
    windows = [event for event in agent.events if event.detail.get("strategy") == "codex-new-window"]
    assert windows and all(call.purpose == "agent" for call in agent.log.calls)  # a new window, never a summary call
    archived = tmp_path / "archives" / "codex-context-windows-1" / "context_windows" / "w1.md"
    assert GOAL in archived.read_text(encoding="utf-8")  # the first window, word for word
    notes = tmp_path / "archives" / "codex-context-windows-1" / "notes" / "notes.md"
    assert f"Original goal (verbatim): {GOAL}" in notes.read_text(encoding="utf-8")  # the model wrote its notes
    assert GOAL not in [message.text for message in agent.messages if isinstance(message, HumanMessage)]
    assert f'"{GOAL}"' in agent.send("What was my original goal?")  # read back from its notes in the new window
    assert max(call.input_tokens for call in agent.log.agent_calls()) <= 8_192


def test_codex_never_restarts_a_window_that_holds_only_the_turn_in_progress(tmp_path):
    agent = peer("codex-context-windows", tmp_path)
    middleware = ContextWindowMiddleware(agent)
    agent.windows.new_window_requested = True
    turn = [SystemMessage(agent.window_block()), HumanMessage("Get docs for yield_curve/repo_public"),
            ToolMessage("x " * 9_000, tool_call_id="c1")]
    assert middleware.new_window(turn, 20_000) is None and not agent.windows.new_window_requested
    assert agent.windows.current == "w1"  # a new window would only start this turn again
    update = middleware.new_window([SystemMessage(agent.window_block()), HumanMessage(GOAL), *turn[1:]], 20_000)
    assert update is not None and agent.windows.current == "w2"
    assert [message.text for message in update["messages"][1:]][-1] == "Get docs for yield_curve/repo_public"
