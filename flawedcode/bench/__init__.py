"""The benchmark: tasks as YAML, a runner that writes raw runs, and scoring that reads them back.

- ``tasks.py``: the task format, its validation and the built-in suite (``tasks/*.yaml``);
- ``checks.py``: the declarative checks (contains, regex, has_number, file_exists, not_contains);
- ``agent_specs.py``: which agents run: built-in names, peers, or your own ``file.py:Class``;
- ``peers.py``: LangChain's SummarizationMiddleware and ContextEditingMiddleware (at their defaults
  and tuned to v2's budget and counter), and Deep Agents, on the same model, tools and telemetry;
- ``field_peers.py``: the field's strategies as their authors document them (SWE-agent's
  LastNObservations, Anthropic's clear_tool_uses, OpenHands' condenser, Codex's compaction,
  JetBrains' mask-then-summarize hybrid);
- ``budget_peers.py``: the peers that show the model its budget (Anthropic's context awareness, Codex's
  model-managed context windows: notes, searchable history, ``new_context``);
- ``runner.py``: fresh agent per run, N runs per task, progress bar, threads, resumption, cost limit;
- ``probes.py``: was the goal (a planted fact) in what the model received at a probe, or recoverable;
- ``records.py``: the typed run record, and reading / appending runs.jsonl safely;
- ``scoring.py``: runs.jsonl -> summary.json (with ``metadata.py``'s block), results.md and a chart;
- ``cost.py``: the cost preview and ``--max-cost`` for real models.

``run_benchmark(agents, task_names, tasks_file, runs, model, out_dir, concurrency, resume, settings, max_cost_usd)``
runs and scores in one call and returns the Markdown table.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, tuple[str, ...]] = {  # module -> the names this package gives from it
    "agent_specs": (
        "KNOWN_AGENTS", "AgentEntry", "AgentSpecError", "build_agent", "resolve_agent", "resolve_agents",
        "unavailable_agents",
    ),
    "checks": ("CheckResult", "evaluate", "evaluate_step", "goal_kept", "numbers_in"),
    "cost": ("CostGuard", "CostLimitReached", "CostPreview", "pricing_of"),
    "outdir": ("BenchOutputError",),
    "peers": ("PEERS", "deepagents_missing"),
    "records": ("ProbeRecord", "RunRecord", "RunsFile", "read_runs"),
    "runner": (
        "BENCH_WINDOW_TOKENS", "DEFAULT_AGENTS", "SpendingDeclined", "Suite", "bench_model", "is_offline",
        "preview_cost", "run", "run_benchmark", "run_one", "run_suite",
    ),
    "scoring": ("render_markdown", "score", "summarize_runs"),
    "tasks": (
        "CHECK_KINDS", "Check", "Step", "Task", "TaskFileError", "builtin_task_files", "load_task_file", "load_tasks",
        "parse_tasks",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:  # PEP 562: each name is imported from its module on first use
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'flawedcode.bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"flawedcode.bench.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value
