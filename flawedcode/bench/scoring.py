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
- ``model_calls`` (all), ``agent_calls``, ``internal_calls``, ``failed_calls``, ``estimated_cost_usd``
  (cached input at the model's cached price).

Prompt caching and the physical limit (``flawedcode.prompt_cache``; every call, as captured at the model boundary):

- ``cached_input_tokens``: input a provider's prompt cache would serve: per call, the longest prefix
  (whole messages, the fixed system+tools block first) that an earlier request of the same run began
  with, when at least 1,024 tokens, rounded down to 128 (the provider's own ``cached_tokens`` when it
  reported them); ``cache_write_tokens``: what each call wrote to the cache;
- ``cache_weighted_input_tokens``: all input priced under the default scheme (``anthropic``: reads
  0.1x, writes 1.25x, the rest 1x), in input-token equivalents; ``cache_weighted_by_scheme``: the
  same under ``openai``, ``openai-2026``, ``anthropic`` and ``gemini``;
- ``cacheable_share``: cached input / all input;
- ``reported_cache``: where the provider reported its own cached tokens, its total beside the
  model's for the same calls (``model_over_reported``; None when it never reported any);
- ``yardstick_tokens``, **the yardstick**: one number per task, the same for every agent: the least
  any agent could send and still answer each request (``yardstick.py``: the system prompt, the schemas
  of the tools that request needs, the goal, the request, the parts of results its checks need);
  ``input_vs_limit``: raw input / the yardstick (the table's "÷ yardstick"). Only this ratio compares agents;
- ``oracle_input_tokens``, **the agent's own floor** (kept as a separate, labelled column, never used
  to rank): per agent call, the system prompt and tool schemas *that agent* sent, the goal and the
  current turn as *that agent* carried it (already offloaded, for an agent that offloads), plus the
  3 tokens that prime the reply; ``input_vs_own_floor``: raw input / it. An agent that shrinks its own
  schemas or results shrinks its floor too, so this ratio says how close an agent is to itself only;
- ratios to the reference agent ``v1`` (append-only) when it ran: ``input_vs_v1`` (raw input / v1's),
  ``cached_vs_v1_cached`` (cache-weighted input / v1's cache-weighted input).

Answers (``figures`` checks, judged against the full data: ``checks.py``):

- ``answer_checks``: figures checks over all runs (a step a failed run never reached counts, unanswered);
- ``answers_complete``: figures checks whose reply stated every figure / figures checks;
- ``answer_completeness``: the mean share of figures stated. A saving counts only beside answers as
  complete as v1's: ``cheapest`` (per task) is the cheapest agent, raw and cache-weighted, among those
  that finished, kept the goal at every probe and answered at least as completely as v1.

The same figures per task (``summary["tasks"][task]``), and ``lead``: per task, v2 divided by the
cheapest peer (any agent but flawedcode's own versions, v0-v3) that keeps the goal there (every run
finished; the goal in context at every goal probe, when the task has any) and answers as completely
as v1, raw and cache-weighted, so a lead that holds on one workload only shows.

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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flawedcode.agents import AGENTS
from flawedcode.bench.cost import break_even_by_scheme
from flawedcode.bench.metadata import build_metadata
from flawedcode.bench.records import RunRecord, read_runs
from flawedcode.bench.tasks import CATEGORIES, Task
from flawedcode.notices import warn_once
from flawedcode.paths import write_atomically

SUMMARY_FILE = "summary.json"
RESULTS_FILE = "results.md"
CHART_FILE = "comparison.png"
MODEL_DEPENDENT_NOTE = ("Columns marked * depend on the model (how well it follows the requests), not only on the "
                        "context strategy; the other columns measure the strategy. A probe a failed run never reached "
                        "counts as a miss, and a failed run's tokens stop where it stopped. Wrapper time depends on the machine.")


ChartDrawer = Callable[[dict[str, Any], Path], Any]
"""Draws a summary into a PNG file. The benchmark draws nothing itself (it sits below the charts): the
command line passes ``flawedcode.charts.save_comparison_chart``."""


def score(out_dir: str | Path, agents: Iterable[str] | None = None, tasks: list[Task] | None = None,
          chart: ChartDrawer | None | bool = None, skipped: dict[str, str] | None = None) -> str:
    """Read out_dir/runs.jsonl; write summary.json, results.md and, given a ``chart`` drawer, comparison.png; return the table.

    ``chart`` is a ``ChartDrawer``; None or False draws no chart."""
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
    write_atomically(out_dir / SUMMARY_FILE, json.dumps(summary, indent=2))
    table = render_markdown(summary)
    write_atomically(out_dir / RESULTS_FILE, table)
    if chart and draw_chart(chart, summary, out_dir):  # the figures are on disk first: a chart that fails loses none
        write_atomically(out_dir / SUMMARY_FILE, json.dumps(summary, indent=2))
    return table


def draw_chart(chart: ChartDrawer, summary: dict[str, Any], out_dir: Path) -> bool:
    """Draw comparison.png and note its path in ``summary``; a disk that refuses it is one warning line, not a traceback."""
    try:
        chart(summary, out_dir / CHART_FILE)
    except OSError as error:
        warn_once(f"chart:{out_dir}", f"could not save {out_dir / CHART_FILE} ({error.strerror or error}); "
                                      f"{SUMMARY_FILE} and {RESULTS_FILE} are written")
        return False
    summary["chart"] = str(out_dir / CHART_FILE)
    return True


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
    add_ratios(summary["agents"])
    for task in task_order:
        runs_of = {agent: [record for record in by_agent.get(agent, []) if record.task == task] for agent in agents}
        cache = {agent: cache_figures(runs_of[agent]) for agent in agents}
        summary["tasks"][task] = {
            "category": category_of[task],
            "success_rate": {agent: summary["agents"][agent]["per_task"].get(task) for agent in agents},
            "goal_in_context": {agent: _share(probe.in_context for record in runs_of[agent] for probe in record.probes_of("goal"))
                                for agent in agents},
            "total_input_tokens": {agent: sum(record.totals.get("input_tokens", 0) for record in runs_of[agent])
                                   for agent in agents},
            "failed_runs": {agent: sum(1 for record in runs_of[agent] if record.error) for agent in agents},
            "yardstick_tokens": {agent: _yardstick(runs_of[agent]) for agent in agents},
            "answer_completeness": {agent: answer_figures(runs_of[agent])["answer_completeness"] for agent in agents},
            **{key: {agent: cache[agent][key] for agent in agents} for key in PER_TASK_CACHE_KEYS},
        }
        summary["tasks"][task]["lead"] = task_lead(summary["tasks"][task], agents)
        summary["tasks"][task]["cheapest"] = cheapest_complete(summary["tasks"][task], agents)
        summary["tasks"][task]["break_even_vs_v1"] = break_even_by_scheme(runs_of, REFERENCE_AGENT)  # cost.py
    summary["models"] = sorted({record.model or "?" for record in records})
    return summary


def category_order(categories: Iterable[str]) -> list[str]:
    """The built-in categories in the course's order, then any others in the order they appear."""
    seen = list(dict.fromkeys(categories))
    return [category for category in CATEGORIES if category in seen] + [category for category in seen if category not in CATEGORIES]


REFERENCE_AGENT = "v1"
"""The append-only agent every ratio is taken to (when it ran)."""
LEAD_AGENT = "v2"
"""The agent whose per-task lead over the cheapest goal-keeping peer is reported."""
PER_TASK_CACHE_KEYS = ("cache_weighted_input_tokens", "cacheable_share", "oracle_input_tokens")


def cache_figures(records: list[RunRecord]) -> dict[str, Any]:
    """Prompt-cache figures summed over runs (see the module docstring); None where runs recorded none."""
    def total(key: str) -> int:
        return sum(record.totals.get(key) or 0 for record in records)

    known = bool(records) and all("cache_weighted_input_tokens" in record.totals for record in records)
    input_tokens = total("input_tokens")
    by_scheme: dict[str, int] = defaultdict(int)
    for record in records:
        for scheme, tokens in (record.totals.get("cache_weighted_by_scheme") or {}).items():
            by_scheme[scheme] += tokens
    return {
        "cached_input_tokens": total("cached_input_tokens") if known else None,
        "cache_write_tokens": total("cache_write_tokens") if known else None,
        "cache_weighted_input_tokens": total("cache_weighted_input_tokens") if known else None,
        "cache_weighted_by_scheme": dict(by_scheme) if known else None,
        "cacheable_share": _ratio(total("cached_input_tokens"), input_tokens) if known else None,
        "oracle_input_tokens": total("oracle_input_tokens") if known else None,
        "reported_cache": reported_cache(records),
    }


def reported_cache(records: list[RunRecord]) -> dict[str, Any] | None:
    """Where the provider reported cached tokens: its total beside the cache model's (None when it never did)."""
    reports = [record.totals["reported_cache"] for record in records if record.totals.get("reported_cache")]
    if not reports:
        return None
    provider = sum(report["reported_cached_tokens"] for report in reports)
    model = sum(report["model_cached_tokens"] for report in reports)
    return {"calls": sum(report["calls"] for report in reports), "reported_cached_tokens": provider,
            "model_cached_tokens": model, "model_over_reported": _ratio(model, provider)}


def _yardstick(records: list[RunRecord]) -> int | None:
    """The yardstick summed over runs (None when a run was recorded before the yardstick existed)."""
    values = [record.yardstick_tokens for record in records]
    return sum(values) if values and None not in values else None


def answer_figures(records: list[RunRecord]) -> dict[str, Any]:
    """How completely the runs' replies stated the data's figures (``figures`` checks; module docstring)."""
    results = [check for record in records for check in record.checks if check.get("kind") == "figures"]
    return {"answer_checks": len(results),
            "answers_complete": _share(bool(check.get("passed")) for check in results),
            "answer_completeness": round(sum(check.get("score") or 0.0 for check in results) / len(results), 4)
            if results else None}


def add_ratios(agents: dict[str, dict[str, Any]]) -> None:
    """Each agent's input ÷ v1's (raw, and cache-weighted ÷ v1's cache-weighted), ÷ the yardstick and ÷ its own floor."""
    reference = agents.get(REFERENCE_AGENT) or {}
    for metrics in agents.values():
        metrics["input_vs_v1"] = _ratio(metrics["total_input_tokens"], reference.get("total_input_tokens") or 0)
        metrics["cached_vs_v1_cached"] = _ratio(metrics.get("cache_weighted_input_tokens") or 0,
                                                reference.get("cache_weighted_input_tokens") or 0) \
            if metrics.get("cache_weighted_input_tokens") is not None else None
        metrics["input_vs_limit"] = _ratio(metrics["total_input_tokens"], metrics.get("yardstick_tokens") or 0)
        metrics["input_vs_own_floor"] = _ratio(metrics["total_input_tokens"], metrics.get("oracle_input_tokens") or 0)


def task_lead(task: dict[str, Any], agents: list[str]) -> dict[str, Any] | None:
    """v2 ÷ the cheapest peer that keeps the goal on this task (raw and cache-weighted); None without both."""
    if LEAD_AGENT not in agents:
        return None
    def keeps_goal(agent: str) -> bool:
        return qualifies(task, agent)
    peers = [agent for agent in agents if agent not in AGENTS and keeps_goal(agent)]  # v0-v3 are no peers
    if not peers:
        return {"peer": None, "raw": None, "cached": None, "v2_keeps_goal": keeps_goal(LEAD_AGENT)}
    cheapest = min(peers, key=lambda agent: task["total_input_tokens"][agent])
    weighted = task["cache_weighted_input_tokens"]
    cheapest_cached = min(peers, key=lambda agent: weighted.get(agent) or float("inf"))
    return {"peer": cheapest, "raw": _ratio(task["total_input_tokens"][LEAD_AGENT], task["total_input_tokens"][cheapest]),
            "cached_peer": cheapest_cached,
            "cached": _ratio(weighted.get(LEAD_AGENT) or 0, weighted.get(cheapest_cached) or 0)
            if weighted.get(LEAD_AGENT) is not None else None,
            "v2_keeps_goal": keeps_goal(LEAD_AGENT)}


def qualifies(task: dict[str, Any], agent: str) -> bool:
    """Every run finished, the goal in context at every goal probe, and answers at least as complete as v1's."""
    goal = task["goal_in_context"].get(agent)
    if task["failed_runs"].get(agent) or goal not in (None, 1.0) or not task["total_input_tokens"].get(agent, 0):
        return False
    completeness = task.get("answer_completeness", {})
    reference, own = completeness.get(REFERENCE_AGENT), completeness.get(agent)
    return reference is None or (own is not None and own >= reference)


def cheapest_complete(task: dict[str, Any], agents: list[str]) -> dict[str, Any]:
    """The cheapest agent (raw, and cache-weighted) among those that qualify (``qualifies``); None when none does."""
    chosen = [agent for agent in agents if qualifies(task, agent)]
    weighted = task.get("cache_weighted_input_tokens") or {}
    raw = min(chosen, key=lambda agent: task["total_input_tokens"][agent], default=None)
    cached = min((agent for agent in chosen if weighted.get(agent) is not None), key=lambda agent: weighted[agent], default=None)
    return {"qualifying": chosen, "raw": raw, "cached": cached}


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
        **cache_figures(records),
        "yardstick_tokens": _yardstick(records),
        **answer_figures(records),
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
        "failures": failure_note(records),
    }


def failure_note(records: list[RunRecord]) -> str | None:
    """'3/33 runs failed, first: long_session #1 at step 13 (ContextOverflowError: ...)'; None when none failed."""
    failed = [record for record in records if record.error]
    if not failed:
        return None
    first = failed[0]
    reason = (first.error or "").split(": ", 1)[-1][:90]
    return (f"{len(failed)}/{len(records)} runs failed, first: {first.task} #{first.run} at step "
            f"{first.failed_step} ({reason})")


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
    ("÷ v1", "input_vs_v1"), ("÷ v1 with caching", "cached_vs_v1_cached"), ("÷ yardstick", "input_vs_limit"),
    ("total input tokens", "total_input_tokens"), ("answers complete", "answers_complete"),
    ("figures stated", "answer_completeness"), ("÷ own floor (not comparable)", "input_vs_own_floor"),
    ("cacheable", "cacheable_share"), ("goal in context", "goal_in_context"), ("fact in context", "fact_in_context"),
    ("fact recoverable", "fact_recoverable"), ("peak context", "peak_context_tokens"),
    ("calls over budget", "calls_over_budget"),
    ("summary input tokens", "summary_input_tokens"), ("summary calls", "summary_calls"), ("all calls", "model_calls"),
    ("success*", "success_rate"), ("goal answered*", "goal_retention"), ("tokens per success*", "tokens_per_success"),
    ("est. cost (USD)", "estimated_cost_usd"), ("failed runs", "failures"),
]
TIMING_COLUMNS: list[tuple[str, str]] = [("wrapper ms per turn", "wrapper_ms_per_turn")]
PERCENT_KEYS = {"success_rate", "goal_retention", "goal_in_context", "fact_in_context", "fact_recoverable",
                "fact_retention", "fact_retention_with_archive", "summary_token_share", "cacheable_share",
                "answers_complete", "answer_completeness"}
RATIO_KEYS = {"input_vs_v1", "cached_vs_v1_cached", "input_vs_limit", "input_vs_own_floor"}
RATIO_NOTE = ("÷ v1: all input tokens / v1's (append-only). ÷ v1 with caching: the same with every input priced as a "
              "provider's prompt cache bills it (reads 0.1x, writes 1.25x: the `anthropic` scheme), / v1's priced the "
              "same way. ÷ yardstick: all input / the task's yardstick, the same number for every agent (the least any "
              "agent could send and still answer each request: system prompt, the schemas of the tools it needs, the "
              "goal, the request, the parts of results the checks need; docs/benchmark.md). answers complete: load "
              "turns whose reply stated every figure of the full data / load turns (figures stated: the mean share). "
              "÷ own floor: all input / the agent's own floor (its own schemas and its own, possibly offloaded, "
              "current turn): it differs per agent and ranks nothing. cacheable: the share of input a prompt cache "
              "would serve.")


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
    lines += ["", MODEL_DEPENDENT_NOTE, "", RATIO_NOTE]
    cheapest = [(task, info["cheapest"]) for task, info in summary.get("tasks", {}).items() if info.get("cheapest")]
    if cheapest:
        lines += ["", "### Cheapest per task among agents that finish, keep the goal and answer as completely as v1", "",
                  markdown_row(["task", "cheapest (raw input)", "cheapest (cache-weighted)", "agents that qualify"]),
                  markdown_row(["---"] * 4)]
        lines += [markdown_row([task, best["raw"] or "none", best["cached"] or "none", ", ".join(best["qualifying"]) or "-"])
                  for task, best in cheapest]
    leads = [(task, info["lead"]) for task, info in summary.get("tasks", {}).items() if info.get("lead")]
    if leads:
        lines += ["", "### v2's lead per task (v2 ÷ the cheapest peer that keeps the goal there and answers as completely "
                  "as v1; < 1: v2 is cheaper)", "",
                  markdown_row(["task", "cheapest goal-keeping peer", "v2 ÷ it", "cheapest with caching", "v2 ÷ it, with caching",
                                "v2 keeps the goal"]),
                  markdown_row(["---"] * 6)]
        lines += [markdown_row(lead_cells(task, lead)) for task, lead in leads]
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
    if summary.get("tasks"):
        lines += ["", "### Per task with prompt caching: cache-weighted input tokens (cacheable share; ÷ yardstick)", "",
                  markdown_row(["task", *agents]), markdown_row(["---"] * (len(agents) + 1))]
        for task, info in summary["tasks"].items():
            lines.append(markdown_row([task, *(_cached_cell(info, agent) for agent in agents)]))
    lines += break_even_lines(summary)
    notes = [f"- {agent}: {len(metrics['errors'])} run(s) failed with an error, e.g. {metrics['errors'][0]}"
             for agent, metrics in agents.items() if metrics.get("errors")]
    notes += [f"- {agent} skipped: {reason}" for agent, reason in summary.get("skipped", {}).items()]
    notes += [f"- {problem}" for problem in summary.get("problems", [])]
    if notes:
        lines += ["", "### Notes", "", *notes]
    return "\n".join(lines) + "\n"


def break_even_lines(summary: dict[str, Any]) -> list[str]:
    """When compaction pays: per task and scheme, the turn from which each agent's cumulative cost stays at or
    below v1's (``cost.break_even_by_scheme``); "never": still above at the last turn."""
    rows = [(task, scheme, found) for task, info in summary.get("tasks", {}).items()
            for scheme, found in (info.get("break_even_vs_v1") or {}).items() if found]
    if not rows:
        return []
    agents = list(dict.fromkeys(agent for _, _, found in rows for agent in found))
    lines = ["", f"### When compaction pays: the turn from which each agent's cumulative cost stays at or below "
             f"{REFERENCE_AGENT}'s (keep everything, with caching), per scheme", "",
             markdown_row(["task", "scheme", *agents]), markdown_row(["---"] * (len(agents) + 2))]
    for task, scheme, found in rows:
        lines.append(markdown_row([task, scheme, *("-" if agent not in found else "never" if found[agent] is None
                                                   else str(found[agent]) for agent in agents)]))
    return lines


def lead_cells(task: str, lead: dict[str, Any]) -> list[str]:
    """One row of the per-task lead table."""
    return [task, lead.get("peer") or "none keeps the goal", format_cell("input_vs_v1", lead.get("raw")),
            lead.get("cached_peer") or "-", format_cell("input_vs_v1", lead.get("cached")),
            "yes" if lead.get("v2_keeps_goal") else "no"]


def _cached_cell(info: dict[str, Any], agent: str) -> str:
    weighted = (info.get("cache_weighted_input_tokens") or {}).get(agent)
    if weighted is None:
        return "-"
    share = format_cell("cacheable_share", (info.get("cacheable_share") or {}).get(agent))
    limit = _ratio(info.get("total_input_tokens", {}).get(agent) or 0, (info.get("yardstick_tokens") or {}).get(agent) or 0)
    return f"{weighted:,} ({share}; {format_cell('input_vs_limit', limit)})"


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
    if key in RATIO_KEYS:
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    if key == "estimated_cost_usd":
        return f"{value:.4f}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)

