"""Run the benchmark: every task, N fresh runs per agent, one JSON line per run.

Layout of ``out_dir`` (scoring reads it back; see ``scoring.py``)::

    runs.jsonl                              one RunRecord per line (see records.py), each step's reply in it
    transcripts/<agent>/<task>/<run>.json   messages (messages_to_dict) + the SessionLog
    workspaces/<agent>/<task>/<run>/        project/, scratch/, archives/ of that run
    cost-preview/                           the offline run behind a real model's cost preview
    summary.json, results.md, comparison.png   written by score() (the chart by the drawer it is given)

Rules:
- a fresh agent, workspace, scratch/ and archives/ for every run;
- every id the model can see is derived, never random: the conversation id (and
  so the archive paths and Deep Agents' thread and history file) is
  ``<agent>-<task>-<run>``; the offline model's tool-call ids hash what it saw;
  the same command gives the same numbers;
- the offline model for the bench is ``OfflineModel(max_input_tokens=8192,
  overflow="truncate")``: what falls out of its window is forgotten
  (the deterministic stand-in for context rot); any other spec string goes to
  ``get_model``;
- a failed turn (``ContextOverflowError`` or any other error) ends that run as
  failed, with the step in ``failed_step`` and one line in ``error``; the suite goes on;
- resumption: a run whose (agent, task, run) already has an error-free line in
  runs.jsonl is skipped; failed runs are run again (the last line wins); a
  line cut short by a crash is dropped and its run redone (records.py). Only
  runs made by the same suite are resumed: ``suite.json`` beside runs.jsonl
  records the model, the settings, a digest of the code (flawedcode's and any
  agent file's) and of each task; when one of them changed, runs.jsonl is set
  aside as ``runs.<date-time>.jsonl`` (nothing is deleted) and every run is made
  again, with one line saying what changed;
- ``concurrency > 1`` runs in threads (useful for real models, which wait on
  the network); lines are appended under a lock, so the file stays valid;
- ``max_cost_usd``: see ``cost.py`` (checked before every turn);
- ``out_dir`` is used only when the benchmark wrote it (a marker), by one benchmark at a
  time (a lock), and a full disk ends it in one line, resumable (see ``outdir.py``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import messages_to_dict
from tqdm import tqdm

from flawedcode.agents import BaseAgent
from flawedcode.bench.agent_specs import (
    AgentEntry,
    build_agent,
    configs_for,
    resolve_agents,
    unavailable_agents,
    v2_config_from,
)
from flawedcode.bench.checks import evaluate_step
from flawedcode.bench.cost import CostGuard, CostLimitReached, CostPreview, pricing_of
from flawedcode.bench.outdir import DISK_FULL, claim, disk_error
from flawedcode.bench.probes import ProbeWatcher, end_of_run_facts, probe_items, probe_records
from flawedcode.bench.records import (
    ProbeKind,
    ProbeRecord,
    RunKey,
    RunRecord,
    append_run,
    completed_runs,
    end_cleanly,
    read_runs,
    runs_path,
)
from flawedcode.bench.scoring import ChartDrawer, score
from flawedcode.bench.tasks import Step, Task, load_tasks
from flawedcode.bench.yardstick import task_yardstick
from flawedcode.config import AgentConfig, V2Config
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.infra.redact import redact_data
from flawedcode.models import ModelConfigError, ModelOptions, OfflineModel
from flawedcode.paths import write_atomically
from flawedcode.telemetry import EventKind
from flawedcode.tools import Workspace

BENCH_WINDOW_TOKENS = DEFAULT_BUDGET_TOKENS
DEFAULT_AGENTS = ("v0", "v1", "v2", "lc-summarization", "lc-context-editing")
PREVIEW_DIR = "cost-preview"
SUITE_FILE = "suite.json"


def bench_model(spec: str | ModelOptions | None) -> BaseChatModel:
    """The model for one run: whatever ``spec`` (else FLAWEDCODE_MODEL) names, else the 8K truncating offline model.
    A ModelOptions (the CLI's) brings --timeout, --record and --window too."""
    return ModelOptions.of(spec).build(default=lambda: OfflineModel(max_input_tokens=BENCH_WINDOW_TOKENS, overflow="truncate"))


def is_offline(spec: str | ModelOptions | None) -> bool:
    """True when no money is spent: the offline model, or a replay of a recording."""
    resolved = ModelOptions.of(spec).resolved_spec()
    return resolved in (None, "", "offline") or resolved.startswith(("offline:", "replay:"))


class Suite:
    """What one benchmark runs: agents (resolved), tasks, runs, the model, per-agent configs."""

    def __init__(self, agents: Iterable[str | AgentEntry], tasks: list[Task], runs: int, model: str | ModelOptions | None = None,
                 settings: dict[str, Any] | None = None, settings_source: str = "config") -> None:
        self.entries = resolve_agents(list(agents))
        self.tasks = tasks
        self.runs = runs
        self.model = model
        self.settings = settings
        self.configs: dict[str, AgentConfig | None] = configs_for(self.entries, settings, settings_source)
        self.v2_config: V2Config | None = v2_config_from(settings, settings_source)
        self.skipped = unavailable_agents(self.entries)

    @property
    def runnable(self) -> list[AgentEntry]:
        return [entry for entry in self.entries if entry.name not in self.skipped]

    def todo(self, done: set[RunKey]) -> list[tuple[Task, AgentEntry, int]]:
        return [(task, entry, number) for entry in self.runnable for task in self.tasks for number in range(1, self.runs + 1)
                if RunKey(entry.name, task.name, number) not in done]

    def offline(self) -> Suite:
        """The same suite on the offline model (for the cost preview)."""
        twin = Suite(self.entries, self.tasks, self.runs, "offline")  # not None: that would mean FLAWEDCODE_MODEL
        twin.configs, twin.v2_config, twin.skipped = self.configs, self.v2_config, self.skipped
        return twin


# --- one run ------------------------------------------------------------------------

def suite_identity(suite: Suite) -> dict[str, Any]:
    """What decides a run's numbers besides its (agent, task, run): the model, the settings, the code, each task."""
    package = Path(__file__).resolve().parents[1]
    sources = sorted(package.rglob("*.py")) + sorted(path for path in (package / "prompts").rglob("*") if path.is_file())
    code = hashlib.sha256()
    for path in dict.fromkeys(sources):
        code.update(path.read_bytes())
    for entry in suite.entries:
        code.update(class_code(entry.agent_class))
    options = ModelOptions.of(suite.model)
    return {"model": f"{options.resolved_spec() or 'offline'} (window {options.window_tokens or 'default'})",
            "settings": _digest(json.dumps(suite.settings or {}, sort_keys=True, default=str)),
            "code": code.hexdigest()[:16],
            "tasks": {task.name: _digest(task.model_dump_json()) for task in suite.tasks}}


def class_code(agent_class: type) -> bytes:
    """What an agent class runs: its file, or (a class defined in a notebook cell has none) its methods' code."""
    try:
        return Path(inspect.getfile(agent_class)).resolve().read_bytes()
    except (TypeError, OSError):
        functions = [value for cls in agent_class.__mro__ for value in vars(cls).values() if inspect.isfunction(value)]
        return b"".join(function.__code__.co_code + repr(function.__code__.co_consts).encode() for function in functions)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def set_aside_other_suites(suite: Suite, out_dir: Path) -> None:
    """Keep runs.jsonl only if the same suite made it; else move it aside (never delete) and say why."""
    identity, suite_file, runs = suite_identity(suite), out_dir / SUITE_FILE, runs_path(out_dir)
    try:
        before = json.loads(suite_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = None
    changed = _what_changed(before, identity)
    if changed and runs.exists():
        aside = runs.with_name(f"runs.{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl")
        runs.rename(aside)
        print(f"{runs}: made with {changed}; set aside as {aside.name}, and every run is made again", file=sys.stderr)
    if not changed:
        identity["tasks"] = {**before.get("tasks", {}), **identity["tasks"]}  # a run of fewer tasks keeps the others
    write_atomically(suite_file, json.dumps(identity, indent=1, sort_keys=True) + "\n")


def _what_changed(before: Any, now: dict[str, Any]) -> str:
    """'' when ``before`` is the same suite; else what differs, in words."""
    if not isinstance(before, dict):
        return "no record of its suite (an older flawedcode)"
    changes = [f"another {key} ({before.get(key)} -> {now[key]})" if key == "model" else f"other {key}"
               for key in ("model", "settings", "code") if before.get(key) != now[key]]
    old_tasks = before.get("tasks") if isinstance(before.get("tasks"), dict) else {}
    edited = sorted(name for name, digest in now["tasks"].items() if name in old_tasks and old_tasks[name] != digest)
    changes += [f"other steps for task {name}" for name in edited[:3]]
    return ", ".join(changes).replace("other code", "other code (flawedcode or an agent file changed)")


def run_one(task: Task, entry: AgentEntry | str, run: int, out_dir: Path, model_spec: str | ModelOptions | None = None,
            config: AgentConfig | None = None, v2_config: V2Config | None = None,
            guard: CostGuard | None = None) -> RunRecord:
    """Run one task once with a fresh agent; write its transcript; return its record.

    ``CostLimitReached`` (from ``guard``, before a turn) propagates: that run is abandoned, not recorded.
    """
    out_dir = Path(out_dir)
    entry = entry if isinstance(entry, AgentEntry) else resolve_agents([entry])[0]
    workspace = _fresh_workspace(out_dir / "workspaces" / entry.name / task.name / str(run))
    agent = build_agent(entry, bench_model(model_spec), workspace, f"{entry.name}-{task.name}-{run}", config, v2_config)
    watcher = ProbeWatcher(agent)
    started = time.perf_counter()
    checks, probes, wrapper_per_turn, replies = [], [], [], []
    error, failed_step = None, None
    steps = task.all_steps()
    for step_number, step in enumerate(steps):
        if guard is not None:
            guard.check(agent.log.totals()["estimated_cost_usd"] or 0.0)
        before = wrapper_overhead_seconds(agent)
        watcher.arm(step.probe is not None)
        if step.new_conversation:
            agent.reset()  # a new conversation in the same workspace (memory across conversations)
        try:
            reply = agent.send(step.say)
        except Exception as failure:  # one failed turn ends the run; the record says where and why
            error, failed_step = " ".join(f"step {step_number}: {failure}".split()), step_number
            break
        wrapper_per_turn.append(round(wrapper_overhead_seconds(agent) - before, 6))
        replies.append(redact_data(reply)[0] if isinstance(reply, str) else str(reply))  # as the user saw it
        checks += [result.to_dict() for result in evaluate_step(step.checks, reply, workspace.root, step_number)]
        if step.probe is not None:
            items = probe_items(step.probe, task.goal_text, task.facts, [check.contains for check in step.checks if check.contains])
            probes += probe_records(agent, watcher, step_number, step.probe, items, reply)
    if failed_step is not None:
        probes += [unreached for number, step in enumerate(steps) if number >= failed_step and step.probe is not None
                   for unreached in unreached_probes(task, number, step.probe, step)]
        checks += [unreached_check(number, check) for number, step in enumerate(steps) if number >= failed_step
                   for check in step.checks if check.figures is not None]
    transcript = _write_transcript(out_dir, agent, task.name, run)
    goal_answers = [probe.answered for probe in probes if probe.kind == "goal"]
    return RunRecord(
        agent=entry.name, task=task.name, run=run, category=task.category, model=agent.model_name,
        budget_tokens=agent.budget_tokens,
        success=error is None and all(check["passed"] for check in checks) and all(goal_answers),
        error=error, failed_step=failed_step, checks=checks, replies=replies,
        yardstick_tokens=task_yardstick(task).reached_tokens(failed_step), probes=probes,
        facts=end_of_run_facts(agent, task.facts), totals=agent.log.totals(), turns=len(wrapper_per_turn),
        fixed_tokens=measured_fixed_tokens(agent),
        summary_tokens=sum(call.input_tokens + call.output_tokens for call in agent.log.calls if call.purpose == "summary"),
        masks=agent.log.count(EventKind.MASK), wrapper_seconds=round(wrapper_overhead_seconds(agent), 6),
        wrapper_seconds_per_turn=wrapper_per_turn, seconds=round(time.perf_counter() - started, 4),
        settings=agent.settings(), transcript=str(transcript.relative_to(out_dir)),
    )


def unreached_probes(task: Task, step_number: int, kind: ProbeKind, step: Step) -> list[ProbeRecord]:
    """Probes of a step the run never reached: misses."""
    items = probe_items(kind, task.goal_text, task.facts, [check.contains for check in step.checks if check.contains])
    return [ProbeRecord(step=step_number, kind=kind, text=item, in_context=False, recoverable=False, answered=False,
                        reached=False) for item in items]


def unreached_check(step_number: int, check: Any) -> dict[str, Any]:
    """A figures check of a step the run never reached: nothing stated (an agent does not score by stopping)."""
    return {"step": step_number, "kind": "figures", "expected": check.expected, "passed": False, "score": 0.0,
            "note": "not reached: the run failed earlier"}


def measured_fixed_tokens(agent: BaseAgent) -> int:
    """What every agent request carried besides the messages (system prompt and tool schemas), as measured."""
    measured = [call.fixed_tokens for call in agent.log.agent_calls() if call.fixed_tokens is not None]
    return max(measured, default=agent.fixed_tokens)


def wrapper_overhead_seconds(agent: BaseAgent) -> float:
    """Seconds spent in context wrappers and telemetry, not counting summary model calls."""
    return agent.log.wrapper_seconds  # the log already leaves summary model calls out


def _fresh_workspace(run_dir: Path) -> Workspace:
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a failed run being retried; workspaces/ is ours (the marker rule, outdir.py)
    return Workspace.create(run_dir / "project", scratch_dir=run_dir / "scratch", archive_dir=run_dir / "archives")


def _write_transcript(out_dir: Path, agent: BaseAgent, task: str, run: int) -> Path:
    path = out_dir / "transcripts" / agent.log.agent_name / task / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"messages": messages_to_dict(agent.messages), "log": agent.log.to_dict(),
                "workspace": str(agent.workspace.root)}
    document = redact_data(json.loads(json.dumps(document, default=str)))[0]  # secrets never reach disk
    write_atomically(path, json.dumps(document, indent=1, default=str))
    return path


# --- many runs ----------------------------------------------------------------------

def run(agents: Iterable[str | AgentEntry], tasks: list[Task], runs: int, out_dir: str | Path, model: str | ModelOptions | None = None,
        concurrency: int = 1, resume: bool = True, progress: bool = True,
        on_record: Callable[[RunRecord], None] | None = None, settings: dict[str, Any] | None = None,
        max_cost_usd: float | None = None) -> list[dict[str, Any]]:
    """Run every (agent, task, run) not already done; append each record to runs.jsonl; return the new ones (as dicts).

    Problems found in an existing runs.jsonl are reported on stderr, one line each.
    """
    suite = Suite(agents, tasks, runs, model, settings)
    return [record.to_dict() for record in run_suite(suite, out_dir, concurrency, resume, progress, on_record, max_cost_usd)]


def run_suite(suite: Suite, out_dir: str | Path, concurrency: int = 1, resume: bool = True, progress: bool = True,
              on_record: Callable[[RunRecord], None] | None = None, max_cost_usd: float | None = None) -> list[RunRecord]:
    """``run`` for an already-resolved suite; returns the new records."""
    with claim(out_dir):  # ours, and no other benchmark writing there (see outdir.py)
        return _run_suite(suite, Path(out_dir), concurrency, resume, progress, on_record, max_cost_usd)


def _run_suite(suite: Suite, out_dir: Path, concurrency: int, resume: bool, progress: bool,
               on_record: Callable[[RunRecord], None] | None, max_cost_usd: float | None) -> list[RunRecord]:
    if not resume and runs_path(out_dir).exists():
        runs_path(out_dir).unlink()
    if resume:
        set_aside_other_suites(suite, out_dir)
    existing = read_runs(out_dir)
    for problem in existing.problems:
        print(problem, file=sys.stderr)
    end_cleanly(out_dir)
    todo = suite.todo(completed_runs(existing) if resume else set())
    guard = CostGuard(max_cost_usd) if max_cost_usd is not None else None
    lock = threading.Lock()
    records: list[RunRecord] = []

    def one(task: Task, entry: AgentEntry, number: int) -> RunRecord:
        return run_one(task, entry, number, out_dir, suite.model, suite.configs.get(entry.name), suite.v2_config, guard)

    def keep(record: RunRecord) -> None:
        with lock:
            append_run(out_dir, record)
            records.append(record)
        if guard is not None:
            guard.add_finished(record.totals.get("estimated_cost_usd") or 0.0)
        if on_record:
            on_record(record)

    bar = tqdm(total=len(todo), desc="benchmark", unit="run", file=sys.stderr, disable=not progress)
    try:
        if concurrency <= 1:
            for task, entry, number in todo:
                bar.set_postfix_str(f"{entry.name} {task.name} #{number}")
                keep(one(task, entry, number))
                bar.update()
        else:
            _run_in_threads(todo, one, keep, bar, concurrency)
    finally:
        bar.close()
    return records


def _run_in_threads(todo: list[tuple[Task, AgentEntry, int]], one: Callable[..., RunRecord],
                    keep: Callable[[RunRecord], None], bar: tqdm, concurrency: int) -> None:
    stop: CostLimitReached | None = None
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(one, *item) for item in todo]
        for future in as_completed(futures):
            try:
                keep(future.result())
            except CostLimitReached as reached:
                stop = stop or reached
                for pending in futures:
                    pending.cancel()
            bar.update()
    if stop is not None:
        raise stop


