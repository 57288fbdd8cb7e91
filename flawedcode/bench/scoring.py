"""Score a benchmark run from disk: runs.jsonl in, summary.json + results.md (+ a chart) out.

Scoring never runs an agent (CONTRIBUTING.md, "Run and score separately"): rerun it after editing this
file, or on a colleague's out_dir. It reads run records through ``records.py`` (a bad line is
reported and skipped; the table states how many runs it counted).

Per agent, over all its runs. First, what measures the context strategy (not the model's English):

- ``goal_in_context``: goal probes at which the goal text was verbatim in what the model received / goal probes;
- ``fact_in_context``: the same for planted facts at fact probes;
- ``fact_recoverable``: planted facts at fact probes that were in what the model received, or
  in the run's scratch/ or archive files (one tool call away) / fact probes;
- ``peak_context_tokens``: the largest single request, any call;
- ``calls_over_budget``: calls whose request exceeded the budget, any call;
- ``total_input_tokens`` / ``total_output_tokens``: all calls (agent, summary, internal);
- ``summary_input_tokens``, ``summary_calls``, ``summary_token_share`` (summary-call tokens / all tokens);
- ``model_calls`` (all), ``agent_calls``, ``internal_calls``, ``failed_calls``, ``estimated_cost_usd``.

Then what depends on the model (labelled so in the table):

- ``success_rate`` (and ``success_by_category``, ``per_task``): runs whose every check and
  goal probe passed / runs;
- ``goal_retention``: goal probes whose reply held the goal / goal probes;
- ``tokens_per_success``: (input + output tokens of all runs) / successful runs.

Also ``fact_retention`` / ``fact_retention_with_archive`` (planted facts at the end of a run, in
the final history / also in recoverable files), ``summaries``, ``offloads``, ``masks``.
Timings (``wrapper_ms_per_turn``, ``seconds``) depend on the machine: they live in
``summary["timings"]``, so that the same command gives the same numbers everywhere else.
``summary["metadata"]`` says how to reproduce the numbers (see ``metadata.py``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flawedcode.bench.metadata import build_metadata
from flawedcode.bench.records import RunRecord, read_runs
from flawedcode.bench.tasks import CATEGORIES, Task
from flawedcode.paths import write_atomically

SUMMARY_FILE = "summary.json"
RESULTS_FILE = "results.md"
CHART_FILE = "comparison.png"
MODEL_DEPENDENT_NOTE = ("Columns marked * depend on the model (how well it follows the requests), not only on the "
                        "context strategy; the other columns measure the strategy. A probe a failed run never reached "
                        "counts as a miss, and a failed run's tokens stop where it stopped. Wrapper time depends on the machine.")


def score(out_dir: str | Path, agents: Iterable[str] | None = None, tasks: list[Task] | None = None,
          chart: bool = True, skipped: dict[str, str] | None = None) -> str:
    """Read out_dir/runs.jsonl; write summary.json, results.md and (if charts exist) a PNG; return the table."""
    out_dir = Path(out_dir)
    found = read_runs(out_dir)
    records = found.records
    if tasks:
        task_names = [task.name for task in tasks]
        records = [record for record in records if record.task in task_names]
    skipped = dict(skipped or {})
    wanted = list(agents) if agents is not None else list(dict.fromkeys(record.agent for record in records))
    counted = [agent for agent in wanted if agent not in skipped]
    summary = summarize_runs(records, counted)
    summary["metadata"] = build_metadata(records, counted)
    summary["lines_skipped"] = found.lines_skipped
    summary["problems"] = found.problems
    summary["skipped"] = skipped
    summary["expected"] = {task.name: task.expected for task in tasks or [] if task.expected}
    if chart:
        summary["chart"] = _save_chart(summary, out_dir / CHART_FILE)
    write_atomically(out_dir / SUMMARY_FILE, json.dumps(summary, indent=2))
    table = render_markdown(summary)
    write_atomically(out_dir / RESULTS_FILE, table)
    return table


def summarize_runs(records: list[RunRecord | dict[str, Any]], agents: list[str]) -> dict[str, Any]:
    """The numbers in summary.json, computed from run records (pure: no files)."""
    records = [record if isinstance(record, RunRecord) else RunRecord.from_dict(record) for record in records]
    records = [record for record in records if record.agent in agents]
    by_agent: dict[str, list[RunRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda record: (record.agent, record.task, record.run)):
        by_agent[record.agent].append(record)
    task_order = list(dict.fromkeys(record.task for record in records))
    category_of = {record.task: record.category for record in records}
    categories = category_order(category_of.values())
    summary: dict[str, Any] = {"runs_counted": len(records), "agents": {}, "categories": {}, "tasks": {}, "timings": {}}
    for agent in agents:
        summary["agents"][agent] = agent_metrics(by_agent.get(agent, []), task_order, categories)
        summary["timings"][agent] = agent_timings(by_agent.get(agent, []))
    for category in categories:
        summary["categories"][category] = {
            "tasks": [task for task in task_order if category_of[task] == category],
            "success_rate": {agent: summary["agents"][agent]["success_by_category"].get(category) for agent in agents},
        }
    for task in task_order:
        runs_of = {agent: [record for record in by_agent.get(agent, []) if record.task == task] for agent in agents}
        summary["tasks"][task] = {
            "category": category_of[task],
            "success_rate": {agent: summary["agents"][agent]["per_task"].get(task) for agent in agents},
            "goal_in_context": {agent: _share(probe.in_context for record in runs_of[agent] for probe in record.probes_of("goal"))
                                for agent in agents},
            "total_input_tokens": {agent: sum(record.totals.get("input_tokens", 0) for record in runs_of[agent])
                                   for agent in agents},
            "failed_runs": {agent: sum(1 for record in runs_of[agent] if record.error) for agent in agents},
        }
    summary["models"] = sorted({record.model or "?" for record in records})
    return summary


def category_order(categories: Iterable[str]) -> list[str]:
    """The built-in categories in the course's order, then any others in the order they appear."""
    seen = list(dict.fromkeys(categories))
    return [category for category in CATEGORIES if category in seen] + [category for category in seen if category not in CATEGORIES]


