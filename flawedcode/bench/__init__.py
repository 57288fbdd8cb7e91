"""The benchmark: tasks as YAML, a runner that writes raw runs, and scoring that reads them back.

- ``tasks.py``: the task format, its validation and the built-in suite (``tasks/*.yaml``);
- ``checks.py``: the declarative checks (contains, regex, has_number, file_exists, not_contains);
- ``runner.py``: fresh agent per run, N runs per task, progress bar, threads, resumption;
- ``scoring.py``: runs.jsonl -> summary.json, results.md and a comparison chart;
- ``peers.py``: LangChain's SummarizationMiddleware and ContextEditingMiddleware, and Deep Agents,
  on the same model, tools and telemetry.

``run_benchmark(agents, task_names, tasks_file, runs, model, out_dir, concurrency, resume)``
runs and scores in one call and returns the Markdown table.
"""

from __future__ import annotations

from flawedcode.bench.checks import CheckResult, evaluate, goal_kept, numbers_in
from flawedcode.bench.peers import PEERS, deepagents_missing
from flawedcode.bench.runner import (
    BENCH_WINDOW_TOKENS,
    DEFAULT_AGENTS,
    KNOWN_AGENTS,
    bench_model,
    build_agent,
    read_runs,
    run,
    run_benchmark,
    run_one,
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
    "BENCH_WINDOW_TOKENS", "CHECK_KINDS", "Check", "CheckResult", "DEFAULT_AGENTS", "KNOWN_AGENTS", "PEERS",
    "Step", "Task", "TaskFileError", "bench_model", "build_agent", "builtin_task_files", "deepagents_missing",
    "evaluate", "goal_kept", "load_task_file", "load_tasks", "numbers_in", "parse_tasks", "read_runs",
    "render_markdown", "run", "run_benchmark", "run_one", "score", "summarize_runs",
]
