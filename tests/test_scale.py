"""Flat cost at any session length (issue 14): what the archive and the offloader no longer redo.

Speed itself is measured by ``tests/benchmarks/bench_scale.py``; these tests check the
behaviour that makes it flat: the archive reads no file it has read before, its search
gives the same hits as a plain scan, table previews need no pandas (and match its
figures exactly), and heavy libraries are imported only when used.
"""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.catalog import Catalog
from flawedcode.context import ConversationArchive, make_search_archive_tool
from flawedcode.context.archive import message_text
from flawedcode.context.offload import _table_preview
from flawedcode.tools import Workspace, make_tools


def exchange(turn: int, result: str) -> list:
    return [HumanMessage(f"request {turn}", id=f"h{turn}"),
            AIMessage("", id=f"a{turn}", tool_calls=[{"name": "chartbook_list", "args": {}, "id": f"c{turn}"}]),
            ToolMessage(result, tool_call_id=f"c{turn}", id=f"t{turn}"),
            AIMessage(f"answer {turn}", id=f"r{turn}")]


@pytest.fixture
def file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files read through pathlib from now on."""
    reads: list[str] = []
    original_text, original_bytes = Path.read_text, Path.read_bytes

    def read_text(self: Path, *args, **kwargs) -> str:
        reads.append(self.name)
        return original_text(self, *args, **kwargs)

    def read_bytes(self: Path) -> bytes:
        reads.append(self.name)
        return original_bytes(self)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    return reads


# --- the archive keeps what it has read ------------------------------------------------------------

def test_summaries_and_searches_reread_no_archive_file(tmp_path: Path, file_reads: list[str]) -> None:
    archive = ConversationArchive(tmp_path, "c")
    for turn in range(20):
        archive.append(exchange(turn, f"result {turn} sofr average 5.{turn:02d}"))
    tool = make_search_archive_tool(archive)
    file_reads.clear()
    for turn in range(20):
        archive.not_archived(exchange(turn, ""))  # what each summary asks (archive_once)
        archive.parts()
        archive.search("sofr average 5.07")
        tool.invoke({"query": "no such words anywhere"})
    assert archive.archived_ids() == {f"{kind}{turn}" for kind in "hatr" for turn in range(20)}
    assert file_reads == [], "neither index.json nor any part is read again"


def test_another_writers_parts_are_learned_once_each(tmp_path: Path, file_reads: list[str]) -> None:
    writer, reader = ConversationArchive(tmp_path, "c"), ConversationArchive(tmp_path, "c")
    writer.append(exchange(1, "first sofr"))
    assert [hit.seq for hit in reader.search("sofr")] == [3]
    file_reads.clear()
    writer.append(exchange(2, "second sofr"))
    assert [hit.seq for hit in reader.search("sofr")] == [7, 3]
    assert [hit.seq for hit in reader.search("second")] == [7]
    assert sorted(file_reads) == ["0002.jsonl", "index.json"], "only what changed is read"


words = st.sampled_from(["sofr", "effr", "5.31", "rate", "average", "2024-01-02", "repo_public", "money_markets/sofr",
                         "Yield", "YIELD_10Y", "x", "%", "mean", "--", "caf\u00e9", "\u0130stanbul"])


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(words, max_size=12).map(" ".join), min_size=1, max_size=30),
       queries=st.lists(st.lists(words, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=5))
def test_search_finds_exactly_what_a_plain_scan_finds(tmp_path_factory: pytest.TempPathFactory,
                                                      texts: list[str], queries: list[str]) -> None:
    archive = ConversationArchive(tmp_path_factory.mktemp("search"), "c")
    messages = [HumanMessage(text, id=f"m{number}") for number, text in enumerate(texts)]
    archive.append(messages[: len(messages) // 2 + 1])
    if len(messages) > len(messages) // 2 + 1:
        archive.append(messages[len(messages) // 2 + 1:])
    for query in queries:
        query_words = [word for word in re.findall(r"[\w.%/-]+", query.lower()) if len(word) > 1]
        expected = [number + 1 for number, message in reversed(list(enumerate(messages)))
                    if query_words and all(word in message_text(message).lower() for word in query_words)][:8]
        assert [hit.seq for hit in archive.search(query)] == expected, query


# --- table previews: the same text, without pandas ---------------------------------------------------

def pandas_preview(lines: list[str], max_columns: int = 6) -> list[str]:
    """What the preview was when it parsed the tool's CSV with pandas (the reference)."""
    try:
        frame = pd.read_csv(io.StringIO("\n".join(lines[1:])))
    except (ValueError, pd.errors.ParserError):
        return []
    numeric = frame.select_dtypes("number")
    if numeric.empty or len(frame) == 0:
        return []
    shown = list(frame.columns[: max_columns + 1])
    more = f",(+{len(frame.columns) - len(shown)} more columns)" if len(frame.columns) > len(shown) else ""
    rows = [",".join(shown) + more]
    for stat in ("mean", "min", "max"):
        rows.append(",".join(f"{getattr(frame[column], stat)():.4g}" if column in numeric else stat for column in shown))
    first_rows = [",".join(str(value) for value in row) for row in frame[shown].head(2).itertuples(index=False)]
    return [lines[0], *rows, *first_rows]


