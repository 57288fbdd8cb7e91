"""The offline model answers from what it has actually seen: an offloaded result is read back, never judged from its preview.

The model is called directly with a message list (no agent): each tool it calls runs for real on a copy of the
demo project (run_python's code in this process: tests/teaching_harness.py's ``fast_workspace``), and a result is
replaced by the stub ``flawedcode.context.offload`` writes (the format every agent shares), so the rules are checked
for every agent alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from teaching_harness import fast_workspace, offline_model, tools_for

from flawedcode.config import OffloadConfig
from flawedcode.context.offload import offload
from flawedcode.models.teaching.seen import Resolved, next_read, read_test_run, resolve
from flawedcode.tools import Workspace

PYTEST_OUTPUT = """..FF                                                                     [100%]
=================================== FAILURES ===================================
_________ test_volatility_of_the_sample_data_is_plausible_for_a_stock __________

    def test_volatility_of_the_sample_data_is_plausible_for_a_stock():
        prices = analyze.closing_prices(analyze.load_rows())
>       assert 0.05 < analyze.annualized_volatility(prices) < 1.0
E       assert 135.5033798431451 < 1.0

test_analyze.py:27: AssertionError
=========================== short test summary info ============================
FAILED test_analyze.py::test_volatility_of_prices_that_alternate_up_and_down_by_one_percent
FAILED test_analyze.py::test_volatility_of_the_sample_data_is_plausible_for_a_stock
2 failed, 2 passed in 3.59s
"""
LOAD = "Load 30 rows of repo_public with columns sofr, bgcr, tgcr, effr, iorb, on_rrp_rate and sofr_volume_bn"


class Session:
    """A message list and the real tools on a copy of the demo project; ``offloaded`` tools come back as stubs."""

    def __init__(self, tmp_path: Path, offloaded: tuple[str, ...] = (), without: tuple[str, ...] = (), extra=()) -> None:
        self.workspace = fast_workspace(tmp_path)  # the end-to-end v3 case below runs the sandbox
        self.tools = {tool.name: tool for tool in [*tools_for(self.workspace), *extra] if tool.name not in without}
        self.offloaded, self.empty_preview, self.messages = offloaded, False, []
        self.model = offline_model().bind_tools(list(self.tools.values()))
        self.calls: list[tuple[str, dict]] = []

    def result_of(self, name: str, args: dict, text: str | None = None) -> str:
        """The tool's real result (or ``text``), as the stub that replaces it when the tool is offloaded."""
        text = str(self.tools[name].invoke(args)) if text is None else text
        if name not in self.offloaded:
            return text
        stub = offload(text, name, args, scratch_dir=self.workspace.conversation_scratch_dir, config=OffloadConfig()).stub
        lines = stub.splitlines()
        return "\n".join([lines[0], lines[1], lines[-1]]) if self.empty_preview else stub  # v3's guard: no room for a preview

    def send(self, text: str, outputs: dict[str, str] | None = None) -> str:
        """Call the model until it answers, running each tool it calls (``outputs``: a tool's result given instead)."""
        self.messages.append(HumanMessage(text))
        tools_for(self.workspace)  # the shared tools act on this session's workspace
        for _ in range(15):
            reply: AIMessage = self.model.invoke(self.messages)
            self.messages.append(reply)
            if not reply.tool_calls:
                return str(reply.content)
            for call in reply.tool_calls:
                self.calls.append((call["name"], call["args"]))
                content = self.result_of(call["name"], call["args"], (outputs or {}).get(call["name"]))
                self.messages.append(ToolMessage(content, tool_call_id=call["id"], name=call["name"]))
        raise AssertionError("no answer after 15 calls")


def test_a_test_run_saved_with_an_empty_preview_is_read_back_and_reported_from_pytests_summary(tmp_path: Path) -> None:
    # Today's v3: the pytest output goes to scratch/ with an empty preview; the model said "No test failed." (2 of 4 fail).
    session = Session(tmp_path, offloaded=("run_python",))
    session.empty_preview = True
    reply = session.send("run the tests", outputs={"run_python": PYTEST_OUTPUT})
    assert [name for name, _ in session.calls] == ["run_python", "read_file"]
    assert session.calls[1][1]["path"].startswith("scratch/run_python_")
    assert "No test failed" not in reply
    assert "2 tests failed" in reply and "2 failed, 2 passed" in reply
    assert "test_volatility_of_prices_that_alternate_up_and_down_by_one_percent" in reply
    assert "test_volatility_of_the_sample_data_is_plausible_for_a_stock" in reply


