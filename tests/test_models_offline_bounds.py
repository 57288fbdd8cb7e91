"""No request can hang the offline model: hostile bytes and sizes get a reply that says what it could not use.

A NUL byte once made the clause splitter loop forever (it used NUL as its own placeholder), and a
20,000-character word took seconds (unanchored patterns). Each request here runs in a daemon
thread: a hang fails the test instead of freezing the suite. How long requests take, per doubling
of their length, is printed by tests/benchmarks/bench_offline_requests.py (speed is measured there).
"""

from __future__ import annotations

import re
import threading

import pytest
from langchain_core.messages import HumanMessage
from teaching_harness import offline_model

from flawedcode.models.offline_intents import MAX_CLAUSES, MAX_REQUEST_CHARS, MAX_WORD_CHARS

WINDOW = 200_000
"""Wide enough that each request is read (in the default window the longest ones raise ContextOverflowError)."""
HANG_SECONDS = 60
"""Far above any real request's time: only a loop that never ends reaches it."""


def reply_to(text: str) -> str:
    """The model's reply to one request, or a failure if it does not come back."""
    model = offline_model(WINDOW)
    replies: list[str] = []
    worker = threading.Thread(target=lambda: replies.append(model.invoke([HumanMessage(text)]).text), daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    assert replies, f"no reply to a {len(text):,}-character request within {HANG_SECONDS} s"
    return replies[0]


@pytest.mark.parametrize("text", ["\x00", "average sofr\x00 in 2024", "hi \x00 there `x\x00y`", "\x000\x00 sofr",
                                  "what was my goal?\x00\x00", "read `a\x00` and 'b\x00'"])
def test_a_nul_byte_never_hangs_a_turn(text):
    assert reply_to(text)


def test_a_nul_byte_is_read_as_a_space():
    assert reply_to("average sofr in 2024\x00") == reply_to("average sofr in 2024 ")


@pytest.mark.parametrize("word", ["a" * 20_000, "2024-" * 4_000, "x1" * 10_000, "sofr/" * 4_000])
def test_a_20000_character_word_is_declined_by_its_length(word):
    reply = reply_to(f"average {word} in 2024")
    assert f"{len(word):,}-character word" in reply or f"{len(word) + 16:,} characters" in reply
    assert not re.search(r"\d\.\d", reply)  # no figure: nothing was computed


def test_a_word_just_under_the_limit_is_read_as_a_word():
    reply = reply_to("average " + "z" * (MAX_WORD_CHARS - 1) + " in 2024")
    assert "-character word" not in reply


def test_a_message_longer_than_a_request_is_declined_with_both_lengths():
    text = "what is the average sofr in 2024 " * (MAX_REQUEST_CHARS // 20)
    reply = reply_to(text)
    assert f"{len(text):,} characters" in reply and f"{MAX_REQUEST_CHARS:,}" in reply


def test_a_long_code_block_is_not_counted_as_prose():
    code = "x = 1\n" * (MAX_REQUEST_CHARS // 3)
    assert "characters long" not in reply_to(f"run this:\n```python\n{code}```")


@pytest.mark.parametrize("unit", ["compare a with ", "2024 - ", "in 2024 ", "spread between a and ", "a minus ",
                                  "a vs ", "how far apart were ", "`a` ", "'a' ", "a, load ", "last 3 days "])
def test_repeated_phrases_up_to_the_request_limit_get_a_reply(unit):
    assert reply_to(unit * ((MAX_REQUEST_CHARS - 10) // len(unit)))


def test_a_message_of_many_requests_does_the_first_ones_and_says_so():
    reply = reply_to(", ".join(["list files"] * (MAX_CLAUSES + 5)))
    assert f"I do the first {MAX_CLAUSES}" in reply
