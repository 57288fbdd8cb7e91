"""Charts of context size: what each model call received, and where the context was managed.

Two charts, both drawn for a projector (16 pt labels, 14 pt ticks, thick lines,
the Okabe-Ito colour-blind-safe palette):

**The context chart** (``plot_context``, ``save_context_chart``, ``LiveChart``).
x is the step (the user's request: step 1, 2, ... as the lessons number them);
each dot is one of the agent's model calls in that step, spread evenly across it,
so several agents line up step by step. y is the tokens sent to the model at
that call (system prompt + tool schemas + messages, counted exactly). One line
per agent. Dashed black line: the budget. Dotted line in the agent's colour:
the token count at which its summarizer fires. The legend sits under the axes,
where it hides no line. Markers sit on the agent's line at the call that first
saw a context event. The first event of each kind and the last
``LAST_LABELS_PER_KIND`` (2) of each kind are labelled with the event and its
step (at most ``MAX_LABELS`` per agent, the most important kinds first): the others
keep their marker without a label, so that placing labels costs the same at
step 200 as at step 20. Labels that would overlap are moved apart:

- down-pointing triangle: **offload** (a large tool result went to scratch/);
- star: **summary** (older messages were archived and summarized);
- circle: **recovery** (the agent read scratch/ or searched its archive);
- diamond: **goal lost** (the first request is no longer in the model's
  window; recorded by ``flawedcode.lab.window.ContextWatcher``);
- X: **overflow** retry, or a summary that failed;
- filled plus: **compaction** (no summary could be written: old tool results went to the archive);
- square: the model **truncated the prompt** (it reported far fewer input tokens than were sent).
- up-pointing triangle: **goal recalled** (a later reply gave the first request back;
  recorded by ``ContextWatcher`` too).

Each labelled marker carries a number in a circle beside it, and the numbers are
listed, with the event and its step, in a key beside the axes ("3  summary 1, step 5
(v2)"): a label never covers a line or another label.

Every other model call of the session (a summarizer's, or one a library made
internally) is a small hollow square in the agent's colour, at the tokens it
sent, just before the agent call it preceded: the chart shows all calls.

v1's line climbs until it crosses the budget (and the offline model forgets
the start of the conversation: the diamond); v2's line drops at the star and
stays under the trigger.

**The cache chart** (``plot_cache``, ``cache_data``): one panel per agent, one
bar per model call (every call, summaries included), split into the part a
provider's prompt cache would serve (light, hatched: ``CallRecord.cached_tokens``)
and the part billed in full (solid). A star marks the first call after each
summary: the rewritten history breaks the cache there, so that bar is solid
again (all but the system prompt and tools); summary calls have a black outline.
An append-only agent's bars are nearly all hatched.

**The comparison chart** (``plot_comparison``, ``save_comparison_chart``): six
bar panels from a benchmark's ``summary.json``, one bar per agent: peak
context (tokens, with the budget as a dashed line), tokens per success (all
tokens / successful runs), success rate (%), goal retention (%), input ÷ v1
(two bars per agent: raw, and hatched with prompt caching priced in, each
divided by v1's priced the same way; a dashed line at 1) and input ÷ the
task's yardstick, the same number for every agent (a dashed line at 1: the yardstick itself).

Rules:
- ``chart_data(logs)`` is the single source: the plot draws exactly its
  ``points``, ``budget``, ``trigger`` and ``markers``, so a test can compare the
  axes with the data and a notebook can print the numbers behind the picture.
- Before the first call, a chart still has sensible axes: steps 1 to
  ``steps`` (or 1) and tokens up to the budget.
- Figures are built with ``matplotlib.figure.Figure``, not pyplot, so nothing
  here picks a backend and a returned figure is shown once in a notebook.
- ``LiveChart`` registers on each ``SessionLog.listeners`` and redraws after
  every turn, updating one IPython display handle in place; given the session's
  length (``steps=``) its axes stay put while it fills. It redraws (and renders
  its PNG) only when something it shows changed since the last frame: a turn
  that added no call or event costs nothing. Redrawing is linear in the
  session's calls (``tests/benchmarks/bench_charts.py`` prints the 200-turn /
  20-turn ratio).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flawedcode.telemetry import EventKind, SessionLog

if TYPE_CHECKING:  # matplotlib itself is imported when the first chart is drawn, not with this module
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

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
EVENT_MARKERS: dict[EventKind, tuple[str, str]] = {
    EventKind.OFFLOAD: ("v", "offload"),
    EventKind.SUMMARIZE: ("*", "summary"),
    EventKind.RECOVERY: ("o", "recovery"),
    EventKind.GOAL_LOST: ("D", "goal lost"),
    EventKind.OVERFLOW_RETRY: ("X", "overflow"),
    EventKind.SUMMARY_FAILED: ("X", "summary failed"),
    EventKind.COMPACT: ("P", "compaction"),
    EventKind.TRUNCATED: ("s", "prompt truncated"),
    EventKind.GOAL_RECALLED: ("^", "goal recalled"),
}
MARKER_SIZES = {"*": 22, "v": 15, "o": 13, "X": 15, "D": 13, "P": 15, "s": 13, "^": 15}
LABEL_BELOW = {EventKind.OFFLOAD}  # these labels go under their marker, the others above
LABEL_PRIORITY = {EventKind.GOAL_LOST: 0, EventKind.GOAL_RECALLED: 0, EventKind.SUMMARIZE: 1, EventKind.SUMMARY_FAILED: 2,
                  EventKind.OVERFLOW_RETRY: 2, EventKind.COMPACT: 2, EventKind.TRUNCATED: 2, EventKind.RECOVERY: 3, EventKind.OFFLOAD: 4}
LABEL_FONT_SIZES = {EventKind.OFFLOAD: 12}  # the many offload labels are a little smaller than the rest (13)
LAST_LABELS_PER_KIND = 2  # besides the first of each kind, the last two of each kind are labelled
MAX_LABELS = 12  # labels per agent, at most (the most important kinds first)
EVERY_STEP_TICKS = 24  # up to this many steps, every step gets a tick
STEP_SPREAD = 0.7  # the calls of one step are spread over this much of the x axis
SIDE_CALL_OFFSET = 0.12  # a summary or internal call sits this far left of the agent call it preceded

X_LABEL = "step (each dot is one model call)"
Y_LABEL = "tokens sent to the model"
PROJECTOR_STYLE = {
    "font.size": 14, "axes.titlesize": 18, "axes.labelsize": 16, "xtick.labelsize": 14, "ytick.labelsize": 14,
    "legend.fontsize": 13, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
    "grid.alpha": 0.3, "lines.linewidth": 3, "savefig.dpi": 150, "savefig.bbox": "tight",
}
CONTEXT_FIGSIZE = (12, 6.5)
# A fixed layout (margins in figure fractions) rather than matplotlib's constrained layout: a live chart
# redraws after every request, and the constrained layout solver was most of each redraw's time.
CONTEXT_MARGINS = {"left": 0.085, "right": 0.76, "top": 0.92, "bottom": 0.25}
KEY_X = 0.775  # the numbered list of marked events sits beside the axes, from here to the figure's right edge
KEY_LINES = 16  # at most this many events are listed (the key says how many more there were)
COMPARISON_FIGSIZE = (14, 13)

LogsArgument = SessionLog | Sequence[SessionLog]


# --- the data behind the context chart -----------------------------------------------
def projector_style() -> Any:
    """matplotlib's settings for a chart read from the back row (``PROJECTOR_STYLE``), as a ``with`` block."""
    import matplotlib  # on first use: importing flawedcode.charts costs no matplotlib

    return matplotlib.rc_context(PROJECTOR_STYLE)