def test_without_a_tool_to_read_it_back_it_says_so_instead_of_answering(tmp_path: Path) -> None:
    session = Session(tmp_path, offloaded=("run_python",), without=("read_file",))
    session.empty_preview = True
    reply = session.send("run the tests", outputs={"run_python": PYTEST_OUTPUT})
    assert "No test failed" not in reply and "failed" not in reply.split("saved")[0]
    assert "can't read the whole file back" in reply and "scratch/run_python_" in reply


def test_a_deferred_read_file_is_loaded_first_then_the_saved_result_read(tmp_path: Path) -> None:
    groups: list[str] = []

    def load_tools(group: str) -> str:
        groups.append(group)
        return f"Loaded the {group} tools."

    loader = StructuredTool.from_function(load_tools, name="load_tools",
                                          description="Load deferred tools: group 'files' = read_file, list_files.")
    session = Session(tmp_path, offloaded=("run_python",), without=("read_file",), extra=(loader,))
    session.empty_preview = True
    reply = session.send("run the tests", outputs={"run_python": PYTEST_OUTPUT})
    assert session.calls[1] == ("load_tools", {"group": "files"})
    assert "can't read the whole file back" in reply  # this test's loader adds no tool: said, not answered


def test_a_table_load_is_answered_from_the_whole_table_not_the_rounded_preview(tmp_path: Path) -> None:
    whole = Session(tmp_path / "whole").send(LOAD)
    session = Session(tmp_path / "stub", offloaded=("chartbook_load_data",))
    reply = session.send(LOAD)
    assert [name for name, _ in session.calls] == ["chartbook_load_data", "read_file"]
    assert reply == whole
    assert "preview" not in reply.lower()


def test_a_docs_stub_is_shown_as_a_preview_with_its_path_and_not_read_back(tmp_path: Path) -> None:
    session = Session(tmp_path, offloaded=("chartbook_get_docs",))
    reply = session.send("Get docs for yield_curve/repo_public")
    assert [name for name, _ in session.calls] == ["chartbook_get_docs"]
    assert "is saved in scratch/chartbook_get_docs_yield_curve_repo_public_" in reply


def test_resolve_folds_read_back_pages_into_the_stub_they_complete() -> None:
    class R:
        def __init__(self, name: str, args: dict, content: str) -> None:
            self.name, self.args, self.content = name, args, content

    stub = ("[Offloaded: scratch/x.txt | 20 characters, 3 lines, 9 tokens]\nPreview (text: head and tail):\n"
            "Full result: read_file(path='scratch/x.txt')")
    page1 = "# scratch/x.txt (lines 1-2 of 3)\na\nb\n# ... 1 more lines: read_file(path='scratch/x.txt', offset=2)"
    page2 = "# scratch/x.txt (lines 3-3 of 3)\nc"
    first = resolve([R("run_python", {}, stub)])
    assert first[0].resolved is Resolved.PREVIEW and next_read(first, {"read_file"}) == ("read_file", {"path": "scratch/x.txt", "limit": 2000})
    part = resolve([R("run_python", {}, stub), R("read_file", {"path": "scratch/x.txt"}, page1)])
    assert part[0].resolved is Resolved.PART and next_read(part, {"read_file"})[1]["offset"] == 2
    whole = resolve([R("run_python", {}, stub), R("read_file", {"path": "scratch/x.txt"}, page1), R("read_file", {"path": "scratch/x.txt"}, page2)])
    assert len(whole) == 1 and whole[0].whole and whole[0].content == "a\nb\nc" and next_read(whole, {"read_file"}) is None


@pytest.mark.parametrize(("output", "said"), [
    ("....  [100%]\n4 passed in 0.10s\n", "No test failed"),
    ("", "can't say how the run went"),
    ("..F.\n1 failed, 3 passed in 0.2s\n", "1 failed, 3 passed"),
])
def test_a_run_is_read_from_the_runners_own_summary_line(output: str, said: str) -> None:
    described = read_test_run(output).describe()
    assert said in described
    assert ("No test failed" in described) == (said == "No test failed")


def test_end_to_end_v3_reports_the_failing_tests_it_saved_to_scratch(tmp_path: Path) -> None:
    # v3 (8K) offloads the pytest output with an empty preview: it was "No test failed." in 5 of 5 runs.
    from flawedcode.agents import make_agent
    from flawedcode.config import V3Config
    from flawedcode.lessons import lesson_model

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    agent = make_agent("v3", model=lesson_model("offline", 8192), workspace=workspace, config=V3Config(budget_tokens=8192),
                       conversation_id="seen")
    reply = agent.send("run the tests")
    assert "No test failed" not in reply
    assert "2 tests failed" in reply and "test_volatility_of_the_sample_data_is_plausible_for_a_stock" in reply
