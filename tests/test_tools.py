"""The agent's tools as a model sees them: exact output formats, paging, bounds and refusals.

Every bad input must come back as a string starting with "Error: " (never an
exception), and the workspace must keep the agent inside it.
"""

from __future__ import annotations

import io
import math
import os
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from flawedcode import paths
from flawedcode.catalog import Catalog
from flawedcode.config import OffloadConfig
from flawedcode.context.offload import exempt_tools, should_offload
from flawedcode.tools import TOOL_SPECS, Workspace, make_tools, read_only_tools

TOOL_ORDER = [
    "chartbook_list",
    "chartbook_get_docs",
    "chartbook_load_data",
    "read_file",
    "write_file",
    "list_files",
    "search_files",
    "run_python",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "workspace", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")


@pytest.fixture
def catalog() -> Catalog:
    return Catalog()


@pytest.fixture
def call(workspace: Workspace, catalog: Catalog):
    tools = {each.name: each for each in make_tools(workspace, catalog)}

    def invoke(name: str, **arguments) -> str:
        result = tools[name].invoke(arguments)
        assert isinstance(result, str)
        return result

    return invoke


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(file.relative_to(folder)): file.read_bytes() for file in sorted(folder.rglob("*")) if file.is_file()}


# ----------------------------------------------------------------------------- the tool list


def test_make_tools_returns_the_eight_tools_in_the_documented_order(workspace, catalog):
    assert [each.name for each in make_tools(workspace, catalog)] == TOOL_ORDER


def test_every_tool_and_argument_is_described_for_the_model(workspace, catalog):
    for each in make_tools(workspace, catalog):
        assert len(each.description) > 60, each.name
        for argument, schema in each.args.items():
            assert schema.get("description"), f"{each.name}.{argument} has no description"


def test_read_tools_are_the_ones_the_offload_wrapper_must_leave_alone(tmp_path):
    assert read_only_tools() == ["read_file", "list_files", "search_files", "search_archive"]
    assert exempt_tools(OffloadConfig()) == read_only_tools()
    assert exempt_tools(OffloadConfig(exempt_tools=["run_python"])) == [*read_only_tools(), "run_python"]
    big = "x" * 20_000
    assert not should_offload(big, "search_files", OffloadConfig()) and should_offload(big, "chartbook_get_docs", OffloadConfig())


def test_every_tool_an_agent_gets_has_a_registry_entry(tmp_path):
    from flawedcode.agents import AGENTS

    for version, agent_class in AGENTS.items():
        agent = agent_class(workspace=Workspace.create(tmp_path / version))
        unregistered = [tool.name for tool in agent.tools if tool.name not in TOOL_SPECS]
        assert not unregistered, f"{version}: register these in flawedcode.tools.TOOL_SPECS: {unregistered}"


# ----------------------------------------------------------------------------- chartbook tools


def test_chartbook_list_has_one_line_per_dataframe(call, catalog):
    lines = call("chartbook_list").splitlines()
    expected = {f"{info.pipeline}/{info.dataframe}": info for info in catalog.dataframes()}
    assert len(lines) == len(expected)
    for line in lines:
        match = re.fullmatch(r"(\w+/\w+): (.+) \((\d+) rows, (\d+) columns, (\S+) to (\S+)\)", line)
        assert match, line
        info = expected[match[1]]
        assert (match[2], int(match[3]), int(match[4]), match[5], match[6]) == (
            info.title,
            info.rows,
            len(info.columns),
            info.start,
            info.end,
        )
    assert {"yield_curve/repo_public", "money_markets/sofr"} <= set(expected)


def test_chartbook_get_docs_returns_the_markdown_verbatim(call, catalog):
    docs = call("chartbook_get_docs", pipeline="yield_curve", dataframe="repo_public")
    assert docs == catalog.docs("yield_curve", "repo_public")
    assert len(docs) > 5_000


def test_chartbook_get_docs_accepts_pipeline_slash_dataframe(call, catalog):
    docs = call("chartbook_get_docs", pipeline="", dataframe="money_markets/sofr")
    assert docs == catalog.docs("money_markets", "sofr")


