"""Token counting: exact, offline, and cached per message.

Every test here runs with sockets blocked (tests/conftest.py), so any attempt by
tiktoken to download an encoding fails the test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pytest_socket import SocketConnectBlockedError

import flawedcode.tokens as tokens
from flawedcode.tokens import (
    BUNDLED_ENCODINGS,
    BundledEncodingError,
    TokenCounter,
    count_text,
    encoding_name_for_model,
    ensure_tiktoken_cache,
    get_encoding,
)

BOTH_ENCODINGS = ["o200k_base", "cl100k_base"]

SAMPLE_TEXTS = [
    "hello world",
    "The 10-year Treasury yield closed at 4.57% on 2024-12-31.",
    "date,sofr,volume_bn\n2024-12-30,4.49,2236\n2024-12-31,4.49,2149\n",
    "def mean(xs):\n    return sum(xs) / len(xs)  # bug: empty list\n",
    "Ünïcödé, emoji 🚀 and 中文 mixed in.",
    "a <|endoftext|> b",
]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------- offline encodings


@pytest.fixture(autouse=True, scope="module")
def _seeded_cache() -> None:
    """Tests here compare with plain tiktoken and langchain-openai, which read the seeded cache: seed it first,
    as a user who calls them directly does (importing flawedcode no longer does it)."""
    ensure_tiktoken_cache()


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_sockets_are_blocked_and_cache_holds_the_seeded_files() -> None:
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection(("93.184.216.34", 443), timeout=1)

    cache_dir = ensure_tiktoken_cache()
    assert cache_dir == Path(os.environ["TIKTOKEN_CACHE_DIR"])
    for bundled in BUNDLED_ENCODINGS:
        seeded = cache_dir / hashlib.sha1(bundled.url.encode()).hexdigest()
        assert seeded.is_file(), f"{bundled.name} not seeded in {cache_dir}"
        assert sha256_of(seeded) == bundled.sha256

    assert count_text("hello world", "o200k_base") == 2
    assert count_text("hello world", "cl100k_base") == 2


def test_bundled_files_are_the_ones_tiktoken_expects() -> None:
    import tiktoken_ext.openai_public as openai_public

    source = Path(openai_public.__file__).read_text()
    for bundled in BUNDLED_ENCODINGS:
        assert bundled.url in source
        assert bundled.sha256 in source
        assert sha256_of(bundled.bundled_path) == bundled.sha256


def test_plain_tiktoken_loads_from_a_freshly_seeded_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # force tiktoken to read its cache again

    seeded_dir = ensure_tiktoken_cache()

    assert seeded_dir == tmp_path / "fresh-cache"
    assert sorted(p.name for p in seeded_dir.iterdir()) == sorted(b.cache_file_name for b in BUNDLED_ENCODINGS)
    assert tiktoken.get_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert tiktoken.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


def test_a_corrupt_cached_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    o200k = next(b for b in BUNDLED_ENCODINGS if b.name == "o200k_base")
    (tmp_path / o200k.cache_file_name).write_bytes(b"truncated download")

    ensure_tiktoken_cache()

    assert sha256_of(tmp_path / o200k.cache_file_name) == o200k.sha256


def test_a_corrupt_bundled_file_raises_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled_dir = tmp_path / "encodings"
    bundled_dir.mkdir()
    for bundled in BUNDLED_ENCODINGS:
        shutil.copy(bundled.bundled_path, bundled_dir / bundled.bundled_path.name)
    corrupt = bundled_dir / "o200k_base.tiktoken"
    corrupt.write_bytes(corrupt.read_bytes()[:-10])
    monkeypatch.setattr(tokens, "ENCODINGS_DIR", bundled_dir)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))

    with pytest.raises(BundledEncodingError, match=r"corrupt: .*o200k_base\.tiktoken"):
        ensure_tiktoken_cache()


def _run_offline_python(code: str, env_overrides: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter whose sockets refuse to connect."""
    preamble = textwrap.dedent(
        """
        import socket
        def _refuse(*args, **kwargs):
            raise OSError("network blocked in this test")
        socket.socket.connect = _refuse
        socket.create_connection = _refuse
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", preamble + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_changes_nothing_and_the_first_count_seeds_the_cache(tmp_path: Path) -> None:
    result = _run_offline_python(
        """
        import os
        from pathlib import Path
        import flawedcode.tokens
        print("TIKTOKEN_CACHE_DIR" in os.environ, Path(os.environ["HOME"], ".cache").exists())
        print(flawedcode.tokens.count_text("hello world"))
        import tiktoken
        from langchain_core.messages import HumanMessage
        from langchain_openai import ChatOpenAI
        print(os.environ["TIKTOKEN_CACHE_DIR"])
        print(tiktoken.get_encoding("o200k_base").encode("hello world"))
        print(ChatOpenAI(model="gpt-4o-mini", api_key="x").get_num_tokens_from_messages([HumanMessage("hello world")]))
        """,
        {"HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    after_import, count, cache_dir, ids, langchain_count = result.stdout.splitlines()
    assert after_import == "False False", "importing flawedcode.tokens set no variable and wrote no file"
    assert count == "2"
    assert Path(cache_dir) == tmp_path / ".cache" / "flawedcode" / "tiktoken"
    assert len(list(Path(cache_dir).iterdir())) == 2
    assert ids == "[24912, 2375]"
    assert langchain_count == "9"  # 3 framing + "user" + "hello world" + 3 reply priming


def test_unwritable_home_falls_back_to_a_temporary_cache_dir(tmp_path: Path) -> None:
    home_that_is_a_file = tmp_path / "not-a-folder"
    home_that_is_a_file.write_text("")
    result = _run_offline_python(
        """
        import os
        import flawedcode.tokens
        count = flawedcode.tokens.count_text("hello world")
        print(os.environ["TIKTOKEN_CACHE_DIR"])
        print(count)
        """,
        {"HOME": str(home_that_is_a_file)},
    )
    assert result.returncode == 0, result.stderr
    cache_dir, count = result.stdout.splitlines()
    assert not cache_dir.startswith(str(home_that_is_a_file))
    assert "flawedcode-tiktoken" in cache_dir
    assert count == "2"


# ----------------------------------------------------------------- counting text


@pytest.mark.parametrize("encoding", BOTH_ENCODINGS)
@pytest.mark.parametrize("text", SAMPLE_TEXTS)
def test_count_text_matches_tiktoken_reference(encoding: str, text: str) -> None:
    reference_ids = tiktoken.get_encoding(encoding).encode(text, disallowed_special=())
    assert count_text(text, encoding) == len(reference_ids)


@pytest.mark.parametrize(
    ("encoding", "text", "expected_ids"),
    [
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "hello world", [15339, 1917]),
        ("o200k_base", "a <|endoftext|> b", [64, 464, 91, 419, 1440, 919, 91, 29, 287]),
        ("cl100k_base", "a <|endoftext|> b", [64, 83739, 8862, 728, 428, 91, 29, 293]),
    ],
)
def test_known_token_ids(encoding: str, text: str, expected_ids: list[int]) -> None:
    assert get_encoding(encoding).encode_ordinary(text) == expected_ids
    assert count_text(text, encoding) == len(expected_ids)


def test_endoftext_in_user_text_is_counted_as_text_not_rejected() -> None:
    text = "please explain what <|endoftext|> means"
    with pytest.raises(ValueError):
        tiktoken.get_encoding("o200k_base").encode(text)  # tiktoken's default refuses it
    assert count_text(text) > count_text("please explain what  means") + 1


def test_get_encoding_is_cached() -> None:
    assert get_encoding("o200k_base") is get_encoding("o200k_base")
    assert get_encoding().name == "o200k_base"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai:gpt-4o-mini", "o200k_base"),
        ("offline", "o200k_base"),
        ("offline:4000", "o200k_base"),
        ("some-local-llama", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("openai:gpt-3.5-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("ft:gpt-3.5-turbo:acme::abc123", "cl100k_base"),
    ],
)
def test_encoding_name_for_model(model: str, expected: str) -> None:
    assert encoding_name_for_model(model) == expected


# ----------------------------------------------------------------- messages and caching


def tool_heavy_history() -> list:
    return [
        HumanMessage("Load the last 5 SOFR rows and tell me the mean.", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "chartbook_load_data", "args": {"pipeline": "money_markets", "dataframe": "sofr", "limit": 5}, "id": "call_1"}],
        ),
        ToolMessage("date,sofr\n2024-12-24,4.31\n2024-12-26,4.31\n2024-12-27,4.32\n", tool_call_id="call_1", id="t1"),
        AIMessage("The mean SOFR over those rows is 4.31%.", id="a2"),
    ]


def test_count_message_follows_the_cookbook_format() -> None:
    counter = TokenCounter("o200k_base")
    user, call, result, answer = tool_heavy_history()

    assert counter.count_message(HumanMessage("hello world")) == 3 + 1 + 2  # framing + "user" + text
    assert counter.count_message(user) == 3 + count_text("user") + count_text(user.content)
    call_json = json.dumps({"name": "chartbook_load_data", "arguments": json.dumps(call.tool_calls[0]["args"])})
    assert counter.count_message(call) == 3 + count_text("assistant") + count_text(call_json)
    assert counter.count_message(result) == 3 + count_text("tool") + count_text(result.content) + count_text("call_1")
    named = HumanMessage("hello world", name="alice")
    assert counter.count_message(named) == 6 + 1 + count_text("alice")


def test_list_content_counts_its_text_parts_joined() -> None:
    counter = TokenCounter()
    as_blocks = HumanMessage(
        [
            {"type": "text", "text": "Describe the yield "},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "curve on this chart."},
        ]
    )
    assert counter.count_message(as_blocks) == counter.count_message(
        HumanMessage("Describe the yield curve on this chart.")
    )


def test_count_messages_matches_langchain_openai_offline() -> None:
    from langchain_openai import ChatOpenAI

    messages = [
        SystemMessage("You are a careful financial data analyst."),
        HumanMessage("What was the 10-year yield at the end of 2024? Answer briefly."),
        AIMessage("It closed at 4.57% on 2024-12-31."),
    ]
    for model in ("gpt-4o-mini", "gpt-4"):
        expected = ChatOpenAI(model=model, api_key="x").get_num_tokens_from_messages(messages)
        assert TokenCounter(encoding_name_for_model(model)).count_messages(messages) == expected


def test_second_count_of_the_same_history_is_all_cache_hits() -> None:
    counter = TokenCounter()
    history = tool_heavy_history()

    first = counter.count_messages(history)
    after_first = counter.cache_info()
    second = counter.count_messages(history)
    after_second = counter.cache_info()

    assert first == second
    assert (after_first.hits, after_first.misses) == (0, len(history))
    assert after_second.hits - after_first.hits == len(history)
    assert after_second.misses == after_first.misses


def test_changed_content_is_recounted() -> None:
    counter = TokenCounter()
    history = tool_heavy_history()
    before = counter.count_messages(history)

    edited = history[:-1] + [AIMessage("The mean SOFR over those five rows is 4.314%, slightly up.", id="a2")]
    after = counter.count_messages(edited)

    info = counter.cache_info()
    assert info.misses == len(history) + 1
    assert after - before == count_text(edited[-1].content) - count_text(history[-1].content)


def test_changed_tool_call_arguments_are_recounted() -> None:
    counter = TokenCounter()
    _, call, _, _ = tool_heavy_history()
    original = counter.count_message(call)
    bigger = call.model_copy(
        update={"tool_calls": [{**call.tool_calls[0], "args": {**call.tool_calls[0]["args"], "columns": ["date", "sofr", "volume_bn"]}}]}
    )
    assert counter.count_message(bigger) > original
    assert counter.cache_info().misses == 2


def test_id_less_tool_results_with_different_call_ids_do_not_share_an_entry() -> None:
    counter = TokenCounter()
    short = ToolMessage("ok", tool_call_id="c1")
    long = ToolMessage("ok", tool_call_id="call_0123456789abcdefghijklmnopqrstuvwxyz")
    assert counter.count_message(long) > counter.count_message(short)


def test_cache_is_bounded() -> None:
    counter = TokenCounter(max_cached_messages=2)
    counter.count_messages(tool_heavy_history())
    assert counter.cache_info().size == 2


def test_count_request_is_system_plus_tools_plus_messages() -> None:
    @tool
    def chartbook_get_docs(pipeline: str, dataframe: str) -> str:
        """Return the Markdown documentation of one ChartBook dataframe.

        Args:
            pipeline: pipeline id, e.g. yield_curve
            dataframe: dataframe id, e.g. repo_public
        """
        return ""

    counter = TokenCounter()
    system_prompt = "You are FlawedCode, a coding and data agent."
    history = tool_heavy_history()

    tool_tokens = counter.count_tools([chartbook_get_docs])
    assert tool_tokens == count_text(json.dumps(convert_to_openai_tool(chartbook_get_docs), ensure_ascii=False, separators=(",", ":")))
    assert counter.count_system(system_prompt) == counter.count_message(SystemMessage(system_prompt))
    assert counter.count_system(None) == 0
    assert counter.count_tools(None) == 0

    total = counter.count_request(system_prompt, [chartbook_get_docs], history)
    assert total == counter.count_system(system_prompt) + tool_tokens + counter.count_messages(history)
    assert total > counter.count_messages(history) + tool_tokens
