"""An agent's own tools (plan, memory, sub-agents, deferred loading) found by their schemas, not their names
(teaching/offered.py). The model is called directly with the tools bound; no agent is built."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from teaching_harness import offline_model

from flawedcode.tools import Workspace, make_tools

TEXT, FLAG = {"type": "string"}, {"type": "boolean"}


def schema(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": properties, "required": required}}}


ITEMS = {"type": "array", "items": {"type": "object", "properties": {"content": TEXT,
                                                                       "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}}}}
WRITE_TODOS = schema("write_todos", "Save your plan: the whole todo list each call.", {"todos": ITEMS}, ["todos"])
UPDATE_PLAN = schema("update_plan", "Record the task plan: a list of steps with their status.",
                     {"plan": {"type": "array", "items": {"type": "object", "properties": {"step": TEXT, "status": TEXT}}}},
                     ["plan"])
SAVE_MEMORY = schema("save_memory", "Keep a fact the user asked you to remember.", {"fact": TEXT, "correction": FLAG}, ["fact"])
MEMORIZE = schema("memorize", "Store a user preference or fact in persistent memory for later sessions.", {"note": TEXT}, ["note"])
NOTES_FILE = schema("notes_write_file", "Write notes to a file to remember them.", {"path": TEXT, "text": TEXT}, ["path", "text"])
SPAWN = schema("spawn_agent", "Start a sub-agent with its own context to carry out a task; returns its answer.", {"prompt": TEXT}, ["prompt"])
ENABLE = schema("enable_tools", "Enable deferred tools: group 'files' = write_file, list_files, search_files.", {"name": TEXT}, ["name"])


@pytest.fixture
def base_tools(tmp_path: Path) -> list:
    return list(make_tools(Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")))


def first_move(tools: list, messages: list) -> tuple[str, list]:
    reply = offline_model().bind_tools(tools).invoke(messages)
    return reply.text, [(call["name"], call["args"]) for call in reply.tool_calls]


def test_a_plan_tool_is_found_by_its_schema_and_filled_with_its_own_field_names(base_tools: list) -> None:
    plan = "Plan: 1) list the catalog 2) get the docs for sofr 3) average sofr in 2024"
    steps = ["list the catalog", "get the docs for sofr", "average sofr in 2024"]
    assert first_move([*base_tools, UPDATE_PLAN], [HumanMessage(plan)])[1] == [
        ("update_plan", {"plan": [{"step": step, "status": "pending"} for step in steps]})]
    assert first_move([*base_tools, WRITE_TODOS], [HumanMessage(plan)])[1] == [
        ("write_todos", {"todos": [{"content": step, "status": "pending"} for step in steps]})]


def test_a_plan_stated_in_another_register_is_kept_item_by_item(base_tools: list) -> None:
    said = "steps for today -- first list the catalog, then get the docs for sofr, then average sofr in 2024"
    _, calls = first_move([*base_tools, WRITE_TODOS], [HumanMessage(said)])
    assert calls[0][0] == "write_todos" and [item["content"] for item in calls[0][1]["todos"]] == [
        "list the catalog", "get the docs for sofr", "average sofr in 2024"]


def test_the_plan_in_view_is_quoted_and_continue_does_its_next_item(base_tools: list) -> None:
    saved = AIMessage("", tool_calls=[{"name": "write_todos", "id": "p1", "type": "tool_call", "args": {"todos": [
        {"content": "list the catalog", "status": "done"}, {"content": "get the docs for money_markets/sofr", "status": "pending"}]}}])
    history = [HumanMessage("Plan: 1) list the catalog 2) get the docs for money_markets/sofr"), saved,
               ToolMessage("Todo list saved.", tool_call_id="p1"), AIMessage("Saved.")]
    shown, _ = first_move([*base_tools, WRITE_TODOS], [*history, HumanMessage("what's left on the plan?")])
    assert shown == "The plan I can see:\n- [done] list the catalog\n- [pending] get the docs for money_markets/sofr"
    assert first_move([*base_tools, WRITE_TODOS], [*history, HumanMessage("ok, carry on")])[1] == [
        ("chartbook_get_docs", {"pipeline": "money_markets", "dataframe": "sofr"})]
    reminder = HumanMessage("[Plan reminder: your plan]\n- [done] list the catalog\n- [in_progress] get the docs for money_markets/effr")
    assert first_move([*base_tools, WRITE_TODOS], [history[0], reminder, HumanMessage("next step")])[1] == [
        ("chartbook_get_docs", {"pipeline": "money_markets", "dataframe": "effr"})]
    assert "can't see a plan" in first_move([*base_tools, WRITE_TODOS], [HumanMessage("continue with the plan")])[0]


def test_work_goes_to_whatever_tool_says_it_starts_a_sub_agent(base_tools: list) -> None:
    said = "Delegate to sub-agents: average sofr in 2024; average effr in 2024"
    assert first_move([*base_tools, SPAWN], [HumanMessage(said)])[1] == [("spawn_agent", {"prompt": "average sofr in 2024"})]


def test_a_note_goes_to_whatever_tool_says_it_remembers_and_a_correction_is_marked(base_tools: list) -> None:
    assert first_move([*base_tools, MEMORIZE], [HumanMessage("remember that my manager is called Dana")])[1] == [
        ("memorize", {"note": "my manager is called Dana"})]
    assert first_move([*base_tools, SAVE_MEMORY], [HumanMessage("Actually: my manager is Priya")])[1] == [
        ("save_memory", {"fact": "my manager is Priya", "correction": True})]
    said, calls = first_move([*base_tools, NOTES_FILE], [HumanMessage("remember that my manager is called Dana")])
    assert calls == [] and 'Noted: "my manager is called Dana"' in said  # a tool that needs a path is not a memory tool


def test_a_deferred_tool_is_loaded_through_whatever_tool_names_its_group(base_tools: list) -> None:
    bound = [tool for tool in base_tools if tool.name not in ("write_file", "list_files", "search_files")]
    assert first_move([*bound, ENABLE], [HumanMessage("list the files")])[1] == [("enable_tools", {"name": "files"})]


def test_a_plan_a_note_and_a_hand_over_in_a_users_own_words_reach_the_agents_tools_before_any_data_reading(base_tools: list) -> None:
    """Fresh v3 sessions (tests/corpora/redteam_v3tools.yaml, written before these rules): 'can you jot down a plan for me: first ...'
    and 'Class, we'll plan before we compute. Write a to-do: ...' ran data asks instead (SOFR over all the data, 'no period was
    given'); 'Record in memory: ...' and '... can u remember that for me pls' were declined as data; 'correction: the 75th
    percentile' was saved to memory as a correction."""
    said = "can you jot down a plan for me: first look up the mean EFFR for May 2024, then the same for SOFR, then tell me the gap"
    _, calls = first_move([*base_tools, WRITE_TODOS], [HumanMessage(said)])
    assert [name for name, _ in calls] == ["write_todos"] and len(calls[0][1]["todos"]) == 3, calls
    class_plan = "Class, we'll plan before we compute. Write a to-do: get the docs for the repo dataset; find the average reserves in 2024"
    assert [name for name, _ in first_move([*base_tools, WRITE_TODOS], [HumanMessage(class_plan)])[1]] == ["write_todos"]
    assert first_move([*base_tools, SAVE_MEMORY], [HumanMessage("Record in memory: the project deadline is 15 March.")])[1] == [
        ("save_memory", {"fact": "the project deadline is 15 March"})]
    assert [name for name, _ in first_move([*base_tools, SAVE_MEMORY], [HumanMessage(
        "heyyy so my boss is obsessed with the 30y, can u remember that for me pls")])[1]] == ["save_memory"]
    assert not [name for name, _ in first_move([*base_tools, SAVE_MEMORY], [HumanMessage("correction: the 75th percentile")])[1]
                if name == "save_memory"]
    reply, calls = first_move(base_tools, [HumanMessage(said)])  # no plan tool: said so, and no step guessed
    assert calls == [] and reply.startswith("I have no plan or to-do tool here"), reply


def test_a_question_about_a_sub_agent_that_never_ran_is_answered_as_such(base_tools: list) -> None:
    """Fresh v3 sessions (rv_reviewer_false_claims): 'what was the sub-agent's figure for the spread?' with no sub-agent run gave the
    spread's mean from the conversation summary."""
    history = [HumanMessage("What was the average SOFR-IORB spread in 2024, in bp?"), AIMessage("... mean -0.0629 (-6.2948 bp).")]
    reply, calls = first_move([*base_tools, SPAWN], [*history, HumanMessage("Then what was the sub-agent's figure for the spread?")])
    assert calls == [] and reply.startswith("No sub-agent has run in what I can see of this conversation (no call to spawn_agent)"), reply
