"""ContextLab: type a request, watch the context fill, change a setting, try again.

::

    from flawedcode.lab import ContextLab
    lab = ContextLab(steps=LESSON_STEPS, version="v1", model=MODEL)
    lab            # show it (the last line of a cell)
    lab.play()     # or click Step: send the scripted session's requests

What is on screen, top to bottom:

- **controls**: agent version (v0, v1, v2, v3), budget (tokens; at least the fixed cost of
  every call, the system prompt and tool schemas, plus room for a reply: a lower one is
  refused with a line that says so), and, shown only for v2, its summary trigger (a share
  of the budget: type 45, 45% or 0.45; a trigger below that same floor would summarize
  before every call, and is refused the same way), offload threshold (tokens) and
  summarizer on/off; instructor mode. **Changing any of them starts a fresh conversation.**
- **request**: a text box (Enter sends) and Send; **Step** sends the scripted session's
  next request; **Summarize now** (v2, v3) archives and summarizes the history at once;
  **Reset** starts the conversation over.
- **input is never lost**: every click, Enter and setting is an input, and inputs run one
  at a time, in the order they were made, each to its end (``submit``). One that arrives
  while another runs waits its turn (a front end's clicks wait in the kernel's queue while
  a turn runs; the controls stay enabled, so a click is never swallowed by a disabled
  button); the status reads "working… sending ..." meanwhile. The input bar
  (``flawedcode.lab.inputs``) sends each Enter with its own words and numbers every input
  in the page, so requests typed while a turn runs are never merged and inputs that piled
  up are taken in the order made; the page lists them under the bar ("3 inputs waiting
  for the lab, in order: ...") until the lab takes each. Step after the script's last
  request is refused with a note in the transcript that says why.
- **status**: the agent, model, budget, the step (one counter: every request, typed
  or scripted, is a step, as on the chart) and where the scripted session is.
- **the live token chart** (``flawedcode.lab.svg``): tokens sent at each model call,
  budget and trigger lines, offload / summary / goal-lost markers by step, and v3's
  compactions, plan reminders, plan, memory and sub-agent calls; a list of every marked
  event under it;
- **the transcript**, newest first (the latest exchange is always in view): each request
  labelled with its step, each tool call on one line (click it for its arguments, the size
  of its result and the stub that replaced an offloaded one), the reply;
- **the context-window bar** (``flawedcode.lab.bar``): what the model received at
  its latest call, one segment per message, coloured by kind.

**Instructor mode** plays the scripted session one request at a time: the box shows
the next request before it is sent, **Next** sends exactly that one and the lab
waits; the transcript is larger, for a projector. Leaving it empties the box.
Pictures are drawn at 144 dpi (twice a screen's), so they stay sharp when scaled.

**Without a widget front end** (nbval, plain ``nbconvert``, a terminal, a notebook
viewer) the lab shows the same state as a picture (chart and bar) and text: its
display carries both, and the front end picks what it can show. ``lab.snapshot()``
is that picture and text alone, frozen at the moment it is taken.

**When the pictures are drawn.** Once per input, after the agent's step (or the
setting's change), and never before it: the widget's chart and bar are SVG and HTML
(``flawedcode.lab.svg``), drawn in milliseconds, so the lab is ready long before the
agent's next step would be. The snapshot's PNGs (matplotlib) are drawn only when asked for.
The title given to the lab heads the lab; the chart's title names the agent it shows.
"""

from __future__ import annotations

import base64
import html
import io
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import matplotlib
from matplotlib.figure import Figure

from flawedcode.agents import BaseAgent
from flawedcode.charts import PROJECTOR_STYLE, chart_data, plot_context
from flawedcode.infra.redact import redact_text
from flawedcode.infra.safe_text import escape_surrogates
from flawedcode.lab.bar import plot_context_bar
from flawedcode.lab.inputs import InputBar
from flawedcode.lab.session import (
    VERSIONS,
    AgentMaker,
    Exchange,
    LabSession,
    LabSettings,
    exchange_label,
    parse_trigger,
    trigger_text,
)
from flawedcode.lab.svg import bar_html, chart_html, tool_steps_of
from flawedcode.lab.window import ContextView
from flawedcode.lessons import LESSON_BUDGET
from flawedcode.paths import write_atomically

WIDGET_DPI = 144  # twice the screen's 72: crisp on a high-density display and a projector
TRANSCRIPT_FONT = {False: "13px", True: "17px"}  # instructor mode: larger
BUSY_TEXT = "working… "
V2_ONLY = ("trigger_fraction", "offload_tokens", "summarize")
SUMMARIZING_VERSIONS = ("v2", "v3")  # the versions with an archive: Summarize now shows for them
Input = tuple[Callable[[], str], Callable[[], object]]  # (what the status says while it runs, what it does)
REPLY_PREVIEW_CHARS = 240