def chart_data(logs: LogsArgument) -> dict[str, Any]:
    """The numbers the context chart draws, per agent (keyed by ``log.agent_name``).

    Each agent's entry: ``calls`` [(call index, step, input tokens)] of its own
    model calls; ``points`` [(x, input tokens)], where x places each call in its
    step (``step_positions``); ``side_calls`` [(x, input tokens, purpose)] of every
    other call (summary, internal), each drawn just before the agent call it
    preceded; ``budget`` and ``trigger`` (tokens or None); ``events`` [(kind,
    call_index, tokens_before, tokens_after, label)] for the marked kinds, labelled
    with their step; and ``markers`` [(kind, x, y, label)]: where each event is
    drawn, on the agent's line at the first call that saw it (``label`` is "" for an
    event that is not labelled: ``labelled_events``).
    """
    data: dict[str, Any] = {}
    for log in _as_logs(logs):
        calls = [(call.index, call.turn, call.input_tokens) for call in log.agent_calls()]
        xs = step_positions([step for _, step, _ in calls])
        points = [(x, tokens) for x, (_, _, tokens) in zip(xs, calls)]
        drawn_at = {index: point for (index, _, _), point in zip(calls, points)}  # call index -> its point
        events = [
            (event.kind, event.call_index, event.tokens_before, event.tokens_after,
             _event_label(event.kind, event.turn, position))
            for position, event in _numbered_events(log)
        ]
        data[_unique_name(log.agent_name, data)] = {
            "calls": calls,
            "points": points,
            "side_calls": _side_calls(log, points),
            "budget": log.budget_tokens,
            "trigger": log.trigger_tokens,
            "events": events,
            "markers": [_marker_for(event if keep else (*event[:4], ""), drawn_at, points)
                        for event, keep in zip(events, labelled_events([event[0] for event in events]))],
        }
    return data