def test_table_previews_of_every_catalog_table_match_pandas(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in make_tools(Workspace.create(tmp_path / "ws", tmp_path / "s", tmp_path / "a"))}
    for info in Catalog().dataframes():
        for arguments in ({}, {"limit": 3}, {"limit": 500}, {"columns": info.columns[-3:], "limit": 40},
                          {"start": info.start, "end": info.start, "limit": 10}):
            result = tools["chartbook_load_data"].invoke({"pipeline": info.pipeline, "dataframe": info.dataframe, **arguments})
            lines = result.splitlines()
            assert lines[0].startswith(f"# {info.pipeline}/{info.dataframe}: "), result[:200]
            assert _table_preview(lines) == pandas_preview(lines), (info.ref, arguments)


CELLS = ["1", "-3", "0", "+5", "007", "1.5", "-0.25", ".5", "5.", "1e5", "1E-3", "inf", "-Infinity", "", "NA", "nan",
         "NULL", "None", "N/A", "True", "false", "x", "a b", " 1", "2 ", "2024-01-02", '"3"', '""', '"a,b"',
         "9223372036854775807", "1_000", "0x10", "1e400", "4.3100000000000005", "0.1", "1e16", "-1e16"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy warns on the mean of an all-NaN column
def test_table_previews_of_odd_tables_match_pandas() -> None:
    rng = random.Random(13)
    for _ in range(400):
        width, height = rng.randint(1, 9), rng.randint(0, 12)
        header = [rng.choice(["date", "a", "a", "", "rate"]) if rng.random() < 0.3 else f"c{i}" for i in range(width)]
        pools = [rng.sample(CELLS, rng.randint(1, 5)) for _ in range(width)]
        body = [",".join(rng.choice(pools[column]) for column in range(width - (rng.random() < 0.05)))
                for _ in range(height)]
        lines = ["# a/b: 1 rows x 1 columns, x to y", ",".join(header), *body]
        assert _table_preview(lines) == pandas_preview(lines), "\n".join(lines)


def test_table_preview_sums_like_numpy_on_long_columns() -> None:
    rng = random.Random(14)
    for height in (7, 8, 127, 129, 300, 9000):
        rows = [f"2024-01-02,{rng.gauss(0, 1) * 1e16!r},{rng.randint(-10**17, 10**17)},{rng.random()!r}" for _ in range(height)]
        lines = ["# a/b: 1 rows x 1 columns, x to y", "date,big,whole,small", *rows]
        assert _table_preview(lines) == pandas_preview(lines)


# --- heavy imports ---------------------------------------------------------------------------------

def test_pandas_pyarrow_and_matplotlib_load_only_when_used(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import flawedcode.agents, flawedcode.cli, flawedcode.bench, flawedcode.demo\n"
        "from flawedcode.context import offload\n"
        "table = '# m/s: 3 rows x 2 columns, 2024-01-01 to 2024-01-03\\ndate,rate\\n' + '2024-01-01,5.31\\n' * 2000\n"
        "stub = offload(table, 'chartbook_load_data', scratch_dir=sys.argv[1]).stub\n"
        "assert 'Preview (table: first rows and summary statistics)' in stub, stub\n"
        "print(sorted(name for name in ('pandas', 'pyarrow', 'matplotlib', 'numpy') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_counting_fresh_tool_schemas_does_not_grow_the_counter(tmp_path: Path) -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from flawedcode.tokens import MAX_CACHED_TOOL_OBJECTS, TokenCounter

    tools = make_tools(Workspace.create(tmp_path / "ws", tmp_path / "s", tmp_path / "a"))
    counter = TokenCounter()
    expected = counter.count_tools(tools)
    for _ in range(200):  # as a model that is handed new schema dicts on every call
        assert counter.count_tools([convert_to_openai_tool(tool) for tool in tools]) == expected
    assert len(counter._tools_by_object) <= MAX_CACHED_TOOL_OBJECTS
