"""runs.jsonl is crash-safe: a cut-short last line is dropped and redone, bad lines are reported and skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flawedcode.bench import load_task_file, read_runs, run, score

TASKS = """
tasks:
  - name: sofr_average
    category: multi_step
    steps:
      - say: Load SOFR data and report the average rate
        checks:
          - contains: money_markets/sofr
"""


@pytest.fixture
def tasks(tmp_path: Path):
    path = tmp_path / "tasks.yaml"
    path.write_text(TASKS, encoding="utf-8")
    return load_task_file(path)


@pytest.fixture(scope="module")
def two_v0_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A benchmark folder with two runs of v0, made once for the tests that each spoil a copy of its runs.jsonl."""
    folder = tmp_path_factory.mktemp("two-v0-runs")
    (folder / "tasks.yaml").write_text(TASKS, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:  # the per-test output folders are not set up yet at module scope
        for name in ("SCRATCH", "ARCHIVE", "RESULTS"):
            patch.setenv(f"FLAWEDCODE_{name}_DIR", str(folder / name.lower()))
        run(["v0"], load_task_file(folder / "tasks.yaml"), 2, folder / "out", progress=False)
    return folder / "out"


def lines_of(out: Path) -> list[str]:
    return (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()


def test_a_cut_short_last_line_is_dropped_and_its_run_redone_without_gluing(tmp_path: Path, tasks, capsys) -> None:
    out = tmp_path / "out"
    run(["v0"], tasks, 2, out, progress=False)
    whole = (out / "runs.jsonl").read_bytes()
    second_line_start = whole.index(b"\n") + 1
    (out / "runs.jsonl").write_bytes(whole[: second_line_start + 200])  # the crash hit in the middle of run 2's line
    found = read_runs(out)
    assert [record.run for record in found.records] == [1] and found.partial_last_line
    assert "line 2 was cut short" in found.problems[0]
    redone = run(["v0"], tasks, 2, out, progress=False)
    assert [record["run"] for record in redone] == [2]
    assert [json.loads(line)["run"] for line in lines_of(out)] == [1, 2], "every line parses: nothing glued on"
    assert "line 2 was cut short (an interrupted write); dropped, its run will be redone" in capsys.readouterr().err


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path: Path, tasks) -> None:
    out = tmp_path / "out"
    run(["v0"], tasks, 1, out, progress=False)
    (out / "runs.jsonl").write_bytes((out / "runs.jsonl").read_bytes().rstrip(b"\n"))
    assert run(["v0"], tasks, 2, out, progress=False)[0]["run"] == 2
    assert [json.loads(line)["run"] for line in lines_of(out)] == [1, 2]


@pytest.mark.parametrize("bad", ["null", "{}", "[1]", "not json at all", '{"agent": "v0", "task": "t", "run": "one"}',
                                 '{"agent": "v0", "task": "t", "run": 1, "probes": [1]}', '"text"', "\udcff"])
def test_a_bad_line_is_reported_in_one_line_and_skipped(bad: str, tmp_path: Path, two_v0_runs: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(two_v0_runs, out)
    good = lines_of(out)
    (out / "runs.jsonl").write_bytes((good[0] + "\n" + bad + "\n" + good[1] + "\n").encode("utf-8", "surrogateescape"))
    found = read_runs(out)
    assert [record.run for record in found.records] == [1, 2]
    (problem,) = found.problems
    assert problem.startswith(f"{out / 'runs.jsonl'}: line 2 skipped: ") and "\n" not in problem
    table = score(out, chart=False)
    assert "Counted 2 runs from runs.jsonl (v0 2); 1 line(s) of runs.jsonl skipped (see Notes)." in table
    assert f"- {problem}" in table
    assert json.loads((out / "summary.json").read_text())["lines_skipped"] == 1


def test_the_table_states_how_many_runs_it_counted(tmp_path: Path, tasks) -> None:
    out = tmp_path / "out"
    run(["v0", "v1"], tasks, 3, out, progress=False)
    assert "Counted 6 runs from runs.jsonl (v0 3, v1 3)." in score(out, chart=False)


def test_runs_of_another_suite_are_set_aside_not_resumed(tmp_path: Path, tasks, capsys) -> None:
    out = tmp_path / "out"
    run(["v0"], tasks, 1, out, progress=False)
    assert run(["v0"], tasks, 1, out, progress=False) == [], "the same suite resumes: nothing to do"
    assert run(["v0"], tasks, 2, out, progress=False)[0]["run"] == 2, "more runs of the same suite resume too"
    first = lines_of(out)
    redone = run(["v0"], tasks, 2, out, progress=False, settings={"budget_tokens": 6000})
    assert [record["run"] for record in redone] == [1, 2] and all(r["budget_tokens"] == 6000 for r in redone)
    (aside,) = out.glob("runs.*.jsonl")
    assert aside.read_text(encoding="utf-8").splitlines() == first, "the old runs are kept, not deleted"
    assert "made with other settings; set aside as runs." in capsys.readouterr().err
    changed_task = tasks[0].model_copy(update={"steps": [*tasks[0].steps, tasks[0].steps[0]]})
    assert len(run(["v0"], [changed_task], 1, out, progress=False)) == 1
    assert "other settings, other steps for task sofr_average" in capsys.readouterr().err