def labelled_events(kinds: Sequence[str]) -> list[bool]:
    """Which events get a label: the first and the last ``LAST_LABELS_PER_KIND`` of each kind, at most
    ``MAX_LABELS`` (by ``LABEL_PRIORITY``, then in order). Constant work per label, whatever the session's length."""
    positions: dict[str, list[int]] = {}
    for index, kind in enumerate(kinds):
        positions.setdefault(kind, []).append(index)
    chosen = {index for found in positions.values() for index in (found[:1] + found[-LAST_LABELS_PER_KIND:])}
    ranked = sorted(chosen, key=lambda index: (LABEL_PRIORITY.get(kinds[index], 9), index))[:MAX_LABELS]
    keep = set(ranked)
    return [index in keep for index in range(len(kinds))]


def _side_calls(log: SessionLog, points: Sequence[tuple[float, int]]) -> list[tuple[float, int, str]]:
    """Calls that are not the agent's own, drawn just before the agent call they preceded (after the last one at the end)."""
    side, agent_calls_seen = [], 0
    for call in log.calls:
        if call.purpose == "agent" and call.error is None:
            agent_calls_seen += 1
        elif call.purpose != "agent":
            following = points[agent_calls_seen][0] - SIDE_CALL_OFFSET if agent_calls_seen < len(points) else None
            x = following if following is not None else (points[-1][0] + SIDE_CALL_OFFSET if points else 1.0)
            side.append((x, call.input_tokens, call.purpose))
    return side


def step_positions(steps: Sequence[int]) -> list[float]:
    """x of each call: its step, with the calls of one step spread evenly around it (in call order)."""
    counts: dict[int, int] = {}
    for step in steps:
        counts[step] = counts.get(step, 0) + 1
    seen: dict[int, int] = {}
    positions = []
    for step in steps:
        rank, count = seen.get(step, 0), counts[step]
        seen[step] = rank + 1
        positions.append(round(step - STEP_SPREAD / 2 + STEP_SPREAD * (rank + 0.5) / count, 4))
    return positions


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


def _event_label(kind: EventKind, step: int, number: int) -> str:
    """Two short lines (narrow labels collide less): 'summary 2' / 'step 9'."""
    name = EVENT_MARKERS[kind][1]
    return f"{name} {number}\nstep {step}" if kind == EventKind.SUMMARIZE else f"{name}\nstep {step}"


