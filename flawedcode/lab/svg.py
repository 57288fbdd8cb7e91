"""The widget's two pictures as SVG and HTML, drawn in milliseconds (the saved pictures stay matplotlib's).

Unlike ``flawedcode.charts.plot_context`` and ``flawedcode.lab.bar.plot_context_bar``, which
draw a PNG with matplotlib (the snapshot, ``save()``, a notebook without a widget front end),
these write the same pictures as text that the browser draws: no rasterizing, no PNG to
compress. At step 50 a redraw takes a few milliseconds where matplotlib took over a second,
so the lab redraws once after every step and is ready again long before the agent's next
step is (``tests/benchmarks/bench_lab.py`` prints both times).

What is drawn is read from the same sources as the PNGs:

- **the token chart** (``chart_html``): ``flawedcode.charts.chart_data`` of the session's
  log: one dot per agent call at its step, the budget (dashed black) and the summary
  trigger (dotted), a hollow square for every other call (a summarizer's, a sub-agent's),
  and a marker for each context event of ``MARKED_KINDS`` (v2's and v3's) and each plan,
  memory and sub-agent tool call (``TOOL_MARKS``). Its title, axis names, legend and the
  **list of marked events** are HTML beside the picture, in a fixed font size, so they stay
  readable however narrow the picture is drawn; the list names *every* marked event, by
  kind and step (nothing is left out to save room);
- **the context-window bar** (``bar_html``): a ``ContextView``, one segment per message in
  the colours of ``flawedcode.lab.window.KIND_COLOURS``, the forgotten part hatched, the goal
  marked, the budget and trigger as lines; its legend is HTML too.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flawedcode.charts import EVENT_MARKERS, OKABE_ITO, colour_for, step_positions
from flawedcode.lab.window import CORE_KINDS, KIND_COLOURS, KIND_NAMES, SEGMENT_KINDS, ContextView, bar_title
from flawedcode.telemetry import EventKind, SessionLog

CHART_WIDTH, CHART_HEIGHT = 760, 330  # the SVG's own units; the browser scales it to the column's width
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 64, 748, 14, 288
LEGEND_FONT = "13px"  # HTML text: the same size at any width of the picture
EVERY_STEP_TICKS = 24
# Every kind the lab marks, with its symbol and name: v2's (the chart's own) and v3's compaction steps.
MARKED_KINDS: dict[str, tuple[str, str]] = {
    **{str(kind): (shape, name) for kind, (shape, name) in EVENT_MARKERS.items()},
    EventKind.CLEAR: ("P", "results cleared"),
    EventKind.DIGEST: ("d", "turn digest"),
    EventKind.CONSOLIDATE: ("*", "consolidation"),
    EventKind.PLAN_REMINDER: ("p", "plan reminder"),
}
# v3's plan, memory and sub-agents act through tools: each call of these is marked at its step.
TOOL_MARKS: dict[str, tuple[str, str]] = {
    "write_todos": ("p", "plan written"),
    "save_memory": ("m", "memory saved"),
    "task": ("t", "sub-agent"),
}
SYMBOLS = {"v": "▼", "*": "★", "o": "●", "D": "◆", "X": "✖", "P": "✚", "s": "■", "^": "▲", "d": "▬", "p": "☰",
           "m": "M", "t": "⊕"}


@dataclass(frozen=True)
class Mark:
    """One marked event or tool call: what, at which step, and where it is drawn."""

    kind: str
    name: str
    symbol: str
    step: int
    x: float
    y: float


def chart_html(log: SessionLog, title: str, steps: int | None = None,
               tool_steps: Iterable[tuple[str, int]] = ()) -> str:
    """The token chart of one session as HTML (an SVG picture, its title, legend and list of marked events).

    ``tool_steps``: (tool name, step) of the turns' tool calls, for ``TOOL_MARKS``.
    """
    calls = [(call.index, call.turn, call.input_tokens) for call in log.agent_calls()]
    xs = step_positions([step for _, step, _ in calls])
    points = [(x, tokens) for x, (_, _, tokens) in zip(xs, calls)]
    side = side_calls(log, points)
    marks = marks_of(log, calls, points, tool_steps)
    last_step = max([steps or 1, *(step for _, step, _ in calls), *(mark.step for mark in marks)])
    top = max([*(y for _, y in points), *(y for _, y in side), log.budget_tokens or 0, 1]) * 1.15
    scale = Scale(0.5, last_step + 0.5, 0, top)
    colour = colour_for(log.agent_name)
    parts = [_axes(scale, last_step)]
    if log.budget_tokens:
        parts.append(_hline(scale, log.budget_tokens, OKABE_ITO["black"], "8 5", "budget"))
    if log.trigger_tokens:
        parts.append(_hline(scale, log.trigger_tokens, colour, "2 4", "trigger"))
    if points:
        path = " ".join(f"{scale.x(x):.1f},{scale.y(y):.1f}" for x, y in points)
        parts.append(f"<polyline points='{path}' fill='none' stroke='{colour}' stroke-width='3' data-gid='line'/>")
        parts += [f"<circle cx='{scale.x(x):.1f}' cy='{scale.y(y):.1f}' r='3.5' fill='{colour}'/>" for x, y in points]
    parts += [f"<rect x='{scale.x(x) - 4:.1f}' y='{scale.y(y) - 4:.1f}' width='8' height='8' fill='white' stroke='{colour}' "
              f"stroke-width='2' data-gid='side'/>" for x, y in side]
    parts += [_mark(scale, mark, colour) for mark in marks]
    svg = (f"<svg viewBox='0 0 {CHART_WIDTH} {CHART_HEIGHT}' width='100%' xmlns='http://www.w3.org/2000/svg' "
           f"style='font-family:DejaVu Sans,sans-serif;display:block'>{''.join(parts)}</svg>")
    return (f"<div class='fc-chart'><div style='font-weight:bold;font-size:15px' data-gid='title'>{html.escape(title)}</div>"
            f"{svg}{_chart_legend(log, colour, bool(side))}{marked_list_html(marks)}</div>")


def side_calls(log: SessionLog, points: Sequence[tuple[float, int]]) -> list[tuple[float, int]]:
    """Every call that is not the agent's own, drawn just before the agent call it preceded."""
    found, agent_calls_seen = [], 0
    for call in log.calls:
        if call.purpose == "agent" and call.error is None:
            agent_calls_seen += 1
        elif call.purpose != "agent":
            x = points[agent_calls_seen][0] - 0.12 if agent_calls_seen < len(points) else (points[-1][0] + 0.12 if points else 1.0)
            found.append((x, call.input_tokens))
    return found