def preview_cost(suite: Suite, out_dir: str | Path, progress: bool = False) -> CostPreview:
    """Run the same suite on the offline model (into out_dir/cost-preview, resumable) and price it for ``suite.model``."""
    preview_dir = Path(out_dir) / PREVIEW_DIR
    run_suite(suite.offline(), preview_dir, progress=progress)
    wanted = {RunKey(entry.name, task.name, number) for task, entry, number in suite.todo(set())}
    records = [record for record in read_runs(preview_dir).records if record.key in wanted]
    return CostPreview(
        model_spec=str(suite.model), runs=len(records),
        calls=sum(record.totals.get("model_calls", 0) for record in records),
        input_tokens=sum(record.totals.get("input_tokens", 0) for record in records),
        output_tokens=sum(record.totals.get("output_tokens", 0) for record in records),
        pricing=pricing_of(str(suite.model)),
        cached_input_tokens=sum(record.totals.get("cached_input_tokens", 0) for record in records),
        cache_write_tokens=sum(record.totals.get("cache_write_tokens", 0) for record in records),
    )


class SpendingDeclined(Exception):
    """The cost preview was shown and the answer was no: nothing was sent to the model."""


def run_benchmark(agents: Iterable[str | AgentEntry] = DEFAULT_AGENTS, task_names: list[str] | None = None,
                  tasks_file: str | Path | None = None, runs: int = 3, model: str | ModelOptions | None = None,
                  out_dir: str | Path = "results/bench", concurrency: int = 1, resume: bool = True,
                  settings: dict[str, Any] | None = None, settings_source: str = "config",
                  max_cost_usd: float | None = None, before_spending: Callable[[CostPreview], bool] | None = None,
                  progress: bool = True, chart: ChartDrawer | None = None) -> str:
    """Run, then score: returns the Markdown results table (also written to out_dir/results.md).

    ``chart``: what draws comparison.png from the summary (``flawedcode bench`` passes
    ``flawedcode.charts.save_comparison_chart``); None draws none.

    ``settings``: one mapping of agent settings (a YAML config, read as ``chat`` reads it).
    ``before_spending``: with a model that is not offline, called with the cost preview first;
    a false answer raises ``SpendingDeclined`` before anything is sent.
    When ``max_cost_usd`` stops the run, the finished runs are scored and ``CostLimitReached``
    is raised with the table on its ``table`` attribute.
    """
    tasks = load_tasks(task_names, tasks_file)
    suite = Suite(list(agents), tasks, runs, model, settings, settings_source)
    try:
        with claim(out_dir):
            return _run_and_score(suite, tasks, model, out_dir, concurrency, resume, max_cost_usd, before_spending, progress,
                                  chart)
    except OSError as error:
        if error.errno not in DISK_FULL:
            raise
        raise disk_error(Path(out_dir), error) from None


