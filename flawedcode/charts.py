"""Charts of context size: what each model call received, and where the context was managed.

Two charts, both drawn for a projector (16 pt labels, 14 pt ticks, thick lines,
the Okabe-Ito colour-blind-safe palette):

**The context chart** (``plot_context``, ``save_context_chart``, ``LiveChart``).
x is the agent's model call (#), y the tokens sent to the model at that call
(system prompt + tool schemas + messages, counted exactly). One line per agent.
Dashed black line: the budget. Dotted line in the agent's colour: the token
count at which its summarizer fires. Markers sit on the agent's line at the
call that first saw a context event, with a text label:

- down-pointing triangle: **offload** (a large tool result went to scratch/);
- star: **summary** (older messages were archived and summarized);
- circle: **recovery** (the agent read scratch/ or searched its archive);
- X: **overflow** retry, or a summary that failed;
- diamond: **compaction** (no summary could be written: old tool results went to the archive);
- square: the model **truncated the prompt** (it reported far fewer input tokens than were sent).

Every other model call of the session (a summarizer's, or one a library made
internally) is a small hollow square in the agent's colour, at the tokens it
sent, just before the agent call it preceded: the chart shows all calls.

v1's line climbs until it crosses the budget (and the offline model forgets
the start of the conversation); v2's line drops at the star and stays under
the trigger.

**The comparison chart** (``plot_comparison``, ``save_comparison_chart``): four
bar panels from a benchmark's ``summary.json``, one bar per agent: peak
context (tokens), total input tokens, success rate (%), goal retention (%).

Rules:
- ``chart_data(logs)`` is the single source: the plot draws exactly its
  ``points``, ``budget``, ``trigger`` and ``markers``, so a test can compare the
  axes with the data and a notebook can print the numbers behind the picture.
- Figures are built with ``matplotlib.figure.Figure``, not pyplot, so nothing
  here picks a backend and a returned figure is shown once in a notebook.
- ``LiveChart`` registers on each ``SessionLog.listeners`` and redraws after
  every turn, updating one IPython display handle in place.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from flawedcode.telemetry import SessionLog

# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9", "bluish_green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "reddish_purple": "#CC79A7",
}
AGENT_COLOURS = {
    "v0": OKABE_ITO["orange"], "v1": OKABE_ITO["vermillion"], "v2": OKABE_ITO["blue"],
    "lc-summarization": OKABE_ITO["bluish_green"], "lc-context-editing": OKABE_ITO["reddish_purple"],
    "deepagents": OKABE_ITO["sky_blue"],
}
SPARE_COLOURS = [OKABE_ITO[name] for name in ("blue", "vermillion", "bluish_green", "reddish_purple", "orange", "sky_blue", "black")]

# Which context events get a marker, drawn how, and labelled with what.
EVENT_MARKERS: dict[str, tuple[str, str]] = {
    "offload": ("v", "offload"),
    "summarize": ("*", "summary"),
    "recovery": ("o", "recovery"),
    "overflow_retry": ("X", "overflow"),
    "summary_failed": ("X", "summary failed"),
    "compact": ("D", "compaction"),
    "truncated": ("s", "prompt truncated"),
}
MARKER_SIZES = {"*": 22, "v": 15, "o": 13, "X": 15, "D": 13, "s": 13}

X_LABEL = "model call (#)"
Y_LABEL = "tokens sent to the model"
PROJECTOR_STYLE = {
    "font.size": 14, "axes.titlesize": 18, "axes.labelsize": 16, "xtick.labelsize": 14, "ytick.labelsize": 14,
    "legend.fontsize": 13, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.3, "lines.linewidth": 3, "savefig.dpi": 150, "savefig.bbox": "tight",
}
CONTEXT_FIGSIZE = (12, 6.5)
COMPARISON_FIGSIZE = (14, 9)

LogsArgument = SessionLog | Sequence[SessionLog]


# --- the data behind the context chart -----------------------------------------------
def chart_data(logs: LogsArgument) -> dict[str, Any]:
    """The numbers the context chart draws, per agent (keyed by ``log.agent_name``).

    Each agent's entry: ``points`` [(call index, input tokens)] of its own model
    calls, ``side_calls`` [(x, input tokens, purpose)] of every other call (summary,
    internal; x = the index of the agent call it came before, minus 0.5), ``budget``
    and ``trigger`` (tokens or None), ``events`` [(kind, call_index, tokens_before, tokens_after, label)]
    for the marked kinds, and ``markers`` [(kind, x, y, label)]: where each
    event is drawn, on the agent's line at the first call that saw it.
    """
    data: dict[str, Any] = {}
    for log in _as_logs(logs):
        points = [(call.index, call.input_tokens) for call in log.agent_calls()]
        events = [
            (event.kind, event.call_index, event.tokens_before, event.tokens_after, _event_label(event.kind, event.detail, position))
            for position, event in _numbered_events(log)
        ]
        data[_unique_name(log.agent_name, data)] = {
            "points": points,
            "side_calls": _side_calls(log),
            "budget": log.budget_tokens,
            "trigger": log.trigger_tokens,
            "events": events,
            "markers": [_marker_for(event, dict(points)) for event in events],
        }
    return data


def _side_calls(log: SessionLog) -> list[tuple[float, int, str]]:
    """Calls that are not the agent's own, placed just before the agent call they preceded."""
    side, agent_calls_seen = [], 0
    for call in log.calls:
        if call.purpose == "agent":
            agent_calls_seen += 1
        else:
            side.append((agent_calls_seen - 0.5, call.input_tokens, call.purpose))
    return side


