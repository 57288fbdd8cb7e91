"""The context wrappers as plain functions: offload stubs, the archive, summaries, repair."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.config import ContextSize, OffloadConfig, SummarizationConfig
from flawedcode.context import (
    ConversationArchive,
    choose_cutoff,
    make_search_archive_tool,
    maybe_offload,
    maybe_summarize,
    offload,
    repair_tool_calls,
    should_offload,
    should_summarize,
)
from flawedcode.context.repair import INTERRUPTED_RESULT
from flawedcode.context.summarize import GOAL_LINE, is_summary
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import TokenCounter, count_text
from flawedcode.tools import Workspace, make_tools


@pytest.fixture(scope="module")
def tool_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("ws")
    workspace = Workspace.create(base / "ws", base / "scratch", base / "archives")
    tools = {tool.name: tool for tool in make_tools(workspace)}
    return {
        "docs": tools["chartbook_get_docs"].invoke({"pipeline": "yield_curve", "dataframe": "repo_public"}),
        "table": tools["chartbook_load_data"].invoke({"pipeline": "money_markets", "dataframe": "sofr", "limit": 80}),
    }


def summarizer(text: str = "## SESSION INTENT\nkeep going") -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=itertools.repeat(AIMessage(text)))


class FailingModel(GenericFakeChatModel):
    def _generate(self, *args, **kwargs):  # type: ignore[override]
        raise RuntimeError("summary service unavailable")


# --- offload ---------------------------------------------------------------------------

def test_docs_stub_is_small_names_its_file_and_file_is_byte_identical(tool_results: dict[str, str], tmp_path: Path) -> None:
    docs = tool_results["docs"]
    assert len(docs) > 5000
    done = offload(docs, "chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "repo_public"}, scratch_dir=tmp_path)
    assert done.display_path.startswith("scratch/chartbook_get_docs_yield_curve_repo_public_")
    assert done.path.read_bytes() == docs.encode("utf-8")
    assert done.stub_tokens <= 0.15 * done.original_tokens
    assert done.stub.startswith(f"[Offloaded: {done.display_path} | {len(docs):,} characters")
    assert "Columns (44): date, " in done.stub
    assert done.stub.endswith(f"Full result: read_file(path='{done.display_path}')")


def test_table_stub_shows_first_rows_and_statistics(tool_results: dict[str, str], tmp_path: Path) -> None:
    table = tool_results["table"]
    done = offload(table, "chartbook_load_data", {"pipeline": "money_markets", "dataframe": "sofr"}, scratch_dir=tmp_path)
    lines = done.stub.splitlines()
    assert lines[1] == "Preview (table: first rows and summary statistics):"
    assert lines[2] == table.splitlines()[0]
    header = table.splitlines()[1].split(",")
    assert lines[3] == ",".join(header[:7]) + f",(+{len(header) - 7} more columns)"
    assert lines[4].startswith("mean,") and lines[5].startswith("min,") and lines[6].startswith("max,")
    assert done.stub_tokens <= 0.15 * done.original_tokens


def test_exact_stub_text_for_plain_text(tmp_path: Path) -> None:
    text = "\n".join(f"log line {i}: " + "x" * 120 for i in range(60))
    stub = maybe_offload(text, "run_python", scratch_dir=tmp_path)
    name = next(tmp_path.iterdir()).name
    assert stub.splitlines()[0] == f"[Offloaded: scratch/{name} | {len(text):,} characters, 60 lines, {count_text(text):,} tokens]"
    assert stub.splitlines()[1] == "Preview (text: head and tail):"
    assert stub.splitlines()[2] == text.splitlines()[0]
    assert name.startswith("run_python_") and name.endswith(".txt")


def test_offload_thresholds_exemptions_and_overrides(tool_results: dict[str, str]) -> None:
    docs = tool_results["docs"]
    config = OffloadConfig()
    assert should_offload(docs, "chartbook_get_docs", config)
    assert not should_offload(docs, "read_file", config), "read tools are exempt"
    assert not should_offload("short", "chartbook_get_docs", config)
    assert should_offload("y" * 600, "run_python", OffloadConfig(per_tool_chars={"run_python": 500}))
    assert should_offload("1.2345," * 300, "x", OffloadConfig(threshold_chars=None, threshold_tokens=1000))
    assert not should_offload(docs, "chartbook_get_docs", OffloadConfig(enabled=False))
    assert maybe_offload("short", "chartbook_get_docs") == "short"


def test_a_two_megabyte_result_is_offloaded_with_a_bounded_stub(tmp_path: Path) -> None:
    # 2 MB proves the bound as well as 10 MB did: the stub's preview is a fixed number of lines, whatever the size
    big = ("2024-01-02,5.31,5.30,5.33\n" * 84_000)[: 2 * 1024 * 1024]
    done = offload(big, "run_python", scratch_dir=tmp_path)
    assert done.path.stat().st_size == len(big.encode())
    assert done.stub_tokens < 2000


# --- archive ------------------------------------------------------------------------------

def conversation(turns: int) -> list:
    messages: list = []
    for turn in range(turns):
        messages.append(HumanMessage(f"request {turn}", id=f"h{turn}"))
        messages.append(AIMessage("", id=f"a{turn}", tool_calls=[{"name": "chartbook_list", "args": {}, "id": f"c{turn}"}]))
        messages.append(ToolMessage(f"result {turn} sofr average 5.3{turn}", tool_call_id=f"c{turn}", id=f"t{turn}"))
        messages.append(AIMessage(f"answer {turn}", id=f"r{turn}"))
    return messages


def test_archive_is_lossless_append_only_and_searchable(tmp_path: Path) -> None:
    archive = ConversationArchive(tmp_path, "conv-1")
    first, second = conversation(3), conversation(5)[12:]
    part1 = archive.append(first)
    before = part1.jsonl_path.read_bytes()
    part2 = archive.append(second)
    assert part1.jsonl_path.read_bytes() == before, "a part is never rewritten"
    assert (part1.number, part2.number, part2.first_seq) == (1, 2, len(first) + 1)
    assert archive.messages() == first + second
    assert json.loads((tmp_path / "conv-1" / "index.json").read_text())[1]["messages"] == len(second)
    assert "### [1] human" in part1.markdown_path.read_text()
    hits = archive.search("sofr average 5.34")
    assert hits and hits[0].display_path == "archives/conv-1/0002.md" and "5.34" in hits[0].snippet
    tool_text = make_search_archive_tool(archive).invoke({"query": "result 1"})
    assert "archives/conv-1/0001.md" in tool_text


def test_two_writers_never_share_a_part(tmp_path: Path) -> None:
    archives = [ConversationArchive(tmp_path, "shared") for _ in range(2)]
    batches = [conversation(2) for _ in range(8)]
    threads = [threading.Thread(target=archives[i % 2].append, args=(batch,)) for i, batch in enumerate(batches)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    parts = archives[0].parts()
    assert [part.number for part in parts] == list(range(1, 9))
    assert len(archives[0].messages()) == 8 * len(batches[0])


# --- summarize ------------------------------------------------------------------------------

def test_triggers_are_ored() -> None:
    triggers = [ContextSize(type="fraction", value=0.5), ContextSize(type="messages", value=10)]
    assert should_summarize(4096, 2, triggers, 8192)
    assert should_summarize(10, 10, triggers, 8192)
    assert not should_summarize(4095, 9, triggers, 8192)
    assert should_summarize(300, 1, [ContextSize(type="tokens", value=300)], 8192)


@pytest.mark.parametrize("keep", [ContextSize(type="messages", value=3), ContextSize(type="tokens", value=60),
                                  ContextSize(type="fraction", value=0.01)])
def test_cutoff_keeps_tool_calls_with_their_results(keep: ContextSize) -> None:
    messages = conversation(4)
    cutoff = choose_cutoff(messages, keep, TokenCounter(), 8192)
    assert 0 < cutoff < len(messages)
    assert not isinstance(messages[cutoff], ToolMessage)


def test_cutoff_never_drops_the_latest_request() -> None:
    messages = conversation(3) + [HumanMessage("now this", id="last")]
    cutoff = choose_cutoff(messages, ContextSize(type="messages", value=1), TokenCounter(), 8192)
    assert messages[cutoff].id == "last"


def test_goal_survives_two_summaries_verbatim_and_archive_holds_everything(tmp_path: Path) -> None:
    archive = ConversationArchive(tmp_path, "conv")
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=8)], keep=ContextSize(type="messages", value=4))
    goal = "Compare SOFR to EFFR in 2024 <|endoftext|> and  keep   spacing"
    messages = [HumanMessage(goal, id="goal")] + conversation(3)
    outcome = maybe_summarize(messages, summarizer(), archive=archive, config=config)
    assert outcome.summarized
    messages = outcome.messages + conversation(6)[12:]
    second = maybe_summarize(messages, summarizer(), archive=archive, config=config)
    assert second.summarized
    summary = second.messages[0]
    assert is_summary(summary) and summary.content.startswith("[Conversation summary 2 | archive: archives/conv/0002.md]")
    assert f"\n{GOAL_LINE}{goal}\n" in summary.content
    archived = archive.messages()
    everything = [m for m in archived + second.messages if not is_summary(m)]
    assert everything == [HumanMessage(goal, id="goal")] + conversation(6)


def test_blank_or_failed_summary_changes_nothing_and_is_recorded(tmp_path: Path) -> None:
    archive = ConversationArchive(tmp_path, "conv")
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=3)], keep=ContextSize(type="messages", value=2))
    messages = conversation(3)
    log = SessionLog()
    blank = maybe_summarize(messages, summarizer("   "), archive=archive, config=config, log=log)
    failed = maybe_summarize(messages, FailingModel(messages=iter([])), archive=archive, config=config, log=log)
    assert blank.messages == messages and failed.messages == messages
    assert not blank.summarized and not failed.summarized
    assert [event.kind for event in log.events] == ["summary_failed", "summary_failed"]
    assert "summary service unavailable" in log.events[1].detail["error"]
    assert archive.parts() == [], "a failed summary writes nothing to the archive"


def test_failing_summary_model_falls_back_to_the_run_model(tmp_path: Path) -> None:
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=3)], keep=ContextSize(type="messages", value=2))
    outcome = maybe_summarize(conversation(3), FailingModel(messages=iter([])), archive=ConversationArchive(tmp_path, "c"),
                              config=config, fallback_model=summarizer("fallback summary"))
    assert outcome.summarized and outcome.messages[0].content.endswith("fallback summary")


def test_archive_failure_leaves_history_unchanged(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the archive folder should be")
    log = SessionLog()
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=3)], keep=ContextSize(type="messages", value=2))
    messages = conversation(3)
    outcome = maybe_summarize(messages, summarizer(), archive=ConversationArchive(blocker, "c"), config=config, log=log)
    assert outcome.messages == messages and not outcome.summarized
    assert log.events[-1].kind == "archive_failed"


def test_summarizer_input_is_bounded_for_a_two_megabyte_result(tmp_path: Path) -> None:
    # 2 MB is 50 times the bound checked below: the message is cut to its head and tail, whatever its size
    seen: list[int] = []

    class Recorder(GenericFakeChatModel):
        def _generate(self, messages, *args, **kwargs):  # type: ignore[override]
            seen.append(len(messages[0].content))
            return super()._generate(messages, *args, **kwargs)

    huge = conversation(1)
    huge[2] = ToolMessage("z" * (2 * 1024 * 1024), tool_call_id="c0", id="t0")
    messages = huge + conversation(3)[4:]
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=3)], keep=ContextSize(type="messages", value=2))
    outcome = maybe_summarize(messages, Recorder(messages=itertools.repeat(AIMessage("ok"))),
                              archive=ConversationArchive(tmp_path, "c"), config=config)
    assert outcome.summarized and seen and seen[0] < 40_000
    assert ConversationArchive(tmp_path, "c").messages()[2].content == "z" * (2 * 1024 * 1024)


# --- repair ---------------------------------------------------------------------------------

def test_repair_patches_only_unanswered_calls() -> None:
    messages = conversation(1) + [
        AIMessage("", id="x", tool_calls=[{"name": "read_file", "args": {"path": "a"}, "id": "lost"},
                                          {"name": "read_file", "args": {"path": "b"}, "id": "kept"}]),
        ToolMessage("b's text", tool_call_id="kept"),
    ]
    repaired, patched = repair_tool_calls(messages)
    assert patched == ["lost"]
    assert repaired[5].tool_call_id == "lost" and repaired[5].content == INTERRUPTED_RESULT
    assert repaired[6].tool_call_id == "kept" and len(repaired) == len(messages) + 1


def test_trimmed_summarizer_input_pins_the_goal_and_keeps_older_paths_as_digests(tmp_path: Path) -> None:
    from flawedcode.models import OfflineModel

    stub = "[Offloaded: scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt | 5,465 characters]\n" + "preview line\n" * 30
    messages = [HumanMessage("Chart SOFR against EFFR for 2024", id="goal"),
                AIMessage("", id="a", tool_calls=[{"name": "chartbook_get_docs",
                                                   "args": {"pipeline": "yield_curve", "dataframe": "repo_public"}, "id": "c"}]),
                ToolMessage(stub, tool_call_id="c", id="t")] + conversation(6)
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=4)], keep=ContextSize(type="messages", value=2),
                                 trim_tokens_to_summarize=400)
    outcome = maybe_summarize(messages, OfflineModel(), archive=ConversationArchive(tmp_path, "c"), config=config)
    body = outcome.summary_text
    assert "Original goal (verbatim): Chart SOFR against EFFR for 2024" in body, "the goal is pinned in the summarizer's input"
    assert "scratch/chartbook_get_docs_yield_curve_repo_public_e3dfa923.txt" in body, "older paths survive as digests"


def test_a_rolled_back_turn_never_archives_a_message_twice(tmp_path: Path) -> None:
    archive = ConversationArchive(tmp_path, "c")
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=4)], keep=ContextSize(type="messages", value=2))
    messages = conversation(3)
    first = maybe_summarize(messages, summarizer(), archive=archive, config=config)
    again = maybe_summarize(messages, summarizer(), archive=archive, config=config)  # as after a Ctrl-C rollback
    assert first.summarized and again.summarized
    assert archive.messages() == first.removed, "each message is archived once"


def test_an_unreadable_archive_index_is_an_archive_failure_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "c" / "index.json").mkdir(parents=True)  # cannot be read, so parts it may list are never overwritten
    log = SessionLog()
    config = SummarizationConfig(trigger=[ContextSize(type="messages", value=3)], keep=ContextSize(type="messages", value=2))
    outcome = maybe_summarize(conversation(3), summarizer(), archive=ConversationArchive(tmp_path, "c"), config=config, log=log)
    assert not outcome.summarized and outcome.messages == conversation(3)
    assert log.events[-1].kind == "archive_failed"
