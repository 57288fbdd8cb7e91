"""Context-management figures for v1 vs v2 on a 50-turn tool-heavy session (issue #4).

Prints, for the offline teaching model on an 8,192-token budget:
- total input tokens of v1 (unbounded, on a window big enough to hold it all) and v2, and their ratio;
- v2's peak context, its trigger line, and the largest amount any call went over the
  trigger, next to the largest single turn's content (the bound is trigger + one turn);
- the wrappers' own time per turn (offload, summarize decisions, counting), median of
  turns 3-7 vs turns 46-50 over several repeats, and their ratio (flat means ~1.0).

Run: ``.venv/bin/python tests/benchmarks/bench_context.py [--repeats 3]``. Not a test: the
machine is shared and noisy, so compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from flawedcode.agents import make_agent
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace

FRAMES = [("yield_curve", "repo_public"), ("money_markets", "sofr"), ("yield_curve", "treasury_yields"),
          ("money_markets", "effr"), ("yield_curve", "fed_yield_curve")]
BUDGET = 8192


def session_steps(turns: int = 50) -> list[str]:
    """The lesson's first request, then docs and loads cycling over five dataframes, a goal probe every 10 turns."""
    steps = ["List ChartBook dataframes"]
    for turn in range(1, turns):
        pipeline, dataframe = FRAMES[turn % len(FRAMES)]
        if turn % 10 == 0:
            steps.append("What was my original goal?")
        elif turn % 2:
            steps.append(f"Get docs for {pipeline}/{dataframe}")
        else:
            steps.append(f"Load 50 rows of {dataframe} data")
    return steps


def run(version: str, steps: list[str], window: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{version}-"))
    workspace = Workspace.create(folder / "ws", folder / "scratch", folder / "archives")
    agent = make_agent(version, model=OfflineModel(max_input_tokens=window), workspace=workspace)
    wrapper_per_turn, turn_growth = [], []
    goals_kept = []
    for step in steps:
        before_seconds = agent.log.wrapper_seconds
        calls_before = len(agent.token_log)
        reply = agent.send(step)
        wrapper_per_turn.append(agent.log.wrapper_seconds - before_seconds)
        turn_calls = agent.token_log[calls_before:]
        turn_growth.append(max(call.input_tokens for call in turn_calls) - turn_calls[0].input_tokens if turn_calls else 0)
        if "original goal" in step:
            goals_kept.append(steps[0] in reply)
    return {"agent": agent, "wrapper_per_turn": wrapper_per_turn, "turn_growth": turn_growth, "goals_kept": goals_kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--turns", type=int, default=50)
    options = parser.parse_args()
    steps = session_steps(options.turns)

    started = time.perf_counter()
    v1 = run("v1", steps, window=1_000_000)
    v2_runs = [run("v2", steps, window=BUDGET) for _ in range(options.repeats)]
    seconds = time.perf_counter() - started
    v2 = v2_runs[0]
    v1_totals, v2_totals = v1["agent"].log.totals(), v2["agent"].log.totals()
    trigger = v2["agent"].log.trigger_tokens
    over_trigger = max(call.input_tokens - trigger for call in v2["agent"].token_log)
    biggest_turn = max(v2["turn_growth"])

    def median_ms(turns: slice) -> float:
        return statistics.median(value for run_ in v2_runs for value in run_["wrapper_per_turn"][turns]) * 1000

    early, late = median_ms(slice(2, 7)), median_ms(slice(options.turns - 5, options.turns))
    rows = [
        ("turns", f"{len(steps)}", f"{len(steps)}"),
        ("model calls", f"{v1_totals['model_calls']}", f"{v2_totals['model_calls']}"),
        ("total input tokens (incl. summary calls)", f"{v1_totals['input_tokens']:,}", f"{v2_totals['input_tokens']:,}"),
        ("v2 / v1 input tokens", "1.00", f"{v2_totals['input_tokens'] / v1_totals['input_tokens']:.3f}  (aim <= 0.30)"),
        ("summary calls' share of v2 input", "-", f"{v2_totals['summary_input_tokens'] / v2_totals['input_tokens']:.1%}"),
        ("peak context tokens", f"{v1_totals['peak_context_tokens']:,}", f"{v2_totals['peak_context_tokens']:,}"),
        ("calls over the 8,192 budget", f"{v1_totals['calls_over_budget']}", f"{v2_totals['calls_over_budget']}"),
        ("offloads / summaries", "0 / 0", f"{v2_totals['offloads']} / {v2_totals['summaries']}"),
        ("goal kept at probes", f"{sum(v1['goals_kept'])}/{len(v1['goals_kept'])}", f"{sum(v2['goals_kept'])}/{len(v2['goals_kept'])}"),
    ]
    print(f"50-turn tool-heavy session, offline model, budget {BUDGET:,} ({seconds:.1f} s in all)\n")
    print(f"{'measure':<44} {'v1':>14} {'v2':>14}")
    print(f"{'-' * 44} {'-' * 14} {'-' * 14}")
    for name, first, second in rows:
        print(f"{name:<44} {first:>14} {second:>14}")
    print(f"\nv2 trigger line: {trigger:,} tokens; most any call went over it: {max(over_trigger, 0):,}; "
          f"largest single turn's content: {biggest_turn:,} -> {'within' if over_trigger <= biggest_turn else 'BEYOND'} trigger + one turn")
    print(f"v2 wrappers' own time per turn (median of {options.repeats} runs): turns 3-7 {early:.2f} ms, "
          f"turns {options.turns - 4}-{options.turns} {late:.2f} ms, ratio {late / early:.2f} (aim <= 1.5)")


if __name__ == "__main__":
    main()
