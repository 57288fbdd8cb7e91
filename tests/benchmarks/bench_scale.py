"""Flat cost at any session length: v2's wrappers on a 1,000-turn session, and archive search at the end.

Run:  python tests/benchmarks/bench_scale.py [--turns 1000]

The session is the course's workload B stretched to ``--turns`` turns on the
offline model with an 8,192-token window: the lesson's first request, then docs
and loads cycling over the five ChartBook dataframes, "What was my original
goal?" every 10 turns. It prints:

- the wrappers' own mean time per turn (offload, summarize decisions, archiving,
  token counting; not model calls) at turns 51-100 and at the last 50 turns,
  and their ratio (aim: the late figure within 1.3x of the early one: flat cost);
- the same two windows' medians (a garbage-collection pause or a busy neighbour moves a
  mean of 50 turns by 10-30% from one run to the next; the median moves less);
- ``search_archive``'s time for a query that matches nothing, at the end of the
  session (aim: under 10 ms), over how many archived messages;
- how long the whole session took.

Not a test: the machine is shared and noisy, so compare figures within one run. On a busy
machine, ``--clock cpu`` times the wrappers by this thread's CPU time instead of the wall
clock (the session log's timer is pointed at ``time.thread_time``), which other processes
do not inflate.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import types
from pathlib import Path

from bench_workload_b import CYCLE, FIRST_REQUEST, GOAL_EVERY, WINDOW  # workload B's session (a script beside this one)

import flawedcode.context.summarize as summarize_module
from flawedcode import telemetry
from flawedcode.agents import AgentV2
from flawedcode.bench.tasks import GOAL_QUESTION
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace

NO_MATCH_QUERY = "zanzibar quokka"
WINDOW_TURNS = 50  # each measured window is this many turns


def session(turns: int) -> list[str]:
    """The first request, then the cycle, with the goal question every ``GOAL_EVERY`` turns."""
    steps = [FIRST_REQUEST]
    phrasings = iter(CYCLE * turns)
    for turn in range(1, turns):
        steps.append(GOAL_QUESTION if turn % GOAL_EVERY == 0 else next(phrasings))
    return steps


def run_session(folder: Path, turns: int) -> tuple[AgentV2, list[float]]:
    workspace = Workspace.create(folder / "project", scratch_dir=folder / "scratch", archive_dir=folder / "archives")
    agent = AgentV2(OfflineModel(max_input_tokens=WINDOW, overflow="truncate"), workspace=workspace)
    wrapper_seconds: list[float] = []
    for number, text in enumerate(session(turns), start=1):
        before = agent.log.wrapper_seconds
        agent.send(text)
        wrapper_seconds.append(agent.log.wrapper_seconds - before)
        if number % 100 == 0:
            print(f"  turn {number}: {agent.log.count('summarize')} summaries so far", flush=True)
    return agent, wrapper_seconds


def time_search(agent: AgentV2, repeats: int = 21) -> tuple[float, float]:
    """Median milliseconds of a no-match query: the archive's search, and the whole search_archive tool."""
    tool = next(tool for tool in agent.tools if tool.name == "search_archive")

    def median_ms(action) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            action()
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples)

    assert not agent.archive.search(NO_MATCH_QUERY), "the no-match query matched something"
    return median_ms(lambda: agent.archive.search(NO_MATCH_QUERY)), median_ms(lambda: tool.invoke({"query": NO_MATCH_QUERY}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="session length (at least 200; default 1000)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="how the wrappers are timed")
    options = parser.parse_args()
    turns = max(options.turns, 200)
    if options.clock == "cpu":  # both sides of SessionLog.timing_wrapper's sum: the wrapper and the summary call in it
        cpu_time = types.SimpleNamespace(**{**vars(time), "perf_counter": time.thread_time})
        telemetry.time = summarize_module.time = cpu_time
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as folder:
        agent, per_turn = run_session(Path(folder), turns)
        seconds = time.perf_counter() - started
        search_ms, tool_ms = time_search(agent)
        archived = sum(part.last_seq - part.first_seq + 1 for part in agent.archive.parts())
    early = statistics.fmean(per_turn[50:100]) * 1000
    late = statistics.fmean(per_turn[-WINDOW_TURNS:]) * 1000
    early_median = statistics.median(per_turn[50:100]) * 1000
    late_median = statistics.median(per_turn[-WINDOW_TURNS:]) * 1000
    print(f"\nv2, {turns:,}-turn session, offline model, {WINDOW:,}-token window ({seconds:.0f} s in all; "
          f"{agent.log.count('summarize')} summaries, {agent.log.count('offload')} offloads; {options.clock} clock)\n")
    late_label = f"turns {turns - WINDOW_TURNS + 1}-{turns}"
    print(f"wrappers' mean time per turn, {'turns 51-100':<15} {early:8.2f} ms")
    print(f"wrappers' mean time per turn, {late_label:<15} {late:8.2f} ms")
    print(f"late / early: {late / early:.2f}   (aim: <= 1.30)")
    print(f"medians, less sensitive to a pause on a shared machine: {early_median:.2f} ms, {late_median:.2f} ms, "
          f"late / early {late_median / early_median:.2f}")
    print(f"search_archive, no match, {archived:,} archived messages: archive.search {search_ms:.2f} ms, "
          f"the tool {tool_ms:.2f} ms   (aim: < 10 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
