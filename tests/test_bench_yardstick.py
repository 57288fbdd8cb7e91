"""One yardstick per task for every agent, answers judged against the full data, replies kept as the user saw them."""

from __future__ import annotations

import pytest

from flawedcode.bench import run
from flawedcode.bench.checks import evaluate, expected_figures
from flawedcode.bench.scoring import cheapest_complete, summarize_runs
from flawedcode.bench.tasks import Check, Figures, Task, builtin_tasks_dir, load_task_file, load_tasks
from flawedcode.bench.yardstick import task_yardstick
from flawedcode.catalog import Catalog

WORKLOAD_B = builtin_tasks_dir() / "workloads" / "workload_b.yaml"
YIELD_1M = Figures(dataframe="yield_curve/treasury_yields", rows=50, columns=["yield_1m"])


def yield_figures() -> dict:
    """The last 50 one-month yields, computed here with pandas (not with the code under test)."""
    frame = Catalog().load("yield_curve", "treasury_yields", ["yield_1m"], limit=50)
    low, high = frame.loc[frame["yield_1m"].idxmin()], frame.loc[frame["yield_1m"].idxmax()]
    day = lambda row: str(row["date"])[:10]  # noqa: E731
    return {"mean": frame["yield_1m"].mean(), "min": low["yield_1m"], "min_date": day(low), "max": high["yield_1m"],
            "max_date": day(high), "latest": frame["yield_1m"].iloc[-1], "first": day(frame.iloc[0]), "last": day(frame.iloc[-1])}


def full_reply(figures: dict, mean_format: str = ".4f") -> str:
    return (f"Loaded 50 rows of yield_curve/treasury_yields, {figures['first']} to {figures['last']}. yield_1m: mean "
            f"{figures['mean']:{mean_format}}, min {figures['min']:.4f} on {figures['min_date']}, max {figures['max']:.4f} "
            f"on {figures['max_date']}, latest {figures['latest']:.4f}.")


def test_a_reply_is_judged_against_the_full_data_not_a_preview() -> None:
    figures, check = yield_figures(), Check(figures=YIELD_1M)
    complete = evaluate(check, full_reply(figures), None)
    assert complete.passed and complete.score == 1.0
    rounded = evaluate(check, full_reply(figures, ".3f"), None)  # a preview's 4-digit statistics: 4.698 is not 4.6984
    assert round(figures["mean"], 3) != round(figures["mean"], 4)
    assert not rounded.passed and rounded.missing == ["yield_1m mean"] and rounded.score == pytest.approx(7 / 8, abs=1e-4)
    no_dates = full_reply(figures).replace(f" on {figures['min_date']}", "").replace(f" on {figures['max_date']}", "")
    assert evaluate(check, no_dates, None).missing == ["yield_1m min date", "yield_1m max date"]
    assert len(expected_figures(YIELD_1M)) == 8  # first and last date; mean, min (and its date), max (and its date), latest


def test_a_figure_of_one_column_never_counts_for_another() -> None:
    both = Figures(dataframe="yield_curve/treasury_yields", rows=50, columns=["yield_1m", "yield_3m"])
    only_1m = full_reply(yield_figures())  # names yield_1m, never yield_3m (whose figures overlap yield_1m's)
    result = evaluate(Check(figures=both), only_1m + " yield_3m: not shown.", None)
    assert not result.passed and all(label.startswith("yield_3m") for label in result.missing)
    assert result.score == pytest.approx(8 / 14, abs=1e-4)


def test_every_load_turn_of_workload_b_and_the_long_session_checks_its_figures() -> None:
    for task in (load_task_file(WORKLOAD_B)[0], load_tasks(["long_session"])[0]):
        loads = [step for step in task.all_steps() if step.say.startswith("Load ") and "report" not in step.say]
        assert loads and all(any(check.figures is not None for check in step.checks) for step in loads), task.name


def test_the_yardstick_is_a_function_of_the_task_alone() -> None:
    task = load_task_file(WORKLOAD_B)[0]
    yardstick = task_yardstick(task)
    assert yardstick is task_yardstick(load_task_file(WORKLOAD_B)[0])  # computed once per task
    assert len(yardstick.steps) == len(task.all_steps()) == 51
    steps = task.all_steps()
    load, docs, probe = (yardstick.steps[steps.index(step)] for step in (steps[2], steps[1], steps[10]))
    assert load > docs > probe  # a load's figures > a docs call's schema > a question answered from the goal
    assert yardstick.reached_tokens(2) == sum(yardstick.steps[:3])


SHORT = Task.model_validate({
    "name": "short_b", "category": "long_session", "goal": "List ChartBook dataframes",
    "steps": [step.model_dump(exclude_none=True) for step in load_task_file(WORKLOAD_B)[0].all_steps()[:3]]
    + [{"say": "What was my original goal?", "probe": "goal"}]})


@pytest.fixture(scope="module")
def short_runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    agents = ["v0", "v1", "v2", "v3", "lc-summarization-tuned", "openhands-condenser"]
    return run(agents, [SHORT], 1, tmp_path_factory.mktemp("short"), progress=False)


def test_every_agent_on_a_task_is_divided_by_the_same_yardstick_and_none_sends_less(short_runs: list[dict]) -> None:
    summary = summarize_runs(short_runs, [record["agent"] for record in short_runs])
    yardsticks = summary["tasks"]["short_b"]["yardstick_tokens"]
    assert len(set(yardsticks.values())) == 1 and None not in yardsticks.values()
    for agent, metrics in summary["agents"].items():
        assert metrics["total_input_tokens"] >= metrics["yardstick_tokens"], agent
        assert metrics["input_vs_limit"] == pytest.approx(metrics["total_input_tokens"] / metrics["yardstick_tokens"], abs=1e-3)


def test_runs_record_each_reply_as_the_user_saw_it(short_runs: list[dict]) -> None:
    for record in short_runs:
        assert len(record["replies"]) == len(SHORT.all_steps()), record["agent"]
        load_check = next(check for check in record["checks"] if check["kind"] == "figures")
        assert evaluate(Check(figures=Figures(**load_check["expected"])), record["replies"][2], None).score == load_check["score"]


def test_the_lead_is_claimed_only_among_agents_that_answer_as_completely_as_v1() -> None:
    task = {"goal_in_context": {"v1": 1.0, "thin": 1.0, "full": 1.0}, "failed_runs": {},
            "total_input_tokens": {"v1": 1000, "thin": 100, "full": 300},
            "cache_weighted_input_tokens": {"v1": 500, "thin": 50, "full": 200},
            "answer_completeness": {"v1": 0.6, "thin": 0.4, "full": 0.6}}
    assert cheapest_complete(task, ["v1", "thin", "full"]) == {"qualifying": ["v1", "full"], "raw": "full", "cached": "full"}
