"""The demo project's asks (tests/corpora/workspace_asks.yaml), each sent alone to the offline model, called directly,
and sessions of follow-ups (tests/corpora/workspace_followups.yaml): the last test run, the last function shown, what
the script prints.

Run as a script for the pass rates: ``python tests/test_models_workspace.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from teaching_harness import Chat, compacted, fast_workspace  # noqa: E402 - the direct-call driver, run_python in this process
from test_models_seen import PYTEST_OUTPUT, Session  # noqa: E402 - the direct-call driver (real tools on a copy of the demo project)

from flawedcode.models import get_model  # noqa: E402

CORPORA = Path(__file__).parent / "corpora"
CASES = yaml.safe_load((CORPORA / "workspace_asks.yaml").read_text(encoding="utf-8"))["cases"]
SESSIONS = yaml.safe_load((CORPORA / "workspace_followups.yaml").read_text(encoding="utf-8"))["sessions"]
FAILING = ("test_volatility_of_prices_that_alternate_up_and_down_by_one_percent", "test_volatility_of_the_sample_data_is_plausible_for_a_stock")


def missing(case: dict, reply: str) -> list[str]:
    """The case's facts the reply lacks, and the words it must not hold that it holds."""
    lower = reply.lower()
    return [fact for fact in case.get("facts", []) if fact.lower() not in lower] + [
        f"not {word}" for word in case.get("not", []) if word.lower() in lower]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_demo_project_ask_is_answered_from_the_project(case: dict, tmp_path: Path) -> None:
    reply = Session(tmp_path).send(case["say"])
    assert not missing(case, reply), reply


def session_lacks(session: dict, folder: Path) -> list[tuple[str, list[str], str]]:
    """Each turn of a session, sent in order: (what was said, what its reply lacks, the reply)."""
    chat, said = Chat(model := get_model("offline"), fast_workspace(folder)), []
    for turn in session["turns"]:
        if turn["say"] == "<digest>":  # the turns so far replaced by v3's digests
            chat.messages = compacted(chat.messages, "<digest>", model)
        else:
            said.append((turn["say"], missing(turn, reply := chat.send(turn["say"])), reply))
    return said


@pytest.mark.parametrize("session", SESSIONS, ids=[session["id"] for session in SESSIONS])
def test_a_follow_up_is_read_against_the_last_run_function_or_output_it_refers_to(session: dict, tmp_path: Path) -> None:
    lacking = [(say, lacks, reply) for say, lacks, reply in session_lacks(session, tmp_path) if lacks]
    assert not lacking, lacking


def test_the_maintainers_session_is_answered_turn_by_turn(tmp_path: Path) -> None:
    chat = Chat(get_model("offline"), fast_workspace(tmp_path))
    replies = [chat.send(say) for say in (
        "what's in this project folder?", "run the test suite", "which ones failed?", "show me annualized_volatility",
        "why is that wrong?", "write notes.md saying: vol bug = stdev taken on prices, should be on daily returns",
        "what annualized vol does the script print right now?", "and roughly what would it print if it used daily returns?",
        "read notes.md back to me")]
    assert all(name in replies[2] for name in FAILING), replies[2]
    assert "daily_returns(prices)" in replies[4] and "statistics.stdev(prices)" in replies[4], replies[4]
    assert "13550.3%" in replies[6], replies[6]
    assert "25.0%" in replies[7], replies[7]
    assert "vol bug = stdev taken on prices" in replies[8]


def test_which_tests_fail_and_why_is_read_back_from_a_run_saved_with_an_empty_preview(tmp_path: Path) -> None:
    # v3 saves the pytest output to scratch/ with an empty preview: this ask was "my rules hit an internal error (ValueError: zip() ...)".
    session = Session(tmp_path, offloaded=("run_python",))
    session.empty_preview = True
    reply = session.send("in the demo project, which tests fail and why?", outputs={"run_python": PYTEST_OUTPUT})
    assert "internal error" not in reply and "2 failed, 2 passed" in reply, reply
    assert all(name in reply for name in FAILING) and "0.05 < analyze.annualized_volatility(prices) < 1.0" in reply, reply


if __name__ == "__main__":
    for session in SESSIONS:
        for say, lacks, reply in session_lacks(session, Path(tempfile.mkdtemp())):
            print(f"{'ok  ' if not lacks else 'FAIL'} {session['id']}: {say}" + (f"\n     lacks {lacks}: {reply[:300]!r}" if lacks else ""))
    passed = 0
    for case in CASES:
        reply = Session(Path(tempfile.mkdtemp())).send(case["say"])
        lacks = missing(case, reply)
        passed += not lacks
        print(f"{'ok  ' if not lacks else 'FAIL'} {case['id']}: {case['say']}" + (f"\n     lacks {lacks}: {reply[:300]!r}" if lacks else ""))
    print(f"{passed} of {len(CASES)} answered")
