"""The context lab's redraw time against the agent's own step time, at turn 50 of a v2 session.

Run:  python tests/benchmarks/bench_lab.py [--turns 50] [--version v2] [--repeats 5]

The lab is driven as a front end drives it: clicks on its buttons, back to back (as clicks
made during a turn reach the kernel once the turn is over). The script sends ``--turns - 1`` requests (the lesson's session, over and over), then
times, at the last turn, the median of ``--repeats``:

- the agent's step alone (``LabSession.send``: the model calls, tools and context management);
- one redraw of both pictures (``ContextLab.refresh(draw=True)``: the token chart and the bar);
- one whole Step click (the agent's step and every redraw the click causes), and how many of
  the clicks were acted on.

The aim: a redraw well under the agent's step, and one redraw per click.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from itertools import cycle, islice
from pathlib import Path

from flawedcode.demo import LESSON_STEPS
from flawedcode.lab import ContextLab


def median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--version", default="v2")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    requests = list(islice(cycle(LESSON_STEPS[1:-1]), options.turns + 3 * options.repeats))
    with tempfile.TemporaryDirectory() as folder:
        lab = ContextLab(steps=requests, version=options.version, folder=Path(folder))
        lab.session.send(LESSON_STEPS[0])
        while lab.session.requests_sent < options.turns - 1:
            lab.session.step()
        step = median_seconds(lambda: lab.session.step(), options.repeats)
        redraw = median_seconds(lab.refresh, options.repeats)
        redraws_before, sent_before = lab.redraws, lab.session.requests_sent
        click = median_seconds(lab._step.click, options.repeats)
        per_click = (lab.redraws - redraws_before) / options.repeats
        acted_on = lab.session.requests_sent - sent_before
        calls = lab.agent.log.agent_call_count
    print(f"{options.version}, turn {options.turns} ({calls} agent calls so far), median of {options.repeats}:")
    print(f"  agent step alone:         {1000 * step:7,.0f} ms")
    print(f"  one redraw (chart + bar): {1000 * redraw:7,.0f} ms  ({redraw / step:.2f}x the agent's step)")
    print(f"  one Step click:           {1000 * click:7,.0f} ms  ({per_click:g} redraws per click; "
          f"{acted_on} of {options.repeats} back-to-back clicks acted on)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
