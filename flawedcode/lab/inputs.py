"""The lab's input bar: the request box, Send, Step, Summarize now and Reset, numbered in the order made.

Unlike ipywidgets' ``Text`` and ``Button``, the bar sends every input as one message that
holds what it is (the request's words, for Enter or Send) and its number, counted in the
page. Two things were lost before:

- a front end holds a ``Text``'s update back while the kernel is busy and, when several
  wait, sends only the latest: three requests typed with Enter during one turn reached the
  lab as two (the middle one was lost). Here the words travel with their Enter, and the box
  empties at once;
- a kernel (ipykernel 7) may hand the lab widget messages that piled up during a turn in
  another order than they were sent. Here the bar takes inputs by their numbers: one that
  arrives before an earlier one waits for it (after ``MAX_HELD`` waiting inputs, a missing
  one is taken as lost and the rest go on, in order).

**The queue sign.** Until the lab takes an input (``taken`` counts the page's inputs it has
taken), the page lists it under the bar: ``3 inputs waiting for the lab, in order: Step,
"List ChartBook dataframes", Summarize now``. The lab takes each in turn, and runs it to its
end before it takes the next.

Python side: ``on_input(name, handler)`` calls ``handler(text)`` for each input named ``name``
(``send``, ``step``, ``summarize``, ``reset``); ``submit(text)`` does what Enter does, and
``button(name).click()`` what a click does (for a notebook, or a test, without a page).
``value`` is what the lab puts in the box (instructor mode shows the next scripted request
there); it does not follow typing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

INPUTS = ("send", "step", "summarize", "reset")
MAX_HELD = 16  # inputs that may wait for an earlier one before that one is taken as lost

# The page's half: the box, the buttons and the list of inputs not yet taken.
ESM = r"""
function render({ model, el }) {
  el.classList.add("fc-inputs");
  const row = document.createElement("div");
  row.className = "fc-input-row";
  const input = document.createElement("input");
  input.type = "text";
  input.className = "fc-request-input";
  input.setAttribute("data-lm-suppress-shortcuts", "true");  // typing is not a notebook shortcut
  const button = (name, icon, tip) => {
    const element = document.createElement("button");
    element.className = "jupyter-button fc-button";
    element.dataset.input = name;
    element.title = tip;
    const label = document.createElement("span");
    element.innerHTML = `<i class="fa fa-${icon}"></i> `;
    element.append(label);
    element.label = label;
    row.append(element);
    return element;
  };
  row.append(input);
  const send = button("send", "paper-plane", "Send the request in the box (or press Enter)");
  send.classList.add("mod-primary");
  send.label.textContent = "Send";
  const step = button("step", "step-forward", "Send the scripted session's next request");
  const summarize = button("summarize", "compress", "v2, v3: archive and summarize the history now");
  summarize.label.textContent = "Summarize now";
  const reset = button("reset", "refresh", "Start the conversation over");
  reset.label.textContent = "Reset";
  const queue = document.createElement("div");
  queue.className = "fc-queue";
  el.append(row, queue);

  let sent = model.get("taken");  // inputs sent from this page, numbered as the lab counts those it took
  const waiting = [];
  const showQueue = () => {
    while (waiting.length && waiting[0].number <= model.get("taken")) waiting.shift();
    const names = waiting.map((item) => item.label).join(", ");
    queue.textContent = waiting.length
      ? `${waiting.length} input${waiting.length === 1 ? "" : "s"} waiting for the lab, in order: ${names}` : "";
    queue.style.display = waiting.length ? "" : "none";
  };
  const post = (name, text, label) => {
    sent += 1;
    waiting.push({ number: sent, label });
    model.send({ input: name, text, number: sent });
    showQueue();
  };
  const sendTyped = () => {
    const text = input.value.trim();
    if (!text || model.get("disabled")) return;
    input.value = "";
    post("send", text, `"${text}"`);
  };
  const showState = () => {
    input.value = model.get("value");
    input.placeholder = model.get("placeholder");
    input.disabled = send.disabled = model.get("disabled");
    step.label.textContent = model.get("step_label");
    step.disabled = model.get("step_disabled");
    summarize.style.display = model.get("summarize_shown") ? "" : "none";
  };
  input.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") { event.preventDefault(); sendTyped(); }
  });
  for (const name of ["keypress", "keyup"]) input.addEventListener(name, (event) => event.stopPropagation());
  send.addEventListener("click", sendTyped);
  step.addEventListener("click", () => post("step", "", model.get("step_label")));
  summarize.addEventListener("click", () => post("summarize", "", "Summarize now"));
  reset.addEventListener("click", () => post("reset", "", "Reset"));
  const shown = ["value", "placeholder", "disabled", "step_label", "step_disabled", "summarize_shown"];
  for (const name of shown) model.on(`change:${name}`, showState);
  model.on("change:taken", showQueue);
  showState();
  showQueue();
  return () => {
    for (const name of shown) model.off(`change:${name}`, showState);
    model.off("change:taken", showQueue);
  };
}
export default { render };
"""

CSS = """
.fc-inputs .fc-input-row { display: flex; flex-flow: row wrap; gap: 4px; align-items: center; }
.fc-inputs .fc-request-input { flex: 1 1 16em; min-width: 12em; height: var(--jp-widgets-inline-height, 28px);
  box-sizing: border-box; padding: 0 6px; font-size: var(--jp-widgets-font-size, 13px);
  border: 1px solid var(--jp-border-color1, #999); }
.fc-inputs .fc-button { width: auto; min-width: fit-content; white-space: nowrap; }
.fc-inputs .fc-queue { color: #D55E00; font-size: 13px; margin: 2px 0; overflow-wrap: anywhere; }
"""


class InputBar(anywidget.AnyWidget):
    """The request box and the buttons; each input reaches its handler once, in the order made (module docstring)."""

    _esm = ESM
    _css = CSS
    value = traitlets.Unicode("").tag(sync=True)  # what the lab shows in the box (instructor mode: the next request)
    placeholder = traitlets.Unicode("").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)  # the box and Send
    step_label = traitlets.Unicode("Step").tag(sync=True)  # "Next" in instructor mode
    step_disabled = traitlets.Bool(False).tag(sync=True)
    summarize_shown = traitlets.Bool(True).tag(sync=True)
    taken = traitlets.Int(0).tag(sync=True)  # the page's inputs taken so far; the page lists later ones as waiting

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._handlers: dict[str, Callable[[str], object]] = {}
        self._held: dict[int, dict[str, Any]] = {}  # inputs that arrived before an earlier one, by number
        self.on_msg(self._on_message)

    def on_input(self, name: str, handler: Callable[[str], object]) -> None:
        """Call ``handler(text)`` for every input named ``name`` (one of ``INPUTS``), in the order made."""
        if name not in INPUTS:
            raise ValueError(f"no input named {name!r}: one of {', '.join(INPUTS)}")
        self._handlers[name] = handler

    def submit(self, text: str | None = None) -> None:
        """What Enter (or Send) does in the page: send ``text`` (default: what the box shows)."""
        self._run("send", self.value if text is None else text)

    def button(self, name: str) -> InputButton:
        """A button as Python sees it: ``lab._step.click()`` does what a click in the page does."""
        return InputButton(self, name)

    def _run(self, name: str, text: str) -> None:
        handler = self._handlers.get(name)
        if handler is not None:
            handler(text)

    def _on_message(self, _: Any, content: Any, buffers: Any) -> None:
        """A message from the page: take it in its number's turn."""
        if not isinstance(content, dict) or content.get("input") not in INPUTS:
            return
        number = content.get("number")
        if isinstance(number, int) and number > self.taken + 1:
            self._held[number] = content  # an earlier input has not arrived yet: wait for it
            if len(self._held) <= MAX_HELD:
                return
            self.taken = min(self._held) - 1  # it never came: go on without it
        else:
            self._take(content)
        while self.taken + 1 in self._held:
            self._take(self._held.pop(self.taken + 1))

    def _take(self, content: dict[str, Any]) -> None:
        number = content.get("number")
        if isinstance(number, int) and number > self.taken:
            self.taken = number  # first: the page stops listing it as waiting while it runs
        self._run(content["input"], str(content.get("text", "")))


class InputButton:
    """One button of an ``InputBar``, for Python: ``click()`` does what a click in the page does."""

    def __init__(self, bar: InputBar, name: str) -> None:
        self.bar, self.name = bar, name

    def click(self) -> None:
        self.bar._run(self.name, "")


__all__ = ["INPUTS", "InputBar", "InputButton"]
