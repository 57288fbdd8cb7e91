"""Every agent under every provider's caching rule: cache-weighted cost, misses by reason, and when compaction pays.

Run:  python tests/benchmarks/bench_cache_schemes.py [--budget 8192] [--workload workload_b] [--agents v1,v2,v3]
                                                     [--json FILE]

One workload at one budget on the offline model (``bench_caching.measure``: the benchmark itself, a
fresh agent per run, every model call captured at the model boundary). For each scheme of
``flawedcode.prompt_cache.SCHEMES`` (OpenAI's automatic prefix, Anthropic's marked breakpoints at 5 minutes
and 1 hour, Gemini's implicit cache) it prints every agent's input priced that way (input-token
equivalents), its ratio to v1's, the calls that missed by reason, and the break-even turn: the first
turn from which the agent's cumulative cost stays at or below v1's (keep everything, with caching).
The clock is the session's real one (an offline run takes seconds, so nothing expires).
``--breakpoints v3=tools,request`` runs an agent with other breakpoints (what v3 pays without its own).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench_caching import workload  # the workloads, defined once (this folder)

from flawedcode.agents import agent_classes
from flawedcode.bench.agent_specs import KNOWN_AGENTS
from flawedcode.bench.runner import Suite, run_suite
from flawedcode.prompt_cache import SCHEMES, break_even_turn

REFERENCE = "v1"


def measure(task_name: str, budget: int, agents: list[str], folder: Path) -> dict[str, dict]:
    """Each agent's run totals (one run each)."""
    suite = Suite(agents, [workload(task_name)], 1, model=f"offline:{budget}", settings={"budget_tokens": budget})
    return {record.agent: record.totals for record in run_suite(suite, folder, resume=False, progress=False)}


def scheme_rows(totals: dict[str, dict], scheme: str) -> list[dict]:
    reference = totals.get(REFERENCE, {})
    base = (reference.get("cache_weighted_by_scheme") or {}).get(scheme)
    base_turns = (reference.get("cache_weighted_by_turn") or {}).get(scheme) or []
    rows = []
    for agent, figures in totals.items():
        weighted = (figures.get("cache_weighted_by_scheme") or {}).get(scheme)
        by_turn = (figures.get("cache_weighted_by_turn") or {}).get(scheme) or []
        rows.append({"agent": agent, "raw": figures.get("input_tokens"), "weighted": weighted,
                     "vs_v1": round(weighted / base, 3) if weighted is not None and base else None,
                     "misses": (figures.get("cache_misses_by_scheme") or {}).get(scheme) or {},
                     "turns": len(by_turn),
                     "break_even": break_even_turn(by_turn, base_turns) if agent != REFERENCE else None})
    return rows


def print_tables(task: str, budget: int, totals: dict[str, dict]) -> dict[str, list[dict]]:
    tables = {}
    for scheme in SCHEMES:
        rows = scheme_rows(totals, scheme)
        tables[scheme] = rows
        print(f"\n### {task} at {budget:,} tokens, scheme {scheme}: {SCHEMES[scheme].whose}\n")
        print("| agent | input tokens | cache-weighted | ÷ v1 | break-even vs v1 (turn) | misses by reason |")
        print("| --- | --- | --- | --- | --- | --- |")
        for row in rows:
            even = ("-" if row["agent"] == REFERENCE else
                    f"never (in {row['turns']} turns)" if row["break_even"] is None else str(row["break_even"]))
            misses = ", ".join(f"{reason} {count}" for reason, count in row["misses"].items()) or "-"
            print(f"| {row['agent']} | {row['raw']:,} | {row['weighted']:,} | {row['vs_v1']} | {even} | {misses} |")
    return tables


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=8_192)
    parser.add_argument("--workload", default="workload_b")
    parser.add_argument("--agents", default=",".join(KNOWN_AGENTS))
    parser.add_argument("--json", type=Path, help="also write the tables to this file")
    parser.add_argument("--breakpoints", action="append", default=[], metavar="AGENT=MARKS",
                        help="mark other breakpoints for an agent class, e.g. v3=tools,request (what-if)")
    arguments = parser.parse_args(argv)
    for setting in arguments.breakpoints:
        version, _, marks = setting.partition("=")
        agent_classes()[version].cache_breakpoints = tuple(mark.strip() for mark in marks.split(",") if mark.strip())
    agents = [name.strip() for name in arguments.agents.split(",") if name.strip()]
    if REFERENCE not in agents:
        agents.insert(0, REFERENCE)
    with tempfile.TemporaryDirectory(prefix="bench-cache-schemes-") as scratch:
        started = time.perf_counter()
        totals = measure(arguments.workload, arguments.budget, agents, Path(scratch))
        print(f"  ran {arguments.workload} at {arguments.budget:,} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    tables = print_tables(arguments.workload, arguments.budget, totals)
    if arguments.json:
        arguments.json.write_text(json.dumps(tables, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
