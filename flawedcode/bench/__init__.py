"""The benchmark: tasks as YAML, a runner that writes raw runs, and scoring that reads them back.

- ``tasks.py``: the task format, its validation and the built-in suite (``tasks/*.yaml``);
- ``checks.py``: the declarative checks (contains, regex, has_number, file_exists, not_contains);
- ``agent_specs.py``: which agents run: built-in names, peers, or your own ``file.py:Class``;
- ``peers.py``: LangChain's SummarizationMiddleware and ContextEditingMiddleware (at their defaults
  and tuned to v2's budget and counter), and Deep Agents, on the same model, tools and telemetry;
- ``field_peers.py``: the field's strategies as their authors document them (SWE-agent's
  LastNObservations, Anthropic's clear_tool_uses, OpenHands' condenser, Codex's compaction,
  JetBrains' mask-then-summarize hybrid);
- ``runner.py``: fresh agent per run, N runs per task, progress bar, threads, resumption, cost limit;
- ``probes.py``: was the goal (a planted fact) in what the model received at a probe, or recoverable;
- ``records.py``: the typed run record, and reading / appending runs.jsonl safely;
- ``scoring.py``: runs.jsonl -> summary.json (with ``metadata.py``'s block), results.md and a chart;
- ``cost.py``: the cost preview and ``--max-cost`` for real models.

``run_benchmark(agents, task_names, tasks_file, runs, model, out_dir, concurrency, resume, settings, max_cost_usd)``
runs and scores in one call and returns the Markdown table.
"""

from __future__ import annotations

from flawedcode.bench.agent_specs import (
    KNOWN_AGENTS,
    AgentEntry,
    AgentSpecError,
    build_agent,
    resolve_agent,
    resolve_agents,
    unavailable_agents,
)
from flawedcode.bench.checks import CheckResult, evaluate, goal_kept, numbers_in
from flawedcode.bench.cost import CostGuard, CostLimitReached, CostPreview, pricing_of
from flawedcode.bench.outdir import BenchOutputError
from flawedcode.bench.peers import PEERS, deepagents_missing
from flawedcode.bench.records import ProbeRecord, RunRecord, RunsFile, read_runs
from flawedcode.bench.runner import (
    BENCH_WINDOW_TOKENS,
    DEFAULT_AGENTS,
    SpendingDeclined,
    Suite,
    bench_model,
    is_offline,
    preview_cost,
    run,
    run_benchmark,
    run_one,
    run_suite,
)
from flawedcode.bench.scoring import render_markdown, score, summarize_runs
from flawedcode.bench.tasks import (
    CHECK_KINDS,
    Check,
    Step,
    Task,
    TaskFileError,
    builtin_task_files,
    load_task_file,
    load_tasks,
    parse_tasks,
)

__all__ = [
    "BENCH_WINDOW_TOKENS", "CHECK_KINDS", "AgentEntry", "AgentSpecError", "BenchOutputError", "Check", "CheckResult", "CostGuard",
    "CostLimitReached", "CostPreview", "DEFAULT_AGENTS", "KNOWN_AGENTS", "PEERS", "ProbeRecord", "RunRecord", "RunsFile",
    "SpendingDeclined", "Step", "Suite", "Task", "TaskFileError", "bench_model", "build_agent", "builtin_task_files",
    "deepagents_missing", "evaluate", "goal_kept", "is_offline", "load_task_file", "load_tasks", "numbers_in",
    "parse_tasks", "preview_cost", "pricing_of", "read_runs", "render_markdown", "resolve_agent", "resolve_agents", "run",
    "run_benchmark", "run_one", "run_suite", "score", "summarize_runs", "unavailable_agents",
]
