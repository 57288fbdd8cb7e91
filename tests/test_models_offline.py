"""The offline teaching model, called directly with the real tools (``run_turns``), as an agent's loop calls it.

Each test checks something a student would notice: which tool it called with
which arguments, what it answered, what it forgot when its window filled up. ``run_turns`` sends the
system prompt and the history, runs each tool call and feeds the results back until the model answers,
as create_agent's loop does, without building an agent; with middleware (a summary) it builds one with
create_agent, and one test runs a real v2 agent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import get_buffer_string
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from teaching_harness import fast_workspace, offline_model, tools_for

from flawedcode.catalog import Catalog
from flawedcode.demo import LESSON_STEPS
from flawedcode.models import get_model
from flawedcode.tokens import TokenCounter
from flawedcode.tools import Workspace, make_tools

SYSTEM_PROMPT = "You are FlawedCode, a careful assistant for financial data."
LESSON = ["List ChartBook dataframes", *LESSON_STEPS[1:]]  # the lesson's requests, its goal statement replaced by a plain request
LESSON_CALLS = [
    ("chartbook_list", {}),
    ("chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "repo_public"}),
    ("chartbook_get_docs", {"pipeline": "money_markets", "dataframe": "sofr"}),
    ("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "sofr", "limit": 50}),
    ("chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "treasury_yields"}),
]
I_DONT_KNOW = "I don't know"
MAX_MODEL_CALLS = 25
"""create_agent's limit: its graph stops after 25 steps."""


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return fast_workspace(tmp_path)  # run_python runs the code in this process (tests/teaching_harness.py), not the sandbox


@pytest.fixture
def tools(workspace: Workspace) -> list:
    return tools_for(workspace)  # the real tools, made once per process and pointed at this workspace


def run_turns(model, tools, prompts, history=None, middleware=()) -> tuple[list[BaseMessage], list[list[BaseMessage]]]:
    """Send each prompt with the whole history (v1 style); return the history and each turn's new messages."""
    agent = create_agent(model, tools, system_prompt=SYSTEM_PROMPT, middleware=list(middleware)) if middleware else None
    messages: list[BaseMessage] = list(history or [])
    turns: list[list[BaseMessage]] = []
    for prompt in prompts:
        messages.append(HumanMessage(prompt))
        messages = agent.invoke({"messages": messages})["messages"] if agent else answered(model, tools, messages)
        # A summarizing middleware may rewrite the history: the turn starts after this prompt.
        asked = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and m.content == prompt)
        turns.append(messages[asked + 1:])
    return messages, turns


