"""Reproduce the course's workload B on the offline model, for v1, v2 and the LangChain peers.

Run:  python tests/benchmarks/bench_workload_b.py

Workload B: the lesson's first request ("List ChartBook dataframes"), then 50
turns cycling docs and loads over the five ChartBook dataframes (docs of 2,700
to 5,500 characters; 30- and 50-row tables of about 8 numeric columns), with
"What was my original goal?" every 10 turns. The model is the deterministic
``OfflineModel`` with an 8,192-token window (``overflow="truncate"``: what falls
out of the window is forgotten). Every count is an exact o200k count of what
was sent (system prompt, tool schemas, messages); summary calls are included.

Strategies (same model, tools and telemetry; see flawedcode/bench/peers.py):
v1 (unbounded), v2 (its default V2Config), LangChain SummarizationMiddleware
triggered at v2's trigger (keep 20 messages = its default; and keep 2,000
tokens), LangChain ContextEditingMiddleware (its default 100K trigger; and at
80% of the window, keep 3).

Columns as in the course's benchmark notes, plus the summary-call share of all tokens and the
wrappers' own time per turn (token counting and context management, not model
calls) around turn 5 and turn 50 (mean of turns 4-6 and 49-51).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flawedcode.agents import AgentV1, AgentV2, BaseAgent
from flawedcode.bench.checks import goal_kept
from flawedcode.bench.peers import LangChainContextEditingPeer, LangChainSummarizationPeer
from flawedcode.bench.runner import bench_model, wrapper_overhead_seconds
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

AgentFactory = Callable[[Workspace], BaseAgent]
STRATEGIES: list[tuple[str, AgentFactory]] = [
    ("unbounded history (v1)", lambda ws: AgentV1(bench_model(None), workspace=ws)),
    ("flawedcode v2 (defaults)", lambda ws: AgentV2(bench_model(None), workspace=ws)),
    ("LangChain SummarizationMiddleware, keep 20 messages (its default)",
     lambda ws: LangChainSummarizationPeer(bench_model(None), workspace=ws)),
    ("LangChain SummarizationMiddleware, keep 2,000 tokens",
     lambda ws: LangChainSummarizationPeer(bench_model(None), workspace=ws, keep=("tokens", 2000))),
    ("LangChain ContextEditingMiddleware, default trigger (100K)",
     lambda ws: LangChainContextEditingPeer(bench_model(None), workspace=ws, trigger_tokens=100_000)),
    ("LangChain ContextEditingMiddleware at 80% of window, keep 3",
     lambda ws: LangChainContextEditingPeer(bench_model(None), workspace=ws, trigger_tokens=int(0.8 * WINDOW))),
]


def workload_b() -> list[tuple[str, bool]]:
    """(message, is_goal_probe) for every turn of the session."""
    turns = [(FIRST_REQUEST, False)]
    phrasings = iter(CYCLE * CYCLE_TURNS)
    for turn in range(1, CYCLE_TURNS + 1):
        turns.append((GOAL_QUESTION, True) if turn % GOAL_EVERY == 0 else (next(phrasings), False))
    return turns


def run_strategy(make: AgentFactory, folder: Path) -> dict:
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    agent = make(workspace)
    probes: list[tuple[int, bool]] = []
    wrapper_ms: list[float] = []
    started = time.perf_counter()
    for number, (text, is_probe) in enumerate(workload_b(), start=1):
        before = wrapper_overhead_seconds(agent)
        reply = agent.send(text)
        wrapper_ms.append(1000 * (wrapper_overhead_seconds(agent) - before))
        if is_probe:
            probes.append((number, goal_kept(reply, FIRST_REQUEST)))
    totals = agent.log.totals()
    summary_tokens = sum(call.input_tokens + call.output_tokens for call in agent.log.calls if call.purpose == "summary")
    return {
        "totals": totals, "probes": probes, "fixed": agent.fixed_tokens,
        "summary_share": summary_tokens / max(1, totals["input_tokens"] + totals["output_tokens"]),
        "ms_turn5": statistics.fmean(wrapper_ms[3:6]), "ms_turn50": statistics.fmean(wrapper_ms[48:51]),
        "seconds": time.perf_counter() - started,
    }


def describe_probes(probes: list[tuple[int, bool]]) -> str:
    lost = [turn for turn, kept in probes if not kept]
    if not lost:
        return f"yes ({len(probes)}/{len(probes)})"
    return f"no: {len(probes) - len(lost)}/{len(probes)}, lost at turn {lost[0]}"


def main() -> int:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="workload-b-") as scratch:
        for index, (name, make) in enumerate(STRATEGIES):
            results[name] = run_strategy(make, Path(scratch) / str(index))
            print(f"  ran {name} in {results[name]['seconds']:.1f} s", file=sys.stderr)
    unbounded = results[STRATEGIES[0][0]]["totals"]["input_tokens"]
    header = ["strategy", "total input tokens", "vs. unbounded", "peak", f"calls over {WINDOW:,}", "summary calls",
              "goal kept at probes", "fixed cost per call", "summary share of tokens",
              "wrapper ms/turn at turn 5", "at turn 50"]
    print(f"Workload B: {len(workload_b())} turns, offline model, {WINDOW:,}-token window\n")
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for name, result in results.items():
        totals = result["totals"]
        row = [name, f"{totals['input_tokens']:,}", f"{totals['input_tokens'] / unbounded:.3f}",
               f"{totals['peak_context_tokens']:,}", str(totals["calls_over_budget"]), str(totals["summary_calls"]),
               describe_probes(result["probes"]), f"{result['fixed']:,}", f"{100 * result['summary_share']:.1f}%",
               f"{result['ms_turn5']:.2f}", f"{result['ms_turn50']:.2f}"]
        print("| " + " | ".join(row) + " |")
    v2 = results["flawedcode v2 (defaults)"]
    ratio = v2["totals"]["input_tokens"] / unbounded
    print("\nAims for v2: <= 0.12 of unbounded, 0 calls over budget, goal kept at every probe, summary calls < 10% of tokens")
    print(f"v2: {ratio:.3f} of unbounded, {v2['totals']['calls_over_budget']} calls over budget, "
          f"goal {describe_probes(v2['probes'])}, summary share {100 * v2['summary_share']:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
