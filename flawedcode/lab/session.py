"""The context lab's state, without widgets: one conversation, its transcript and the scripted session.

``LabSession`` is what the lab's buttons call; a notebook or a test can drive it directly:

- ``send(text)`` sends one request and keeps an ``Exchange`` in the transcript: the
  request, the reply, every tool call with the size of its result (characters and
  tokens; for an offloaded result, the stub that replaced it) and any error (one line);
- ``step()`` sends the next request of the scripted session (``steps``), exactly one;
- ``summarize_now()`` (v2) archives the history and replaces it with a summary at once,
  as if the summary trigger had been reached; the transcript notes what happened;
- ``restart(settings)`` starts a fresh conversation: a new agent (a new session log,
  so the chart starts over), an empty transcript, the script back at its first step.

``view()`` is what the model received at its latest call (``flawedcode.lab.window``),
or, after ``summarize_now()``, what it will receive at the next one.

Settings (``LabSettings``) are the lab's controls. The offload threshold is one
number, in tokens, the unit of everything else on screen (v2's character threshold
is switched off in the lab); the summary trigger is a fraction of the budget
(``parse_trigger`` reads "45", "45%" and "0.45" alike, and refuses anything else
with the reason). A budget, or a summary trigger, below ``budget_floor()`` (the
fixed cost of every call plus room for a reply) is refused with a ``ValueError``
that says so: below it, every call would be over the budget, or summarize first.

**The goal.** With a scripted session, the conversation's goal is the script's first
request, whatever a student typed before clicking Step: the "goal lost" and "goal
recalled" markers follow that goal, never a typed aside that happened to come first.
Without a script it is the first request sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flawedcode.agents import AgentError, BaseAgent
from flawedcode.config import OffloadConfig, SummarizationConfig
from flawedcode.context.summarize import maybe_summarize
from flawedcode.formats import STUB_PREFIX
from flawedcode.lab.window import ContextView, ContextWatcher, text_of, view_of_agent
from flawedcode.lessons import LESSON_BUDGET, lesson_agent, lesson_folder
from flawedcode.telemetry import EventKind

VERSIONS = ("v0", "v1", "v2", "v3")
DEFAULT_TRIGGER_FRACTION = SummarizationConfig().trigger[0].value  # v2's own defaults, so the lab runs the v2 students read
DEFAULT_OFFLOAD_TOKENS = OffloadConfig().threshold_tokens
MIN_ROOM_TOKENS = 512  # a budget must leave at least this much for the conversation beyond the fixed cost


@dataclass(frozen=True)
class LabSettings:
    """The lab's controls; changing any of them starts a fresh conversation."""

    version: str = "v1"
    budget_tokens: int = LESSON_BUDGET
    trigger_fraction: float = DEFAULT_TRIGGER_FRACTION  # v2: summarize when the context reaches this share of the budget
    offload_tokens: int = DEFAULT_OFFLOAD_TOKENS  # v2: offload a tool result longer than this many tokens
    summarize: bool = True  # v2: summarize with archive (off: offloading alone, as in lesson 2)
    model: str | None = None  # a model spec; None: FLAWEDCODE_MODEL, else offline

    @property
    def trigger_tokens(self) -> int:
        """The summary trigger in tokens (v2's ``fraction`` trigger of the budget)."""
        return int(self.trigger_fraction * self.budget_tokens)

    def agent_config(self) -> dict[str, Any]:
        """The settings as an agent config (the v2 blocks only for v2)."""
        config: dict[str, Any] = {"budget_tokens": self.budget_tokens}
        if self.version == "v2":
            config["summarization"] = {"enabled": self.summarize, "trigger": [{"type": "fraction", "value": self.trigger_fraction}]}
            config["offload"] = {"threshold_chars": None, "threshold_tokens": self.offload_tokens}
        return config


AgentMaker = Callable[[LabSettings, Path], BaseAgent]


def parse_trigger(text: str | float) -> float:
    """A summary trigger as typed: "45", "45%" and "0.45" are all 45% of the budget; anything else is refused."""
    written = str(text).strip()
    try:
        value = float(written.removesuffix("%").strip())
    except ValueError:
        raise ValueError(f"the summary trigger {written!r} is not a number: type a share of the budget, as 45, 45% "
                         "or 0.45") from None
    fraction = value / 100 if written.endswith("%") or value > 1 else value
    if not 0 < fraction <= 1:
        raise ValueError(f"the summary trigger {written!r} is not a share of the budget: type one between 1% and "
                         "100% (45, 45% or 0.45)")
    return round(fraction, 4)