class ContextLab:
    """An ipywidgets app over one agent at a time (see the module docstring)."""

    def __init__(self, agent: BaseAgent | None = None, *, steps: Sequence[str] = (), version: str = "v1",
                 model: str | None = None, budget_tokens: int = LESSON_BUDGET, trigger_fraction: float | None = None,
                 offload_tokens: int | None = None, summarize: bool = True, instructor: bool = False,
                 make_agent: AgentMaker | None = None,
                 folder: str | Path | None = None, title: str | None = None) -> None:
        settings = LabSettings(version=version, budget_tokens=budget_tokens, summarize=summarize, model=model)
        chosen = {"trigger_fraction": trigger_fraction, "offload_tokens": offload_tokens}
        settings = replace(settings, **{name: value for name, value in chosen.items() if value is not None})
        self.session = LabSession(None if agent is not None else settings, steps, agent=agent,
                                  make_agent=make_agent, folder=folder)
        self.title = title
        self.instructor = instructor
        self.busy = False
        self._running = ""  # what the input that runs now does, for the status line
        self.pending: deque[Input] = deque()  # inputs that arrived while another ran, in order
        self.redraws = 0
        self._build_widgets()
        self.refresh()

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
        """Send the scripted session's next request (exactly one); past its end, a note says so and None is returned."""
        if self.session.next_step is None:
            self.refuse("Step", f"the scripted session is over (all {len(self.session.steps)} of its requests were sent); "
                                "type a request, or Reset to play it again")
            return None
        exchange = self.session.step()
        self.refresh()
        return exchange

    def refuse(self, what: str, reason: str) -> Exchange:
        """An input that cannot run: a note in the transcript says which and why (nothing is dropped in silence)."""
        exchange = self.session.note(f"{what} refused: {reason}.")
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
            self.session.step()
            sent += 1
        self.refresh()  # once, at the end: a cell's play() draws the pictures once

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
        """Change settings from code, as the controls do (``lab.change(budget_tokens=12000)``); a budget or a
        summary trigger below the fixed cost of a call is a ``ValueError`` that says so."""
        if self.session.change(**settings):
            self.refresh()

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
    def chart_title(self) -> str:
        """The chart's title: it names the agent it shows (the lab's own title heads the lab)."""
        return f"{self.agent.log.agent_name}: tokens sent at each model call"

    def chart_figure(self) -> Figure:
        return plot_context(self.agent.log, title=self.chart_title(), steps=len(self.session.steps) or None)

    def bar_figure(self) -> Figure:
        return plot_context_bar(self.view(), trigger_tokens=self.agent.log.trigger_tokens)

    def chart_png(self, dpi: int = WIDGET_DPI) -> bytes:
        return _png(self.chart_figure(), dpi)

    def bar_png(self, dpi: int = WIDGET_DPI) -> bytes:
        return _png(self.bar_figure(), dpi)

    def refresh(self) -> None:
        """Update the widgets and draw both pictures (once; milliseconds, see ``flawedcode.lab.svg``)."""
        self._sync_controls()
        self._transcript.value = self._transcript_html()
        self._chart.value = chart_html(self.agent.log, self.chart_title(), steps=len(self.session.steps) or None,
                                       tool_steps=tool_steps_of(self.transcript))
        self._bar.value = bar_html(self.view(), trigger_tokens=self.agent.log.trigger_tokens)
        self.redraws += 1
        self._status.value = self._status_html()  # last: "working…" lasts until all is drawn

    def _status_html(self) -> str:
        """The session's status line; while inputs wait their turn, what runs now and how many wait."""
        if not self.pending:
            return f"<b>{html.escape(self.session.status())}</b>"
        waiting = f"{len(self.pending)} more input{'s' if len(self.pending) != 1 else ''} waiting"
        running = self._running or "next input"
        return f"<b>{html.escape(f'{BUSY_TEXT}{running} ({waiting})')}</b>"

    # --- inputs: one at a time, in order, none lost ----------------------------------------------
    def submit(self, what: Callable[[], str], action: Callable[[], object]) -> None:
        """Run one input (a click, Enter, a setting) after every input before it, each to its end.

        An input that arrives while another runs is queued and run next, in order: nothing is
        dropped, so sixteen clicks on Step send sixteen requests (or, past the script's end, say why not).
        """
        self.pending.append((what, action))
        if self.busy:
            self._status.value = self._status_html()
            return
        self.busy = True
        try:
            while self.pending:
                describe, run = self.pending.popleft()
                self._running = describe()
                self._status.value = f"<b>{html.escape(BUSY_TEXT + self._running)}</b>"
                try:
                    run()
                except ValueError as error:  # a setting refused (a budget or trigger below the fixed cost): say why
                    self._sync_controls()
                    self._status.value = f"<b style='color:#D55E00'>{html.escape(str(error))}</b>"
        finally:
            self.busy = False

    def _on_click(self, action: Callable[[], Any], what: Callable[[], str]) -> Callable[[Any], None]:
        """A button's handler: the click is an input (``submit``)."""
        def handler(_: Any) -> None:
            self.submit(what, action)
        return handler

    # --- the widgets ---------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        settings = self.session.settings
        style = {"description_width": "initial"}
        self._controls: dict[str, widgets.ValueWidget] = {
            "version": widgets.Dropdown(options=VERSIONS, value=settings.version, description="agent", style=style,
                                        layout=widgets.Layout(width="130px")),
            "budget_tokens": widgets.IntText(value=settings.budget_tokens, step=1024, description="budget (tokens)", style=style,
                                             layout=widgets.Layout(width="210px")),
            "trigger_fraction": widgets.Text(value=trigger_text(settings.trigger_fraction), continuous_update=False,
                                             description="v2 summary trigger (% of budget)", style=style,
                                             placeholder="45, 45% or 0.45", layout=widgets.Layout(width="300px")),
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
        self._inputs = InputBar(placeholder="Type a request, then Enter or Send", layout=widgets.Layout(width="100%"))
        self._inputs.on_input("send", self._on_enter)  # each Enter and Send, with its own words (never merged with the next)
        self._step, self._summarize, self._reset = (self._inputs.button(name) for name in ("step", "summarize", "reset"))
        self._inputs.on_input("step", self._on_click(self.step, lambda: f'sending "{self.session.next_step}"'))
        self._inputs.on_input("summarize", self._on_click(self.summarize_now, lambda: "summarizing the history"))
        self._inputs.on_input("reset", self._on_click(self.reset, lambda: "starting over"))
        self._status = widgets.HTML()
        self._chart = widgets.HTML(layout=widgets.Layout(width="100%"))
        self._bar = widgets.HTML(layout=widgets.Layout(width="100%"))
        self._transcript = widgets.HTML(layout=widgets.Layout(flex="1 1 300px", max_height="620px", overflow="hidden auto"))
        self.widget = widgets.VBox([
            widgets.HTML(f"<h3 style='margin:4px 0'>{html.escape(self.title or 'Context lab')}</h3>"),
            widgets.HBox([*self._controls.values(), self._instructor], layout=widgets.Layout(flex_flow="row wrap")),
            self._inputs,
            self._status,
            widgets.HBox([widgets.VBox([self._chart, self._bar], layout=widgets.Layout(flex="2 1 480px", min_width="0")),
                          self._transcript], layout=widgets.Layout(flex_flow="row wrap")),
        ])
        for widget, name in ((self.widget, "fc-lab"), (self._status, "fc-status"), (self._transcript, "fc-transcript"),
                             (self._inputs, "fc-request")):
            widget.add_class(name)  # names a page (and the browser test) can find each part by

    def _on_setting(self, name: str) -> Any:
        """A control's handler: the new value is an input (``submit``); one refused puts the control back and says why."""
        def handler(change: dict[str, Any]) -> None:
            if self._syncing:
                return
            new = change["new"]
            self.submit(lambda: "starting a fresh conversation with the new setting", lambda: self._apply_setting(name, new))
        return handler

    def _apply_setting(self, name: str, value: Any) -> None:
        if name == "trigger_fraction":
            value = parse_trigger(value)  # "45", "45%" or "0.45"; anything else is refused with the reason
        self.change(**{name: value})
        self._sync_controls()  # a text the session read ("0.5") is shown as it was read ("50%")

    def _on_instructor(self, change: dict[str, Any]) -> None:
        self.instructor = bool(change["new"])
        if not self.instructor:
            self._set_request("")  # the pre-filled scripted request is not the student's to send
        self.refresh()

    # --- typed requests -----------------------------------------------------------------------------
    _syncing = False

    def _on_enter(self, text: str) -> None:
        """Enter in the request box, or Send, with the words typed (in instructor mode: Next)."""
        if self.instructor:
            self.submit(lambda: f'sending "{self.session.next_step}"', self.step)
            return
        text = text.strip()
        if text:
            self._take_typed(text)

    def _take_typed(self, text: str) -> None:
        self._set_request("")
        self.submit(lambda: f'sending "{text}"', lambda: self.send(text))

    def _set_request(self, text: str) -> None:
        """Put ``text`` in the request box (what the box shows; typing in the page does not change it)."""
        self._inputs.value = text

    def _sync_controls(self) -> None:
        """Controls show the session's settings; v2's own controls show only in v2's lab."""
        settings = self.session.settings
        self._syncing = True  # what the lab sets itself is not an input
        try:
            for name, control in self._controls.items():
                value = getattr(settings, name)
                value = trigger_text(value) if name == "trigger_fraction" else value
                if control.value != value:
                    control.value = value
        finally:
            self._syncing = False
        for name in V2_ONLY:
            self._controls[name].layout.display = None if settings.version == "v2" else "none"
        self._controls["trigger_fraction"].disabled = not settings.summarize
        self._inputs.summarize_shown = settings.version in SUMMARIZING_VERSIONS
        self._inputs.step_disabled = self.session.next_step is None
        self._inputs.step_label = "Next" if self.instructor else "Step"
        self._inputs.disabled = self.instructor  # the box and its Send
        if self.instructor:
            self._set_request(self.session.next_step or "(the scripted session is over)")

    def _transcript_html(self) -> str:
        """Newest exchange first (always in view); each tool call on one line, its arguments and size on click."""
        font = TRANSCRIPT_FONT[self.instructor]
        if not self.transcript:
            return f"<div style='font-size:{font}'>(nothing sent yet)</div>"
        blocks = [exchange_html(exchange, newest=number == 0) for number, exchange in enumerate(reversed(self.transcript))]
        return (f"<div style='font-size:{font};font-family:monospace;line-height:1.35;overflow-wrap:anywhere'>"
                f"<div style='color:#666'>newest first</div>{''.join(blocks)}</div>")

    # --- display --------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The widgets where a front end can show them; a picture and text everywhere else."""
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        snapshot = self.snapshot()
        return {**data, "text/html": snapshot.html(), "text/plain": snapshot.text}


def exchange_html(exchange: Exchange, newest: bool = False) -> str:
    """One exchange of the transcript as HTML: the request, one line per tool call (expand on click), the reply."""
    escape = html.escape
    border = "#0072B2" if newest else "#ddd"
    if exchange.note:
        return f"<div style='border-left:4px solid {border};padding:2px 6px;margin:4px 0'>{escape(exchange.note)}</div>"
    calls = []
    for call in exchange.tool_calls:
        size = f"{call.tokens:,} tokens" + (", offloaded" if call.offloaded_to else "")
        calls.append(f"<details><summary>&#8627; {escape(call.name)}(…) {size}</summary>"
                     f"<div style='white-space:pre-wrap;padding-left:1.5em'>{escape(call.describe())}</div></details>")
    if exchange.error:
        reply = f"<div style='color:#D55E00'>error: {escape(exchange.error)}</div>"
    elif len(exchange.reply) <= REPLY_PREVIEW_CHARS:
        reply = f"<div style='white-space:pre-wrap'><b>agent:</b> {escape(exchange.reply)}</div>"
    else:  # a long reply: its start, the rest on click
        reply = (f"<details><summary><b>agent:</b> {escape(' '.join(exchange.reply[:REPLY_PREVIEW_CHARS].split()))}…</summary>"
                 f"<div style='white-space:pre-wrap'>{escape(exchange.reply)}</div></details>")
    return (f"<div style='border-left:4px solid {border};padding:2px 6px;margin:4px 0'>"
            f"<div><b>{escape(exchange_label(exchange))}:</b> {escape(exchange.request)}</div>{''.join(calls)}{reply}</div>")


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

    def save(self, folder: str | Path, overwrite: bool = False) -> list[Path]:
        """Write chart.png, bar.png and state.txt into ``folder``; returns the paths.

        The state is redacted first (a key typed into the lab is written as ``[REDACTED ...]``), and a folder
        that already holds any of the three files is refused unless ``overwrite=True``.
        """
        folder = Path(folder)
        names = ("chart.png", "bar.png", "state.txt")
        taken = [name for name in names if (folder / name).exists() or (folder / name).is_symlink()]
        if taken and not overwrite:
            raise FileExistsError(f"{folder} already holds {', '.join(taken)}; choose a new folder, or save(..., "
                                  "overwrite=True) to replace them")
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        state = escape_surrogates(redact_text(self.text)).encode("utf-8")  # a lone surrogate is shown, never fatal
        for name, content in zip(names, (self.chart_png, self.bar_png, state), strict=True):
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