def _as_logs(logs: LogsArgument) -> list[SessionLog]:
    if isinstance(logs, SessionLog):
        return [logs]
    if isinstance(getattr(logs, "log", None), SessionLog):  # one agent
        return [logs.log]
    found = [getattr(item, "log", item) for item in logs]  # agents are accepted too
    for item in found:
        if not isinstance(item, SessionLog):
            raise TypeError(f"expected SessionLog objects (or agents with .log); got {type(item).__name__}")
    return found


def _unique_name(name: str, taken: Mapping[str, Any]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name} ({number})", number + 1
    return candidate


def _numbered_events(log: SessionLog) -> Iterable[tuple[int, Any]]:
    """The marked events, each with its 1-based number among events of its kind."""
    seen: dict[str, int] = {}
    for event in log.events:
        if event.kind in EVENT_MARKERS:
            seen[event.kind] = seen.get(event.kind, 0) + 1
            yield seen[event.kind], event


def _event_label(kind: str, detail: Mapping[str, Any], number: int) -> str:
    name = EVENT_MARKERS[kind][1]
    if kind == "summarize":
        return f"{name} {number}"
    if kind == "offload" and detail.get("characters"):
        return f"{name} ({detail['characters'] / 1000:.1f}k chars)"
    return name


def _marker_for(event: tuple, line: Mapping[int, int]) -> tuple[str, int, int, str]:
    kind, call_index, _before, after, label = event
    if call_index in line:
        return kind, call_index, line[call_index], label
    # The event happened after the agent's last call (e.g. the turn then failed): draw it past the end.
    return kind, call_index, after or (line[max(line)] if line else 0), label


# --- the context chart -------------------------------------------------------------------
def colour_for(agent_name: str, position: int = 0) -> str:
    """The agent's colour: fixed for known agents, else the palette in order."""
    return AGENT_COLOURS.get(agent_name.split(" (")[0], SPARE_COLOURS[position % len(SPARE_COLOURS)])


