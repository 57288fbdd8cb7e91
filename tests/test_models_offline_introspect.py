"""The offline model answers questions about its own context and the coding workspace from what it sees.

Sent to the 8,192-token offline model directly with the v2 agent's system prompt and the real tools
(tests/teaching_harness.py, no agent); what the agent itself adds (offloading to scratch/) runs through
a real v2 agent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from teaching_harness import Chat, fast_workspace, offline_model

from flawedcode.agents import make_agent
from flawedcode.config import V2Config
from flawedcode.models import OfflineModel
from flawedcode.models.offline_cues import Intent, ranked, register_intent
from flawedcode.models.offline_plan import Step, Task
from flawedcode.tools import Workspace


@pytest.fixture
def agent(tmp_path: Path):
    """The model called directly (``send``, ``messages``), as a v2 agent would call it before its context fills."""
    return Chat(offline_model(), fast_workspace(tmp_path), system=V2Config().system_prompt)


@pytest.fixture
def real_agent(tmp_path: Path):
    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    return make_agent("v2", model=OfflineModel(), workspace=workspace)


def test_how_full_is_the_window_is_the_exact_input_token_count(agent):
    reply = agent.send("how full is your context window?")
    counted = agent.messages[-1].usage_metadata["input_tokens"]
    assert f"{counted:,} tokens of my 8,192-token window" in reply
    assert "nothing has fallen out" in reply


def test_which_results_went_to_scratch_names_each_visible_stub(real_agent):
    real_agent.send("load all of yield_curve/repo_public")
    reply = real_agent.send("which results did you move to scratch?")
    assert re.search(r"scratch/chartbook_load_data_yield_curve_repo_public_\w+\.txt \| [\d,]+ characters", reply)


def test_nothing_offloaded_or_archived_is_said_not_invented(agent):
    assert "I know of no tool result moved to scratch/" in agent.send("what have you offloaded so far?")
    assert "No archive file is named in what I can see" in agent.send("what have you archived so far?")


@pytest.mark.parametrize("request_text", ["what's failing in the demo project, and why?", "are any tests broken in this project?",
                                          "are the tests failing?", "is anything failing in the demo?", "any failing tests?"])
def test_whats_failing_names_the_failing_tests_line_and_function(agent, request_text):
    reply = agent.send(request_text)
    assert "2 tests failed" in reply
    assert "test_volatility_of_the_sample_data_is_plausible_for_a_stock" in reply
    assert "line 22" in reply and "analyze.annualized_volatility" in reply


def test_how_long_is_a_csv_counts_rows_without_dumping_it(agent):
    reply = agent.send("how long is data.csv?")
    assert "251 lines: a header line and 250 data rows" in reply
    assert "2024-01-02" not in reply  # no row was quoted
    read = [m for m in agent.messages if m.type == "tool"][-1]
    assert read.content.count("\n") <= 2


def test_how_many_rows_without_a_file_is_still_a_data_question(agent):
    reply = agent.send("how many rows does money_markets/sofr have in 2024?")
    assert "money_markets/sofr" in reply and "read_file" not in reply


def test_tests_run_with_the_projects_fallback_when_pytest_is_missing(tmp_path, monkeypatch):
    import contextlib
    import io
    import shutil
    import sys

    from flawedcode import paths
    from flawedcode.models.offline_file_rules import RUN_TESTS_CODE

    shutil.copytree(paths.demo_project_dir(), tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.syspath_prepend(str(tmp_path / "project"))
    monkeypatch.setitem(sys.modules, "pytest", None)  # import pytest fails, as after make demo's install
    monkeypatch.delitem(sys.modules, "analyze", raising=False)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), pytest.raises(SystemExit) as stopped:
        exec(compile(RUN_TESTS_CODE, "run_tests", "exec"), {})
    assert stopped.value.code == 1
    assert "pytest is not installed: python test_analyze.py" in output.getvalue()
    assert "FAILED test_analyze.py - AssertionError" in output.getvalue()


@pytest.mark.parametrize("request_text", ["how many tests are there in the demo project?", "how many tests does the project have"])
def test_how_many_tests_is_the_runs_totals_and_what_failed(agent, request_text):
    from flawedcode import paths

    written = len(re.findall(r"^def test_", (paths.demo_project_dir() / "test_analyze.py").read_text(), re.MULTILINE))
    reply = agent.send(request_text)
    assert reply.startswith(f"{written} tests ran: 2 failed, {written - 2} passed.") and "2 tests failed" in reply


def test_how_many_tests_after_the_fallback_runner_says_what_it_cannot_know():
    from flawedcode.models.offline_introspect import answer_count_tests
    from flawedcode.models.offline_plan import ToolResult

    output = "pytest is not installed: python test_analyze.py\nok  test_a\nok  test_b\nTraceback (most recent call last):\nAssertionError\n"
    reply = answer_count_tests(Task("count_tests"), [ToolResult("run_python", {}, output)], None)
    assert reply.startswith("The project's own test runner passed 2 tests and then stopped at the first one that failed")
    assert "can't say how many there are in all" in reply


def test_another_module_adds_an_intent_through_a_cue_row_and_a_planner(tmp_path):
    def plan_todos(clause, context):
        return [Task("write_todos_test", steps=[Step("write_todos_test", {"todos": ["load", "compare"]})])]

    def answer_todos(task, results, context):
        return "plan written: " + results[0].content

    register_intent(Intent("write_todos_test", cues=("to-do list",), needs_tools=("write_todos_test",)), plan_todos,
                    answer=answer_todos)
    silent = [intent.name for intent in ranked("make me a to-do list", set())]
    assert "write_todos_test" not in silent  # the tool is not bound: the row stays silent
    from langchain_core.tools import tool

    @tool
    def write_todos_test(todos: list[str]) -> str:
        """Write the to-do list."""
        return f"{len(todos)} todos"

    model = offline_model().bind_tools([write_todos_test])
    first = model.invoke([HumanMessage("make me a to-do list")])
    assert first.tool_calls[0]["name"] == "write_todos_test"
    assert first.tool_calls[0]["args"] == {"todos": ["load", "compare"]}


@pytest.mark.parametrize("request_text", ["run the tests", "run the test suite please", "do the tests pass?"])
def test_a_test_run_leads_with_the_failing_tests_line_and_function(agent, request_text):
    reply = agent.send(request_text)
    assert reply.startswith("2 tests failed:"), reply
    assert "test_volatility_of_the_sample_data_is_plausible_for_a_stock" in reply and "analyze.annualized_volatility" in reply
    assert "The code ran" in reply  # then the run's own tail


def test_asked_to_fix_code_the_failing_tests_come_first_then_the_function(agent):
    reply = agent.send("fix the volatility bug")
    assert reply.startswith("I can't edit code myself")
    assert "2 tests failed:" in reply and "def annualized_volatility" in reply


@pytest.mark.parametrize("question, expected", [
    ("what does analyze.py do, briefly?", "Analyze one stock's daily prices"),
    ("which functions are defined in analyze.py?", "def annualized_volatility"),
    ("what does test_analyze.py test?", "def test_moving_average_of_a_rising_series"),
    ("describe README.md", "Sections: How to run, Known problem"),
])
def test_a_question_about_a_file_is_answered_from_its_text_not_dumped(agent, question, expected):
    reply = agent.send(question)
    assert expected in reply and "read_file returned" not in reply and "return [" not in reply and "```" not in reply, reply


@pytest.mark.parametrize("question", ["what are the column headers of data.csv?", "which columns are in data.csv",
                                      "what columns does data.csv have?"])
def test_the_column_headers_of_a_csv_come_from_its_first_line_only(agent, question):
    reply = agent.send(question)
    assert "date,open,high,low,close,volume (6 columns)" in reply and "2024-01-02" not in reply
    read = [m for m in agent.messages if m.type == "tool"][-1]
    assert read.content.count("\n") <= 2
