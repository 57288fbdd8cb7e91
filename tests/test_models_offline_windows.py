"""The offline model told about its context window (models/offline_windows.py): one generic reading, every agent alike."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from teaching_harness import offline_model

from flawedcode.bench.budget_peers import ContextWindows, make_window_tools, usage_warning
from flawedcode.models.offline_windows import summary_of
from flawedcode.tools import Workspace, make_tools

GOAL = "List ChartBook dataframes"
WINDOW = 8_192


def tools_for(tmp_path: Path, windows: bool = True) -> list:
    workspace = Workspace.create(tmp_path / "project", tmp_path / "scratch", tmp_path / "archives")
    return [*make_tools(workspace), *(make_window_tools(ContextWindows(tmp_path / "thread", "t")) if windows else [])]


def ask(tools: list, messages: list) -> AIMessage:
    return offline_model(WINDOW).bind_tools(tools).invoke(messages)


def earlier_turn() -> list:
    return [HumanMessage(GOAL), AIMessage("", tool_calls=[{"id": "c1", "name": "chartbook_list", "args": {}}]),
            ToolMessage("yield_curve/repo_public: Public repo market monitor (sample)", tool_call_id="c1"),
            AIMessage("The ChartBook catalog has 5 dataframes."), HumanMessage("Get docs for money_markets/sofr")]


def test_a_note_that_the_window_runs_out_makes_it_write_notes_then_start_a_new_window(tmp_path):
    tools = tools_for(tmp_path)
    messages = [*earlier_turn(), SystemMessage("You have 900 tokens left in this context window.")]
    first = ask(tools, messages)
    assert [call["name"] for call in first.tool_calls] == ["notes_write_file"]
    assert first.tool_calls[0]["args"]["path"] == "notes.md"
    assert f"Original goal (verbatim): {GOAL}" in first.tool_calls[0]["args"]["text"]
    second = ask(tools, [*messages, first, ToolMessage("Wrote notes.md (9 lines).", tool_call_id=first.tool_calls[0]["id"])])
    assert [(call["name"], call["args"]) for call in second.tool_calls] == [("new_context", {})]


def test_a_request_for_notes_is_heeded_and_plenty_left_changes_nothing(tmp_path):
    tools = tools_for(tmp_path)
    asked = ask(tools, [*earlier_turn(), SystemMessage("Write notes immediately.")])
    assert [call["name"] for call in asked.tool_calls] == ["notes_write_file"]
    plenty = ask(tools, [*earlier_turn(), SystemMessage("You have 6,000 tokens left in this context window.")])
    assert [call["name"] for call in plenty.tool_calls] == ["chartbook_get_docs"]


def test_without_tools_to_act_with_a_usage_note_changes_no_answer(tmp_path):
    tools = tools_for(tmp_path, windows=False)
    listing = tools[0].invoke({})
    turn = [HumanMessage(GOAL), AIMessage("", tool_calls=[{"id": "c1", "name": "chartbook_list", "args": {}}]),
            ToolMessage(listing, tool_call_id="c1")]
    noted = ask(tools, [*turn, SystemMessage(usage_warning(7_900, WINDOW))])
    assert noted.text == ask(tools, turn).text and "5 dataframes" in noted.text


def test_in_a_new_window_it_reads_its_notes_first_and_answers_from_them(tmp_path):
    tools = tools_for(tmp_path)
    system = SystemMessage("You are a helpful assistant.\n<context_window>\nCurrent context window id: w2\n"
                           "Previous context window id: w1\n</context_window>")
    question = HumanMessage("What was my original goal?")
    read = ask(tools, [system, question])
    assert [(call["name"], call["args"]) for call in read.tool_calls] == [("notes_read_file", {"path": "notes.md"})]
    notes = summary_of(earlier_turn())
    answer = ask(tools, [system, question, read, ToolMessage(notes, tool_call_id=read.tool_calls[0]["id"])])
    assert not answer.tool_calls and f'"{GOAL}"' in answer.text
    first_window = ask(tools, [SystemMessage("You are a helpful assistant."), question])
    assert not first_window.tool_calls  # no previous window named: nothing to read back
