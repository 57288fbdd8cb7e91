"""Draw the lessons' five diagrams (one idea each) as PNG files next to this script.

    python notebooks/figures/diagrams.py

Each lesson embeds its diagram as a Markdown cell attachment, which JupyterLab, VS Code
and Colab all render (a Mermaid block does not render everywhere). After changing a
diagram, run this script and re-attach the PNG (``attach`` below does it for every lesson).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent
COLOURS = {"user": "#E69F00", "model": "#56B4E9", "tool": "#D55E00", "stub": "#009E73", "summary": "#CC79A7",
           "system": "#999999", "file": "#F0E442", "ink": "#000000"}
STYLE = {"font.size": 13, "font.family": "DejaVu Sans"}
DIAGRAMS = {  # file name -> (lesson notebook, alt text)
    "react_loop.png": ("00_react_loop_v0.ipynb", "The ReAct loop"),
    "window_filling.png": ("01_memory_and_context_rot_v1.ipynb", "The window filling"),
    "offload.png": ("02_offloading.ipynb", "Offloading a large tool result"),
    "summarize_archive.png": ("03_summarize_with_archive_v2.ipynb", "Summarize with an archive"),
    "benchmark_loop.png": ("04_benchmarking.ipynb", "The benchmark's loop"),
}


def canvas(width: float = 11, height: float = 4.2) -> tuple[Figure, object]:
    figure = Figure(figsize=(width, height))
    ax = figure.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return figure, ax


def box(ax, x: float, y: float, w: float, h: float, text: str, colour: str, size: int = 13, weight: str = "bold") -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05,rounding_size=0.15", facecolor=colour,
                                edgecolor=COLOURS["ink"], linewidth=1.5, alpha=0.9))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, fontweight=weight, wrap=True)


def arrow(ax, start: tuple[float, float], end: tuple[float, float], text: str = "", bend: float = 0.0,
          offset: tuple[float, float] = (0, 0.18)) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=20, linewidth=2, color=COLOURS["ink"],
                                 connectionstyle=f"arc3,rad={bend}"))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text, ha="center",
                va="center", fontsize=12, style="italic")


def react_loop() -> Figure:
    figure, ax = canvas()
    box(ax, 0.3, 1.6, 2.0, 1.0, "your request", COLOURS["user"])
    box(ax, 3.6, 1.6, 2.2, 1.0, "model\n(thinks)", COLOURS["model"])
    box(ax, 7.6, 2.9, 2.6, 0.9, "tool call (act)\nchartbook_get_docs(...)", COLOURS["tool"], size=12)
    box(ax, 7.6, 0.4, 2.6, 0.9, "tool result (observe)\n2,907 characters", COLOURS["system"], size=12)
    box(ax, 3.6, 0.1, 2.2, 0.8, "answer", COLOURS["stub"])
    arrow(ax, (2.3, 2.1), (3.6, 2.1))
    arrow(ax, (5.8, 2.4), (7.6, 3.3), "needs a tool", offset=(-0.3, 0.25))
    arrow(ax, (8.9, 2.9), (8.9, 1.3), "the agent runs it", offset=(0.9, 0))
    arrow(ax, (7.6, 0.85), (5.8, 1.75), "result goes back in", offset=(0.6, -0.45))
    arrow(ax, (4.7, 1.6), (4.7, 0.9), "enough to answer", offset=(1.0, 0))
    ax.text(5.5, 4.0, "The ReAct loop: think, act, observe, repeat until the model can answer", ha="center",
            fontsize=15, fontweight="bold")
    return figure


def window_filling() -> Figure:
    figure, ax = canvas(height=4.6)
    window = 6.0
    sizes = [[0.3], [0.3, 1.6], [0.3, 1.6, 0.9], [0.3, 1.6, 0.9, 2.2], [0.3, 1.6, 0.9, 2.2, 1.1]]
    kinds = ["user", "tool", "tool", "tool", "tool"]
    for row, parts in enumerate(sizes):
        y = 3.6 - row * 0.75
        ax.text(1.05, y + 0.25, f"step {row + 1}", ha="right", va="center", fontsize=12)
        left = 1.2
        for number, width in enumerate(parts):
            colour = COLOURS["user"] if number == 0 else COLOURS[kinds[number]]
            hidden = row == 4 and number == 0  # the last request no longer fits: the oldest message falls out
            ax.add_patch(FancyBboxPatch((left, y), width, 0.5, boxstyle="square,pad=0", facecolor=colour,
                                        edgecolor="white", linewidth=2, alpha=0.3 if hidden else 0.95,
                                        hatch="//" if hidden else None))
            left += width
    ax.plot([1.2 + window - 0.4] * 2, [0.3, 4.3], color=COLOURS["ink"], linestyle="--", linewidth=2.5)
    ax.text(1.2 + window - 0.35, 0.35, "window (budget)", fontsize=12, ha="left")
    ax.annotate("the goal (step 1)\nfalls out first", (1.35, 0.9), xytext=(2.6, 0.05), fontsize=12, fontweight="bold",
                arrowprops={"arrowstyle": "-|>", "color": COLOURS["ink"]})
    ax.text(9.2, 2.4, "v1 sends the whole\nhistory every call:\nit only grows.\n\nWhat does not fit\nis forgotten, oldest\nfirst.",
            fontsize=12, va="center")
    ax.text(5.5, 4.4, "The window filling: every request re-sends everything before it", ha="center", fontsize=15,
            fontweight="bold")
    return figure


def offload() -> Figure:
    figure, ax = canvas()
    box(ax, 0.3, 2.4, 2.8, 1.1, "tool result\n5,465 characters\n1,571 tokens", COLOURS["tool"], size=12)
    box(ax, 4.4, 2.4, 2.4, 1.1, "over the\nthreshold?", COLOURS["system"])
    box(ax, 8.1, 2.9, 2.6, 0.9, "scratch/<file>.txt\nthe whole result", COLOURS["file"], size=12)
    box(ax, 8.1, 1.2, 2.6, 1.2, "stub in the context\npath, size, preview,\nhow to read the rest", COLOURS["stub"], size=11)
    box(ax, 4.4, 0.3, 2.4, 0.9, "read_file(path)\nwhen needed", COLOURS["model"], size=12)
    arrow(ax, (3.1, 2.95), (4.4, 2.95))
    arrow(ax, (6.8, 3.15), (8.1, 3.35), "yes: save it", offset=(0, 0.25))
    arrow(ax, (6.8, 2.7), (8.1, 1.9), "and leave", offset=(0, -0.25))
    arrow(ax, (8.1, 1.4), (6.8, 0.9), "the stub says how", offset=(0.1, 0.3))
    arrow(ax, (6.8, 0.5), (10.85, 3.3), "", bend=0.5)
    ax.text(7.4, 0.12, "reads the whole file back", fontsize=12, style="italic")
    ax.text(5.5, 4.0, "Offload: a large result goes to a file; a short stub stays in the context", ha="center",
            fontsize=15, fontweight="bold")
    return figure


def summarize_archive() -> Figure:
    figure, ax = canvas(height=4.6)
    ax.text(0.3, 3.7, "before the call:", fontsize=12, fontweight="bold")
    left = 0.3
    for number, (kind, width) in enumerate([("user", 0.5), ("tool", 1.2), ("model", 0.4), ("tool", 1.5), ("model", 0.4),
                                            ("stub", 0.5), ("model", 0.4), ("user", 0.4), ("tool", 0.9)]):
        ax.add_patch(FancyBboxPatch((left, 3.0), width, 0.5, boxstyle="square,pad=0", facecolor=COLOURS[kind],
                                    edgecolor="white", linewidth=2))
        if number == 6:
            cut = left + width
        left += width
    ax.plot([cut, cut], [2.85, 3.65], color=COLOURS["ink"], linewidth=2.5)
    ax.text(cut + 0.05, 3.75, "keep", fontsize=11)
    ax.text(0.35, 2.6, "oldest messages: summarize and archive", fontsize=11, style="italic")
    box(ax, 0.3, 0.4, 3.2, 1.3, "archives/<conversation>/0001\n.jsonl (lossless)\n.md (readable)", COLOURS["file"], size=11)
    ax.text(4.2, 1.95, "after:", fontsize=12, fontweight="bold")
    box(ax, 4.2, 0.9, 3.4, 0.9, "summary: goal (verbatim),\narchive path, what happened", COLOURS["summary"], size=11)
    ax.add_patch(FancyBboxPatch((7.7, 1.1), 0.4, 0.5, boxstyle="square,pad=0", facecolor=COLOURS["user"], edgecolor="white"))
    ax.add_patch(FancyBboxPatch((8.1, 1.1), 0.9, 0.5, boxstyle="square,pad=0", facecolor=COLOURS["tool"], edgecolor="white"))
    ax.text(8.4, 0.8, "kept", fontsize=11, ha="center")
    arrow(ax, (1.8, 2.9), (1.8, 1.7), "1. archive first", offset=(0.95, 0))
    arrow(ax, (4.0, 2.9), (5.6, 1.8), "2. then summarize", offset=(0.9, 0.1))
    arrow(ax, (5.0, 0.9), (3.5, 0.9), "search_archive / read_file", bend=-0.3, offset=(0, -0.55))
    ax.text(5.5, 4.35, "Summarize with an archive: the history shrinks, nothing is lost", ha="center", fontsize=15,
            fontweight="bold")
    return figure


def benchmark_loop() -> Figure:
    figure, ax = canvas()
    box(ax, 0.2, 2.6, 2.2, 1.0, "tasks (YAML)\nsteps + checks", COLOURS["file"], size=12)
    box(ax, 0.2, 1.2, 2.2, 1.0, "agents\nv0 v1 v2 + peers", COLOURS["model"], size=12)
    box(ax, 3.3, 1.8, 2.4, 1.2, "for each agent x task x run:\na fresh agent\nruns the steps", COLOURS["system"], size=11)
    box(ax, 6.6, 1.8, 1.9, 1.2, "runs.jsonl\none line\nper run", COLOURS["file"], size=12)
    box(ax, 9.0, 2.6, 1.8, 1.0, "score", COLOURS["stub"])
    box(ax, 9.0, 0.6, 1.8, 1.4, "summary.json\nresults.md\ncharts", COLOURS["summary"], size=11)
    arrow(ax, (2.4, 3.1), (3.3, 2.6))
    arrow(ax, (2.4, 1.7), (3.3, 2.2))
    arrow(ax, (5.7, 2.4), (6.6, 2.4))
    arrow(ax, (8.5, 2.7), (9.0, 3.0))
    arrow(ax, (9.9, 2.6), (9.9, 2.0))
    ax.text(5.5, 0.9, "run and score are separate:\nrescore without rerunning", ha="center", fontsize=12, style="italic")
    ax.text(5.5, 4.0, "The benchmark's loop: fresh runs, raw results on disk, then the numbers", ha="center",
            fontsize=15, fontweight="bold")
    return figure


DRAWERS = {"react_loop.png": react_loop, "window_filling.png": window_filling, "offload.png": offload,
           "summarize_archive.png": summarize_archive, "benchmark_loop.png": benchmark_loop}


def draw_all() -> None:
    with matplotlib.rc_context(STYLE):
        for name, draw in DRAWERS.items():
            draw().savefig(HERE / name, dpi=90)


def attach() -> None:
    """Put each PNG into its lesson's diagram cell (the Markdown cell that shows ``attachment:<name>``)."""
    import nbformat

    for name, (notebook_name, _alt) in DIAGRAMS.items():
        path = NOTEBOOKS / notebook_name
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "markdown" and f"attachment:{name}" in cell.source:
                cell.attachments = {name: {"image/png": base64.b64encode((HERE / name).read_bytes()).decode()}}
        nbformat.write(notebook, path)


if __name__ == "__main__":
    draw_all()
    if "--attach" in sys.argv:
        attach()