def agent_metrics(records: list[RunRecord], task_order: list[str], categories: list[str] | None = None) -> dict[str, Any]:
    def total(key: str) -> int:
        return sum(record.totals.get(key, 0) for record in records)

    successes = sum(1 for record in records if record.success)
    goal_probes = [probe for record in records for probe in record.probes_of("goal")]
    fact_probes = [probe for record in records for probe in record.probes_of("fact")]
    facts = [fact for record in records for fact in record.facts]
    input_tokens, output_tokens = total("input_tokens"), total("output_tokens")
    summary_tokens = sum(record.summary_tokens for record in records)
    return {
        "runs": len(records),
        # what measures the strategy
        "goal_probes": len(goal_probes),
        "goal_in_context": _share(probe.in_context for probe in goal_probes),
        "goal_recoverable": _share(probe.recoverable for probe in goal_probes),
        "fact_probes": len(fact_probes),
        "fact_in_context": _share(probe.in_context for probe in fact_probes),
        "fact_recoverable": _share(probe.recoverable for probe in fact_probes),
        "peak_context_tokens": max((record.totals.get("peak_context_tokens", 0) for record in records), default=0),
        "calls_over_budget": total("calls_over_budget"),
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "summary_input_tokens": total("summary_input_tokens"),
        "summary_calls": total("summary_calls"),
        "summary_token_share": _ratio(summary_tokens, input_tokens + output_tokens),
        "model_calls": total("model_calls"),
        "agent_calls": total("agent_calls"),
        "internal_calls": total("internal_calls"),
        "failed_calls": total("failed_calls"),
        "estimated_cost_usd": _total_cost(records),
        # what depends on the model
        "successes": successes,
        "success_rate": _ratio(successes, len(records)),
        "success_by_category": {category: _success(records, lambda record, c=category: record.category == c)
                                for category in categories or category_order(record.category for record in records)},
        "per_task": {task: _success(records, lambda record, t=task: record.task == t) for task in task_order},
        "goal_retention": _share(probe.answered for probe in goal_probes),
        "fact_answered": _share(probe.answered for probe in fact_probes),
        "tokens_per_success": round((input_tokens + output_tokens) / successes) if successes else None,
        # more detail
        "facts": len(facts),
        "fact_retention": _share(fact["in_context"] for fact in facts),
        "fact_retention_with_archive": _share(fact["in_context"] or fact["in_archive"] for fact in facts),
        "summaries": total("summaries"),
        "offloads": total("offloads"),
        "masks": sum(record.masks for record in records),
        "failed_runs": sum(1 for record in records if record.error),
        "errors": [f"{record.task} #{record.run}: {record.error}" for record in records if record.error],
    }


def agent_timings(records: list[RunRecord]) -> dict[str, float | None]:
    """Machine-dependent figures, kept apart from the reproducible ones."""
    turns = sum(record.turns for record in records)
    return {
        "wrapper_ms_per_turn": round(1000 * sum(record.wrapper_seconds for record in records) / turns, 3) if turns else None,
        "seconds": round(sum(record.seconds for record in records), 3),
    }


def _success(records: list[RunRecord], selected: Any) -> float | None:
    chosen = [record for record in records if selected(record)]
    return _ratio(sum(1 for record in chosen if record.success), len(chosen))


