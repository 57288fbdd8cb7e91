"""Run the benchmark: every task, N fresh runs per agent, one JSON line per run.

Layout of ``out_dir`` (scoring reads it back; see ``scoring.py``)::

    runs.jsonl                              one line per run (below)
    transcripts/<agent>/<task>/<run>.json   messages (messages_to_dict) + the SessionLog
    workspaces/<agent>/<task>/<run>/        project/, scratch/, archives/ of that run
    summary.json, results.md, comparison.png   written by score()

A run line holds: agent, task, category, run, model, success, checks (one per
check: step, kind, expected, passed), goal_probes (step, turn, kept), facts (fact,
in_context, in_archive: in the archive or an offloaded scratch file), totals
(``SessionLog.totals()``), summary_tokens (input + output of summary calls),
masks (observation-masking events), fixed_tokens, turns, wrapper_seconds,
wrapper_seconds_per_turn, seconds, transcript (path relative to out_dir) and
error (None, or one line when a turn failed).

Rules:
- a fresh agent, workspace, scratch/ and archives/ for every run;
- the offline model for the bench is ``OfflineModel(max_input_tokens=8192,
  overflow="truncate")``: what falls out of its window is forgotten
  (the deterministic stand-in for context rot); any other spec string goes to
  ``get_model``;
- resumption: a run whose (agent, task, run) already has an error-free line in
  runs.jsonl is skipped; failed runs are run again (the last line wins);
- ``concurrency > 1`` runs in threads (useful for real models, which wait on
  the network); lines are appended under a lock, so the file stays valid.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, messages_to_dict
from tqdm import tqdm

from flawedcode.agents import AGENTS, BaseAgent, make_agent
from flawedcode.bench.checks import evaluate, goal_kept
from flawedcode.bench.peers import PEERS, deepagents_missing
from flawedcode.bench.tasks import Task, load_tasks
from flawedcode.models import ModelOptions, OfflineModel
from flawedcode.paths import write_atomically
from flawedcode.tools import Workspace

BENCH_WINDOW_TOKENS = 8_192
DEFAULT_AGENTS = ("v0", "v1", "v2", "lc-summarization", "lc-context-editing")
KNOWN_AGENTS = (*AGENTS, *PEERS)
RUNS_FILE = "runs.jsonl"


@dataclass(frozen=True)
class RunKey:
    agent: str
    task: str
    run: int


def bench_model(spec: str | ModelOptions | None) -> BaseChatModel:
    """The model for one run: whatever ``spec`` (else FLAWEDCODE_MODEL) names, else the 8K truncating offline model.
    A ModelOptions (the CLI's) brings --timeout, --record and --window too."""
    return ModelOptions.of(spec).build(default=lambda: OfflineModel(max_input_tokens=BENCH_WINDOW_TOKENS, overflow="truncate"))


def unavailable_agents(agents: Iterable[str]) -> dict[str, str]:
    """Agents that cannot run here, with the reason (shown as a note in the table)."""
    notes: dict[str, str] = {}
    for agent in agents:
        if agent not in KNOWN_AGENTS:
            raise ValueError(f"Unknown agent {agent!r}; choose from: {', '.join(KNOWN_AGENTS)}")
        if agent == "deepagents" and (reason := deepagents_missing()):
            notes[agent] = reason
    return notes


def build_agent(agent: str, model: BaseChatModel, workspace: Workspace, conversation_id: str) -> BaseAgent:
    if agent in PEERS:
        return PEERS[agent](model, workspace=workspace, conversation_id=conversation_id, name=agent)
    return make_agent(agent, model=model, workspace=workspace, conversation_id=conversation_id, name=agent)


# --- one run ------------------------------------------------------------------------

def run_one(task: Task, agent_name: str, run: int, out_dir: Path, model_spec: str | None = None) -> dict[str, Any]:
    """Run one task once with a fresh agent; write its transcript; return its runs.jsonl record."""
    out_dir = Path(out_dir)
    workspace = _fresh_workspace(out_dir / "workspaces" / agent_name / task.name / str(run))
    agent = build_agent(agent_name, bench_model(model_spec), workspace, f"{agent_name}-{task.name}-{run}")
    started = time.perf_counter()
    checks, probes, wrapper_per_turn, error = [], [], [], None
    for step_number, step in enumerate(task.all_steps()):
        before = wrapper_overhead_seconds(agent)
        try:
            reply = agent.send(step.say)
        except Exception as failure:  # one failed turn ends the run; the record says why
            error = f"step {step_number}: {failure}"
            break
        wrapper_per_turn.append(round(wrapper_overhead_seconds(agent) - before, 6))
        checks += [evaluate(check, reply, workspace.root, step_number).to_dict() for check in step.checks]
        if step.probe == "goal":
            probes.append({"step": step_number, "turn": step_number + 1, "kept": goal_kept(reply, task.goal_text)})
    transcript = _write_transcript(out_dir, agent, task.name, run)
    success = error is None and all(check["passed"] for check in checks) and all(probe["kept"] for probe in probes)
    return {
        "agent": agent_name, "task": task.name, "category": task.category, "run": run,
        "model": agent.model_name, "budget_tokens": agent.budget_tokens,
        "success": success, "checks": checks, "goal_probes": probes,
        "facts": fact_retention(agent, task.facts),
        "totals": agent.log.totals(), "turns": len(wrapper_per_turn),
        "summary_tokens": sum(call.input_tokens + call.output_tokens for call in agent.log.calls if call.purpose == "summary"),
        "masks": agent.log.count("mask"),
        "fixed_tokens": agent.fixed_tokens,
        "wrapper_seconds": round(wrapper_overhead_seconds(agent), 6),
        "wrapper_seconds_per_turn": wrapper_per_turn,
        "seconds": round(time.perf_counter() - started, 4),
        "transcript": str(transcript.relative_to(out_dir)), "error": error,
    }


def wrapper_overhead_seconds(agent: BaseAgent) -> float:
    """Seconds spent in context wrappers and telemetry, not counting summary model calls."""
    return agent.log.wrapper_seconds  # the log already leaves summary model calls out


def fact_retention(agent: BaseAgent, facts: list[str]) -> list[dict[str, Any]]:
    """For each planted fact: is it still in the context, and is it in the archive or an offloaded file?"""
    context_text = _texts(agent.messages)
    archive = getattr(agent, "archive", None)
    stored_text = _texts(archive.messages()) if archive is not None else ""
    stored_text += "\n".join(path.read_text(encoding="utf-8", errors="replace")
                             for path in sorted(agent.workspace.scratch_dir.glob("*")) if path.is_file())
    folded_context, folded_stored = context_text.casefold(), stored_text.casefold()
    return [{"fact": fact, "in_context": fact.casefold() in folded_context,
             "in_archive": fact.casefold() in folded_stored} for fact in facts]


def _texts(messages: Iterable[BaseMessage]) -> str:
    return "\n".join(message.content if isinstance(message.content, str) else json.dumps(message.content)
                     for message in messages)


def _fresh_workspace(run_dir: Path) -> Workspace:
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a failed run being retried; everything under out_dir is ours
    return Workspace.create(run_dir / "project", scratch_dir=run_dir / "scratch", archive_dir=run_dir / "archives")


def _write_transcript(out_dir: Path, agent: BaseAgent, task: str, run: int) -> Path:
    path = out_dir / "transcripts" / agent.log.agent_name / task / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"messages": messages_to_dict(agent.messages), "log": agent.log.to_dict(),
                "workspace": str(agent.workspace.root)}
    write_atomically(path, json.dumps(document, indent=1, default=str))
    return path