def marks_of(log: SessionLog, calls: Sequence[tuple[int, int, int]], points: Sequence[tuple[float, int]],
             tool_steps: Iterable[tuple[str, int]] = ()) -> list[Mark]:
    """The marked events (at the first agent call that saw each) and tool calls (at their step's last call)."""
    drawn_at = {index: point for (index, _, _), point in zip(calls, points)}
    last_of_step = {step: point for (_, step, _), point in zip(calls, points)}
    step_of = {index: step for index, step, _ in calls}
    marks = []
    for event in log.events:
        if event.kind not in MARKED_KINDS:
            continue
        shape, name = MARKED_KINDS[event.kind]
        x, y = drawn_at.get(event.call_index, (points[-1][0] + 0.5, event.tokens_after) if points else (1.0, event.tokens_after))
        marks.append(Mark(str(event.kind), name, SYMBOLS[shape], step_of.get(event.call_index, event.turn), x, y))
    for tool, step in tool_steps:
        if tool in TOOL_MARKS and step in last_of_step:
            shape, name = TOOL_MARKS[tool]
            x, y = last_of_step[step]
            marks.append(Mark(f"tool:{tool}", name, SYMBOLS[shape], step, x, y))
    return marks


def marked_list_html(marks: Sequence[Mark]) -> str:
    """Every marked event, by kind, with its number and step: "★ summary: 1 step 5 · 2 step 9 · ..."."""
    if not marks:
        return ""
    by_kind: dict[str, list[Mark]] = {}
    for mark in marks:
        by_kind.setdefault(mark.kind, []).append(mark)
    lines = []
    for found in by_kind.values():
        steps = " · ".join(f"{number} step {mark.step}" for number, mark in enumerate(found, start=1))
        lines.append(f"<div data-gid='marked:{html.escape(found[0].kind)}'>{found[0].symbol} <b>{html.escape(found[0].name)}</b>"
                     f" ({len(found)}): {steps}</div>")
    return (f"<div style='font-size:{LEGEND_FONT};line-height:1.4;max-height:7.5em;overflow-y:auto' data-gid='marked'>"
            f"<div style='color:#555'>Marked events</div>{''.join(lines)}</div>")


