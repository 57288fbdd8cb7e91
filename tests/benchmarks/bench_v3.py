"""v3 against v1, v2 and the tuned LangChain summarizer: raw, cache-weighted and the shared yardstick.

Run:  python tests/benchmarks/bench_v3.py [--budgets 4096,8192,16384,32768] [--agents v1,v2,v3,...]

Two sessions, each at every budget (the offline model's window equals the budget):

- workload B: the lesson's first request, then 50 turns cycling docs and loads over
  the five dataframes, "What was my original goal?" every 10 turns;
- the long session: the built-in ``long_session`` task (a planted SOFR average, 50
  cycling turns, goal probes, the recall of the number).

Every model call is counted at the model boundary (summary and sub-agent calls too).
Columns: raw input ÷ v1's; cache-weighted input (``prompt_cache``, default scheme
``anthropic``: reads 0.1x, writes 1.25x) ÷ v1's cache-weighted; ÷ the task's yardstick
(``bench/yardstick.py``: the same number for every agent); load turns answered with every figure of
the full data (``figures`` checks); ÷ the agent's own floor (``oracle_input_tokens``: not comparable
between agents); calls over budget; peak; goal in context at the probes;
summary calls and their cacheable share (cached prefix ÷ input of the summary calls).
Then v3's own tasks (``flawedcode/bench/tasks/v3/``): the 12-step plan (the todo list in
every request after it was written, steps redone, compactions), the delegated datasets
(the parent's peak against v2's, transcripts found by ``search_archive``) and the memory
task (preferences recalled in a new conversation).
Conversation ids are fixed, so two runs print the same numbers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from flawedcode.bench.agent_specs import BUILTIN_AGENTS
from flawedcode.bench.checks import evaluate
from flawedcode.bench.probes import ProbeWatcher, probe_records
from flawedcode.bench.tasks import Step, Task, builtin_tasks_dir, load_task_file, load_tasks
from flawedcode.bench.yardstick import task_yardstick
from flawedcode.lessons import lesson_model
from flawedcode.prompt_cache import analyze
from flawedcode.tools import Workspace


def session(name: str) -> Task:
    """Workload B (its task file) or the built-in long session."""
    if name == "workload_b":
        return load_task_file(builtin_tasks_dir() / "workloads" / "workload_b.yaml")[0]
    return load_tasks([name])[0]


def run(name: str, task: Task, budget: int, folder: Path) -> dict:
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    config = BUILTIN_AGENTS[name].config_class(budget_tokens=budget) if hasattr(BUILTIN_AGENTS[name], "config_class") else None
    agent = BUILTIN_AGENTS[name](lesson_model("offline", budget), workspace=workspace, config=config,
                                 conversation_id=f"bench-v3-{name}-{budget}", name=name)
    watcher, kept, probes, failed, reached = ProbeWatcher(agent), 0, 0, None, None
    answers: list[float] = []
    steps: list[Step] = task.all_steps()
    for number, step in enumerate(steps, start=1):
        is_probe = step.probe == "goal"
        watcher.arm(is_probe)
        try:
            reply = agent.send(step.say)
        except Exception as error:  # noqa: BLE001 - a failed run is a row that says so
            failed, reached = f"turn {number}: {' '.join(str(error).split())[:100]}", number - 1
            break
        answers += [evaluate(check, reply, None).score or 0.0 for check in step.checks if check.figures is not None]
        if is_probe:
            probes += 1
            kept += all(record.in_context for record in probe_records(agent, watcher, number, "goal", [task.goal_text], reply))
    totals = agent.log.totals()
    caches = analyze(agent.log.calls)
    summary = [(call, cache) for call, cache in zip(agent.log.calls, caches) if call.purpose == "summary"]
    summary_input = sum(call.input_tokens for call, _ in summary)
    summary_cached = sum(cache.cached_tokens for _, cache in summary)
    loads = sum(1 for step in steps for check in step.checks if check.figures is not None)
    return {"raw": totals["input_tokens"], "cached": totals["cache_weighted_input_tokens"],
            "yardstick": task_yardstick(task).reached_tokens(reached),
            "complete": f"{sum(score == 1.0 for score in answers)}/{loads}",
            "limit": totals["oracle_input_tokens"], "over": totals["calls_over_budget"],
            "peak": totals["peak_context_tokens"], "kept": f"{kept}/{probes}", "summaries": len(summary),
            "summary_cacheable": summary_cached / summary_input if summary_input else None,
            "calls": totals["model_calls"], "failed": failed}


V3_TASKS_FILE = builtin_tasks_dir() / "v3" / "plan_isolate_remember.yaml"


def v3_tasks(budget: int, folder: Path) -> list[str]:
    """The three v3 tasks' probes, as lines: plan in view / redone, parent peak / transcripts, recalled."""
    tasks = {task.name: task for task in load_task_file(V3_TASKS_FILE)}
    lines = []
    agent = _agent("v3", budget, folder / "plan")
    requests: list[list] = []
    agent.recorder.observers.append(lambda purpose, messages, tools: requests.append(messages) if purpose == "agent" else None)
    replies = [agent.send(step.say) for step in tasks["plan_12_steps"].all_steps()]
    steps = [reply.split(":")[0] for reply in replies if reply.startswith("Step ")]
    compactions = sum(event.kind in ("digest", "consolidate", "summarize", "clear") for event in agent.events)
    in_view = sum(any("[Plan reminder: " in str(m.content) or any(c["name"] == "write_todos" for c in getattr(m, "tool_calls", None) or [])
                      for m in messages) for messages in requests[1:])
    lines.append(f"plan_12_steps at {budget:,}: todo list in {in_view}/{len(requests) - 1} requests after it was written; "
                 f"steps started {len(steps)}, distinct {len(set(steps))} (redone: {len(steps) - len(set(steps))}); "
                 f"compactions {compactions}; all done: {'12 of 12' in replies[-2]}")
    peaks = {}
    for name in ("v2", "v3"):
        agent = _agent(name, budget, folder / f"delegate-{name}")
        for step in tasks["delegate_datasets"].all_steps():
            agent.send(step.say)
        peaks[name] = max(call.input_tokens for call in agent.log.calls if call.purpose == "agent")
    runs = agent.subagents.runs
    found = sum(run.transcript_path in [hit.display_path for hit in agent.archive.search(run.description)] for run in runs)
    lines.append(f"delegate_datasets at {budget:,}: parent peak v3 {peaks['v3']:,} vs v2 {peaks['v2']:,} = "
                 f"{peaks['v3'] / peaks['v2']:.0%}; transcripts found by search_archive {found}/{len(runs)}; "
                 f"all calls {agent.log.totals()['model_calls']} (sub-agents' included)")
    agent, recalled, asked = _agent("v3", budget, folder / "memory"), 0, 0
    for step in tasks["memory_new_conversation"].all_steps():
        if step.new_conversation:
            agent.reset()
        reply = agent.send(step.say)
        if step.probe == "fact":
            asked += 1
            recalled += all(check.contains.lower() in reply.lower() for check in step.checks if check.contains)
    lines.append(f"memory_new_conversation at {budget:,}: {recalled}/{asked} preferences recalled in a new conversation")
    return lines