def answered(model, tools, messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` and what follows until the model answers: its replies and each tool call's result (create_agent's loop)."""
    bound, by_name, messages = model.bind_tools(tools), {t.name: t for t in tools}, list(messages)
    for _ in range(MAX_MODEL_CALLS):
        reply = bound.invoke([SystemMessage(SYSTEM_PROMPT), *messages])
        messages.append(reply)
        if not reply.tool_calls:
            return messages
        messages += [by_name[call["name"]].invoke({**call, "type": "tool_call"}) for call in reply.tool_calls]
    raise AssertionError(f"no answer after {MAX_MODEL_CALLS} model calls")


def calls_of(turn: list[BaseMessage]) -> list[tuple[str, dict]]:
    return [(call["name"], call["args"]) for m in turn if isinstance(m, AIMessage) for call in m.tool_calls]


def answer_of(turn: list[BaseMessage]) -> str:
    return turn[-1].content


# ----------------------------------------------------------------------------- the lesson


def test_lesson_session_calls_the_right_tool_with_the_right_arguments_every_turn(tools):
    _, turns = run_turns(offline_model(100_000), tools, LESSON)
    for turn, expected in zip(turns, LESSON_CALLS):
        assert calls_of(turn) == [expected]
    assert "5 dataframes" in answer_of(turns[0]) and "money_markets/sofr" in answer_of(turns[0])
    assert "Columns (44)" in answer_of(turns[1]) and "sofr_minus_effr_bp" in answer_of(turns[1])
    assert "Loaded 50 rows of money_markets/sofr" in answer_of(turns[3])
    assert answer_of(turns[5]) == 'Your original goal was: "List ChartBook dataframes" (your first message in this conversation).'


def test_loaded_rows_answer_has_exact_statistics_computed_from_the_rows(tools):
    _, turns = run_turns(offline_model(100_000), tools, ["Load 50 rows of SOFR data"])
    rows = Catalog().load("money_markets", "sofr", limit=50)
    rate = rows["rate"]
    answer = answer_of(turns[0])
    assert f"mean {rate.mean():.4f}" in answer
    assert f"min {rate.min():.4f}" in answer and f"max {rate.max():.4f}" in answer
    assert f"latest {rate.iloc[-1]:.4f}" in answer
    assert f"{rows['date'].iloc[0]:%Y-%m-%d} to {rows['date'].iloc[-1]:%Y-%m-%d}" in answer


def test_the_8k_window_forgets_the_goal_by_the_end_of_the_lesson(tools):
    _, turns = run_turns(offline_model(), tools, LESSON)
    for turn, expected in zip(turns, LESSON_CALLS):
        assert calls_of(turn) == [expected]
    assert answer_of(turns[5]) == "I don't know: the start of our conversation is no longer in my context window."
    assert turns[5][-1].response_metadata["truncated_context"] is True
    assert turns[5][-1].usage_metadata["input_tokens"] <= 8_192


def test_overflow_error_raises_context_overflow_with_both_numbers(tools):
    with pytest.raises(ContextOverflowError, match=r"has [\d,]+ input tokens but the offline model's window is 8,192"):
        run_turns(offline_model(overflow="error"), tools, LESSON)


def test_a_v0_history_with_only_the_question_does_not_know_the_goal(tools):
    _, turns = run_turns(offline_model(), tools, ["What was my original goal?"])
    assert answer_of(turns[0]).startswith(I_DONT_KNOW)
    assert calls_of(turns[0]) == []


@pytest.mark.parametrize(
    "question",
    ["What was my original goal?", "What did I first ask you?", "Remind me what we set out to do.",
     "what was the goal of this session?"],
)
def test_goal_paraphrases_are_answered_from_the_first_request(tools, question):
    _, turns = run_turns(offline_model(), tools, ["List ChartBook dataframes", question])
    assert '"List ChartBook dataframes"' in answer_of(turns[1])


def test_goal_comes_from_a_visible_summary_when_the_start_is_gone(tools):
    summary = HumanMessage(
        "[Conversation summary 1 | archive: archives/c1/0001.md]\n"
        "Original goal (verbatim): Compare SOFR and EFFR over 2024\n"
        "Archive: archives/c1/0001.md holds messages 1-9 word for word.\n\n## SUMMARY\nDocs were read."
    )
    _, turns = run_turns(offline_model(), tools, ["What was my original goal?"], history=[summary])
    assert answer_of(turns[0]).startswith('Your original goal was: "Compare SOFR and EFFR over 2024"')


def test_goal_comes_from_langchains_summary_session_intent(tools):
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\n## SESSION INTENT\nChart the 10y-2y treasury spread\n\n"
        "## SUMMARY\nNone\n"
    )
    _, turns = run_turns(offline_model(), tools, ["Remind me what we set out to do"], history=[summary])
    assert '"Chart the 10y-2y treasury spread"' in answer_of(turns[0])


def test_what_did_you_just_do_names_the_last_tool_call(tools):
    _, turns = run_turns(offline_model(), tools, ["Get docs for money_markets/effr", "What did you just read?"])
    assert answer_of(turns[1]).startswith(
        "The last thing I did was call chartbook_get_docs(pipeline='money_markets', dataframe='effr')")
    _, turns = run_turns(offline_model(), tools, ["What did you just do?"])
    assert answer_of(turns[0]).startswith(I_DONT_KNOW)


# ----------------------------------------------------------------------------- phrasings


SOFR_DOCS = ("chartbook_get_docs", {"pipeline": "money_markets", "dataframe": "sofr"})
REPO_DOCS = ("chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "repo_public"})

PHRASINGS: list[tuple[str, list[tuple[str, dict]]]] = [
    # list the catalog
    ("List ChartBook dataframes", [("chartbook_list", {})]),
    ("What datasets are available?", [("chartbook_list", {})]),
    ("show me the catalog", [("chartbook_list", {})]),
    ("Which tables do you have in chartbook?", [("chartbook_list", {})]),
    # docs: pipeline/dataframe, dataframe only, alias, column only
    ("Get docs for money_markets/sofr", [SOFR_DOCS]),
    ("Show me the documentation of the sofr dataframe", [SOFR_DOCS]),
    ("Describe SOFR", [SOFR_DOCS]),
    ("What does sofr_minus_effr_bp mean?", [REPO_DOCS]),
    ("explain the column tri_party_on_volume_bn", [REPO_DOCS]),
    ("data dictionary for the repo market please", [REPO_DOCS]),
    ("Tell me about par yields", [("chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "treasury_yields"})]),
    ("docs for sofr and fed funds", [SOFR_DOCS, ("chartbook_get_docs", {"pipeline": "money_markets", "dataframe": "effr"})]),
    # load rows: limit, columns, dates
    ("Load 50 rows of SOFR data", [("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "sofr", "limit": 50})]),
    ("fetch the last 30 EFFR observations",
     [("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "effr", "limit": 30})]),
    ("pull yield_10y and yield_2y from treasury_yields for March 2024",
     [("chartbook_load_data", {"pipeline": "yield_curve", "dataframe": "treasury_yields",
                               "columns": ["yield_10y", "yield_2y"], "start": "2024-03-01", "end": "2024-03-31",
                               "limit": 500})]),
    ("load sofr rows from 2024-01-02 to 2024-01-31",
     [("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "sofr", "start": "2024-01-02",
                               "end": "2024-01-31", "limit": 500})]),
    ("give me 10 rows of spread_10y_2y_bp",
     [("chartbook_load_data", {"pipeline": "yield_curve", "dataframe": "treasury_yields",
                               "columns": ["spread_10y_2y_bp"], "limit": 10})]),
    # statistics: load then answer
    # issue 41: "What's the average EFFR rate in 2024?" left this list: the teaching model computes it with one
    # run_python script (tests/test_teaching_answers.py); its figure is still checked just below
    ("highest sofr_volume_bn?",  # no period given: all the data (it says so), never silently the last 100 rows
     [("chartbook_load_data", {"pipeline": "yield_curve", "dataframe": "repo_public", "columns": ["sofr_volume_bn"],
                               "limit": 500})]),
    ("mean of the fed funds rate over the last 60 days",
     [("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "effr", "columns": ["rate"], "limit": 60})]),
    # files
    ("Read analyze.py", [("read_file", {"path": "analyze.py"})]),
    ("open README.md please", [("read_file", {"path": "README.md"})]),
    ("show me what's in test_analyze.py", [("read_file", {"path": "test_analyze.py"})]),
    ("list the files", [("list_files", {"path": "."})]),
    ("What files are in the project?", [("list_files", {"path": "."})]),
    ("ls the workspace", [("list_files", {"path": "."})]),
    ("search for volatility", [("search_files", {"pattern": "volatility"})]),
    ("grep 'def annualized' in the code", [("search_files", {"pattern": "def annualized"})]),
    ("where is TRADING_DAYS used?", [("search_files", {"pattern": "TRADING_DAYS"})]),
    ("write notes.md with content 'SOFR looks stable'", [("write_file", {"path": "notes.md", "content": "SOFR looks stable"})]),
    ("save this to hello.py:\n```python\nprint('hi')\n```", [("write_file", {"path": "hello.py", "content": "print('hi')\n"})]),
    ("create todo.txt: check the volatility formula", [("write_file", {"path": "todo.txt", "content": "check the volatility formula\n"})]),
    # run
    ("run analyze.py", [("run_python", {"code": "import runpy\nrunpy.run_path('analyze.py', run_name='__main__')\n",
                                        "timeout": 60})]),
    ("Please execute analyze.py and tell me the output",
     [("run_python", {"code": "import runpy\nrunpy.run_path('analyze.py', run_name='__main__')\n", "timeout": 60})]),
    ("run this:\n```python\nprint(6 * 7)\n```", [("run_python", {"code": "print(6 * 7)\n", "timeout": 60})]),
]


@pytest.mark.parametrize(("request_text", "expected"), PHRASINGS, ids=[p[0][:40] for p in PHRASINGS])
def test_phrasings_route_to_the_right_tool_and_arguments(tools, request_text, expected):
    _, turns = run_turns(offline_model(100_000), tools, [request_text])
    assert calls_of(turns[0]) == expected
    assert answer_of(turns[0]).strip()
    assert not answer_of(turns[0]).startswith("I'm the offline teaching model")


def test_statistics_answer_uses_the_rows_it_loaded(tools):
    _, turns = run_turns(offline_model(100_000), tools, ["What's the average EFFR rate in 2024?"])
    rows = Catalog().load("money_markets", "effr", start="2024-01-01", end="2024-12-31", limit=500)
    assert f"mean {rows['rate'].mean():.4f}" in answer_of(turns[0])


def test_run_answer_reports_the_scripts_output(tools):
    _, turns = run_turns(offline_model(), tools, ["run this:\n```python\nprint(6 * 7)\n```"])
    assert "exit code 0" in answer_of(turns[0]) and "42" in answer_of(turns[0])


def test_tool_errors_are_relayed_with_what_to_do(tools):
    _, turns = run_turns(offline_model(), tools, ["read missing_file.py"])
    answer = answer_of(turns[0])
    assert answer.startswith("read_file failed:") and "missing_file.py" in answer and "list the files" in answer


def test_requests_it_cannot_route_get_an_explanation_not_a_tool_call(tools):
    _, turns = run_turns(offline_model(), tools, ["hello there"])
    assert calls_of(turns[0]) == [] and "List ChartBook dataframes" in answer_of(turns[0])


def test_it_only_calls_tools_it_was_given(workspace):
    only_files = [t for t in make_tools(workspace) if not t.name.startswith("chartbook")]
    _, turns = run_turns(offline_model(), only_files, ["Load 50 rows of SOFR data"])
    assert calls_of(turns[0]) == []
    assert "no tool to load" in answer_of(turns[0])


def test_arguments_follow_each_tools_own_parameter_names():
    @tool
    def read_file(file_path: str, offset: int = 0, limit: int = 100) -> str:
        """Deep Agents style: read a file."""
        return f"# {file_path} (lines 1-1 of 1)\nhello"

    _, turns = run_turns(offline_model(), [read_file], ["read notes/plan.md"])
    assert calls_of(turns[0]) == [("read_file", {"file_path": "notes/plan.md"})]


def test_two_part_requests_are_bounded_to_four_tool_calls(tools):
    _, turns = run_turns(offline_model(100_000), tools,
                         ["docs for sofr, effr, repo, treasury yields and the yield curve"])
    assert len(calls_of(turns[0])) == 4


# ----------------------------------------------------------------------------- recall


def test_recall_while_the_number_is_visible(tools):
    messages, turns = run_turns(offline_model(100_000), tools,
                                ["Load 50 rows of SOFR data", "What was the average SOFR rate you found?"])
    mean = Catalog().load("money_markets", "sofr", limit=50)["rate"].mean()
    assert calls_of(turns[1]) == []
    assert answer_of(turns[1]).startswith(f"The mean of money_markets/sofr was {mean:.4f}")


def _stub_history(scratch_dir: Path) -> tuple[list[BaseMessage], float]:
    """A history whose only trace of the SOFR rows is an offload stub naming a real scratch file."""
    frame = Catalog().load("money_markets", "sofr", columns=["rate"], limit=40)
    csv_text = frame.to_csv(index=False, date_format="%Y-%m-%d")
    first, last = f"{frame['date'].iloc[0]:%Y-%m-%d}", f"{frame['date'].iloc[-1]:%Y-%m-%d}"
    content = f"# money_markets/sofr: 40 rows x 2 columns, {first} to {last}\n{csv_text}"
    scratch_dir.mkdir(parents=True, exist_ok=True)
    (scratch_dir / "chartbook_load_data_money_markets_sofr_1a2b3c4d.txt").write_text(content)
    path = "scratch/chartbook_load_data_money_markets_sofr_1a2b3c4d.txt"
    stub = (f"[Offloaded: {path} | {len(content):,} characters, 42 lines, 600 tokens]\n"
            f"Preview (table: first rows):\n# money_markets/sofr: 40 rows x 2 columns, {first} to {last}\n"
            f"Full result: read_file(path='{path}')")
    history = [
        HumanMessage("Load 40 rows of SOFR rates"),
        AIMessage("", tool_calls=[{"name": "chartbook_load_data", "id": "call_1",
                                   "args": {"pipeline": "money_markets", "dataframe": "sofr", "limit": 40}}]),
        ToolMessage(stub, tool_call_id="call_1", name="chartbook_load_data"),
        AIMessage(f"The full result is saved in {path}."),
    ]
    return history, float(frame["rate"].mean())


def test_recall_via_a_visible_scratch_path_reads_the_file_and_answers(tools, workspace):
    history, mean = _stub_history(workspace.conversation_scratch_dir)
    _, turns = run_turns(offline_model(), tools, ["What was the average SOFR rate?"], history=history)
    assert calls_of(turns[0]) == [("read_file", {"path": "scratch/chartbook_load_data_money_markets_sofr_1a2b3c4d.txt",
                                                 "limit": 2000})]
    assert f"{mean:.4f}" in answer_of(turns[0])


def test_recall_of_rows_behind_an_offload_stub_reads_the_file_first(tools, workspace):
    history, mean = _stub_history(workspace.conversation_scratch_dir)
    _, turns = run_turns(offline_model(), tools, ["What is the mean of those SOFR rates you loaded?"], history=history)
    assert f"{mean:.4f}" in answer_of(turns[0])


def _paging_tools(workspace: Workspace, with_run_python: bool, page_lines: int = 5) -> list:
    """The tools, with read_file cut to a few lines a page (as read-back paging does on a small window)."""
    from flawedcode.tools import read_workspace_file

    @tool
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Read a text file.

        Args:
            path: File path.
            offset: Lines to skip.
            limit: How many lines.
        """
        return read_workspace_file(workspace, path, offset=offset, limit=min(limit, page_lines))

    kept = [t for t in make_tools(workspace) if t.name != "read_file" and (with_run_python or t.name != "run_python")]
    return [*kept, read_file]


@pytest.mark.parametrize("question", ["What was the average SOFR rate?", "What was the average SOFR rate you found?"])
def test_a_copy_that_pages_in_part_is_computed_again_over_the_same_rows(workspace, question):
    history, mean = _stub_history(workspace.conversation_scratch_dir)
    _, turns = run_turns(offline_model(), _paging_tools(workspace, True), [question], history=history)
    assert [name for name, _ in calls_of(turns[0])] == ["read_file", "run_python"]
    answer = answer_of(turns[0])
    assert f"{mean:.4f}" in answer and "40 values" in answer


def test_a_copy_that_pages_in_part_is_read_page_by_page_without_run_python(workspace):
    history, mean = _stub_history(workspace.conversation_scratch_dir)
    _, turns = run_turns(offline_model(), _paging_tools(workspace, False), ["What was the average SOFR rate you found?"],
                         history=history)
    assert [name for name, _ in calls_of(turns[0])] == ["read_file"] * 9
    assert f"{mean:.4f}" in answer_of(turns[0]) and "40 values" in answer_of(turns[0])


@pytest.mark.parametrize("question", ["What was the average SOFR rate?", "What was the average SOFR rate you found?"])
def test_a_copy_too_long_to_page_back_gets_no_figure_of_part_of_its_rows(workspace, question):
    history, _ = _stub_history(workspace.conversation_scratch_dir)
    _, turns = run_turns(offline_model(), _paging_tools(workspace, False, page_lines=1), [question], history=history)
    assert {name for name, _ in calls_of(turns[0])} == {"read_file"}
    answer = answer_of(turns[0])
    assert "won't" in answer and not re.search(r"\d\.\d{4}", answer), answer


def test_recall_without_the_number_or_a_path_does_not_know(tools):
    _, turns = run_turns(offline_model(), tools, ["What was the average SOFR rate you found?"])
    assert answer_of(turns[0]).startswith(I_DONT_KNOW) and calls_of(turns[0]) == []


def test_offload_stub_answer_says_where_the_result_is_and_quotes_the_preview():
    @tool
    def chartbook_get_docs(pipeline: str, dataframe: str) -> str:
        """Stand-in that returns what the offload wrapper would leave."""
        return ("[Offloaded: scratch/chartbook_get_docs_x_1234.txt | 6,412 characters, 52 lines, 3,021 tokens]\n"
                "Preview (docs: head and column names):\n# Public repo market monitor\n"
                "Full result: read_file(path='scratch/chartbook_get_docs_x_1234.txt')")

    _, turns = run_turns(offline_model(), [chartbook_get_docs], ["Get docs for yield_curve/repo_public"])
    answer = answer_of(turns[0])
    assert "saved in scratch/chartbook_get_docs_x_1234.txt" in answer and "> # Public repo market monitor" in answer


# ----------------------------------------------------------------------------- summaries


def test_it_writes_a_structured_summary_of_a_rendered_conversation(tools):
    messages, _ = run_turns(offline_model(100_000), tools, LESSON[:4])
    prompt = DEFAULT_SUMMARY_PROMPT.format(messages=get_buffer_string(messages, format="xml"))
    summary = offline_model(100_000).invoke(prompt).content
    for heading in ("## SESSION INTENT", "## SUMMARY", "## ARTIFACTS", "## NEXT STEPS"):
        assert heading in summary
    assert "Original goal (verbatim): List ChartBook dataframes" in summary
    assert "chartbook_load_data(pipeline='money_markets', dataframe='sofr', limit=50)" in summary
    mean = Catalog().load("money_markets", "sofr", limit=50)["rate"].mean()
    assert f"mean {mean:.4f}" in summary
    assert "Load 50 rows of SOFR data (answered)" in summary
    assert TokenCounter().count_message(HumanMessage(summary)) < 600


def test_langchain_summarization_middleware_works_with_it_and_keeps_the_goal(tools):
    model = offline_model()
    middleware = SummarizationMiddleware(model=model, trigger=("fraction", 0.6), keep=("messages", 4))
    _, turns = run_turns(model, tools, LESSON, middleware=[middleware])
    assert answer_of(turns[5]) == 'Your original goal was: "List ChartBook dataframes" (from the conversation summary I can see).'


# ----------------------------------------------------------------------------- bookkeeping


def test_usage_is_the_exact_count_of_what_it_saw(tools):
    model = offline_model(100_000)
    messages = [SystemMessage(SYSTEM_PROMPT), HumanMessage("List ChartBook dataframes")]
    schemas = [convert_to_openai_tool(t) for t in tools]
    reply = model.bind_tools(tools).invoke(messages)
    expected = TokenCounter().count_request(SYSTEM_PROMPT, schemas, messages[1:])
    assert reply.usage_metadata["input_tokens"] == expected
    assert reply.usage_metadata["output_tokens"] > 0
    assert reply.response_metadata["model_provider"] == "flawedcode"
    assert model._get_ls_params()["ls_provider"] == "flawedcode"
    assert model.profile["max_input_tokens"] == 100_000


def _comparable(messages: list[BaseMessage]) -> list[tuple]:
    return [(m.type, m.content, getattr(m, "tool_calls", None), getattr(m, "usage_metadata", None),
             getattr(m, "tool_call_id", None)) for m in messages]


def test_same_input_same_output(tools, workspace):
    first, _ = run_turns(get_model("offline"), tools, LESSON)
    second, _ = run_turns(get_model("offline"), tools, LESSON)
    assert _comparable(first) == _comparable(second)


def test_recall_via_a_visible_archive_uses_search_archive(tools):
    @tool
    def search_archive(query: str) -> str:
        """Stand-in with the real tool's output format."""
        return (f"1 archived message(s) match {query!r}:\n"
                "- archives/c1/0001.md [message 7, ai]: ...money_markets/sofr rate: mean 4.6420, min 4.3100 on 2024-12-19...\n"
                "Read a whole part with read_file(path=...) to see more.")

    summary = HumanMessage(
        "[Conversation summary 1 | archive: archives/c1/0001.md]\n"
        "Original goal (verbatim): List ChartBook dataframes\n"
        "Archive: archives/c1/0001.md holds messages 1-9 word for word; recover details with search_archive(query) "
        "or read_file(path).\n\n## SUMMARY\nDocs and rows were loaded.")
    _, turns = run_turns(offline_model(), [*tools, search_archive], ["What was the average SOFR rate you found?"],
                         history=[summary])
    assert calls_of(turns[0]) == [("search_archive", {"query": "sofr mean"})]
    assert answer_of(turns[0]).startswith("The mean of money_markets/sofr was 4.6420")


def test_a_statistic_whose_rows_were_offloaded_is_computed_from_the_file(workspace):
    history, mean = _stub_history(workspace.conversation_scratch_dir)
    stub = history[2].content
    read_file = next(t for t in make_tools(workspace) if t.name == "read_file")

    @tool
    def chartbook_load_data(pipeline: str, dataframe: str, columns: list[str] | None = None, limit: int = 20) -> str:
        """Stand-in for the load tool behind the offload wrapper: returns the stub."""
        return stub

    _, turns = run_turns(offline_model(), [chartbook_load_data, read_file], ["average SOFR rate over the last 40 rows"])
    assert [name for name, _ in calls_of(turns[0])] == ["chartbook_load_data", "read_file"]
    assert f"mean {mean:.4f}" in answer_of(turns[0])


def test_saved_docs_request_reads_the_scratch_file_the_stub_names() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from flawedcode.tools import Workspace, make_tools

    tools = make_tools(Workspace.create())
    stub = ("[Offloaded: scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt | 5,465 characters]\n"
            "Full result: read_file(path='scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt')")
    history = [
        HumanMessage("Get docs for yield_curve/repo_public"),
        AIMessage("", tool_calls=[{"name": "chartbook_get_docs", "args": {"pipeline": "yield_curve", "dataframe": "repo_public"}, "id": "c1"}]),
        ToolMessage(stub, tool_call_id="c1"),
        AIMessage("The docs are saved in scratch/."),
        HumanMessage("Open the saved repo_public docs and tell me what is_quarter_end means"),
    ]
    reply = offline_model().bind_tools(tools).invoke(history)
    assert reply.tool_calls[0]["name"] == "read_file"
    assert reply.tool_calls[0]["args"]["path"] == "scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt"


def test_recall_takes_the_number_from_the_line_that_names_the_dataframe() -> None:
    from langchain_core.messages import HumanMessage


    summary = HumanMessage(
        "[Conversation summary 1 | archive: archives/c/0001.md]\nOriginal goal (verbatim): List ChartBook dataframes\n\n"
        "Numbers reported:\n- money_markets/sofr rate: mean 4.6420 (50 values).\n- money_markets/effr rate: mean 4.5608 (40 values)."
    )
    reply = offline_model().invoke([summary, HumanMessage("What was the average SOFR rate you reported?")])
    assert "4.6420" in reply.content and "4.5608" not in reply.content.split("(")[0]


def test_a_column_question_searches_the_offloaded_docs_instead_of_fetching_them_again() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from flawedcode.tools import Workspace, make_tools

    path = "scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt"
    history = [
        HumanMessage("Get docs for yield_curve/repo_public"),
        AIMessage("", tool_calls=[{"name": "chartbook_get_docs", "args": {"pipeline": "yield_curve", "dataframe": "repo_public"}, "id": "c1"}]),
        ToolMessage(f"[Offloaded: {path} | 5,465 characters]\nFull result: read_file(path='{path}')", tool_call_id="c1"),
        AIMessage("The docs are saved."),
        HumanMessage("What does the column is_quarter_end mean?"),
    ]
    reply = offline_model().bind_tools(make_tools(Workspace.create())).invoke(history)
    assert [(call["name"], call["args"]) for call in reply.tool_calls] == [("search_files", {"pattern": "is_quarter_end", "path": path})]


def test_a_request_naming_a_file_reads_that_file_only() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from flawedcode.tools import Workspace, make_tools

    stub = "[Offloaded: scratch/chartbook_load_data_money_markets_sofr_50_114240f8.txt | 3,176 characters]"
    history = [
        HumanMessage("Load 50 rows of SOFR data"),
        AIMessage("", tool_calls=[{"name": "chartbook_load_data", "args": {"pipeline": "money_markets", "dataframe": "sofr"}, "id": "c1"}]),
        ToolMessage(stub, tool_call_id="c1"),
        AIMessage("Saved."),
        HumanMessage("Read the file scratch/notes_abc.txt from scratch"),
    ]
    reply = offline_model().bind_tools(make_tools(Workspace.create())).invoke(history)
    assert [call["args"]["path"] for call in reply.tool_calls] == ["scratch/notes_abc.txt"]


# ----------------------------------------------------------------------------- issue 10: never confidently wrong


def test_a_statistic_behind_a_stub_follows_read_back_pages_to_the_end(workspace):
    """Contract 3: a read-back may come one page at a time; the model reads every page before computing."""
    history, _ = _stub_history(workspace.conversation_scratch_dir)
    path = "scratch/chartbook_load_data_money_markets_sofr_1a2b3c4d.txt"
    lines = (workspace.conversation_scratch_dir / path.split("/", 1)[1]).read_text().splitlines()
    frame = Catalog().load("money_markets", "sofr", columns=["rate"], limit=40)

    @tool
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Stand-in that pages like issue 11's read-back: 15 lines at a time."""
        page = lines[offset: offset + 15]
        text = "\n".join([f"# {path} (lines {offset + 1}-{offset + len(page)} of {len(lines)})", *page])
        if offset + len(page) < len(lines):
            text += f"\n# ... {len(lines) - offset - len(page)} more lines: read_file(path='{path}', offset={offset + len(page)})"
        return text

    _, turns = run_turns(offline_model(), [read_file], ["What was the average SOFR rate?"], history=history)
    offsets = [args.get("offset", 0) for name, args in calls_of(turns[0]) if name == "read_file"]
    assert offsets == [0, 15, 30]
    assert f"mean {frame['rate'].mean():.4f}" in answer_of(turns[0])


def test_an_offload_stub_is_never_read_as_a_data_table():
    from flawedcode.models.offline_stats import parse_loaded_table

    stub = ("[Offloaded: scratch/x.txt | 4,083 characters, 253 lines, 2,796 tokens]\nPreview (table: first rows and summary "
            "statistics):\n# money_markets/sofr: 251 rows x 2 columns, 2024-01-02 to 2024-12-31\ndate,rate\nmean,5.155\n"
            "min,4.31\nmax,5.4\n2024-01-02,5.38\nFull result: read_file(path='scratch/x.txt')")
    assert parse_loaded_table(stub) is None


def test_a_one_line_code_block_runs_whole(tools):
    _, turns = run_turns(offline_model(), tools, ["```print(2 ** 10)```"])
    assert calls_of(turns[0])[0][1]["code"] == "print(2 ** 10)\n"
    assert "1024" in answer_of(turns[0])


def test_a_median_asked_is_a_median_and_nothing_else(tools):
    _, turns = run_turns(offline_model(100_000), tools, ["median EFFR in 2024"])
    rows = Catalog().load("money_markets", "effr", start="2024-01-01", end="2024-12-31")
    answer = answer_of(turns[0])
    assert f"median {rows['rate'].median():.4f}" in answer and "mean" not in answer


def test_a_goal_statement_loads_nothing_and_is_the_goal(tools):
    goal = ("My goal: compare the average SOFR and EFFR rates in 2024 and explain the spread between them. "
            "First, list the ChartBook dataframes.")
    _, turns = run_turns(offline_model(), tools, [goal, "What was my original goal?"])
    assert calls_of(turns[0]) == [("chartbook_list", {})]
    assert f'"{goal}"' in answer_of(turns[1])


def test_asked_to_fix_code_it_shows_the_failure_and_says_it_cannot_edit(tools):
    _, turns = run_turns(offline_model(), tools, ["fix the volatility bug"])
    answer = answer_of(turns[0])
    assert [name for name, _ in calls_of(turns[0])] == ["run_python", "read_file"]
    assert "can't edit code myself" in answer and "def annualized_volatility" in answer and "failed" in answer


def test_a_column_asked_of_offloaded_docs_is_answered_from_the_saved_copy_not_with_the_stub(workspace):
    from flawedcode.agents import make_agent

    agent = make_agent("v2", model=offline_model(), workspace=workspace)
    reply = agent.send("what units is reserves_bn in?")
    assert "| `reserves_bn` | float64 | $bn | Reserve balances" in reply
    assert "is saved in scratch/" not in reply and "Preview" not in reply


@pytest.mark.parametrize("question, statistic", [("What was the standard deviation of the SOFR rates you loaded?", "std"),
                                                  ("What was the highest SOFR rate you found?", "max")])
def test_a_statistic_asked_back_from_a_copy_in_scratch_is_the_one_asked(tools, workspace, question, statistic):
    history, _ = _stub_history(workspace.conversation_scratch_dir)
    rates = Catalog().load("money_markets", "sofr", columns=["rate"], limit=40)["rate"]
    _, turns = run_turns(offline_model(), tools, [question], history=history)
    answer = answer_of(turns[0])
    assert f"{getattr(rates, statistic)():.4f}" in answer and "40 values" in answer and "mean" not in answer, answer


@pytest.mark.parametrize("question, expected", [
    ("What was the average SOFR rate you reported for 2023?", "5.0021"),
    ("What was the Q1 mean of SOFR you reported?", "5.3100"),
    ("What was the average SOFR rate you reported for June 2024?", None),  # no figure covers only June: never a wider one
])
def test_a_figure_asked_back_for_a_period_is_one_whose_dates_fall_in_it(question, expected):
    from langchain_core.messages import HumanMessage

    summary = HumanMessage(
        "[Conversation summary 1 | archive: archives/c/0001.md]\nOriginal goal (verbatim): compare SOFR by year\n\n"
        "Numbers reported:\n- money_markets/sofr rate (percent), 2024-01-02 to 2024-12-31, 251 values: mean 5.1548.\n"
        "- money_markets/sofr rate (percent), 2023-01-03 to 2023-12-29, 250 values: mean 5.0021.\n"
        "- money_markets/sofr rate (percent), 2024-01-02 to 2024-03-28, 61 values: mean 5.3100.")
    reply = offline_model().invoke([summary, HumanMessage(question)]).content
    if expected is None:
        assert reply.startswith(I_DONT_KNOW) and not re.search(r"\d\.\d{4}", reply), reply
    else:
        assert f"was {expected}" in reply and reply.count(".") < 12, reply