def _marker_for(event: tuple, drawn_at: Mapping[int, tuple[float, int]],
                points: Sequence[tuple[float, int]]) -> tuple[str, float, int, str]:
    kind, call_index, _before, after, label = event
    if call_index in drawn_at:
        x, y = drawn_at[call_index]
        return kind, x, y, label
    # The event happened after the agent's last call (e.g. the turn then failed): draw it past the end.
    last_x, last_y = points[-1] if points else (0.5, 0)
    return kind, last_x + 0.5, after or last_y, label


# --- the context chart -------------------------------------------------------------------
def colour_for(agent_name: str, position: int = 0) -> str:
    """The agent's colour: fixed for known agents, else the palette in order."""
    return AGENT_COLOURS.get(agent_name.split(" (")[0], SPARE_COLOURS[position % len(SPARE_COLOURS)])


def plot_context(logs: LogsArgument, ax: Axes | None = None, title: str | None = None, steps: int | None = None) -> Figure:
    """Draw the context chart for one or several sessions; returns the figure (not shown, not saved).

    ``steps``: the session's length, to fix the x axis before the session is over.
    """
    with projector_style():
        if ax is None:
            ax = context_figure().add_subplot()
        draw_context(ax, chart_data(logs), title=title, steps=steps)
        return ax.figure


def context_figure() -> Figure:
    """An empty figure the size and margins of the context chart."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=CONTEXT_FIGSIZE)
    figure.subplots_adjust(**CONTEXT_MARGINS)
    return figure


def draw_context(ax: Axes, data: Mapping[str, Any], title: str | None = None, steps: int | None = None) -> None:
    """Draw ``chart_data`` output on ``ax`` (clears it first)."""
    ax.clear()
    budgets_drawn: set[int] = set()
    labels: list[Any] = []
    key: list[tuple[str, str]] = []
    for text in [text for text in ax.figure.texts if text.get_gid() == "marker-key"]:
        text.remove()  # a live chart redraws on the same figure
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
        labels += _draw_markers(ax, name, colour, agent["markers"], key)
    _style_context_axes(ax, data, title, steps)
    separate_labels(ax, labels)
    draw_key(ax, key)


def _draw_markers(ax: Axes, name: str, colour: str, markers: Sequence[tuple[str, float, int, str]],
                  key: list[tuple[str, str]]) -> list[Any]:
    """Each marker, and for a labelled one a number beside it; ``key`` gets (number, what it marks) in order."""
    labels = []
    for kind, x, y, label in markers:
        shape = EVENT_MARKERS[kind][0]
        ax.plot([x], [y], linestyle="none", marker=shape, markersize=MARKER_SIZES[shape], color=colour,
                markeredgecolor=OKABE_ITO["black"], markeredgewidth=1.5, zorder=5, gid=f"event:{name}:{kind}")
        if not label:
            continue
        number = str(len(key) + 1)
        key.append((number, f"{label.replace(chr(10), ', ')} ({name})"))
        below = kind in LABEL_BELOW
        labels.append(ax.annotate(
            number, (x, y), xytext=(0, -15 if below else 15), textcoords="offset points", ha="center",
            va="top" if below else "bottom", fontsize=12, fontweight="bold", color=colour, zorder=6,
            gid=f"label:{name}:{kind}",
            bbox={"boxstyle": "circle,pad=0.2", "facecolor": "white", "edgecolor": colour, "linewidth": 1.2}))
    return labels


def draw_key(ax: Axes, key: Sequence[tuple[str, str]]) -> None:
    """The numbered markers, listed beside the axes (no label ever covers a line)."""
    if not key:
        return
    shown = [f"{number}  {text}" for number, text in key[:KEY_LINES]]
    if len(key) > KEY_LINES:
        shown.append(f"... and {len(key) - KEY_LINES} more")
    ax.figure.text(KEY_X, CONTEXT_MARGINS["top"], "Marked events\n" + "\n".join(shown), ha="left", va="top", fontsize=11,
                   linespacing=1.45, gid="marker-key", family="DejaVu Sans")


def separate_labels(ax: Axes, labels: Sequence[Any], gap_points: float = 3.0, levels: int = 6) -> None:
    """Place event labels so that none covers another label or any event marker.

    Labels are placed in order of importance (``LABEL_PRIORITY``). Each tries its own
    side of its marker first (above; below for offloads), one label height further
    at a time, then the other side, then the same places half a label or a label to
    the left or right; it takes the first free place inside the axes (or, when none
    is free, the one that covers least). A thin line joins a moved label to its marker.
    """
    if len(labels) < 2:
        return
    figure = ax.figure
    renderer = _renderer(figure)
    inside = ax.get_window_extent(renderer)
    taken = [line.get_window_extent(renderer) for line in ax.get_lines() if (line.get_gid() or "").startswith("event:")]
    to_points = 72 / figure.dpi
    for label in sorted(labels, key=lambda text: LABEL_PRIORITY.get((text.get_gid() or "::").split(":")[2], 9)):
        box = _text_box(label, renderer)
        height, width, first = box.height * to_points + gap_points, box.width * to_points, label.xyann[1]
        side = 1 if first > 0 else -1
        heights = [first + side * height * level for level in range(levels)]
        heights += [-first - side * height * level for level in range(levels)]
        best, best_cover = (0, first), float("inf")
        for candidate in [(dx, dy) for dx in (0, -width / 2, width / 2, -width, width) for dy in heights]:
            label.xyann = candidate
            cover = _covered_area(_text_box(label, renderer).padded(gap_points / to_points), taken, inside)
            if cover < best_cover:
                best, best_cover = candidate, cover
            if cover == 0:
                break
        label.xyann = best
        taken.append(_text_box(label, renderer))


def _text_box(label: Any, renderer: Any) -> Any:
    """The label's text and its background box, without the connecting line (cheap to measure)."""
    from matplotlib.text import Text

    label.update_positions(renderer)
    return Text.get_window_extent(label, renderer)


