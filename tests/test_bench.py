"""The benchmark: task files, checks, a tiny real run, resumption and scoring from disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flawedcode.bench import (
    CHECK_KINDS,
    Check,
    TaskFileError,
    evaluate,
    load_task_file,
    load_tasks,
    parse_tasks,
    run,
    run_benchmark,
    score,
)
from flawedcode.bench.checks import goal_kept, numbers_in

TINY_TASKS = """
tasks:
  - name: sofr_average
    category: multi_step
    steps:
      - say: Load SOFR data and report the average rate
        checks:
          - contains: money_markets/sofr
          - has_number: {min: 3.0, max: 6.0}
  - name: goal_probe
    category: goal_retention
    facts: ["money_markets/sofr"]
    steps:
      - Get docs for money_markets/sofr
      - say: What was my original goal?
        probe: goal
"""


def write(tmp_path: Path, text: str, name: str = "tasks.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- task files -----------------------------------------------------------------------

def test_builtin_suite_follows_the_course() -> None:
    tasks = load_tasks()
    categories = [task.category for task in tasks]
    assert {category: categories.count(category) for category in set(categories)} == {
        "file_ops": 3, "multi_step": 3, "chartbook": 2, "goal_retention": 2, "long_session": 1}
    long_session = next(task for task in tasks if task.category == "long_session")
    steps = long_session.all_steps()
    assert len(steps) >= 50
    assert sum(step.probe == "goal" for step in steps) >= 5
    assert long_session.facts


def test_task_file_loads_with_defaults(tmp_path: Path) -> None:
    tasks = load_task_file(write(tmp_path, TINY_TASKS))
    assert [task.name for task in tasks] == ["sofr_average", "goal_probe"]
    assert tasks[1].goal_text == "Get docs for money_markets/sofr"  # the goal defaults to the first step
    assert tasks[0].steps[0].checks[1].kind == "has_number"


def test_cycle_expands_with_goal_probes() -> None:
    task = parse_tasks({"name": "t", "category": "long_session", "steps": ["start"],
                        "cycle": {"turns": 20, "steps": ["a", "b"], "goal_probe_every": 10}})[0]
    says = [step.say for step in task.all_steps()]
    assert len(says) == 21
    assert says[10] == says[20] == "What was my original goal?"
    assert says[1:4] == ["a", "b", "a"]


@pytest.mark.parametrize(("snippet", "message"), [
    ("checks: [{contain: x}]",
     "tasks.yaml: task 'broken', steps[0].checks[0]: unknown check 'contain'; "
     "expected one of contains, regex, has_number, file_exists, not_contains"),
    ("checks: [{regex: '(unclosed'}]", "task 'broken', steps[0].checks[0].regex: not a valid regular expression"),
    ("checks: [{contains: a, regex: b}]", "task 'broken', steps[0].checks[0]: a check has exactly one kind"),
    ("chekcs: []", "task 'broken', steps[0].chekcs: unknown field"),
])
def test_malformed_step_names_task_and_field(tmp_path: Path, snippet: str, message: str) -> None:
    text = f"tasks:\n  - name: broken\n    category: multi_step\n    steps:\n      - say: hi\n        {snippet}\n"
    with pytest.raises(TaskFileError) as error:
        load_task_file(write(tmp_path, text))
    assert message in str(error.value)


def test_malformed_task_level_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r"task 'x', category: required field is missing"):
        load_task_file(write(tmp_path, "tasks:\n  - {name: x, steps: [hi]}\n"))
    with pytest.raises(TaskFileError, match=r"task #1, name: required field is missing"):
        load_task_file(write(tmp_path, "tasks:\n  - {category: file_ops, steps: [hi]}\n"))
    with pytest.raises(TaskFileError, match=r"not valid YAML at line"):
        load_task_file(write(tmp_path, "tasks: [\n"))
    with pytest.raises(TaskFileError, match=r"task 'a', name: used by more than one task"):
        load_task_file(write(tmp_path, "tasks:\n  - {name: a, category: file_ops, steps: [x]}\n"
                                       "  - {name: a, category: file_ops, steps: [y]}\n"))


# --- checks -----------------------------------------------------------------------------

REPLY = "Loaded 100 rows of money_markets/sofr, 2024-08-07 to 2024-12-31. rate: mean 4.8944, volume 1,250"


@pytest.mark.parametrize(("check", "passed"), [
    ({"contains": "MONEY_MARKETS/SOFR"}, True),
    ({"contains": "effr"}, False),
    ({"not_contains": "effr"}, True),
    ({"not_contains": "sofr"}, False),
    ({"regex": r"mean \d+\.\d{4}"}, True),
    ({"regex": r"median \d"}, False),
    ({"has_number": True}, True),
    ({"has_number": {"min": 4.0, "max": 6.0}}, True),
    ({"has_number": {"min": 5.0, "max": 6.0}}, False),
    ({"has_number": {"min": 1000}}, True),  # 1,250 counts as one number
])
def test_text_checks(check: dict, passed: bool) -> None:
    assert evaluate(Check.model_validate(check), REPLY, None).passed is passed


def test_every_kind_is_covered() -> None:
    assert set(CHECK_KINDS) == {"contains", "regex", "has_number", "file_exists", "not_contains", "figures"}


def test_numbers_ignore_dates() -> None:
    assert numbers_in("from 2024-08-07 to 2024-12-31") == []
    assert numbers_in("no numbers here") == []
    assert not evaluate(Check(has_number=True), "Loaded SOFR from 2024-08-07", None).passed


def test_file_exists_looks_in_the_workspace_only(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert evaluate(Check(file_exists="notes.txt"), "", tmp_path).passed
    assert not evaluate(Check(file_exists="missing.txt"), "", tmp_path).passed
    assert not evaluate(Check(file_exists="../" + tmp_path.name + "/notes.txt/.."), "", tmp_path / "sub").passed


def test_goal_probe_ignores_case_and_spacing() -> None:
    assert goal_kept('Your original goal was: "List  ChartBook\ndataframes"', "list chartbook dataframes")
    assert not goal_kept("I don't know: the start of our conversation is no longer in my context window.",
                         "List ChartBook dataframes")


# --- running and scoring ------------------------------------------------------------------

REQUIRED_AGENT_KEYS = {"success_rate", "goal_retention", "tokens_per_success", "peak_context_tokens",
                       "total_input_tokens", "total_output_tokens", "fact_retention", "summaries", "offloads"}


def test_tiny_run_writes_runs_summary_and_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    table = run_benchmark(["v0", "v1"], tasks_file=write(tmp_path, TINY_TASKS), runs=1, out_dir=out)
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {(line["agent"], line["task"], line["run"]) for line in lines} == {
        ("v0", "sofr_average", 1), ("v0", "goal_probe", 1), ("v1", "sofr_average", 1), ("v1", "goal_probe", 1)}
    record = next(line for line in lines if line["agent"] == "v1" and line["task"] == "goal_probe")
    assert record["success"] and record["probes"][0]["answered"] and record["probes"][0]["in_context"]
    assert record["facts"] == [{"fact": "money_markets/sofr", "in_context": True, "in_archive": False}]
    assert record["totals"]["input_tokens"] > 0
    transcript = json.loads((out / record["transcript"]).read_text())
    assert transcript["messages"][0]["data"]["content"] == "Get docs for money_markets/sofr"
    assert transcript["log"]["calls"]

    summary = json.loads((out / "summary.json").read_text())
    for agent in ("v0", "v1"):
        assert REQUIRED_AGENT_KEYS <= set(summary["agents"][agent])
    assert summary["agents"]["v0"]["goal_retention"] == 0.0  # v0 starts every turn fresh
    assert summary["agents"]["v1"]["goal_retention"] == 1.0
    assert summary["agents"]["v1"]["per_task"] == {"sofr_average": 1.0, "goal_probe": 1.0}
    assert (out / "results.md").read_text() == table
    assert "| v1 | 1.00 | 1.00 |" in table  # v1 divided by itself, raw and with caching
    assert "| 100% | - | - |" in table.split("| v1 |")[1].splitlines()[0]  # goal in context; no fact probes
    v1 = summary["agents"]["v1"]
    assert v1["cache_weighted_input_tokens"] < v1["total_input_tokens"] and 0 < v1["cacheable_share"] < 1
    assert v1["total_input_tokens"] / v1["yardstick_tokens"] == pytest.approx(v1["input_vs_limit"], abs=1e-3)
    assert v1["total_input_tokens"] / v1["oracle_input_tokens"] == pytest.approx(v1["input_vs_own_floor"], abs=1e-3)
    assert set(summary["tasks"]["goal_probe"]["oracle_input_tokens"]) == {"v0", "v1"}
    assert [line["replies"] for line in lines if line["task"] == "goal_probe"][1][-1] == record["replies"][-1]
    assert "Counted 4 runs from runs.jsonl (v0 2, v1 2)." in table


def test_resumption_skips_finished_runs(tmp_path: Path) -> None:
    out, tasks = tmp_path / "out", load_task_file(write(tmp_path, TINY_TASKS))[:1]
    assert len(run(["v0"], tasks, 2, out, progress=False)) == 2
    assert run(["v0"], tasks, 2, out, progress=False) == []
    assert [record["run"] for record in run(["v0"], tasks, 3, out, progress=False)] == [3]
    assert len((out / "runs.jsonl").read_text().splitlines()) == 3


def test_errored_runs_are_retried(tmp_path: Path) -> None:
    out, tasks = tmp_path / "out", load_task_file(write(tmp_path, TINY_TASKS))[:1]
    out.mkdir()
    failed = {"agent": "v0", "task": "sofr_average", "run": 1, "success": False, "error": "boom", "totals": {}}
    (out / "runs.jsonl").write_text(json.dumps(failed) + "\n")
    assert [record["run"] for record in run(["v0"], tasks, 1, out, progress=False)] == [1]


def handmade_record(agent: str, task: str, run: int, success: bool, input_tokens: int, output_tokens: int,
                    peak: int, probes: list[bool], facts: list[tuple[bool, bool]], summaries: int = 0) -> dict:
    return {
        "agent": agent, "task": task, "category": "goal_retention", "run": run, "model": "offline",
        "success": success, "checks": [],
        "probes": [{"step": i, "kind": "goal", "text": "g", "in_context": kept, "recoverable": kept, "answered": kept}
                   for i, kept in enumerate(probes)]
        + [{"step": 9, "kind": "fact", "text": f"f{i}", "in_context": c, "recoverable": c or a, "answered": c}
           for i, (c, a) in enumerate(facts)],
        "facts": [{"fact": f"f{i}", "in_context": c, "in_archive": a} for i, (c, a) in enumerate(facts)],
        "totals": {"input_tokens": input_tokens, "output_tokens": output_tokens, "peak_context_tokens": peak,
                   "summaries": summaries, "offloads": 1, "summary_calls": summaries, "calls_over_budget": 0,
                   "model_calls": 4 + summaries, "summary_input_tokens": 80 * summaries, "estimated_cost_usd": 0.5},
        "summary_tokens": 100 * summaries, "turns": 4, "wrapper_seconds": 0.004, "error": None,
    }


def test_a_chart_the_disk_refuses_loses_no_figure_and_is_one_warning(tmp_path: Path, capsys) -> None:
    records = [handmade_record("v2", "a", 1, True, 900, 100, 5000, [True], [(True, True)])]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))

    def full_disk(summary: dict, path: Path) -> None:
        raise OSError(28, "No space left on device")

    table = score(tmp_path, chart=full_disk)
    assert "v2" in table and (tmp_path / "results.md").read_text() == table
    assert "chart" not in json.loads((tmp_path / "summary.json").read_text())
    err = capsys.readouterr().err
    assert "could not save" in err and "No space left on device" in err and "Traceback" not in err


def test_score_from_handmade_runs(tmp_path: Path) -> None:
    records = [
        handmade_record("v2", "a", 1, True, 900, 100, 5000, [True, True], [(True, True)], summaries=2),
        handmade_record("v2", "a", 2, False, 1900, 100, 7000, [True, False], [(False, True)]),
        handmade_record("v2", "b", 1, True, 400, 0, 3000, [], []),
        handmade_record("v1", "a", 1, False, 5000, 0, 9000, [False], [(False, False)]),
    ]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    score(tmp_path, chart=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    v2 = summary["agents"]["v2"]
    assert v2["success_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert v2["per_task"] == {"a": 0.5, "b": 1.0}
    assert v2["success_by_category"] == {"goal_retention": pytest.approx(2 / 3, abs=1e-4)}
    assert v2["goal_retention"] == v2["goal_in_context"] == 0.75
    assert v2["fact_in_context"] == 0.5 and v2["fact_recoverable"] == 1.0
    assert v2["fact_retention"] == 0.5 and v2["fact_retention_with_archive"] == 1.0
    assert v2["tokens_per_success"] == (900 + 100 + 1900 + 100 + 400) // 2
    assert v2["peak_context_tokens"] == 7000
    assert v2["total_input_tokens"] == 3200 and v2["total_output_tokens"] == 200
    assert v2["summary_input_tokens"] == 160 and v2["summary_calls"] == 2 and v2["model_calls"] == 14
    assert v2["summaries"] == 2 and v2["offloads"] == 3
    assert v2["summary_token_share"] == pytest.approx(200 / 3400, abs=1e-4)
    assert v2["estimated_cost_usd"] == 1.5
    assert summary["timings"]["v2"]["wrapper_ms_per_turn"] == 1.0
    v1 = summary["agents"]["v1"]
    assert v1["success_rate"] == 0.0 and v1["tokens_per_success"] is None
    table = (tmp_path / "results.md").read_text()
    assert "| v1 | 1.00 | - | - | 5,000 | - | - | - | - | 0% | 0% | 0% | 9,000 | 0 |" in table  # no cache figures recorded: "-"
    assert "Counted 4 runs from runs.jsonl (v2 3, v1 1)." in table


def test_unknown_agent_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown agent 'v9'; choose from v0, v1, v2, v3, lc-summarization"):
        run(["v9"], load_task_file(write(tmp_path, TINY_TASKS)), 1, tmp_path / "out", progress=False)


def test_deepagents_is_skipped_with_a_note_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "deepagents", None)  # as if it were not installed
    table = run_benchmark(["v0", "deepagents"], tasks_file=write(tmp_path, TINY_TASKS), runs=1, out_dir=tmp_path / "o")
    assert "| deepagents | skipped: deepagents is not installed" in table


def test_deepagents_runs_on_the_same_model_and_tools_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("deepagents", reason="the optional 'peers' extra is not installed")
    run_benchmark(["deepagents"], tasks_file=write(tmp_path, TINY_TASKS), runs=1, out_dir=tmp_path / "o")
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    deep = summary["agents"]["deepagents"]
    assert deep["total_input_tokens"] > 0 and deep["per_task"]["sofr_average"] == 1.0


def test_readme_table_is_regenerated_between_its_markers(tmp_path: Path) -> None:
    from flawedcode.bench.readme import TABLE_END, TABLE_START, main
    from flawedcode.paths import PROJECT_ROOT

    readme_text = (PROJECT_ROOT / "docs" / "benchmark.md").read_text(encoding="utf-8")  # README links to it
    assert readme_text.index(TABLE_START) < readme_text.index(TABLE_END), "make bench-readme needs both markers"
    out = tmp_path / "out"
    run_benchmark(["v0", "v1"], tasks_file=write(tmp_path, TINY_TASKS), runs=1, out_dir=out, progress=False)
    readme = write(tmp_path, f"# Title\n\n{TABLE_START}\nold table\n{TABLE_END}\n\nafter\n", "README.md")
    assert main([str(out), str(readme)]) == 0
    text = readme.read_text()
    assert "old table" not in text and text.endswith(f"{TABLE_END}\n\nafter\n")
    v1_row = next(line for line in text.splitlines() if line.startswith("| v1 |"))
    assert v1_row.startswith("| v1 | 1.00 | 1.00 |") and "| 100% |" in v1_row  # ratios first, then goal in context
    assert "÷ v1 with caching" in text and "÷ yardstick" in text and "Columns marked * depend on the model" in text
    assert main([str(out), str(write(tmp_path, "no markers\n", "OTHER.md"))]) == 2


def test_the_per_task_lead_divides_v2_by_the_cheapest_goal_keeping_peer_never_by_v1_or_v3() -> None:
    from flawedcode.bench.scoring import task_lead

    task = {"goal_in_context": {"v1": 0.0, "v2": 1.0, "v3": 1.0, "peer-a": 1.0, "peer-b": 0.5, "peer-c": 1.0},
            "failed_runs": {"peer-c": 1},
            "total_input_tokens": {"v1": 900, "v2": 100, "v3": 50, "peer-a": 200, "peer-b": 80, "peer-c": 60},
            "cache_weighted_input_tokens": {"v1": 300, "v2": 60, "v3": 20, "peer-a": 40, "peer-b": 30, "peer-c": 10}}
    lead = task_lead(task, list(task["total_input_tokens"]))
    assert lead == {"peer": "peer-a", "raw": 0.5, "cached_peer": "peer-a", "cached": 1.5, "v2_keeps_goal": True}