def bar_html(view: ContextView | None, trigger_tokens: int | None = None) -> str:
    """The context-window bar as HTML: one segment per message, as ``plot_context_bar`` draws it."""
    segments = view.segments if view else []
    budget = view.budget_tokens if view else None
    right = max([view.total_tokens if view else 0, budget or 0, trigger_tokens or 0, 1]) * 1.04
    blocks, left, goal_marked = [], 0.0, False
    for number, segment in enumerate(segments):
        width = 100 * segment.tokens / right
        style = f"left:{100 * left / right:.3f}%;width:{width:.3f}%;background:{KIND_COLOURS[segment.kind]}"
        if not segment.visible:
            style += ";opacity:.35;background-image:repeating-linear-gradient(45deg,transparent 0 4px,#fff 4px 6px)"
        number_text = f"{segment.tokens:,}" if width >= 6 else ""
        ink = "#000" if segment.kind in ("system", "user", "plan") else "#fff"
        blocks.append(f"<div class='fc-segment' data-gid='segment:{number}:{segment.kind}' title='{html.escape(segment.label)}' "
                      f"style='position:absolute;top:0;bottom:0;{style};box-sizing:border-box;border-right:2px solid #fff;"
                      f"color:{ink};font:bold 12px sans-serif;text-align:center;line-height:34px;overflow:hidden'>{number_text}</div>")
        if segment.holds_goal and not goal_marked:
            goal_marked = True
            blocks.append(f"<div data-gid='goal' style='position:absolute;top:-20px;left:{100 * (left + segment.tokens / 2) / right:.3f}%;"
                          f"transform:translateX(-50%);font:bold 13px sans-serif'>goal ▼</div>")
        left += segment.tokens
    for tokens, style, gid in ((budget, "dashed #000", "budget"), (trigger_tokens, f"dotted {OKABE_ITO['blue']}", "trigger")):
        if tokens:
            blocks.append(f"<div data-gid='{gid}' style='position:absolute;top:-4px;bottom:-4px;left:{100 * tokens / right:.3f}%;"
                          f"border-left:3px {style}'></div>")
    title = bar_title(view)
    return (f"<div class='fc-bar'><div style='font-weight:bold;font-size:14px' data-gid='title'>{html.escape(title)}</div>"
            f"<div style='position:relative;height:34px;margin:22px 0 6px 0;background:#f4f4f4'>{''.join(blocks)}</div>"
            f"{_bar_legend(view, trigger_tokens)}</div>")