def test_unknown_pipeline_is_refused_with_a_suggestion(call):
    result = call("chartbook_get_docs", pipeline="yeild_curve", dataframe="treasury_yields")
    assert result.startswith("Error: ")
    assert "yield_curve" in result


def test_unknown_dataframe_is_refused_with_a_suggestion(call):
    result = call("chartbook_load_data", pipeline="money_markets", dataframe="sofrr")
    assert result.startswith("Error: ")
    assert "sofr" in result


def parse_loaded(result: str) -> tuple[re.Match, pd.DataFrame]:
    first_line, _, csv_text = result.partition("\n")
    header = re.fullmatch(r"# (\w+)/(\w+): (\d+) rows x (\d+) columns, (\S+) to (\S+)", first_line)
    assert header, first_line
    return header, pd.read_csv(io.StringIO(csv_text))


def test_chartbook_load_data_returns_a_header_line_then_the_last_rows_as_csv(call, catalog):
    info = catalog.info("money_markets", "sofr")
    header, frame = parse_loaded(call("chartbook_load_data", pipeline="money_markets", dataframe="sofr", limit=5))
    assert len(frame) == int(header[3]) == 5
    assert len(frame.columns) == int(header[4])
    assert list(frame.columns) == info.columns
    assert frame["date"].iloc[-1] == header[6] == info.end
    assert frame["date"].iloc[0] == header[5]
    assert list(frame["date"]) == sorted(frame["date"])


def test_chartbook_load_data_selects_columns_and_always_keeps_date(call, catalog):
    info = catalog.info("yield_curve", "treasury_yields")
    wanted = [name for name in info.columns if name != "date"][:2]
    _, frame = parse_loaded(
        call("chartbook_load_data", pipeline="yield_curve", dataframe="treasury_yields", columns=wanted, limit=3)
    )
    assert list(frame.columns) == ["date", *wanted]


def test_chartbook_load_data_filters_by_date(call):
    header, frame = parse_loaded(
        call(
            "chartbook_load_data",
            pipeline="money_markets",
            dataframe="effr",
            start="2024-03-01",
            end="2024-03-31",
            limit=500,
        )
    )
    assert header[5] >= "2024-03-01" and header[6] <= "2024-03-31"
    assert 15 <= len(frame) <= 23


def test_unknown_column_is_refused_with_the_valid_columns(call, catalog):
    result = call("chartbook_load_data", pipeline="money_markets", dataframe="sofr", columns=["no_such_column"])
    assert result.startswith("Error: ")
    assert "no_such_column" in result
    assert any(name in result for name in catalog.info("money_markets", "sofr").columns if name != "date")


@pytest.mark.parametrize(
    ("start", "end"),
    [("2024-06-30", "2024-01-01"), ("2030-01-01", "2030-02-01"), ("2024-13-45", None)],
    ids=["inverted", "empty", "unparseable"],
)
def test_bad_date_ranges_are_refused(call, start, end):
    result = call("chartbook_load_data", pipeline="money_markets", dataframe="sofr", start=start, end=end)
    assert result.startswith("Error: "), result


@pytest.mark.parametrize("limit", [0, 501])
def test_load_limit_outside_1_to_500_is_refused(call, limit):
    result = call("chartbook_load_data", pipeline="money_markets", dataframe="sofr", limit=limit)
    assert result.startswith("Error: ") and "500" in result


# ----------------------------------------------------------------------------- read_file


def test_read_file_returns_a_header_and_the_raw_lines(call, workspace):
    lines = (workspace.root / "analyze.py").read_text().splitlines()
    result = call("read_file", path="analyze.py")
    assert result.splitlines() == [f"# analyze.py (lines 1-{len(lines)} of {len(lines)})", *lines]