def trigger_text(fraction: float) -> str:
    """How the trigger control shows a fraction: "45%"."""
    return f"{100 * fraction:g}%"


def make_lesson_agent(settings: LabSettings, folder: Path) -> BaseAgent:
    """The lab's default agent: ``lesson_agent`` with the lab's settings."""
    return lesson_agent(settings.version, model=settings.model, config=settings.agent_config(), folder=folder)


@dataclass
class ToolCallRecord:
    """One tool call of a turn and the size of what it returned."""

    name: str
    arguments: dict[str, Any]
    characters: int
    tokens: int
    offloaded_to: str | None = None  # the scratch/ file, when the result was offloaded
    stub_tokens: int | None = None

    def describe(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        size = f"{self.characters:,} chars, {self.tokens:,} tokens"
        if self.offloaded_to:
            size += f" -> offloaded to {self.offloaded_to} (stub: {self.stub_tokens:,} tokens)"
        return f"{self.name}({arguments}): {size}"


@dataclass
class Exchange:
    """One line of the transcript: a request and what came of it (or a note, for Summarize now)."""

    request: str
    reply: str = ""
    step: int | None = None  # the conversation's step (1-based, the chart's x): every request is one, typed or scripted
    scripted: int | None = None  # its place in the scripted session (1-based), None for a typed request
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    error: str | None = None
    note: str | None = None


class LabSession:
    """One conversation at a time, with its transcript and a scripted session to step through."""

    def __init__(self, settings: LabSettings | None = None, steps: Sequence[str] = (), *,
                 agent: BaseAgent | None = None, make_agent: AgentMaker | None = None,
                 folder: str | Path | None = None) -> None:
        self.settings = settings or (settings_of(agent) if agent is not None else LabSettings())
        self.steps = list(steps)
        self.make_agent = make_agent or make_lesson_agent
        self.folder = Path(folder) if folder is not None else lesson_folder("lab")
        self.transcript: list[Exchange] = []
        self.position = 0
        self.summarized_since_last_call = False
        self.agent = agent if agent is not None else self.make_agent(self.settings, self.folder)
        self.watcher = self._watch(self.agent)

    def _watch(self, agent: BaseAgent) -> ContextWatcher:
        """The agent's watcher; with a script, its goal is the script's first request (see the module docstring)."""
        watcher = getattr(agent, "context_watcher", None) or ContextWatcher.attach(agent)
        if self.steps and not agent.messages:
            watcher.goal = self.steps[0]
        return watcher

    # --- the conversation ---------------------------------------------------------------
    def restart(self, settings: LabSettings | None = None) -> None:
        """A fresh conversation with ``settings`` (default: the current ones)."""
        self.settings = settings or self.settings
        self.agent = self.make_agent(self.settings, self.folder)
        self.watcher = self._watch(self.agent)
        self.transcript, self.position, self.summarized_since_last_call = [], 0, False

    def budget_floor(self) -> int:
        """The smallest budget worth having: the fixed cost of every call (system prompt + tool schemas) and room for a reply."""
        return self.agent.fixed_tokens + MIN_ROOM_TOKENS

    def change(self, **settings: Any) -> bool:
        """Change some settings; a real change restarts the conversation. Returns whether it did.

        A budget or a summary trigger below ``budget_floor()`` is refused with a ``ValueError`` that says so."""
        changed = replace(self.settings, **settings)
        fixed, floor = self.agent.fixed_tokens, self.budget_floor()
        if changed.budget_tokens < floor:
            raise ValueError(f"a budget of {changed.budget_tokens:,} tokens is below what every call costs before any message: "
                             f"the system prompt and tool schemas take {fixed:,} tokens; choose at least {floor:,}")
        if changed.version == "v2" and changed.summarize and changed.trigger_tokens < floor:
            lowest = -(-100 * floor // changed.budget_tokens)
            raise ValueError(f"a summary trigger of {trigger_text(changed.trigger_fraction)} is {changed.trigger_tokens:,} tokens "
                             f"of the {changed.budget_tokens:,}-token budget, below what every call costs before any message "
                             f"(the system prompt and tool schemas take {fixed:,} tokens): v2 would summarize before every "
                             f"call; choose at least {lowest:g}% ({floor:,} tokens)")
        if changed == self.settings:
            return False
        self.restart(changed)
        return True

    def send(self, text: str, scripted: int | None = None) -> Exchange:
        """Send one request; keep it, the reply and its tool calls in the transcript."""
        exchange = Exchange(request=text, step=self.requests_sent + 1, scripted=scripted)
        events_before = len(self.agent.log.events)
        try:
            exchange.reply = self.agent.send(text)
        except AgentError as error:
            exchange.error = str(error)
        exchange.tool_calls = tool_calls_of_turn(self.agent, text, self.agent.log.events[events_before:])
        self.summarized_since_last_call = False
        self.transcript.append(exchange)
        return exchange

    @property
    def next_step(self) -> str | None:
        return self.steps[self.position] if self.position < len(self.steps) else None

    def step(self) -> Exchange | None:
        """Send the next request of the scripted session (exactly one); None when it is over."""
        if self.next_step is None:
            return None
        self.position += 1
        return self.send(self.steps[self.position - 1], scripted=self.position)

    @property
    def requests_sent(self) -> int:
        """Requests sent in this conversation, typed or scripted: the step counter of the chart and the status."""
        return sum(1 for exchange in self.transcript if exchange.note is None)

    def note(self, text: str, request: str = "") -> Exchange:
        """A line in the transcript that is not a request (a refused input, what Summarize now did)."""
        exchange = Exchange(request=request, note=text)
        self.transcript.append(exchange)
        return exchange

    def summarize_now(self) -> Exchange:
        """Archive the history and replace it with a summary now (v2 and v3; others get a note why not)."""
        archive = getattr(self.agent, "archive", None)
        if archive is None or not hasattr(self.agent.config, "summarization"):
            note = f"{self.agent.version} has no summarizer (no archive): switch the agent to v2 or v3."
        elif not self.agent.messages:
            note = "Nothing to summarize yet: send a request first."
        else:
            asked = self.agent.config.summarization.model_copy(update={"enabled": True})  # a click works with the automatic summarizer off
            outcome = maybe_summarize(self.agent.messages, self.agent.model, archive=archive, config=asked, counter=self.agent.counter,
                                      budget_tokens=self.agent.budget_tokens, fixed_tokens=self.agent.fixed_tokens,
                                      force=True, log=self.agent.log)
            if outcome.summarized:
                self.agent.messages = outcome.messages
                self.summarized_since_last_call = True
                note = (f"Summarized: {len(outcome.removed)} messages archived to {outcome.archive_path}; "
                        f"the context went from {outcome.tokens_before:,} to {outcome.tokens_after:,} tokens.")
            else:
                note = f"Not summarized: {outcome.reason}."
        return self.note(note, request="(Summarize now)")

    # --- what the screen shows ---------------------------------------------------------------
    def view(self, upcoming: bool = False) -> ContextView | None:
        """What the model received at its latest call; after Summarize now (or with ``upcoming``), what it will receive next."""
        if upcoming or self.summarized_since_last_call or (self.watcher.latest is None and self.agent.messages):
            return view_of_agent(self.agent, self.watcher.goal)
        return self.watcher.latest

    def status(self) -> str:
        """One line: agent, model, budget, v2's thresholds, where the script is."""
        settings = self.settings
        parts = [f"agent {self.agent.version}", f"model {self.agent.model_name}", f"budget {self.agent.budget_tokens:,} tokens"]
        if self.agent.version == "v2":
            summary = f"summary trigger {settings.trigger_fraction:.0%}" if settings.summarize else "summarizer off"
            parts += [summary, f"offload over {settings.offload_tokens:,} tokens"]
        parts.append(f"step {self.requests_sent}")
        if self.steps:
            upcoming = f'next: "{self.next_step}"' if self.next_step else "over"
            parts.append(f"scripted session: {self.position} of {len(self.steps)} sent, {upcoming}")
        return " | ".join(parts)

    def text(self) -> str:
        """The whole state as plain text: status, context window, transcript."""
        lines = [f"ContextLab: {self.status()}", ""]
        view = self.view()
        lines += describe_view(view) if view else ["Context window: nothing sent yet."]
        lines += ["", "Transcript:"]
        lines += [line for exchange in self.transcript for line in describe_exchange(exchange)] or ["  (empty)"]
        return "\n".join(lines)


def settings_of(agent: BaseAgent) -> LabSettings:
    """The lab settings that describe an existing agent."""
    config = agent.config
    settings = LabSettings(version=agent.version if agent.version in VERSIONS else "v2",
                           budget_tokens=agent.budget_tokens or LESSON_BUDGET, model=agent.model_name)
    summarization, offload = getattr(config, "summarization", None), getattr(config, "offload", None)
    if summarization is not None and agent.budget_tokens:
        trigger = summarization.trigger_tokens(agent.budget_tokens)
        settings = replace(settings, trigger_fraction=round((trigger or agent.budget_tokens) / agent.budget_tokens, 2),
                           summarize=summarization.enabled)
    if offload is not None and offload.threshold_tokens:
        settings = replace(settings, offload_tokens=offload.threshold_tokens)
    return settings


def tool_calls_of_turn(agent: BaseAgent, request: str, events: Sequence[Any]) -> list[ToolCallRecord]:
    """The tool calls made after the last ``request`` in the agent's messages, with their result sizes."""
    messages = agent.messages
    start = max((i for i, message in enumerate(messages) if message.type == "human" and text_of(message) == request), default=None)
    if start is None:
        return []
    offloads = iter([event for event in events if event.kind == EventKind.OFFLOAD])
    results = {getattr(message, "tool_call_id", None): message for message in messages[start:] if message.type == "tool"}
    records = []
    for message in messages[start:]:
        for call in getattr(message, "tool_calls", None) or []:
            result = results.get(call.get("id"))
            text = text_of(result) if result is not None else ""
            record = ToolCallRecord(call["name"], dict(call.get("args") or {}), len(text),
                                    agent.counter.count_message(result) if result is not None else 0)
            if text.startswith(STUB_PREFIX):
                event = next(offloads, None)
                if event is not None:
                    record = ToolCallRecord(call["name"], record.arguments, event.detail.get("characters", 0),
                                            event.tokens_before, event.detail.get("path"), event.tokens_after)
            records.append(record)
    return records


def describe_view(view: ContextView) -> list[str]:
    where = f"call {view.call_index + 1} (step {view.turn})" if view.call_index is not None else "the next call"
    budget = f" of a {view.budget_tokens:,}-token budget" if view.budget_tokens else ""
    lines = [f"Context window at {where}: {view.total_tokens:,} tokens{budget}, "
             f"goal {'in' if view.goal_in_window else 'NOT in'} the window"]
    for segment in view.segments:
        flag = "" if segment.visible else "  [forgotten]"
        goal = "  <- goal" if segment.holds_goal else ""
        lines.append(f"  {segment.kind:<9} {segment.tokens:>6,}  {segment.label}{flag}{goal}")
    return lines


def describe_exchange(exchange: Exchange) -> list[str]:
    if exchange.note:
        return [f"  {exchange.note}"]
    lines = [f"  {exchange_label(exchange)}: {exchange.request}"]
    lines += [f"     tool {call.describe()}" for call in exchange.tool_calls]
    lines.append(f"     error: {exchange.error}" if exchange.error else f"     agent: {_one_line(exchange.reply)}")
    return lines


def exchange_label(exchange: Exchange) -> str:
    """``step 4 (scripted 3)`` or ``step 5 (typed)``: the conversation's step, and where the request came from."""
    source = f"scripted {exchange.scripted}" if exchange.scripted else "typed"
    return f"step {exchange.step} ({source})" if exchange.step else source


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


__all__ = ["DEFAULT_OFFLOAD_TOKENS", "DEFAULT_TRIGGER_FRACTION", "VERSIONS", "Exchange", "LabSession", "LabSettings",
           "ToolCallRecord", "describe_exchange", "exchange_label", "describe_view", "make_lesson_agent", "settings_of", "tool_calls_of_turn"]