# --- pieces ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    """Data to SVG units."""

    x0: float
    x1: float
    y0: float
    y1: float

    def x(self, value: float) -> float:
        return PLOT_LEFT + (value - self.x0) / (self.x1 - self.x0) * (PLOT_RIGHT - PLOT_LEFT)

    def y(self, value: float) -> float:
        return PLOT_BOTTOM - (value - self.y0) / (self.y1 - self.y0) * (PLOT_BOTTOM - PLOT_TOP)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to ``top`` (steps of 1, 2 or 5 times a power of ten)."""
    raw = max(top / count, 1e-9)
    power = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    step = next(power * factor for factor in (1, 2, 5, 10) if power * factor >= raw)
    return [step * number for number in range(int(top // step) + 1)]


def _axes(scale: Scale, last_step: int) -> str:
    parts = []
    for value in nice_ticks(scale.y1):
        y = scale.y(value)
        parts.append(f"<line x1='{PLOT_LEFT}' x2='{PLOT_RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='#ddd'/>"
                     f"<text x='{PLOT_LEFT - 6}' y='{y + 5:.1f}' text-anchor='end' font-size='14'>{value:,.0f}</text>")
    every = 1 if last_step <= EVERY_STEP_TICKS else nice_ticks(last_step, 8)[1]
    for step in range(int(every), last_step + 1, int(every)):
        x = scale.x(step)
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{PLOT_BOTTOM}' y2='{PLOT_BOTTOM + 5}' stroke='#333'/>"
                     f"<text x='{x:.1f}' y='{PLOT_BOTTOM + 20}' text-anchor='middle' font-size='14'>{step}</text>")
    parts.append(f"<line x1='{PLOT_LEFT}' x2='{PLOT_RIGHT}' y1='{PLOT_BOTTOM}' y2='{PLOT_BOTTOM}' stroke='#333'/>"
                 f"<line x1='{PLOT_LEFT}' x2='{PLOT_LEFT}' y1='{PLOT_TOP}' y2='{PLOT_BOTTOM}' stroke='#333'/>"
                 f"<text x='{(PLOT_LEFT + PLOT_RIGHT) / 2}' y='{CHART_HEIGHT - 4}' text-anchor='middle' font-size='15'>"
                 "step (each dot is one model call)</text>"
                 f"<text transform='translate(14 {(PLOT_TOP + PLOT_BOTTOM) / 2}) rotate(-90)' text-anchor='middle' font-size='15'>"
                 "tokens sent</text>")
    return "".join(parts)


def _hline(scale: Scale, tokens: int, colour: str, dashes: str, gid: str) -> str:
    y = scale.y(tokens)
    return (f"<line x1='{PLOT_LEFT}' x2='{PLOT_RIGHT}' y1='{y:.1f}' y2='{y:.1f}' stroke='{colour}' stroke-width='2.5' "
            f"stroke-dasharray='{dashes}' data-gid='{gid}'/>")


def _mark(scale: Scale, mark: Mark, colour: str) -> str:
    return (f"<text x='{scale.x(mark.x):.1f}' y='{scale.y(mark.y) - 7:.1f}' text-anchor='middle' font-size='17' fill='{colour}' "
            f"stroke='#000' stroke-width='0.6' data-gid='event:{html.escape(mark.kind)}'>{mark.symbol}</text>")


def _chart_legend(log: SessionLog, colour: str, with_side_calls: bool) -> str:
    items = [(f"<span style='color:{colour}'>━●━</span>", f"{log.agent_name}: tokens sent at each call")]
    if log.budget_tokens:
        items.append(("<span>╌╌╌</span>", f"budget ({log.budget_tokens:,} tokens)"))
    if log.trigger_tokens:
        items.append((f"<span style='color:{colour}'>┈┈┈</span>", f"summary trigger ({log.trigger_tokens:,})"))
    if with_side_calls:
        items.append((f"<span style='color:{colour}'>□</span>", "summary / sub-agent / internal calls"))
    return _legend(items, "chart-legend")


def _bar_legend(view: ContextView | None, trigger_tokens: int | None) -> str:
    totals = view.tokens_by_kind() if view else dict.fromkeys(SEGMENT_KINDS, 0)
    items = [(f"<span style='display:inline-block;width:12px;height:12px;background:{KIND_COLOURS[kind]}'></span>",
              f"{KIND_NAMES[kind]} {totals[kind]:,}") for kind in SEGMENT_KINDS if totals[kind] or kind in CORE_KINDS]
    if view and view.forgotten:
        items.append(("<span style='display:inline-block;width:12px;height:12px;background:repeating-linear-gradient(45deg,"
                      "#999 0 2px,#fff 2px 4px)'></span>", "forgotten (outside the window)"))
    if view and view.budget_tokens:
        items.append(("<span>╌╌</span>", "budget"))
    if trigger_tokens:
        items.append((f"<span style='color:{OKABE_ITO['blue']}'>┈┈</span>", "summary trigger"))
    return _legend(items, "bar-legend")


def _legend(items: Sequence[tuple[str, str]], gid: str) -> str:
    entries = "".join(f"<span style='white-space:nowrap;margin-right:14px'>{symbol} {html.escape(text)}</span>"
                      for symbol, text in items)
    return f"<div style='font-size:{LEGEND_FONT};line-height:1.5;display:flex;flex-wrap:wrap' data-gid='{gid}'>{entries}</div>"


def tool_steps_of(transcript: Iterable[Any]) -> list[tuple[str, int]]:
    """(tool name, step) of every tool call in a lab transcript."""
    return [(call.name, exchange.step) for exchange in transcript if exchange.step for call in exchange.tool_calls]


__all__ = ["MARKED_KINDS", "TOOL_MARKS", "Mark", "bar_html", "bar_title", "chart_html", "marked_list_html", "marks_of",
           "nice_ticks", "side_calls", "tool_steps_of"]
