"""ContextLab: type a request, watch the context fill, change a setting, try again.

::

    from flawedcode.lab import ContextLab
    lab = ContextLab(steps=LESSON_STEPS, version="v1", model=MODEL)
    lab            # show it (the last line of a cell)
    lab.play()     # or click Step: send the scripted session's requests

What is on screen, top to bottom:

- **controls**: agent version (v0, v1, v2), budget (tokens), v2's summary trigger
  (share of the budget), offload threshold (tokens) and summarizer on/off, instructor mode.
  **Changing any of them starts a fresh conversation.**
- **request**: a text box and Send; **Step** sends the scripted session's next
  request; **Summarize now** (v2) archives and summarizes the history at once;
  **Reset** starts the conversation over.
- **status**: the agent, model, budget and where the scripted session is.
- **the live token chart** (``flawedcode.charts``): tokens sent at each model call,
  budget and trigger lines, offload / summary / goal-lost markers by step;
- **the transcript**: each request, its tool calls with the size of their results
  (and the stub that replaced an offloaded one), the reply;
- **the context-window bar** (``flawedcode.lab.bar``): what the model received at
  its latest call, one segment per message, coloured by kind.

**Instructor mode** plays the scripted session one request at a time: the box shows
the next request before it is sent, **Next** sends exactly that one and the lab
waits; the transcript is larger, for a projector.

**Without a widget front end** (nbval, plain ``nbconvert``, a terminal, a notebook
viewer) the lab shows the same state as a picture (chart and bar) and text: its
display carries both, and the front end picks what it can show. ``lab.snapshot()``
is that picture and text alone, frozen at the moment it is taken.

**When the pictures are drawn.** Drawing the chart and the bar takes a moment, so
the widget's pictures are redrawn after each change only while a front end shows
the lab (ipywidgets' view count), or always when ``live=True``; ``refresh()``
redraws them on demand. The Python side (transcript, ``chart_data()``, ``view()``)
is always up to date.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import matplotlib
from matplotlib.figure import Figure

from flawedcode.agents import BaseAgent
from flawedcode.charts import PROJECTOR_STYLE, chart_data, plot_context
from flawedcode.infra.safe_text import escape_surrogates
from flawedcode.lab.bar import plot_context_bar
from flawedcode.lab.session import VERSIONS, AgentMaker, Exchange, LabSession, LabSettings, describe_exchange
from flawedcode.lab.window import ContextView
from flawedcode.lessons import LESSON_BUDGET
from flawedcode.paths import write_atomically

WIDGET_DPI = 72
TRANSCRIPT_FONT = {False: "13px", True: "17px"}  # instructor mode: larger


class ContextLab:
    """An ipywidgets app over one agent at a time (see the module docstring)."""

    def __init__(self, agent: BaseAgent | None = None, *, steps: Sequence[str] = (), version: str = "v1",
                 model: str | None = None, budget_tokens: int = LESSON_BUDGET, trigger_fraction: float | None = None,
                 offload_tokens: int | None = None, summarize: bool = True, instructor: bool = False,
                 make_agent: AgentMaker | None = None,
                 folder: str | Path | None = None, title: str | None = None, live: bool | None = None) -> None:
        settings = LabSettings(version=version, budget_tokens=budget_tokens, summarize=summarize, model=model)
        chosen = {"trigger_fraction": trigger_fraction, "offload_tokens": offload_tokens}
        settings = replace(settings, **{name: value for name, value in chosen.items() if value is not None})
        self.session = LabSession(None if agent is not None else settings, steps, agent=agent,
                                  make_agent=make_agent, folder=folder)
        self.title = title
        self.live = live
        self.instructor = instructor
        self._stale = True
        self._build_widgets()
        self.refresh(draw=False)

    # --- what a notebook calls (and the buttons call) ----------------------------------------
    @property
    def agent(self) -> BaseAgent:
        return self.session.agent

    @property
    def transcript(self) -> list[Exchange]:
        return self.session.transcript

    def send(self, text: str) -> Exchange:
        """Send one request, as typing it and clicking Send does."""
        exchange = self.session.send(text)
        self.refresh()
        return exchange

    def step(self) -> Exchange | None:
        """Send the scripted session's next request (exactly one); None when it is over."""
        exchange = self.session.step()
        self.refresh()
        return exchange

    next = step  # instructor mode's button

    def play(self, count: int | None = None) -> None:
        """Send the next ``count`` scripted requests (default: all that are left), one at a time.

        The exchanges land in ``transcript``; nothing is returned, so a cell ending in
        ``lab.play()`` prints nothing more than the lab shows.
        """
        sent = 0
        while (count is None or sent < count) and self.session.next_step is not None:
            self.step()
            sent += 1

    def summarize_now(self) -> Exchange:
        """v2: archive and summarize the history now."""
        exchange = self.session.summarize_now()
        self.refresh()
        return exchange

    def reset(self) -> None:
        """A fresh conversation with the current settings; the script starts over."""
        self.session.restart()
        self.refresh()

    def change(self, **settings: Any) -> None:
        """Change settings from code, as the controls do (``lab.change(budget_tokens=12000)``)."""
        for name, value in settings.items():
            self._controls[name].value = value

    def view(self, upcoming: bool = False) -> ContextView | None:
        """What the context-window bar shows (``upcoming``: what the next call would receive, reply included)."""
        return self.session.view(upcoming)

    def chart_data(self) -> dict[str, Any]:
        """What the token chart shows (``flawedcode.charts.chart_data`` of this conversation)."""
        return chart_data(self.agent.log)

    def text(self) -> str:
        """The lab's state as text (status, context window, transcript)."""
        return self.session.text()

    def snapshot(self) -> LabSnapshot:
        """The lab's state now, as a picture and text that any front end shows."""
        return LabSnapshot(self.text(), self.chart_png(), self.bar_png())

    # --- pictures ----------------------------------------------------------------------------
    def chart_figure(self) -> Figure:
        title = self.title or f"{self.agent.log.agent_name}: tokens sent at each model call"
        return plot_context(self.agent.log, title=title, steps=len(self.session.steps) or None)

    def bar_figure(self) -> Figure:
        return plot_context_bar(self.view(), trigger_tokens=self.agent.log.trigger_tokens)

    def chart_png(self, dpi: int = WIDGET_DPI) -> bytes:
        return _png(self.chart_figure(), dpi)

    def bar_png(self, dpi: int = WIDGET_DPI) -> bytes:
        return _png(self.bar_figure(), dpi)

    def refresh(self, draw: bool | None = None) -> None:
        """Update the widgets; redraw the pictures if ``draw`` (default: when someone is watching)."""
        self._sync_controls()
        self._status.value = f"<b>{html.escape(self.session.status())}</b>"
        self._transcript.value = self._transcript_html()
        self._stale = True
        if draw if draw is not None else self._watched():
            self._chart.value, self._bar.value = self.chart_png(), self.bar_png()
            self._stale = False

    def _watched(self) -> bool:
        return self.live if self.live is not None else bool(self.widget._view_count)

    # --- the widgets ---------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        settings = self.session.settings
        style = {"description_width": "initial"}
        self._controls: dict[str, widgets.ValueWidget] = {
            "version": widgets.Dropdown(options=VERSIONS, value=settings.version, description="agent", style=style,
                                        layout=widgets.Layout(width="130px")),
            "budget_tokens": widgets.BoundedIntText(value=settings.budget_tokens, min=1024, max=1_000_000, step=1024,
                                                    description="budget (tokens)", style=style, layout=widgets.Layout(width="210px")),
            "trigger_fraction": widgets.FloatSlider(value=settings.trigger_fraction, min=0.3, max=1.0, step=0.05,
                                                    readout_format=".0%", description="v2 summary trigger", style=style,
                                                    continuous_update=False),
            "offload_tokens": widgets.BoundedIntText(value=settings.offload_tokens, min=50, max=100_000, step=250,
                                                     description="v2 offload over (tokens)", style=style,
                                                     layout=widgets.Layout(width="250px")),
            "summarize": widgets.Checkbox(value=settings.summarize, description="v2 summarizes", indent=False,
                                          layout=widgets.Layout(width="140px")),
        }
        for name, control in self._controls.items():
            control.observe(self._on_setting(name), names="value")
        self._instructor = widgets.ToggleButton(value=self.instructor, description="Instructor mode", icon="graduation-cap")
        self._instructor.observe(self._on_instructor, names="value")
        self._request = widgets.Text(placeholder="Type a request, then Send", layout=widgets.Layout(flex="1 1 auto"))
        self._send = widgets.Button(description="Send", button_style="primary", icon="paper-plane")
        self._step = widgets.Button(description="Step", icon="step-forward", tooltip="Send the scripted session's next request")
        self._summarize = widgets.Button(description="Summarize now", icon="compress", tooltip="v2: archive and summarize the history now")
        self._reset = widgets.Button(description="Reset", icon="refresh", tooltip="Start the conversation over")
        self._send.on_click(lambda _: self._send_typed())
        self._step.on_click(lambda _: self.step())
        self._summarize.on_click(lambda _: self.summarize_now())
        self._reset.on_click(lambda _: self.reset())
        self._status = widgets.HTML()
        self._chart = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self._bar = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self._transcript = widgets.HTML(layout=widgets.Layout(width="38%", max_height="620px", overflow="auto"))
        self.widget = widgets.VBox([
            widgets.HTML(f"<h3 style='margin:4px 0'>{html.escape(self.title or 'Context lab')}</h3>"),
            widgets.HBox([*self._controls.values(), self._instructor], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self._request, self._send, self._step, self._summarize, self._reset]),
            self._status,
            widgets.HBox([widgets.VBox([self._chart, self._bar], layout=widgets.Layout(width="62%")), self._transcript]),
        ])
        self.widget._view_count = 0  # ipywidgets counts the views a front end shows; 0 starts the count
        self.widget.observe(self._on_view, names="_view_count")

    def _on_setting(self, name: str) -> Any:
        def handler(change: dict[str, Any]) -> None:
            if self.session.change(**{name: change["new"]}):
                self.refresh()
        return handler

    def _on_instructor(self, change: dict[str, Any]) -> None:
        self.instructor = bool(change["new"])
        self.refresh(draw=False)

    def _on_view(self, change: dict[str, Any]) -> None:
        if change["new"] and self._stale:
            self.refresh(draw=True)

    def _send_typed(self) -> None:
        if self.instructor:
            self.step()
            return
        text = self._request.value.strip()
        if not text:
            self._status.value = "<b>Type a request in the box first (or click Step for the scripted session's next one).</b>"
            return
        self._request.value = ""
        self.send(text)

    def _sync_controls(self) -> None:
        """Controls show the session's settings; v2's own controls only work for v2."""
        settings = self.session.settings
        for name, control in self._controls.items():
            if control.value != getattr(settings, name):
                control.value = getattr(settings, name)
        for name in ("trigger_fraction", "offload_tokens", "summarize"):
            self._controls[name].disabled = settings.version != "v2"
        self._controls["trigger_fraction"].disabled |= not settings.summarize
        self._summarize.disabled = settings.version != "v2"
        self._step.disabled = self.session.next_step is None
        self._step.description = "Next" if self.instructor else "Step"
        self._send.disabled = self.instructor
        self._request.disabled = self.instructor
        if self.instructor:
            self._request.value = self.session.next_step or "(the scripted session is over)"

    def _transcript_html(self) -> str:
        lines = [line for exchange in self.transcript for line in describe_exchange(exchange)] or ["(nothing sent yet)"]
        return (f"<pre style='white-space:pre-wrap;font-size:{TRANSCRIPT_FONT[self.instructor]};margin:0'>"
                f"{html.escape(chr(10).join(lines))}</pre>")

    # --- display --------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The widgets where a front end can show them; a picture and text everywhere else."""
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        snapshot = self.snapshot()
        return {**data, "text/html": snapshot.html(), "text/plain": snapshot.text}


