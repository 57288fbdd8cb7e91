"""Before spending money: the cost preview, --yes, no terminal to ask on, and --max-cost.

Driven through the real langchain-openai client against a loopback OpenAI-compatible
server (``openai_imitation.ImitationServer``): nothing leaves the machine.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from openai_imitation import ImitationServer

from flawedcode import cli
from flawedcode.bench import pricing_of

TASKS = """
tasks:
  - name: catalog
    category: chartbook
    steps:
      - say: List ChartBook dataframes
        checks:
          - contains: catalog
"""


class Terminal(io.StringIO):
    """Typed answers, on what looks like a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ImitationServer]:
    with ImitationServer() as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        yield running


@pytest.fixture
def tasks_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(TASKS, encoding="utf-8")
    return path


def bench(capsys, tmp_path: Path, tasks_file: Path, *extra: str, stdin: io.StringIO | None = None,
          monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", stdin or io.StringIO(""))
    code = cli.main(["bench", "--agents", "v1", "--tasks-file", str(tasks_file), "--runs", "2", "--model",
                     "openai:gpt-4o-mini", "--out", str(tmp_path / "out"), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def runs_on_disk(tmp_path: Path) -> list[dict]:
    path = tmp_path / "out" / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_without_a_terminal_and_without_yes_it_previews_and_stops(server, tmp_path, tasks_file, capsys, monkeypatch):
    code, out, err = bench(capsys, tmp_path, tasks_file, monkeypatch=monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "run again with --yes" in err
    assert "Cost preview for openai:gpt-4o-mini: on the offline model the same suite took 2 runs, 4 model calls" in out
    assert "the list prices for gpt-4o-mini in flawedcode/models/profiles.py ($0.15 / $0.6 per million" in out
    assert server.requests == [] and runs_on_disk(tmp_path) == []


def test_a_no_at_the_terminal_sends_nothing(server, tmp_path, tasks_file, capsys, monkeypatch):
    code, out, _ = bench(capsys, tmp_path, tasks_file, stdin=Terminal("n\n"), monkeypatch=monkeypatch)
    assert code == 1 and "Cancelled: nothing was sent to the model." in out
    assert server.requests == []


def test_a_yes_at_the_terminal_runs_it(server, tmp_path, tasks_file, capsys, monkeypatch):
    code, out, _ = bench(capsys, tmp_path, tasks_file, stdin=Terminal("y\n"), monkeypatch=monkeypatch)
    assert code == 0 and "Model: gpt-4o-mini." in out and len(server.requests) == 4


def test_yes_runs_on_the_real_model_and_prices_what_it_sent(server, tmp_path, tasks_file, capsys, monkeypatch):
    code, out, _ = bench(capsys, tmp_path, tasks_file, "--yes", monkeypatch=monkeypatch)
    assert code == 0 and "Counted 2 runs from runs.jsonl (v1 2)." in out
    assert len(server.requests) == 4  # two runs of a tool call and an answer
    (record, _) = runs_on_disk(tmp_path)
    totals = record["totals"]
    expected = pricing_of("openai:gpt-4o-mini").profile.cost(totals["input_tokens"], totals["output_tokens"])
    # the cost is priced on the tokens the server reported (within a few tokens of flawedcode's exact count)
    assert expected > 0 and totals["estimated_cost_usd"] == pytest.approx(expected, rel=0.02)
    assert totals["model_calls"] == 2 and record["model"] == "gpt-4o-mini"


def test_max_cost_stops_cleanly_and_the_same_command_resumes(server, tmp_path, tasks_file, capsys, monkeypatch):
    one_run = pricing_of("openai:gpt-4o-mini").profile.cost(3000, 0)  # less than one run's tokens
    code, out, err = bench(capsys, tmp_path, tasks_file, "--yes", "--max-cost", f"{one_run:.6f}", monkeypatch=monkeypatch)
    assert code == 0 and "stopped: the estimated cost so far" in err and "reached --max-cost" in err
    assert "Counted 1 runs from runs.jsonl (v1 1)." in out
    assert [record["run"] for record in runs_on_disk(tmp_path)] == [1] and len(server.requests) == 2
    code, out, _ = bench(capsys, tmp_path, tasks_file, "--yes", monkeypatch=monkeypatch)
    assert code == 0 and [record["run"] for record in runs_on_disk(tmp_path)] == [1, 2]
    assert len(server.requests) == 4, "only the unfinished run was sent"


def test_a_model_without_a_known_price_gets_no_guessed_estimate() -> None:
    pricing = pricing_of("openai:my-local-llama")
    assert pricing.source == "no known prices: my-local-llama is not listed in flawedcode/models/profiles.py"
    assert pricing.profile.cost(1_000, 1_000) is None


@pytest.mark.parametrize("value", ["0", "-1", "free", "inf"])
def test_max_cost_must_be_an_amount(value, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "--max-cost", value])
    assert exit_.value.code == 2 and "--max-cost" in capsys.readouterr().err