def plot_context(logs: LogsArgument, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Draw the context chart for one or several sessions; returns the figure (not shown, not saved)."""
    with matplotlib.rc_context(PROJECTOR_STYLE):
        if ax is None:
            figure = Figure(figsize=CONTEXT_FIGSIZE, layout="constrained")
            ax = figure.add_subplot()
        draw_context(ax, chart_data(logs), title=title)
        return ax.figure


def draw_context(ax: Axes, data: Mapping[str, Any], title: str | None = None) -> None:
    """Draw ``chart_data`` output on ``ax`` (clears it first)."""
    ax.clear()
    budgets_drawn: set[int] = set()
    for position, (name, agent) in enumerate(data.items()):
        colour = colour_for(name, position)
        xs = [x for x, _ in agent["points"]]
        ys = [y for _, y in agent["points"]]
        ax.plot(xs, ys, color=colour, marker="o", markersize=6, label=name, gid=f"line:{name}")
        if agent.get("side_calls"):
            ax.plot([x for x, _, _ in agent["side_calls"]], [y for _, y, _ in agent["side_calls"]], linestyle="none",
                    marker="s", markersize=9, markerfacecolor="none", markeredgecolor=colour, markeredgewidth=2,
                    label=f"{name}: summary / internal calls", gid=f"side:{name}")
        budget = agent["budget"]
        if budget and budget not in budgets_drawn:
            budgets_drawn.add(budget)
            ax.axhline(budget, color=OKABE_ITO["black"], linestyle="--", linewidth=2.5,
                       label=f"budget ({budget:,} tokens)", gid=f"budget:{name}")
        if agent["trigger"]:
            ax.axhline(agent["trigger"], color=colour, linestyle=":", linewidth=2.5,
                       label=f"{name} summary trigger ({agent['trigger']:,})", gid=f"trigger:{name}")
        _draw_markers(ax, name, colour, agent["markers"])
    _style_context_axes(ax, data, title)


def _draw_markers(ax: Axes, name: str, colour: str, markers: Sequence[tuple[str, int, int, str]]) -> None:
    for kind, x, y, label in markers:
        shape = EVENT_MARKERS[kind][0]
        ax.plot([x], [y], linestyle="none", marker=shape, markersize=MARKER_SIZES[shape], color=colour,
                markeredgecolor=OKABE_ITO["black"], markeredgewidth=1.5, zorder=5, gid=f"event:{name}:{kind}")
        ax.annotate(label, (x, y), xytext=(0, 16 if kind != "offload" else -26), textcoords="offset points",
                    ha="center", fontsize=13, fontweight="bold", color=colour, zorder=6,
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})


def _style_context_axes(ax: Axes, data: Mapping[str, Any], title: str | None) -> None:
    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.set_title(title or "Tokens in context at each model call")
    ax.tick_params(labelsize=PROJECTOR_STYLE["xtick.labelsize"])  # tick labels are made at draw time, outside rc_context
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    tops = [y for agent in data.values() for _, y in agent["points"]]
    tops += [y for agent in data.values() for _, y, _ in agent.get("side_calls", [])]
    tops += [agent["budget"] or 0 for agent in data.values()]
    ax.set_ylim(0, max(tops, default=1) * 1.15 or 1)
    if data:
        ax.legend(loc="upper left", framealpha=0.9)


def save_context_chart(logs: LogsArgument, path: str | Path, title: str | None = None) -> Path:
    """Save the context chart as a PNG; returns the path."""
    return _save(plot_context(logs, title=title), path)


def _save(figure: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(PROJECTOR_STYLE):
        figure.savefig(path, format="png")
    return path


# --- the live chart -----------------------------------------------------------------
class LiveChart:
    """A context chart in a notebook that redraws itself after every turn of the agents it watches.

    ``chart = LiveChart([agent_v1, agent_v2])`` registers on each agent's session
    log; the chart appears where it is first displayed (``chart.show()``, or
    ``chart`` as a cell's last line) and that same output is updated in place
    after every turn, through an IPython display handle. ``chart.detach()``
    stops the updates. Outside a notebook it still redraws its ``figure``.
    """

    def __init__(self, agents: Any, title: str | None = None) -> None:
        self.title = title
        self.logs: list[SessionLog] = []
        with matplotlib.rc_context(PROJECTOR_STYLE):
            self.figure = Figure(figsize=CONTEXT_FIGSIZE, layout="constrained")
            self.ax = self.figure.add_subplot()
        self.handle: Any = None
        self.redraws = 0
        for agent in agents if isinstance(agents, Sequence) else [agents]:
            self.attach(agent)
        self.redraw()

    def attach(self, agent: Any) -> None:
        """Watch one more agent (or SessionLog)."""
        log = getattr(agent, "log", agent)
        if not isinstance(log, SessionLog):
            raise TypeError(f"LiveChart watches agents or SessionLogs; got {type(agent).__name__}")
        if log not in self.logs:
            self.logs.append(log)
            log.listeners.append(self._on_turn)

    def detach(self) -> None:
        """Stop watching every agent."""
        for log in self.logs:
            if self._on_turn in log.listeners:
                log.listeners.remove(self._on_turn)

    def data(self) -> dict[str, Any]:
        return chart_data(self.logs)

    def redraw(self) -> None:
        with matplotlib.rc_context(PROJECTOR_STYLE):
            draw_context(self.ax, self.data(), title=self.title)
        self.redraws += 1

    def show(self) -> None:
        """Display the chart here as a PNG; later turns update this same output (a display handle)."""
        from IPython.display import display

        self.handle = display(self.png(), display_id=True)

    def png(self) -> Any:
        """The chart as an IPython PNG image: it shows as a picture whatever matplotlib backend is active."""
        from IPython.display import Image

        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        return Image(data=buffer.getvalue(), format="png")

    def _on_turn(self, _log: SessionLog) -> None:
        self.redraw()
        if self.handle is not None:
            self.handle.update(self.png())

    def _ipython_display_(self) -> None:
        self.show()


# --- the comparison chart ---------------------------------------------------------------
COMPARISON_PANELS = (
    ("peak_context_tokens", "Peak context", "tokens sent to the model", False),
    ("total_input_tokens", "Total input tokens", "tokens (all calls)", False),
    ("success_rate", "Success rate", "tasks passed (%)", True),
    ("goal_retention", "Goal retention", "goal recalled (%)", True),
)


def comparison_data(summary: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per panel (metric), the value drawn for each agent; rates are in percent."""
    agents = summary.get("agents", summary)
    data: dict[str, dict[str, float | None]] = {}
    for metric, _title, _unit, is_rate in COMPARISON_PANELS:
        data[metric] = {}
        for name, metrics in agents.items():
            value = metrics.get(metric)
            data[metric][name] = None if value is None else float(value) * (100 if is_rate else 1)
    return data


def plot_comparison(summary: Mapping[str, Any], title: str | None = None) -> Figure:
    """Four bar panels comparing agents from a benchmark ``summary.json`` (a dict, or a path to one)."""
    if isinstance(summary, (str, Path)):
        summary = json.loads(Path(summary).read_text(encoding="utf-8"))
    data = comparison_data(summary)
    with matplotlib.rc_context(PROJECTOR_STYLE):
        figure = Figure(figsize=COMPARISON_FIGSIZE, layout="constrained")
        axes = figure.subplots(2, 2)
        for ax, (metric, panel_title, unit, is_rate) in zip(axes.flat, COMPARISON_PANELS):
            _draw_bars(ax, data[metric], panel_title, unit, is_rate)
        figure.suptitle(title or "Benchmark: agents side by side", fontsize=20)
    return figure


def _draw_bars(ax: Axes, values: Mapping[str, float | None], title: str, unit: str, is_rate: bool) -> None:
    names = list(values)
    heights = [values[name] or 0 for name in names]
    colours = [colour_for(name, position) for position, name in enumerate(names)]
    bars = ax.bar(names, heights, color=colours, edgecolor=OKABE_ITO["black"], linewidth=1.2)
    for bar, name in zip(bars, names):
        value = values[name]
        text = "n/a" if value is None else (f"{value:.0f}%" if is_rate else f"{value:,.0f}")
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 4),
                    textcoords="offset points", ha="center", va="bottom", fontsize=13, fontweight="bold")
    ax.set_title(title)
    ax.set_ylabel(unit)
    ax.tick_params(labelsize=PROJECTOR_STYLE["xtick.labelsize"])
    ax.set_ylim(0, 110 if is_rate else max(heights, default=1) * 1.2 or 1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.grid(axis="x", visible=False)
    ax.tick_params(axis="x", labelrotation=20 if len(names) > 3 else 0)


def save_comparison_chart(summary: Mapping[str, Any], path: str | Path, title: str | None = None) -> Path:
    """Save the comparison chart as a PNG; returns the path."""
    return _save(plot_comparison(summary, title=title), path)


__all__ = [
    "LiveChart", "chart_data", "colour_for", "comparison_data", "draw_context", "plot_comparison",
    "plot_context", "save_comparison_chart", "save_context_chart", "OKABE_ITO", "EVENT_MARKERS",
]
