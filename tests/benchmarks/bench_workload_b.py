"""Workload B on the offline model: v1, v2 and every peer, with every model call counted.

Run:  python tests/benchmarks/bench_workload_b.py

Workload B: the lesson's first request ("List ChartBook dataframes"), then 50
turns cycling docs and loads over the five ChartBook dataframes (docs of 2,700
to 5,500 characters; 30- and 50-row tables of about 8 numeric columns), with
"What was my original goal?" every 10 turns. The model is the deterministic
``OfflineModel`` with an 8,192-token window (``overflow="truncate"``: what falls
out of the window is forgotten). Every count is an exact o200k count of what
each call sent (system prompt, tool schemas, messages), taken at the model
boundary by the agent's ``ModelCallRecorder``: the agent's own calls, summary
calls and anything a library does internally (Deep Agents' included).

Agents: the benchmark's lineup (see flawedcode/bench/peers.py and field_peers.py for
each peer's exact settings), plus two variants from the course's notes (LangChain
summarization keeping 2,000 tokens; context editing at 80% of the window).
Conversation ids are fixed, so two runs print the same numbers.

Columns: total input tokens (all calls) and its ratio to v1; peak request;
calls over the budget; summary and internal calls; "goal in context": probes at
which the goal was verbatim in what the model received (cut to its window);
"goal answered": probes whose reply held it (depends on the model); the fixed
cost per call (system prompt + tool schemas, as measured); the summary calls'
share of all tokens; the wrappers' own time per turn around turn 5 and turn 50.
A run that fails stops there: its row says at which turn.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flawedcode.agents import BaseAgent
from flawedcode.bench.agent_specs import BUILTIN_AGENTS
from flawedcode.bench.field_peers import FIELD_PEERS
from flawedcode.bench.peers import LangChainContextEditingPeer, LangChainSummarizationPeer, deepagents_missing
from flawedcode.bench.probes import ProbeWatcher, probe_records
from flawedcode.bench.runner import bench_model, measured_fixed_tokens, wrapper_overhead_seconds
from flawedcode.bench.tasks import GOAL_QUESTION
from flawedcode.tools import Workspace

WINDOW = 8_192
FIRST_REQUEST = "List ChartBook dataframes"
CYCLE_TURNS = 50
GOAL_EVERY = 10
CYCLE = [
    "Get docs for yield_curve/repo_public",
    "Load 30 rows of repo_public with columns sofr, bgcr, tgcr, effr, iorb, on_rrp_rate and sofr_volume_bn",
    "Get docs for treasury_yields",
    "Load 50 rows of treasury_yields with columns yield_1m, yield_3m, yield_6m, yield_1y, yield_2y, yield_5y, yield_10y and yield_30y",
    "Get docs for fed_yield_curve",
    "Load 30 rows of fed_yield_curve with columns SVENY01, SVENY02, SVENY05, SVENY10, SVENY20, SVENY30 and BETA0",
    "Get docs for money_markets/sofr",
    "Load 50 rows of SOFR data",
    "Get docs for money_markets/effr",
    "Load 50 rows of EFFR data",
]
LINEUP = ["v1", "v2", "lc-summarization", "lc-summarization-tuned", "lc-context-editing", "lc-context-editing-tuned", "deepagents",
          *FIELD_PEERS]

AgentFactory = Callable[[Workspace, str], BaseAgent]


def lineup_factory(name: str) -> AgentFactory:
    return lambda workspace, conversation: BUILTIN_AGENTS[name](bench_model(None), workspace=workspace,
                                                               conversation_id=conversation, name=name)


STRATEGIES: list[tuple[str, AgentFactory]] = [(name, lineup_factory(name)) for name in LINEUP] + [
    ("lc-summarization, keep 2,000 tokens (course notes)",
     lambda ws, conversation: LangChainSummarizationPeer(bench_model(None), workspace=ws, conversation_id=conversation,
                                                         keep=("tokens", 2000))),
    ("lc-context-editing at 80% of window, keep 3 (course notes)",
     lambda ws, conversation: LangChainContextEditingPeer(bench_model(None), workspace=ws, conversation_id=conversation,
                                                          trigger_tokens=int(0.8 * WINDOW))),
]


def workload_b() -> list[tuple[str, bool]]:
    """(message, is_goal_probe) for every turn of the session."""
    turns = [(FIRST_REQUEST, False)]
    phrasings = iter(CYCLE * CYCLE_TURNS)
    for turn in range(1, CYCLE_TURNS + 1):
        turns.append((GOAL_QUESTION, True) if turn % GOAL_EVERY == 0 else (next(phrasings), False))
    return turns


def run_strategy(make: AgentFactory, folder: Path, conversation: str) -> dict:
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    agent = make(workspace, conversation)
    watcher = ProbeWatcher(agent)
    probes, wrapper_ms, failed = [], [], None
    started = time.perf_counter()
    for number, (text, is_probe) in enumerate(workload_b(), start=1):
        before = wrapper_overhead_seconds(agent)
        watcher.arm(is_probe)
        try:
            reply = agent.send(text)
        except Exception as error:  # a failed turn ends this strategy's session, as in the benchmark
            failed = f"turn {number}: {' '.join(str(error).split())[:120]}"
            break
        wrapper_ms.append(1000 * (wrapper_overhead_seconds(agent) - before))
        if is_probe:
            probes += probe_records(agent, watcher, number, "goal", [FIRST_REQUEST], reply)
    probes_total = sum(is_probe for _, is_probe in workload_b())
    totals = agent.log.totals()
    summary_tokens = totals["summary_input_tokens"] + totals["summary_output_tokens"]
    return {
        "totals": totals, "in_context": sum(probe.in_context for probe in probes),
        "answered": sum(probe.answered for probe in probes), "probes": probes_total, "failed": failed,
        "fixed": measured_fixed_tokens(agent),
        "summary_share": summary_tokens / max(1, totals["input_tokens"] + totals["output_tokens"]),
        "ms_turn5": statistics.fmean(wrapper_ms[3:6]) if len(wrapper_ms) >= 6 else float("nan"),
        "ms_turn50": statistics.fmean(wrapper_ms[48:51]) if len(wrapper_ms) >= 51 else float("nan"),
        "seconds": time.perf_counter() - started,
    }


def main() -> int:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="workload-b-") as scratch:
        for index, (name, make) in enumerate(STRATEGIES):
            if name == "deepagents" and (reason := deepagents_missing()):
                print(f"  skipped deepagents: {reason}", file=sys.stderr)
                continue
            results[name] = run_strategy(make, Path(scratch) / str(index), f"workload-b-{index}")
            print(f"  ran {name} in {results[name]['seconds']:.1f} s", file=sys.stderr)
    unbounded = results["v1"]["totals"]["input_tokens"]
    header = ["agent", "total input tokens (all calls)", "vs. v1", "peak", f"calls over {WINDOW:,}", "all calls",
              "summary calls", "internal calls", "goal in context", "goal answered*", "fixed cost per call",
              "summary share of tokens", "wrapper ms/turn at turn 5", "at turn 50", "failed"]
    print(f"Workload B: {len(workload_b())} turns, offline model, {WINDOW:,}-token window; * depends on the model\n")
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for name, result in results.items():
        totals = result["totals"]
        row = [name, f"{totals['input_tokens']:,}", f"{totals['input_tokens'] / unbounded:.3f}",
               f"{totals['peak_context_tokens']:,}", str(totals["calls_over_budget"]), str(totals["model_calls"]),
               str(totals["summary_calls"]), str(totals["internal_calls"]), f"{result['in_context']}/{result['probes']}",
               f"{result['answered']}/{result['probes']}", f"{result['fixed']:,}", f"{100 * result['summary_share']:.1f}%",
               f"{result['ms_turn5']:.2f}", f"{result['ms_turn50']:.2f}", result["failed"] or "-"]
        print("| " + " | ".join(row) + " |")
    report_aims(results, unbounded)
    return 0


def report_aims(results: dict[str, dict], unbounded: int) -> None:
    """The aims for v2, checked against every agent that finished the session."""
    finished = {name: result for name, result in results.items() if not result["failed"]}
    keeps_goal = {name: result for name, result in finished.items() if result["in_context"] == result["probes"]}
    v2 = results["v2"]
    lowest_name = min(finished, key=lambda name: finished[name]["totals"]["input_tokens"])
    lowest = finished[lowest_name]["totals"]["input_tokens"]
    best_keeper = min(keeps_goal, key=lambda name: keeps_goal[name]["totals"]["input_tokens"]) if keeps_goal else None
    v2_tokens = v2["totals"]["input_tokens"]
    print("\nAims for v2: <= 0.10 of v1, 0 calls over budget, the goal in context at every probe, the fewest tokens of "
          "the agents that keep the goal, within 10% of the lowest of any agent that finished, summary calls < 10% of tokens")
    print(f"v2: {v2_tokens / unbounded:.3f} of v1, {v2['totals']['calls_over_budget']} calls over budget, "
          f"goal in context {v2['in_context']}/{v2['probes']}, summary share {100 * v2['summary_share']:.1f}%; "
          f"fewest of the goal keepers: {best_keeper == 'v2'} ({best_keeper}); "
          f"vs. the lowest of all ({lowest_name}, {lowest:,}): {v2_tokens / lowest:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