class LabSnapshot:
    """The lab's state at one moment: a chart and a bar (PNG) and the state as text."""

    def __init__(self, text: str, chart_png: bytes, bar_png: bytes) -> None:
        self.text = text
        self.chart_png = chart_png
        self.bar_png = bar_png

    def html(self) -> str:
        images = "".join(f"<img src='data:image/png;base64,{base64.b64encode(png).decode()}' style='max-width:100%'/>"
                         for png in (self.chart_png, self.bar_png))
        return f"<div>{images}<pre style='white-space:pre-wrap'>{html.escape(self.text)}</pre></div>"

    def save(self, folder: str | Path) -> list[Path]:
        """Write chart.png, bar.png and state.txt into ``folder``; returns the paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        state = escape_surrogates(self.text).encode("utf-8")  # a lone surrogate (a bad byte in a name) is shown, never fatal
        for name, content in (("chart.png", self.chart_png), ("bar.png", self.bar_png), ("state.txt", state)):
            write_atomically(folder / name, content)
            written.append(folder / name)
        return written

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/html": self.html(), "text/plain": self.text}

    def __repr__(self) -> str:
        return self.text


def _png(figure: Figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    with matplotlib.rc_context(PROJECTOR_STYLE):
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


__all__ = ["ContextLab", "LabSettings", "LabSnapshot"]