def _run_and_score(suite: Suite, tasks: list[Task], model: str | ModelOptions | None, out_dir: str | Path,
                   concurrency: int, resume: bool, max_cost_usd: float | None,
                   before_spending: Callable[[CostPreview], bool] | None, progress: bool, chart: ChartDrawer | None) -> str:
    if max_cost_usd is not None and not is_offline(model) and not pricing_of(str(model)).profile.priced:
        raise ModelConfigError(f"--max-cost needs the model's prices, and none are known for {model}; "
                               "run without --max-cost, or with a model listed in flawedcode/models/profiles.py")
    if before_spending is not None and not is_offline(model):
        bench_model(model)  # a bad spec, a missing key or an unreachable server fails here, before anything runs
        if not before_spending(preview_cost(suite, out_dir)):
            raise SpendingDeclined("nothing was sent to the model")
    names = [entry.name for entry in suite.entries]
    try:
        run_suite(suite, out_dir, concurrency=concurrency, resume=resume, progress=progress, max_cost_usd=max_cost_usd)
    except CostLimitReached as reached:
        reached.table = score(out_dir, agents=names, tasks=tasks, skipped=suite.skipped, chart=chart)
        raise
    return score(out_dir, agents=names, tasks=tasks, skipped=suite.skipped, chart=chart)
