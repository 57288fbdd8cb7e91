"""Score a benchmark run from disk: runs.jsonl in, summary.json + results.md (+ a chart) out.

Scoring never runs an agent (CONTRIBUTING.md, "Run and score separately"): rerun it after editing this
file, or on a colleague's out_dir. Per agent, over all its runs:

- ``success_rate``: runs whose every check and goal probe passed / runs;
- ``goal_retention``: goal probes whose reply held the goal / goal probes;
- ``fact_retention``: planted facts still in the context at the end / facts;
  ``fact_retention_with_archive`` also counts facts in the archive or an
  offloaded scratch/ file (recoverable with a tool call);
- ``tokens_per_success``: (input + output tokens of all runs) / successful runs;
- ``peak_context_tokens``: the largest single request in any run;
- ``total_input_tokens`` / ``total_output_tokens`` (summary calls included),
  ``estimated_cost_usd`` (from the model's profile);
- ``summaries``, ``offloads``, ``masks``: context events; ``summary_calls`` and
  ``summary_token_share`` (summary-call tokens / all tokens);
- ``calls_over_budget``: agent calls whose request exceeded the budget;
- ``wrapper_ms_per_turn``: the wrappers' own time (token counting, offload,
  archive; not model calls) per user turn.

``per_task`` holds each task's success rate; ``tasks`` the same by task.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flawedcode.bench.runner import read_runs, unavailable_agents
from flawedcode.bench.tasks import Task
from flawedcode.paths import write_atomically

SUMMARY_FILE = "summary.json"
RESULTS_FILE = "results.md"
CHART_FILE = "comparison.png"


def score(out_dir: str | Path, agents: Iterable[str] | None = None, tasks: list[Task] | None = None,
          chart: bool = True) -> str:
    """Read out_dir/runs.jsonl; write summary.json, results.md and (if charts exist) a PNG; return the table."""
    out_dir = Path(out_dir)
    records = read_runs(out_dir)
    task_names = [task.name for task in tasks] if tasks else None
    if task_names is not None:
        records = [record for record in records if record["task"] in task_names]
    wanted = list(agents) if agents is not None else list(dict.fromkeys(record["agent"] for record in records))
    skipped = unavailable_agents(wanted)
    summary = summarize_runs(records, [agent for agent in wanted if agent not in skipped])
    summary["skipped"] = skipped
    summary["expected"] = {task.name: task.expected for task in tasks or [] if task.expected}
    if chart:
        summary["chart"] = _save_chart(summary, out_dir / CHART_FILE)
    write_atomically(out_dir / SUMMARY_FILE, json.dumps(summary, indent=2))
    table = render_markdown(summary)
    write_atomically(out_dir / RESULTS_FILE, table)
    return table


def summarize_runs(records: list[dict[str, Any]], agents: list[str]) -> dict[str, Any]:
    """The numbers in summary.json, computed from run records (pure: no files)."""
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_agent[record["agent"]].append(record)
    task_order = list(dict.fromkeys(record["task"] for record in records))
    summary: dict[str, Any] = {"agents": {}, "tasks": {}}
    for agent in agents:
        summary["agents"][agent] = agent_metrics(by_agent.get(agent, []), task_order)
    for task in task_order:
        runs_of_task = [record for record in records if record["task"] == task]
        summary["tasks"][task] = {
            "category": runs_of_task[0].get("category"),
            "success_rate": {agent: summary["agents"][agent]["per_task"].get(task) for agent in agents},
        }
    summary["models"] = sorted({record.get("model", "?") for record in records})
    return summary


def agent_metrics(records: list[dict[str, Any]], task_order: list[str]) -> dict[str, Any]:
    def total(key: str) -> int:
        return sum(record["totals"].get(key, 0) for record in records)

    successes = sum(1 for record in records if record["success"])
    probes = [probe for record in records for probe in record.get("goal_probes", [])]
    facts = [fact for record in records for fact in record.get("facts", [])]
    input_tokens, output_tokens = total("input_tokens"), total("output_tokens")
    summary_tokens = sum(record.get("summary_tokens", 0) for record in records)
    turns = sum(record.get("turns", 0) for record in records)
    per_task: dict[str, float | None] = {}
    for task in task_order:
        task_runs = [record for record in records if record["task"] == task]
        per_task[task] = _ratio(sum(1 for record in task_runs if record["success"]), len(task_runs))
    return {
        "runs": len(records),
        "successes": successes,
        "success_rate": _ratio(successes, len(records)),
        "goal_probes": len(probes),
        "goal_retention": _ratio(sum(1 for probe in probes if probe["kept"]), len(probes)),
        "facts": len(facts),
        "fact_retention": _ratio(sum(1 for fact in facts if fact["in_context"]), len(facts)),
        "fact_retention_with_archive": _ratio(
            sum(1 for fact in facts if fact["in_context"] or fact["in_archive"]), len(facts)),
        "tokens_per_success": round((input_tokens + output_tokens) / successes) if successes else None,
        "peak_context_tokens": max((record["totals"].get("peak_context_tokens", 0) for record in records), default=0),
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "estimated_cost_usd": _total_cost(records),
        "model_calls": total("model_calls"),
        "calls_over_budget": total("calls_over_budget"),
        "summary_calls": total("summary_calls"),
        "summary_token_share": _ratio(summary_tokens, input_tokens + output_tokens),
        "summaries": total("summaries"),
        "offloads": total("offloads"),
        "masks": sum(record.get("masks", 0) for record in records),
        "wrapper_ms_per_turn": round(1000 * sum(record.get("wrapper_seconds", 0.0) for record in records) / turns, 3)
        if turns else None,
        "seconds": round(sum(record.get("seconds", 0.0) for record in records), 3),
        "errors": [f"{record['task']} #{record['run']}: {record['error']}" for record in records if record.get("error")],
        "per_task": per_task,
    }


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


# --- the Markdown table ---------------------------------------------------------------

MAIN_COLUMNS: list[tuple[str, str]] = [
    ("success", "success_rate"), ("goal kept", "goal_retention"), ("facts in context", "fact_retention"),
    ("facts in context or archive", "fact_retention_with_archive"), ("tokens per success", "tokens_per_success"),
    ("total input tokens", "total_input_tokens"), ("total output tokens", "total_output_tokens"),
    ("peak context", "peak_context_tokens"), ("calls over budget", "calls_over_budget"),
    ("summaries", "summaries"), ("offloads", "offloads"), ("summary share of tokens", "summary_token_share"),
    ("est. cost (USD)", "estimated_cost_usd"), ("wrapper ms per turn", "wrapper_ms_per_turn"),
]
PERCENT_KEYS = {"success_rate", "goal_retention", "fact_retention", "fact_retention_with_archive", "summary_token_share"}


def render_markdown(summary: dict[str, Any]) -> str:
    """results.md: one row per agent, then per-task success, then notes."""
    agents = summary["agents"]
    lines = ["## Benchmark results", ""]
    if summary.get("models"):
        lines += [f"Model: {', '.join(summary['models'])}. Runs per agent: "
                  + ", ".join(f"{agent} {metrics['runs']}" for agent, metrics in agents.items()) + ".", ""]
    lines += [_row(["agent", *(title for title, _ in MAIN_COLUMNS)]), _row(["---"] * (len(MAIN_COLUMNS) + 1))]
    for agent, metrics in agents.items():
        lines.append(_row([agent, *(_cell(key, metrics.get(key)) for _, key in MAIN_COLUMNS)]))
    for agent, reason in summary.get("skipped", {}).items():
        lines.append(_row([agent, f"skipped: {reason}", *([""] * (len(MAIN_COLUMNS) - 1))]))
    if summary.get("tasks"):
        lines += ["", "### Success per task", "", _row(["task", "category", *agents]), _row(["---"] * (len(agents) + 2))]
        for task, info in summary["tasks"].items():
            lines.append(_row([task, info.get("category") or "",
                               *(_cell("success_rate", info["success_rate"].get(agent)) for agent in agents)]))
    notes = [f"- {agent}: {len(metrics['errors'])} run(s) failed with an error, e.g. {metrics['errors'][0]}"
             for agent, metrics in agents.items() if metrics.get("errors")]
    notes += [f"- {agent} skipped: {reason}" for agent, reason in summary.get("skipped", {}).items()]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _total_cost(records: list[dict[str, Any]]) -> float | None:
    """The runs' estimated cost; None ("-" in the table) when a run's model has no known prices."""
    costs = [record["totals"].get("estimated_cost_usd", 0.0) for record in records]
    return None if any(cost is None for cost in costs) else round(sum(costs), 6)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in PERCENT_KEYS:
        return f"{100 * value:.0f}%"
    if key == "estimated_cost_usd":
        return f"{value:.4f}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _save_chart(summary: dict[str, Any], path: Path) -> str | None:
    try:
        from flawedcode.charts import save_comparison_chart
    except ImportError:
        return None
    save_comparison_chart(summary, path)
    return str(path)
