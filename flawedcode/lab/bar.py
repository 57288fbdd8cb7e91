"""The context-window bar: what the model received at one call, one coloured segment per message.

Read it left to right, oldest first, as the model reads its request:

- one segment per message (the first is the system prompt plus the tool
  schemas), its width its token count, its colour its kind (``KIND_COLOURS``,
  the Okabe-Ito palette: a stub is green where the tool result it replaced was
  red; a summary is purple where the block of history it replaced was);
- a segment the model could not see (the offline model's window forgot it) is
  hatched and faded; the bar's title says how many tokens were forgotten;
- the first segment that holds the conversation's goal is marked ``goal`` above it (once);
- the dashed black line is the budget, the dotted one v2's summary trigger;
- a segment wide enough shows its token count; the legend gives each kind's total.

``plot_context_bar(view)`` returns a matplotlib ``Figure`` (not shown, not saved).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from flawedcode.charts import OKABE_ITO, PROJECTOR_STYLE
from flawedcode.lab.window import CORE_KINDS, KIND_COLOURS, KIND_NAMES, SEGMENT_KINDS, ContextView, SegmentKind, bar_title

# What each colour is called, read from the palette itself, so a lesson's text names the colours on screen.
COLOUR_NAMES = {**{value: name.replace("_", " ") for name, value in OKABE_ITO.items()}, "#999999": "grey"}
BAR_FIGSIZE = (12, 3.4)
LABEL_MIN_SHARE = 0.045  # a segment narrower than this share of the axis gets no number inside


def colour_name(kind: SegmentKind) -> str:
    """The colour a kind is drawn in, by name ("vermillion", "bluish green"...)."""
    return COLOUR_NAMES[KIND_COLOURS[kind]]


def colour_key(kinds: Sequence[SegmentKind] = CORE_KINDS) -> str:
    """One sentence naming each kind's colour, as drawn: for a lesson's text (v2's kinds; v3's on request)."""
    return "; ".join(f"{colour_name(kind)}: {KIND_NAMES[kind]}" for kind in kinds) + "."


def plot_context_bar(view: ContextView | None, title: str | None = None, trigger_tokens: int | None = None) -> Figure:
    """Draw the bar for one call's ``ContextView`` (an empty frame when there is none yet)."""
    with matplotlib.rc_context(PROJECTOR_STYLE):
        figure = Figure(figsize=BAR_FIGSIZE)  # fixed margins: redrawn after every request, so no layout solver
        figure.subplots_adjust(left=0.02, right=0.98, top=0.84, bottom=0.42)
        ax = figure.add_subplot()
        segments = view.segments if view else []
        budget = view.budget_tokens if view else None
        right = max([view.total_tokens if view else 0, budget or 0, trigger_tokens or 0, 1]) * 1.04
        left = 0
        goal_marked = False  # the goal can be in two segments (a summary and the pinned request): one label, on the first
        for number, segment in enumerate(segments):
            ax.barh(0, segment.tokens, left=left, height=0.6, color=KIND_COLOURS[segment.kind],
                    edgecolor="white", linewidth=1.5, alpha=1.0 if segment.visible else 0.35,
                    hatch=None if segment.visible else "//", gid=f"segment:{number}:{segment.kind}")
            if segment.tokens >= LABEL_MIN_SHARE * right:
                ax.text(left + segment.tokens / 2, 0, f"{segment.tokens:,}", ha="center", va="center",
                        fontsize=12, fontweight="bold", color="black" if segment.kind in ("system", "user", "plan") else "white")
            if segment.holds_goal and not goal_marked:
                goal_marked = True
                ax.annotate("goal", (left + segment.tokens / 2, 0.3), xytext=(0, 8), textcoords="offset points",
                            ha="center", fontsize=13, fontweight="bold", color=OKABE_ITO["black"],
                            arrowprops={"arrowstyle": "-|>", "color": OKABE_ITO["black"]}, gid="goal")
            left += segment.tokens
        if budget:
            ax.axvline(budget, color=OKABE_ITO["black"], linestyle="--", linewidth=2.5, gid="budget")
        if trigger_tokens:
            ax.axvline(trigger_tokens, color=OKABE_ITO["blue"], linestyle=":", linewidth=2.5, gid="trigger")
        _style(ax, view, right, title, trigger_tokens)
    return figure


def _style(ax, view: ContextView | None, right: float, title: str | None, trigger_tokens: int | None) -> None:
    ax.set_xlim(0, right)
    ax.set_ylim(-0.5, 0.75)
    ax.set_yticks([])
    ax.grid(False)
    ax.spines["left"].set_visible(False)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set_xlabel("tokens the model received, oldest message first")
    ax.set_title(title or bar_title(view), fontsize=15)
    totals = view.tokens_by_kind() if view else dict.fromkeys(SEGMENT_KINDS, 0)
    handles = [Patch(color=KIND_COLOURS[kind], label=f"{KIND_NAMES[kind]} {totals[kind]:,}") for kind in SEGMENT_KINDS
               if kind in CORE_KINDS or totals[kind]]  # v3's kinds once they are there
    if view and view.forgotten:
        handles.append(Patch(facecolor="white", edgecolor="#666666", hatch="//", label="forgotten (outside the window)"))
    if view and view.budget_tokens:
        handles.append(matplotlib.lines.Line2D([], [], color=OKABE_ITO["black"], linestyle="--", label="budget"))
    if trigger_tokens:
        handles.append(matplotlib.lines.Line2D([], [], color=OKABE_ITO["blue"], linestyle=":", label="summary trigger"))
    ax.figure.legend(handles=handles, loc="lower center", ncol=5, fontsize=11, frameon=False)


__all__ = ["BAR_FIGSIZE", "COLOUR_NAMES", "KIND_COLOURS", "colour_key", "colour_name", "plot_context_bar"]
