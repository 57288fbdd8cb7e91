"""Every agent on workload B and the long session at 4K / 8K / 16K / 32K: raw, cache-weighted and against the limit.

Run:  python tests/benchmarks/bench_caching.py [--budgets 4096,8192] [--workloads workload_b,long_session]
                                               [--agents v1,v2,...] [--json FILE]

For each workload and budget the script runs the benchmark itself (``run_suite``: a fresh agent per
run, every model call counted at the model boundary) on the offline model with a window equal to the
budget, then scores it (``summarize_runs``) and prints one table:

- raw ÷ v1: all input tokens (every call) / v1's;
- cached ÷ v1 cached: input priced as a provider's prompt cache bills it (the ``anthropic`` scheme:
  reads 0.1x, writes 1.25x) / v1's priced the same way;
- ÷ yardstick: all input / the task's yardstick, the same number for every agent (``bench/yardstick.py``:
  the least any agent could send and still answer each request); ÷ own floor: all input / the agent's
  own floor (its own schemas and already-offloaded current turn; differs per agent, ranks nothing);
- answers complete: load turns whose reply stated every figure of the full data (``figures`` checks),
  and the mean share of figures stated;
- cacheable: the share of the input a prompt cache would serve; goal in context at the probes; calls
  over the budget; and, for a run that failed, at which step and why (the row stays).

Then: v1's cacheable share (aim: at least 0.95), and v2 ÷ the cheapest peer that keeps the goal,
raw and cache-weighted. Workload B is the lesson's first request then 50 turns cycling docs and
loads over the five dataframes with a goal probe every 10 turns (``flawedcode/bench/tasks/workloads/
workload_b.yaml``); the long session is the built-in ``long_session`` task.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from flawedcode.bench.agent_specs import KNOWN_AGENTS
from flawedcode.bench.runner import Suite, run_suite
from flawedcode.bench.scoring import summarize_runs
from flawedcode.bench.tasks import Task, builtin_tasks_dir, load_task_file, load_tasks

BUDGETS = (4_096, 8_192, 16_384, 32_768)
WORKLOADS = ("workload_b", "long_session")


def workload(name: str) -> Task:
    if name == "workload_b":
        return load_task_file(builtin_tasks_dir() / "workloads" / "workload_b.yaml")[0]
    if name == "summary_overflow":  # the summary request larger than the window (run it at 4,096)
        return load_task_file(builtin_tasks_dir() / "probes" / "summary_overflow.yaml")[0]
    return load_tasks([name])[0]


def measure(task: Task, budget: int, agents: list[str], folder: Path) -> dict:
    suite = Suite(agents, [task], 1, model=f"offline:{budget}", settings={"budget_tokens": budget})
    records = run_suite(suite, folder, resume=False, progress=False)
    summary = summarize_runs(records, [entry.name for entry in suite.runnable])
    summary["skipped"] = suite.skipped
    return summary


def cell(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(task: str, budget: int, summary: dict) -> None:
    print(f"\n### {task} at {budget:,} tokens\n")
    header = ["agent", "raw ÷ v1", "cached ÷ v1 cached", "÷ yardstick", "input tokens", "answers complete", "figures stated",
              "÷ own floor", "cacheable", "goal in context", "calls over budget", "cache-weighted", "failed"]
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for agent, metrics in summary["agents"].items():
        share = metrics.get("cacheable_share")
        goal = metrics.get("goal_in_context")
        complete, stated = metrics.get("answers_complete"), metrics.get("answer_completeness")
        print("| " + " | ".join([
            agent, cell(metrics.get("input_vs_v1")), cell(metrics.get("cached_vs_v1_cached")),
            cell(metrics.get("input_vs_limit"), 2), f"{metrics['total_input_tokens']:,}",
            "-" if complete is None else f"{round(complete * metrics['answer_checks'])}/{metrics['answer_checks']}",
            "-" if stated is None else f"{100 * stated:.0f}%", cell(metrics.get("input_vs_own_floor"), 2),
            "-" if share is None else f"{100 * share:.1f}%",
            "-" if goal is None else f"{100 * goal:.0f}%", str(metrics["calls_over_budget"]),
            f"{metrics.get('cache_weighted_input_tokens') or 0:,}", metrics.get("failures") or "-"]) + " |")
    for agent, reason in summary.get("skipped", {}).items():
        print(f"| {agent} | skipped: {reason} |" + " |" * 11)
    v1 = summary["agents"].get("v1", {})
    task = next(iter(summary["tasks"].values()), {})
    lead, cheapest = task.get("lead") or {}, task.get("cheapest") or {}
    yardsticks = {value for value in (task.get("yardstick_tokens") or {}).values() if value is not None}
    print(f"\nYardstick: {', '.join(f'{value:,}' for value in sorted(yardsticks))} tokens (one per task, every agent). "
          f"Cheapest that finishes, keeps the goal and answers as completely as v1: raw {cheapest.get('raw')}, "
          f"cache-weighted {cheapest.get('cached')} (of {', '.join(cheapest.get('qualifying') or []) or 'none'}).")
    print(f"\nv1 cacheable share: {cell(v1.get('cacheable_share'), 4)} (aim: >= 0.95). "
          f"v2 ÷ the cheapest goal-keeping peer: raw {cell(lead.get('raw'))} ({lead.get('peer')}), "
          f"cache-weighted {cell(lead.get('cached'))} ({lead.get('cached_peer')}).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default=",".join(str(budget) for budget in BUDGETS))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--agents", default=",".join(KNOWN_AGENTS))
    parser.add_argument("--json", type=Path, help="also write every summary to this file")
    arguments = parser.parse_args(argv)
    agents = [name.strip() for name in arguments.agents.split(",") if name.strip()]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-caching-") as scratch:
        for task_name in arguments.workloads.split(","):
            task = workload(task_name)
            for budget in (int(text) for text in arguments.budgets.split(",")):
                started = time.perf_counter()
                summary = measure(task, budget, agents, Path(scratch) / f"{task_name}-{budget}")
                print(f"  ran {task_name} at {budget:,} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
                print_table(task_name, budget, summary)
                sys.stdout.flush()
                results[f"{task_name}@{budget}"] = summary
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