# --- many runs ----------------------------------------------------------------------

def completed_runs(out_dir: Path) -> set[RunKey]:
    """Runs already recorded without an error in ``out_dir/runs.jsonl``."""
    return {RunKey(record["agent"], record["task"], record["run"])
            for record in read_runs(out_dir) if not record.get("error")}


def read_runs(out_dir: Path) -> list[dict[str, Any]]:
    """Every record in runs.jsonl, the last one winning when a run was repeated."""
    path = Path(out_dir) / RUNS_FILE
    if not path.exists():
        return []
    latest: dict[RunKey, dict[str, Any]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            print(f"{path}: line {number} is not valid JSON (an interrupted write?); ignored", file=sys.stderr)
            continue
        latest[RunKey(record["agent"], record["task"], record["run"])] = record
    return list(latest.values())


def run(agents: Iterable[str], tasks: list[Task], runs: int, out_dir: str | Path, model: str | None = None,
        concurrency: int = 1, resume: bool = True, progress: bool = True,
        on_record: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every (agent, task, run) not already done; append each record to runs.jsonl; return the new ones."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    agents = [agent for agent in agents if agent not in unavailable_agents(agents)]
    if not resume and (out_dir / RUNS_FILE).exists():
        (out_dir / RUNS_FILE).unlink()
    done = completed_runs(out_dir) if resume else set()
    todo = [(task, agent, number) for agent in agents for task in tasks for number in range(1, runs + 1)
            if RunKey(agent, task.name, number) not in done]
    lock = threading.Lock()
    records: list[dict[str, Any]] = []

    def keep(record: dict[str, Any]) -> None:
        with lock, (out_dir / RUNS_FILE).open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")
        records.append(record)
        if on_record:
            on_record(record)

    bar = tqdm(total=len(todo), desc="benchmark", unit="run", file=sys.stderr, disable=not progress)
    if concurrency <= 1:
        for task, agent, number in todo:
            bar.set_postfix_str(f"{agent} {task.name} #{number}")
            keep(run_one(task, agent, number, out_dir, model))
            bar.update()
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(run_one, task, agent, number, out_dir, model) for task, agent, number in todo]
            for future in as_completed(futures):
                keep(future.result())
                bar.update()
    bar.close()
    return records


def run_benchmark(agents: Iterable[str] = DEFAULT_AGENTS, task_names: list[str] | None = None,
                  tasks_file: str | Path | None = None, runs: int = 3, model: str | None = None,
                  out_dir: str | Path = "results/bench", concurrency: int = 1, resume: bool = True) -> str:
    """Run, then score: returns the Markdown results table (also written to out_dir/results.md)."""
    from flawedcode.bench.scoring import score

    agents = list(agents)
    tasks = load_tasks(task_names, tasks_file)
    run(agents, tasks, runs, out_dir, model=model, concurrency=concurrency, resume=resume)
    return score(out_dir, agents=agents, tasks=tasks)