def _agent(name: str, budget: int, folder: Path):
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    config = BUILTIN_AGENTS[name].config_class(budget_tokens=budget)
    return BUILTIN_AGENTS[name](lesson_model("offline", budget), workspace=workspace, config=config,
                                conversation_id=f"bench-v3-{name}-{budget}", name=name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="4096,8192,16384,32768")
    parser.add_argument("--agents", default="v1,v2,lc-summarization-tuned,v3")
    parser.add_argument("--sessions", default="workload_b,long_session")
    parser.add_argument("--v3-tasks", default="8192", help="budgets for the plan, delegation and memory tasks ('' = none)")
    options = parser.parse_args()
    budgets = [int(value) for value in options.budgets.split(",")]
    agents = options.agents.split(",")
    header = ["session", "budget", "agent", "raw ÷ v1", "cached ÷ v1 cached", "÷ yardstick", "answers complete",
              "÷ own floor (not comparable)", "over budget", "peak",
              "goal kept", "summary calls", "summary cacheable", "calls", "failed"]
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    with tempfile.TemporaryDirectory(prefix="bench-v3-") as scratch:
        for session_name in options.sessions.split(","):
            task = session(name=session_name)
            for budget in budgets:
                results = {name: run(name, task, budget, Path(scratch) / f"{session_name}-{budget}-{name}")
                           for name in agents}
                base = results.get("v1")
                for name, result in results.items():
                    raw = f"{result['raw'] / base['raw']:.3f}" if base else "-"
                    cached = f"{result['cached'] / base['cached']:.3f}" if base else "-"
                    share = result["summary_cacheable"]
                    row = [session_name, f"{budget:,}", name, raw, cached, f"{result['raw'] / max(1, result['yardstick']):.2f}",
                           result["complete"], f"{result['raw'] / max(1, result['limit']):.2f}",
                           str(result["over"]), f"{result['peak']:,}", result["kept"], str(result["summaries"]),
                           f"{100 * share:.1f}%" if share is not None else "-", str(result["calls"]), result["failed"] or "-"]
                    print("| " + " | ".join(row) + " |", flush=True)
        for budget in [int(value) for value in options.v3_tasks.split(",") if value]:
            for line in v3_tasks(budget, Path(scratch) / f"v3-tasks-{budget}"):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