def test_read_file_pages_through_an_offloaded_scratch_file(call, workspace):
    lines = [f"row {number}, value {number * 1.5}" for number in range(450)]
    workspace.conversation_scratch_dir.mkdir(parents=True)
    (workspace.conversation_scratch_dir / "chartbook_load_data_3f2a9c1d.txt").write_text("\n".join(lines) + "\n")
    path = "scratch/chartbook_load_data_3f2a9c1d.txt"

    first = call("read_file", path=path).splitlines()
    assert first[0] == f"# {path} (lines 1-200 of 450)"
    assert first[-1] == f"# ... 250 more lines: read_file(path='{path}', offset=200)"
    second = call("read_file", path=path, offset=200).splitlines()
    assert second[0] == f"# {path} (lines 201-400 of 450)"
    assert second[-1] == f"# ... 50 more lines: read_file(path='{path}', offset=400)"
    third = call("read_file", path=path, offset=400).splitlines()
    assert third[0] == f"# {path} (lines 401-450 of 450)"
    assert first[1:-1] + second[1:-1] + third[1:] == lines


def test_read_file_reads_an_archive(call, workspace):
    workspace.archive_scope = "conv-1"  # the conversation the tools serve (an agent sets it)
    archive = workspace.archive_dir / "conv-1" / "archive.md"
    archive.parent.mkdir(parents=True)
    archive.write_text("# Archive\nOriginal goal: compare SOFR and EFFR\n")
    result = call("read_file", path="archives/conv-1/archive.md", offset=1, limit=1)
    assert result.splitlines() == ["# archives/conv-1/archive.md (lines 2-2 of 2)", "Original goal: compare SOFR and EFFR"]


def test_read_file_cuts_very_long_lines(call, workspace):
    (workspace.root / "wide.txt").write_text("x" * 5_000 + "\nshort\n")
    lines = call("read_file", path="wide.txt").splitlines()
    assert lines[1].startswith("x" * 2_000) and len(lines[1]) < 2_100
    assert "3,000 more characters" in lines[1]
    assert lines[2] == "short"


def test_read_file_of_a_missing_file_suggests_list_files(call):
    result = call("read_file", path="no_such_file.py")
    assert result.startswith("Error: ") and "list_files" in result