def _covered_area(box: Any, taken: Sequence[Any], inside: Any) -> float:
    """How much of ``box`` lies on other boxes or outside the axes (0: a free place)."""
    def overlap(other: Any) -> float:
        return max(0.0, min(box.x1, other.x1) - max(box.x0, other.x0)) * max(0.0, min(box.y1, other.y1) - max(box.y0, other.y0))
    return sum(overlap(other) for other in taken) + (box.width * box.height - overlap(inside))


def _renderer(figure: Figure) -> Any:
    """A renderer for measuring text, after any layout engine has placed the axes (Agg when the figure has no canvas)."""
    if not hasattr(figure.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
    engine = figure.get_layout_engine()
    if engine is not None:
        engine.execute(figure)
    return figure.canvas.get_renderer()


def _style_context_axes(ax: Axes, data: Mapping[str, Any], title: str | None, steps: int | None) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

    ax.set_xlabel(X_LABEL)
    ax.set_ylabel(Y_LABEL)
    ax.set_title(title or "Tokens in context at each model call")
    ax.tick_params(labelsize=PROJECTOR_STYLE["xtick.labelsize"])  # tick labels are made at draw time, outside rc_context
    last_step = max([steps or 1, *(step for agent in data.values() for _, step, _ in agent["calls"])])
    last_marker = max((x for agent in data.values() for _, x, _, _ in agent["markers"]), default=0)
    ax.set_xlim(0.5, max(last_step, last_marker) + 0.5)  # an event after the last call is drawn past its step
    ax.xaxis.set_major_locator(MultipleLocator(1) if last_step <= EVERY_STEP_TICKS else MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    tops = [y for agent in data.values() for _, y in agent["points"]]
    tops += [y for agent in data.values() for _, y, _ in agent.get("side_calls", [])]
    tops += [agent["budget"] or 0 for agent in data.values()]
    ax.set_ylim(0, max(tops, default=1) * 1.2 or 1)
    if data:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=min(3, len(ax.get_legend_handles_labels()[1])),
                  framealpha=0.9, fontsize=12)


def save_context_chart(logs: LogsArgument, path: str | Path, title: str | None = None) -> Path:
    """Save the context chart as a PNG; returns the path."""
    return _save(plot_context(logs, title=title), path)


def _save(figure: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with projector_style():
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
    ``steps``: how many requests the session will have, so the x axis is set
    from the first frame and does not rescale as the line grows. ``auto=False``:
    redraw only when ``update()`` is called (say once per step when several agents
    take the same steps side by side, rather than after each agent's turn).
    """

    def __init__(self, agents: Any, title: str | None = None, steps: int | None = None, auto: bool = True) -> None:
        self.title = title
        self.steps = steps
        self.auto = auto
        self.logs: list[SessionLog] = []
        with projector_style():
            self.figure = context_figure()
            self.ax = self.figure.add_subplot()
        self.handle: Any = None
        self.redraws = 0
        self._drawn: tuple[Any, ...] | None = None
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

    def state(self) -> tuple[Any, ...]:
        """What the chart shows, in brief: it is redrawn only when this changed."""
        return tuple((id(log), len(log.calls), len(log.events), log.budget_tokens, log.trigger_tokens,
                      log.calls[-1].input_tokens if log.calls else None) for log in self.logs)

    def redraw(self, force: bool = False) -> bool:
        """Draw the chart again if what it shows changed (or ``force``); True when it was redrawn."""
        state = self.state()
        if state == self._drawn and not force:
            return False
        with projector_style():
            draw_context(self.ax, self.data(), title=self.title, steps=self.steps)
        self._drawn = state
        self.redraws += 1
        return True

    def show(self) -> None:
        """Display the chart here as a PNG; later turns update this same output (a display handle)."""
        from IPython.display import display

        self.handle = display(self.png(), display_id=True)

    def png(self) -> Any:
        """The chart as an IPython PNG image: it shows as a picture whatever matplotlib backend is active."""
        from IPython.display import Image

        buffer = io.BytesIO()
        with projector_style():
            self.figure.savefig(buffer, format="png", dpi=100)
        return Image(data=buffer.getvalue(), format="png")

    def update(self) -> None:
        """Redraw now and update the displayed picture, when anything it shows changed."""
        if self.redraw() and self.handle is not None:
            self.handle.update(self.png())

    def _on_turn(self, _log: SessionLog) -> None:
        if self.auto:
            self.update()

    def _ipython_display_(self) -> None:
        self.show()


# --- the cache chart ----------------------------------------------------------------------
CACHE_FIGSIZE = (15, 4.2)  # per agent


def cache_data(log: SessionLog) -> dict[str, Any]:
    """Per call (every purpose): ``calls`` [(number, purpose, cached tokens, uncached tokens)] and ``breaks``:
    the numbers of the first calls after each summary (where the cache is broken)."""
    calls, breaks, summarized = [], [], False
    for number, call in enumerate(log.calls, start=1):
        calls.append((number, call.purpose, call.cached_tokens, call.input_tokens - call.cached_tokens))
        if call.purpose == "summary":
            summarized = True
        elif call.purpose == "agent" and (summarized or EventKind.SUMMARIZE in call.events):
            breaks.append(number)
            summarized = False
    return {"calls": calls, "breaks": breaks}


def plot_cache(logs: LogsArgument, title: str | None = None) -> Figure:
    """Cached and uncached input per call, one panel per agent (see the module docstring)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    found = _as_logs(logs)
    with projector_style():
        figure = Figure(figsize=(CACHE_FIGSIZE[0], CACHE_FIGSIZE[1] * len(found)), layout="constrained")
        axes = figure.subplots(len(found), 1, squeeze=False)[:, 0]
        for position, (ax, log) in enumerate(zip(axes, found)):
            data, colour = cache_data(log), colour_for(log.agent_name, position)
            numbers = [number for number, *_ in data["calls"]]
            cached = [tokens for *_, tokens, _ in data["calls"]]
            uncached = [tokens for *_, tokens in data["calls"]]
            ax.bar(numbers, uncached, color=colour, label="billed in full", gid=f"uncached:{log.agent_name}")
            ax.bar(numbers, cached, bottom=uncached, color=colour, alpha=0.35, hatch="//", edgecolor=colour,
                   label="served from the prompt cache (0.1x)", gid=f"cached:{log.agent_name}")
            summaries = [(number, low) for number, purpose, _, low in data["calls"] if purpose == "summary"]
            if summaries:
                ax.bar([number for number, _ in summaries], [low for _, low in summaries], color=colour,
                       edgecolor=OKABE_ITO["black"], linewidth=2.5, label="a summary call (nothing in it was sent before)",
                       gid=f"summaries:{log.agent_name}")
            tops = {number: high + low for number, _, high, low in data["calls"]}
            if data["breaks"]:
                ax.plot(data["breaks"], [tops[number] for number in data["breaks"]], linestyle="none", marker="*",
                        markersize=16, color=OKABE_ITO["black"], label="first call after a summary: the cache breaks",
                        gid=f"breaks:{log.agent_name}")
            share = sum(cached) / max(1, sum(cached) + sum(uncached))
            ax.set_title(f"{log.agent_name}: {share:.0%} of its input cacheable")
            ax.set_xlabel("model call (every call, summaries included)")
            ax.set_ylabel("input tokens")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
            ax.tick_params(labelsize=PROJECTOR_STYLE["xtick.labelsize"])
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9, fontsize=12)  # beside: it hides no bar
        if title:
            figure.suptitle(title, fontsize=20)
    return figure


# --- the comparison chart ---------------------------------------------------------------
COMPARISON_PANELS = (
    ("peak_context_tokens", "Peak context", "tokens sent to the model", False),
    ("tokens_per_success", "Tokens per success", "tokens (all runs) / successes", False),
    ("success_rate", "Success rate", "tasks passed (%)", True),
    ("goal_retention", "Goal retention", "goal recalled (%)", True),
    ("input_vs_v1", "Input ÷ v1: raw, and with caching (hatched)", "all input / v1's", False),
    ("input_vs_limit", "Input ÷ the yardstick", "all input / the task's yardstick (the same for every agent)", False),
)
BUDGET_PANEL = "peak_context_tokens"  # the panel that gets the budget line
PAIRED_PANELS = {"input_vs_v1": "cached_vs_v1_cached"}  # a second, hatched bar per agent
RATIO_PANELS = {"input_vs_v1", "input_vs_limit"}  # ratios: two decimals, and a dashed line at 1


def comparison_data(summary: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per panel (metric), the value drawn for each agent; rates are in percent."""
    agents = summary.get("agents", summary)
    data: dict[str, dict[str, float | None]] = {}
    for metric, _title, _unit, is_rate in COMPARISON_PANELS:
        for key in (metric, PAIRED_PANELS.get(metric)):
            if key is None:
                continue
            data[key] = {}
            for name, metrics in agents.items():
                value = metrics.get(key)
                data[key][name] = None if value is None else float(value) * (100 if is_rate else 1)
    return data


def summary_budget(summary: Mapping[str, Any]) -> int | None:
    """The budget the runs were measured against, when the summary records one."""
    if summary.get("budget_tokens"):
        return int(summary["budget_tokens"])
    budgets = {metrics.get("budget_tokens") for metrics in summary.get("agents", {}).values()} - {None}
    return int(budgets.pop()) if len(budgets) == 1 else None


def plot_comparison(summary: Mapping[str, Any], title: str | None = None, budget_tokens: int | None = None) -> Figure:
    """Four bar panels comparing agents from a benchmark ``summary.json`` (a dict, or a path to one).

    ``budget_tokens`` (default: the summary's own) is drawn as a dashed line on the peak-context panel.
    """
    from matplotlib.figure import Figure

    if isinstance(summary, (str, Path)):
        summary = json.loads(Path(summary).read_text(encoding="utf-8"))
    data = comparison_data(summary)
    budget = budget_tokens or summary_budget(summary)
    with projector_style():
        figure = Figure(figsize=COMPARISON_FIGSIZE, layout="constrained")
        axes = figure.subplots(3, 2)
        for ax, (metric, panel_title, unit, is_rate) in zip(axes.flat, COMPARISON_PANELS):
            paired = data.get(PAIRED_PANELS.get(metric, ""))
            _draw_bars(ax, data[metric], panel_title, unit, is_rate, budget if metric == BUDGET_PANEL else None,
                       paired=paired, ratio=metric in RATIO_PANELS)
        figure.suptitle(title or "Benchmark: agents side by side", fontsize=20)
    return figure


def _draw_bars(ax: Axes, values: Mapping[str, float | None], title: str, unit: str, is_rate: bool,
               budget: int | None = None, paired: Mapping[str, float | None] | None = None, ratio: bool = False) -> None:
    from matplotlib.ticker import FuncFormatter

    names = list(values)
    heights = [values[name] or 0 for name in names]
    colours = [colour_for(name, position) for position, name in enumerate(names)]
    width = 0.4 if paired is not None else 0.8
    offset = -width / 2 if paired is not None else 0.0
    positions = [index + offset for index in range(len(names))]
    groups = [(ax.bar(positions, heights, width=width, color=colours, edgecolor=OKABE_ITO["black"], linewidth=1.2), values)]
    if paired is not None:
        groups.append((ax.bar([index + width / 2 for index in range(len(names))], [paired.get(name) or 0 for name in names],
                              width=width, color=colours, edgecolor=OKABE_ITO["black"], linewidth=1.2, hatch="//",
                              alpha=0.75), paired))
    ax.set_xticks(range(len(names)), names)
    for bars, shown in groups:
        for bar, name in zip(bars, names):
            value = shown.get(name)
            text = "n/a" if value is None else (f"{value:.0f}%" if is_rate else f"{value:.2f}" if ratio else f"{value:,.0f}")
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), xytext=(0, 4),
                        textcoords="offset points", ha="center", va="bottom", fontsize=11 if ratio else 13,
                        fontweight="bold")
    if ratio:
        ax.axhline(1.0, color=OKABE_ITO["black"], linestyle="--", linewidth=1.5, gid="one")
    heights += [paired.get(name) or 0 for name in names] if paired is not None else []
    if budget:
        ax.axhline(budget, color=OKABE_ITO["black"], linestyle="--", linewidth=2.5, gid="budget",
                   label=f"budget ({budget:,} tokens)")
        ax.legend(loc="lower right", framealpha=0.9)
    ax.set_title(title)
    ax.set_ylabel(unit)
    ax.tick_params(labelsize=PROJECTOR_STYLE["xtick.labelsize"])
    ax.set_ylim(0, 110 if is_rate else max([*heights, budget or 0], default=1) * 1.2 or 1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.1f}" if ratio else f"{value:,.0f}"))
    ax.grid(axis="x", visible=False)
    ax.tick_params(axis="x", labelrotation=20 if len(names) > 3 else 0)


def save_comparison_chart(summary: Mapping[str, Any], path: str | Path, title: str | None = None,
                          budget_tokens: int | None = None) -> Path:
    """Save the comparison chart as a PNG; returns the path."""
    return _save(plot_comparison(summary, title=title, budget_tokens=budget_tokens), path)


__all__ = [
    "LiveChart", "cache_data", "chart_data", "colour_for", "plot_cache", "context_figure", "comparison_data", "draw_context", "plot_comparison",
    "plot_context", "save_comparison_chart", "save_context_chart", "separate_labels", "step_positions",
    "summary_budget", "OKABE_ITO", "EVENT_MARKERS",
]