def _share(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return _ratio(sum(1 for flag in values if flag), len(values))


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


# --- the Markdown table ---------------------------------------------------------------

MAIN_COLUMNS: list[tuple[str, str]] = [
    ("goal in context", "goal_in_context"), ("fact in context", "fact_in_context"),
    ("fact recoverable", "fact_recoverable"), ("peak context", "peak_context_tokens"),
    ("calls over budget", "calls_over_budget"), ("total input tokens", "total_input_tokens"),
    ("summary input tokens", "summary_input_tokens"), ("summary calls", "summary_calls"), ("all calls", "model_calls"),
    ("success*", "success_rate"), ("goal answered*", "goal_retention"), ("tokens per success*", "tokens_per_success"),
    ("est. cost (USD)", "estimated_cost_usd"),
]
TIMING_COLUMNS: list[tuple[str, str]] = [("wrapper ms per turn", "wrapper_ms_per_turn")]
PERCENT_KEYS = {"success_rate", "goal_retention", "goal_in_context", "fact_in_context", "fact_recoverable",
                "fact_retention", "fact_retention_with_archive", "summary_token_share"}


def render_markdown(summary: dict[str, Any]) -> str:
    """results.md: one row per agent, success by category and by task, then notes."""
    agents = summary["agents"]
    timings = summary.get("timings", {})
    lines = ["## Benchmark results", "", header_line(summary), ""]
    titles = [title for title, _ in MAIN_COLUMNS + TIMING_COLUMNS]
    lines += [markdown_row(["agent", *titles]), markdown_row(["---"] * (len(titles) + 1))]
    for agent, metrics in agents.items():
        cells = [format_cell(key, metrics.get(key)) for _, key in MAIN_COLUMNS]
        cells += [format_cell(key, timings.get(agent, {}).get(key)) for _, key in TIMING_COLUMNS]
        lines.append(markdown_row([agent, *cells]))
    for agent, reason in summary.get("skipped", {}).items():
        lines.append(markdown_row([agent, f"skipped: {reason}", *([""] * (len(titles) - 1))]))
    lines += ["", MODEL_DEPENDENT_NOTE]
    if summary.get("categories"):
        lines += ["", "### Success by category (depends on the model)", "",
                  markdown_row(["category", "tasks", *agents]), markdown_row(["---"] * (len(agents) + 2))]
        for category, info in summary["categories"].items():
            lines.append(markdown_row([category, str(len(info["tasks"])),
                               *(format_cell("success_rate", info["success_rate"].get(agent)) for agent in agents)]))
    if summary.get("tasks"):
        lines += ["", "### Success per task (depends on the model)", "",
                  markdown_row(["task", "category", *agents]), markdown_row(["---"] * (len(agents) + 2))]
        for task, info in summary["tasks"].items():
            lines.append(markdown_row([task, info.get("category") or "",
                               *(format_cell("success_rate", info["success_rate"].get(agent)) for agent in agents)]))
    if summary.get("tasks"):
        lines += ["", "### Total input tokens per task (all calls; goal in context at its probes, when it has any)", "",
                  markdown_row(["task", *agents]), markdown_row(["---"] * (len(agents) + 1))]
        for task, info in summary["tasks"].items():
            lines.append(markdown_row([task, *(_tokens_cell(info, agent) for agent in agents)]))
    notes = [f"- {agent}: {len(metrics['errors'])} run(s) failed with an error, e.g. {metrics['errors'][0]}"
             for agent, metrics in agents.items() if metrics.get("errors")]
    notes += [f"- {agent} skipped: {reason}" for agent, reason in summary.get("skipped", {}).items()]
    notes += [f"- {problem}" for problem in summary.get("problems", [])]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"


def _tokens_cell(info: dict[str, Any], agent: str) -> str:
    cell = format_cell("total_input_tokens", info.get("total_input_tokens", {}).get(agent))
    goal = info.get("goal_in_context", {}).get(agent)
    if goal is not None:
        cell += f" (goal {format_cell('goal_in_context', goal)})"
    failed = info.get("failed_runs", {}).get(agent)
    return cell + (f", {failed} failed" if failed else "")


def header_line(summary: dict[str, Any]) -> str:
    agents = summary["agents"]
    metadata = summary.get("metadata") or {}
    models = metadata.get("models") or summary.get("models") or []
    budgets = metadata.get("budget_tokens") or []
    parts = []
    if models:
        parts.append(f"Model: {', '.join(models)}.")
    if budgets:
        parts.append(f"Budget: {', '.join(f'{budget:,}' for budget in budgets)} tokens.")
    counted = f"Counted {summary.get('runs_counted', 0):,} runs from runs.jsonl"
    if agents:
        counted += " (" + ", ".join(f"{agent} {metrics['runs']}" for agent, metrics in agents.items()) + ")"
    skipped = summary.get("lines_skipped", 0)
    counted += f"; {skipped} line(s) of runs.jsonl skipped (see Notes)." if skipped else "."
    parts.append(counted)
    return " ".join(parts)


def markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _total_cost(records: list[RunRecord]) -> float | None:
    """The runs' estimated cost; None ("-" in the table) when a run's model has no known prices."""
    costs = [record.totals.get("estimated_cost_usd", 0.0) for record in records]
    return None if any(cost is None for cost in costs) else round(sum(costs), 6)


def format_cell(key: str, value: Any) -> str:
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