def test_read_file_refuses_binary_files(call, workspace):
    (workspace.root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (workspace.root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert call("read_file", path="image.png").startswith("Error: ")
    assert call("read_file", path="latin1.txt").startswith("Error: ")


def test_read_file_of_a_folder_suggests_list_files(call):
    result = call("read_file", path=".")
    assert result.startswith("Error: ") and "list_files" in result


def test_read_file_offset_past_the_end_is_refused(call):
    assert call("read_file", path="README.md", offset=10_000).startswith("Error: ")


# ----------------------------------------------------------------------------- staying inside


@pytest.fixture
def outside_file(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not for the agent\n")
    return secret


def test_dot_dot_escape_is_refused(call, outside_file):
    for tool_name, arguments in [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("read_file", {"path": "scratch/../../outside/secret.txt"}),
        ("list_files", {"path": ".."}),
        ("search_files", {"pattern": "agent", "path": "../outside"}),
        ("write_file", {"path": "../outside/new.txt", "content": "x"}),
    ]:
        result = call(tool_name, **arguments)
        assert result.startswith("Error: ") and "outside" in result, (tool_name, result)
    assert not (outside_file.parent / "new.txt").exists()


def test_absolute_path_outside_is_refused_but_inside_is_accepted(call, workspace, outside_file):
    assert call("read_file", path=str(outside_file)).startswith("Error: ")
    assert call("read_file", path="/etc/passwd").startswith("Error: ")
    assert call("write_file", path=str(outside_file), content="overwritten").startswith("Error: ")
    assert outside_file.read_text() == "not for the agent\n"
    assert call("read_file", path=str(workspace.root / "README.md")).startswith("# README.md (lines 1-")


def test_symlink_pointing_out_is_refused(call, workspace, outside_file):
    (workspace.root / "link.txt").symlink_to(outside_file)
    (workspace.root / "linked_folder").symlink_to(outside_file.parent, target_is_directory=True)
    assert call("read_file", path="link.txt").startswith("Error: ")
    assert call("read_file", path="linked_folder/secret.txt").startswith("Error: ")
    assert call("write_file", path="linked_folder/new.txt", content="x").startswith("Error: ")
    assert call("write_file", path="link.txt", content="x").startswith("Error: ")
    assert not (outside_file.parent / "new.txt").exists()
    assert outside_file.read_text() == "not for the agent\n"
    assert "not for the agent" not in call("search_files", pattern="agent")


# ----------------------------------------------------------------------------- write_file


def test_write_file_creates_folders_and_writes_exactly(call, workspace):
    content = "line one\r\nline two\nno newline at the end"
    assert call("write_file", path="notes/2024/findings.md", content=content) == (
        f"Wrote {len(content)} characters to notes/2024/findings.md"
    )
    written = workspace.root / "notes" / "2024" / "findings.md"
    assert written.read_bytes() == content.encode()
    assert sorted(os.listdir(written.parent)) == ["findings.md"]  # no temporary file left behind


def test_write_file_replaces_an_existing_file(call, workspace):
    call("write_file", path="README.md", content="short")
    assert (workspace.root / "README.md").read_text() == "short"


@pytest.mark.parametrize("path", ["scratch/x.txt", "archives/conv-1/archive.md", "scratch", "./scratch/x.txt"])
def test_write_file_refuses_scratch_and_archives(call, workspace, path):
    result = call("write_file", path=path, content="x")
    assert result.startswith("Error: ") and "read-only" in result
    assert not list(workspace.scratch_dir.rglob("*")) and not list(workspace.archive_dir.rglob("*"))


# ----------------------------------------------------------------------------- list_files and search_files


def test_list_files_lists_the_demo_project(call):
    lines = call("list_files").splitlines()
    assert lines[0].startswith("# .: ")
    assert "analyze.py/" not in lines
    assert any(re.fullmatch(r"data\.csv \([\d,]+ bytes\)", line) for line in lines)
    assert any(line.startswith("README.md (") for line in lines)


def test_list_files_lists_scratch_and_subfolders(call, workspace):
    workspace.conversation_scratch_dir.mkdir(parents=True)
    (workspace.conversation_scratch_dir / "result_1.txt").write_text("hello")
    call("write_file", path="notes/a.txt", content="a")
    assert "scratch/result_1.txt (5 bytes)" in call("list_files", path="scratch").splitlines()
    listing = call("list_files").splitlines()
    assert "notes/" in listing and "notes/a.txt (1 bytes)" in listing


def test_list_files_of_a_missing_folder_is_an_error(call):
    assert call("list_files", path="no_such_folder").startswith("Error: ")


def test_search_files_finds_regex_matches_with_path_and_line_number(call, workspace):
    result = call("search_files", pattern=r"^def \w+")
    source = (workspace.root / "analyze.py").read_text().splitlines()
    expected_line = next(number for number, line in enumerate(source, 1) if line.startswith("def daily_returns"))
    assert f"analyze.py:{expected_line}: def daily_returns(prices: list[float]) -> list[float]:" in result.splitlines()


def test_search_files_falls_back_to_a_literal_search_for_an_invalid_regex(call):
    result = call("search_files", pattern="stdev(", path="analyze.py")
    assert not result.startswith("Error: ")
    assert "literally" in result
    assert re.search(r"^analyze\.py:\d+: .*statistics\.stdev\(", result, re.MULTILINE)


def test_search_files_is_bounded_and_skips_binary_files(call, workspace):
    (workspace.root / "many.txt").write_text("needle " + "y" * 1_000 + "\n" * 1 + ("needle\n" * 500))
    (workspace.root / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    lines = call("search_files", pattern="needle").splitlines()
    matches = [line for line in lines if not line.startswith("#")]
    assert len(matches) == 100
    assert all(len(line) < 400 for line in matches)
    assert not any(line.startswith("blob.bin") for line in lines)
    assert "100 matches" in lines[-1]


def test_search_files_stops_a_catastrophic_regex_with_a_note(call, workspace):
    (workspace.root / "trap.txt").write_text("ok a line\n" + "a" * 40 + "b\n" + "a" * 40 + "b\n")
    started = time.monotonic()
    result = call("search_files", pattern=r"(a|aa)+$|ok", path="trap.txt")
    assert time.monotonic() - started < 60  # unbounded, this one pattern backtracks for minutes (a loaded machine took 14 s)
    assert result.splitlines()[0] == "trap.txt:1: ok a line"
    assert "stopped after 2 s, at trap.txt:2" in result and "simpler pattern" in result


def test_search_files_with_no_match_says_so(call):
    result = call("search_files", pattern="zebra_quagga")
    assert result.startswith("No matches")


def test_search_files_searches_scratch(call, workspace):
    workspace.conversation_scratch_dir.mkdir(parents=True)
    (workspace.conversation_scratch_dir / "docs_repo.txt").write_text("intro\nhaircut: the collateral discount\n")
    assert call("search_files", pattern="haircut", path="scratch") == (
        "scratch/docs_repo.txt:2: haircut: the collateral discount"
    )


# ----------------------------------------------------------------------------- run_python


def test_run_python_runs_in_the_workspace_and_reports_the_exit_code(call, workspace):
    result = call("run_python", code="import os, sys\nprint(os.getcwd())\nsys.exit(3)")
    assert result.splitlines() == ["# exit code 3", str(workspace.root)]


def test_run_python_imports_the_flawedcode_the_agent_runs(call):
    import flawedcode

    result = call("run_python", code="import flawedcode\nprint(flawedcode.__file__)")
    assert Path(flawedcode.__file__).resolve().parent.name == "flawedcode"
    assert result.splitlines() == ["# exit code 0", "<flawedcode>/__init__.py"]  # this package's folder, shown by name


def test_run_python_output_names_no_installation_folder(call):
    """A traceback through pandas reads the same wherever the project was cloned (token counts depend on it)."""
    import site
    import sysconfig

    result = call("run_python", code="import pandas as pd\npd.DataFrame({'a': [1]})['b']")
    assert "KeyError: 'b'" in result
    assert 'File "<site-packages>/pandas/core/frame.py"' in result
    for folder in (*site.getsitepackages(), sysconfig.get_path("stdlib")):
        assert folder not in result
    assert "<python>/json/__init__.py" in call("run_python", code="import json\nprint(json.__file__)")


def test_run_python_reports_errors_as_output_not_as_a_tool_error(call):
    result = call("run_python", code="1 / 0")
    assert result.startswith("# exit code 1\n") and "ZeroDivisionError" in result


def test_run_python_does_not_see_secrets(call, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-should-not-leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    code = "import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))"
    result = call("run_python", code=code)
    assert "OPENAI_API_KEY" not in result and "GITHUB_TOKEN" not in result and "should-not-leak" not in result
    assert "'LANG'" in result and result.splitlines()[-1] == "None"


def test_run_python_timeout_kills_the_whole_process_group(call, workspace):
    marker = f"flawedcode-test-{os.getpid()}-{time.monotonic_ns()}"
    code = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # {marker}'])\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    began = time.monotonic()
    result = call("run_python", code=code, timeout=1)
    assert time.monotonic() - began < 10
    assert result.startswith("Error: run_python timed out after 1 s")
    time.sleep(0.2)
    assert not processes_with(marker)


def test_run_python_returns_even_if_the_script_leaves_a_background_child(call):
    code = "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\nprint('done')"
    began = time.monotonic()
    assert call("run_python", code=code) == "# exit code 0\ndone"
    assert time.monotonic() - began < 8


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains ``marker``, seen from the host."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                found += [int(entry.name)] if state not in {"Z", "X"} else []
        except (OSError, ValueError):
            continue
    return found


def test_run_python_bounds_megabytes_of_output(call):
    code = "print('START'); print('x' * 1_500_000); print('y' * 500_000); print('END')"  # 2 MB: 200 times the bound
    result = call("run_python", code=code)
    assert len(result) < 10_500
    assert result.startswith("# exit code 0\nSTART")
    assert result.rstrip().endswith("END")
    assert re.search(r"\[[\d,]+ bytes of output cut from the middle\]", result)


def test_run_python_with_an_invalid_timeout_is_an_error(call):
    assert call("run_python", code="print(1)", timeout=0).startswith("Error: ")


# ----------------------------------------------------------------------------- every error is a string


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("chartbook_get_docs", {"pipeline": "nope", "dataframe": "nope"}),
        ("chartbook_load_data", {"pipeline": "money_markets", "dataframe": "sofr", "limit": "many"}),
        ("chartbook_load_data", {"pipeline": "money_markets"}),
        ("read_file", {"path": ""}),
        ("read_file", {"path": "README.md", "offset": -1}),
        ("read_file", {"path": "README.md", "limit": 0}),
        ("write_file", {"path": "notes.txt"}),
        ("write_file", {"path": ".", "content": "x"}),
        ("search_files", {"pattern": ""}),
        ("run_python", {"code": "   "}),
    ],
)
def test_bad_inputs_come_back_as_error_strings(call, tool_name, arguments):
    assert call(tool_name, **arguments).startswith("Error: ")


# ----------------------------------------------------------------------------- the workspace and the demo project


def test_workspace_create_copies_the_demo_project_and_never_touches_the_original(tmp_path, call, workspace):
    original = paths.demo_project_dir()
    before = snapshot(original)
    assert set(before) >= {"README.md", "analyze.py", "data.csv", "test_analyze.py"}
    assert snapshot(workspace.root) == before

    call("write_file", path="analyze.py", content="print('rewritten')\n")
    call("run_python", code="import pathlib; pathlib.Path('data.csv').write_text('gone')")
    call("run_python", code="import analyze")

    assert snapshot(original) == before
    assert workspace.root != original and original not in workspace.root.parents
    second = Workspace.create(scratch_dir=tmp_path / "s2", archive_dir=tmp_path / "a2")
    assert snapshot(second.root) == before and second.root != workspace.root


def test_workspace_create_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file.txt").write_text("x")
    with pytest.raises(FileExistsError):
        Workspace.create(tmp_path / "busy")


def test_display_paths(workspace):
    assert workspace.display_path(workspace.root / "analyze.py") == "analyze.py"
    assert workspace.display_path(workspace.conversation_scratch_dir / "x.txt") == "scratch/x.txt"
    assert workspace.display_path(workspace.scratch_dir / "other-conversation" / "x.txt") == "(outside the workspace)"
    assert workspace.display_path(workspace.archive_dir / "c1" / "archive.md") == "archives/c1/archive.md"
    assert workspace.resolve("scratch/x.txt", for_write=False) == workspace.conversation_scratch_dir / "x.txt"


def test_the_demo_project_volatility_bug_is_real(call, workspace):
    code = (
        "import math, statistics, analyze\n"
        "prices = analyze.closing_prices(analyze.load_rows())\n"
        "print(analyze.annualized_volatility(prices))\n"
        "print(statistics.stdev(analyze.daily_returns(prices)) * math.sqrt(252))\n"
    )
    exit_line, reported, correct = call("run_python", code=code).splitlines()
    assert exit_line == "# exit code 0"
    assert 0.10 < float(correct) < 0.40  # a plausible volatility for a stock
    assert not math.isclose(float(reported), float(correct), rel_tol=0.05)

    checks = "import runpy; runpy.run_path('test_analyze.py', run_name='__main__')"
    assert call("run_python", code=checks).startswith("# exit code 1\n")
    source = (workspace.root / "analyze.py").read_text()
    fixed = source.replace("statistics.stdev(prices)", "statistics.stdev(daily_returns(prices))")
    assert fixed != source
    call("write_file", path="analyze.py", content=fixed)
    assert call("run_python", code=checks).startswith("# exit code 0\n")
    assert math.isclose(float(call("run_python", code=code).splitlines()[1]), float(correct))
