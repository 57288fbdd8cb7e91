"""The demo project's asks (tests/corpora/workspace_asks.yaml), each sent alone to the offline model, called directly.

Run as a script for the pass rate: ``python tests/test_models_workspace.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_models_seen import PYTEST_OUTPUT, Session  # noqa: E402 - the direct-call driver (real tools on a copy of the demo project)

CASES = yaml.safe_load((Path(__file__).parent / "corpora" / "workspace_asks.yaml").read_text(encoding="utf-8"))["cases"]


def missing(case: dict, reply: str) -> list[str]:
    """The case's facts the reply lacks, and the words it must not hold that it holds."""
    lower = reply.lower()
    return [fact for fact in case.get("facts", []) if fact.lower() not in lower] + [
        f"not {word}" for word in case.get("not", []) if word.lower() in lower]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_demo_project_ask_is_answered_from_the_project(case: dict, tmp_path: Path) -> None:
    reply = Session(tmp_path).send(case["say"])
    assert not missing(case, reply), reply


def test_which_tests_fail_and_why_is_read_back_from_a_run_saved_with_an_empty_preview(tmp_path: Path) -> None:
    # v3 saves the pytest output to scratch/ with an empty preview: this ask was "my rules hit an internal error (ValueError: zip() ...)".
    session = Session(tmp_path, offloaded=("run_python",))
    session.empty_preview = True
    reply = session.send("in the demo project, which tests fail and why?", outputs={"run_python": PYTEST_OUTPUT})
    assert "internal error" not in reply and "2 failed, 2 passed" in reply, reply
    assert "0.05 < analyze.annualized_volatility(prices) < 1.0" in reply, reply


if __name__ == "__main__":
    passed = 0
    for case in CASES:
        reply = Session(Path(tempfile.mkdtemp())).send(case["say"])
        lacks = missing(case, reply)
        passed += not lacks
        print(f"{'ok  ' if not lacks else 'FAIL'} {case['id']}: {case['say']}" + (f"\n     lacks {lacks}: {reply[:300]!r}" if lacks else ""))
    print(f"{passed} of {len(CASES)} answered")
