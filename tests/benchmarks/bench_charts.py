"""How the live context chart's redraw time grows with the session: a 200-turn session vs a 20-turn one.

Run:  python tests/benchmarks/bench_charts.py

Each session is a v2-like SessionLog built call by call (no model needed, so the figure measures the
chart alone): per turn 1-3 agent calls whose context grows and drops, an offload on most turns, a
summary (with its summary call) every 8 turns, a recovery read every 15. For each length the script
times ``LiveChart.update()`` at the session's last turn (the redraw and the PNG the notebook shows;
the median of 3), and prints the ratio of the 200-turn time to the 20-turn time (the aim: at most 12x;
a chart whose label placement is quadratic in the events was about 160x).
"""

from __future__ import annotations

import statistics
import time

from langchain_core.messages import AIMessage

from flawedcode.charts import LiveChart
from flawedcode.telemetry import SessionLog

BUDGET = 8_192
SHORT, LONG = 20, 200
REPEATS = 3


def session(turns: int) -> SessionLog:
    """A deterministic v2-like session of ``turns`` turns."""
    log = SessionLog(agent_name="v2", budget_tokens=BUDGET, trigger_tokens=int(0.6 * BUDGET))
    context = 1_600
    for turn in range(1, turns + 1):
        log.start_turn()
        for call in range(1 + turn % 3):
            if call == 0 and turn % 8 == 0:
                log.record_call(context, 300, AIMessage("summary"), 0.0, purpose="summary")
                log.record_event("summarize", context, 2_100)
                context = 2_100
            if call == 1 and turn % 4:
                log.record_event("offload", 3_000, 300)
            if call == 1 and turn % 15 == 0:
                log.record_event("recovery", context, context + 400)
            log.record_call(context, 80, AIMessage("ok"), 0.0)
            context += 350 + (turn * 37 + call * 11) % 400
        log.end_turn()
    return log


def redraw_seconds(turns: int) -> float:
    log = session(turns)
    chart = LiveChart(log, steps=turns, auto=False)
    times = []
    for _ in range(REPEATS):
        log.calls[-1].output_tokens += 1  # a change, so the chart has something new to draw
        started = time.perf_counter()
        chart.update()
        chart.png()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    short, long = redraw_seconds(SHORT), redraw_seconds(LONG)
    print(f"live chart redraw + PNG at turn {SHORT}: {1000 * short:,.0f} ms; at turn {LONG}: {1000 * long:,.0f} ms")
    print(f"ratio {LONG} turns / {SHORT} turns: {long / short:.1f}x (aim: at most 12x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
