"""What the model receives at one call, message by message, and whether the goal is still in it.

The context lab's bar and the charts' "goal lost" marker are drawn from here.

**Segments.** A request is cut into one ``Segment`` per message, in the order the
model receives them. The first segment is the fixed part: the system prompt plus
the tool schemas (and the few tokens that prime the reply), so the segments add up
to exactly the count ``SessionLog`` records for that call. Each segment has a kind
(``SEGMENT_KINDS``), decided by the message's type and by the marker texts in
``flawedcode.formats``:

| kind | message |
| --- | --- |
| ``system`` | the system prompt and the tool schemas |
| ``summary`` | a user message starting ``[Conversation summary`` (v2's), or marked ``lc_source: summarization`` (LangChain's) |
| ``user`` | any other user message |
| ``assistant`` | a model reply (text, tool calls or both) |
| ``stub`` | a tool result starting ``[Offloaded: `` (v2's offload stub) or ``[Compacted: `` (v3's cleared result) |
| ``tool`` | any other tool result |
| ``memory`` | v3: the memory block, a user message marked ``context_data: memory`` (``context/memory.py``) |
| ``plan`` | v3: a ``[Plan reminder: `` user message, or ``write_todos``'s result |
| ``subagent`` | v3: the result of ``task`` (what a sub-agent sent back to its parent) |

v3's turn digests and consolidations start ``[Conversation summary`` too: they are summaries.

**The window.** A segment is *visible* when the model can see it. The offline
teaching model forgets the oldest messages that do not fit in its window (it says
which through ``OfflineModel.see``); for any other model everything sent is
visible (a real API either reads it all or rejects the request).

**The goal.** The conversation's goal is its first user request (or the text given
as ``goal``). It is *in the window* when a visible message contains it word for
word: the request itself, or a summary's ``Original goal (verbatim):`` line.

**The watcher.** ``ContextWatcher`` is a LangChain callback handler on the agent's
model. At every agent call (a call with tools bound; the summarizer's own calls
have none) it keeps a ``ContextView``, and at the first call where the goal is no
longer in the window it records a ``goal_lost`` event in the agent's ``SessionLog``
(on the line of that call, so the charts draw it there).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import BaseMessage, SystemMessage

from flawedcode.charts import OKABE_ITO
from flawedcode.context.memory import MEMORY_KIND
from flawedcode.context.todos import REMINDER_PREFIX
from flawedcode.formats import COMPACTED_PREFIX, STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.telemetry import EventKind
from flawedcode.tokens import REPLY_PRIMING_TOKENS, TokenCounter

SegmentKind = Literal["system", "user", "assistant", "tool", "stub", "summary", "memory", "plan", "subagent"]
CORE_KINDS: tuple[SegmentKind, ...] = ("system", "user", "assistant", "tool", "stub", "summary")  # every version's
SEGMENT_KINDS: tuple[SegmentKind, ...] = (*CORE_KINDS, "memory", "plan", "subagent")  # and v3's
KIND_NAMES: dict[SegmentKind, str] = {
    "system": "system prompt + tools", "user": "user", "assistant": "assistant",
    "tool": "tool result", "stub": "offload stub", "summary": "summary",
    "memory": "memory", "plan": "plan", "subagent": "sub-agent result",
}
# Each kind's colour, from the Okabe-Ito palette (the bar, the widget's bar and the lessons' colour names read it).
KIND_COLOURS: dict[SegmentKind, str] = {
    "system": "#999999", "user": OKABE_ITO["orange"], "assistant": OKABE_ITO["sky_blue"],
    "tool": OKABE_ITO["vermillion"], "stub": OKABE_ITO["bluish_green"], "summary": OKABE_ITO["reddish_purple"],
    "memory": OKABE_ITO["black"], "plan": OKABE_ITO["yellow"], "subagent": OKABE_ITO["blue"],
}
PLAN_TOOL, SUBAGENT_TOOL = "write_todos", "task"
GOAL_LOST_EVENT = EventKind.GOAL_LOST
GOAL_RECALLED_EVENT = EventKind.GOAL_RECALLED
LANGCHAIN_SUMMARY_SOURCE = "summarization"  # SummarizationMiddleware's additional_kwargs["lc_source"] on its summary
LABEL_CHARS = 60


@dataclass
class Segment:
    """One message of a request (or the fixed system part), as the context bar draws it."""

    kind: SegmentKind
    tokens: int
    label: str
    visible: bool = True
    holds_goal: bool = False


@dataclass
class ContextView:
    """What the model received at one call: its segments, in order."""

    segments: list[Segment]
    call_index: int | None = None
    turn: int | None = None
    budget_tokens: int | None = None
    goal: str | None = None

    @property
    def total_tokens(self) -> int:
        return sum(segment.tokens for segment in self.segments)

    @property
    def visible_tokens(self) -> int:
        return sum(segment.tokens for segment in self.segments if segment.visible)

    @property
    def forgotten(self) -> list[Segment]:
        return [segment for segment in self.segments if not segment.visible]

    @property
    def goal_in_window(self) -> bool:
        return any(segment.holds_goal and segment.visible for segment in self.segments)

    def tokens_by_kind(self) -> dict[SegmentKind, int]:
        totals: dict[SegmentKind, int] = dict.fromkeys(SEGMENT_KINDS, 0)
        for segment in self.segments:
            totals[segment.kind] += segment.tokens
        return totals


# --- classifying messages ---------------------------------------------------------------------
def text_of(message: BaseMessage) -> str:
    """The message's text: its string content, or its text blocks joined (LangChain's ``message.text``)."""
    return message.text


def kind_of(message: BaseMessage) -> SegmentKind:
    """The segment kind of one message (the table in the module docstring)."""
    text = text_of(message)
    if message.type == "system":
        return "system"
    if message.type == "human":
        extra = getattr(message, "additional_kwargs", None) or {}
        marked = extra.get("lc_source") == LANGCHAIN_SUMMARY_SOURCE
        if extra.get("context_data") == MEMORY_KIND:
            return "memory"
        if text.startswith(REMINDER_PREFIX):
            return "plan"
        return "summary" if text.startswith(SUMMARY_PREFIX) or marked else "user"
    if message.type == "tool":
        if text.startswith((STUB_PREFIX, COMPACTED_PREFIX)):
            return "stub"
        return {PLAN_TOOL: "plan", SUBAGENT_TOOL: "subagent"}.get(getattr(message, "name", None) or "", "tool")
    return "assistant"


def label_of(message: BaseMessage) -> str:
    """A short description: the tool calls an assistant made, the tool a result came from, else the text."""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return "calls " + ", ".join(call["name"] for call in calls)
    if message.type == "tool":
        return f"{getattr(message, 'name', None) or 'tool'} result"
    text = " ".join(text_of(message).split())
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 3] + "..."


# --- one request ---------------------------------------------------------------------------
def view_of_request(messages: Sequence[BaseMessage], tools: Sequence[Any] | None, counter: TokenCounter, *,
                    visible: Sequence[BaseMessage] | None = None, goal: str | None = None,
                    budget_tokens: int | None = None) -> ContextView:
    """Segments of one request: the system prompt and tools first, then one per message.

    ``visible``: the messages the model could see (default: all of them).
    """
    system = [message for message in messages if message.type == "system"]
    conversation = [message for message in messages if message.type != "system"]
    seen = {id(message) for message in (visible if visible is not None else conversation)}
    fixed = counter.count_system("\n\n".join(text_of(message) for message in system)) + counter.count_tools(tools)
    segments = [Segment("system", fixed + REPLY_PRIMING_TOKENS, KIND_NAMES["system"])]
    for message in conversation:
        segments.append(Segment(kind_of(message), counter.count_message(message), label_of(message),
                                visible=id(message) in seen, holds_goal=bool(goal) and goal in text_of(message)))
    return ContextView(segments, budget_tokens=budget_tokens, goal=goal)


def view_of_agent(agent: Any, goal: str | None = None) -> ContextView:
    """What the agent's model would receive if it were called now (system prompt, tools, history)."""
    messages = [SystemMessage(agent.config.system_prompt), *agent.messages]
    return view_of_request(messages, agent.tools, agent.counter, visible=visible_part(agent.model, messages, agent.tools),
                           goal=goal, budget_tokens=agent.budget_tokens)


def visible_part(model: Any, messages: Sequence[BaseMessage], tools: Sequence[Any] | None) -> list[BaseMessage]:
    """The messages (system excluded) the model can see; everything, unless the model says otherwise."""
    conversation = [message for message in messages if message.type != "system"]
    see = getattr(model, "see", None)  # the offline teaching model reports its window
    if not callable(see):
        return conversation
    from langchain_core.utils.function_calling import convert_to_openai_tool

    schemas = [tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in tools or []]
    try:
        return list(see(list(messages), schemas).visible)
    except ContextOverflowError:
        return []


def bar_title(view: ContextView | None) -> str:
    """The bar's title: which call it shows, its tokens and messages, and what was forgotten (SVG and PNG alike)."""
    if view is None or not view.segments:
        return "Context window: nothing sent yet"
    where = f"call {view.call_index + 1} (step {view.turn})" if view.call_index is not None else "the next call"
    text = f"What the model receives at {where}: {view.total_tokens:,} tokens in {len(view.segments) - 1} messages"
    if view.forgotten:
        text += f"; {sum(segment.tokens for segment in view.forgotten):,} forgotten"
    return text


def first_request(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the first user request that is not a summary."""
    return next((text_of(message) for message in messages if kind_of(message) == "user"), None)


def goal_given_back(reply: str, goal: str) -> bool:
    """Does ``reply`` give the goal back: word for word, or every name and year in it (for paraphrases)?"""
    folded = " ".join(reply.casefold().split())
    if " ".join(goal.casefold().split()) in folded:
        return True
    key_terms = re.findall(r"\b(?:[A-Z]{3,}|\d{4})\b", goal)
    return bool(key_terms) and all(term.casefold() in folded for term in key_terms)


# --- watching every call -----------------------------------------------------------------------
@dataclass(eq=False)  # watchers are compared by identity
class ContextWatcher:
    """Keeps a ``ContextView`` of every agent call and marks the call where the goal left the window.

    ``ContextWatcher.attach(agent)`` subscribes it to the agent's model-call recorder
    (``agent.recorder``, see ``flawedcode.telemetry``), which sees every request at the
    model boundary and says which part of the agent made it: only the agent's own
    calls become views (a summarizer's or a library's internal calls do not).
    """

    agent: Any
    goal: str | None = None
    views: list[ContextView] = field(default_factory=list)

    @classmethod
    def attach(cls, agent: Any, goal: str | None = None) -> ContextWatcher:
        watcher = cls(agent, goal)
        agent.recorder.observers.append(watcher.observe)
        agent.log.listeners.append(watcher.turn_ended)
        return watcher

    def detach(self) -> None:
        self.agent.recorder.observers[:] = [observer for observer in self.agent.recorder.observers
                                            if getattr(observer, "__self__", None) is not self]
        self.agent.log.listeners[:] = [listener for listener in self.agent.log.listeners
                                       if getattr(listener, "__self__", None) is not self]

    def turn_ended(self, log: Any) -> None:
        """After a later request whose reply gives the goal back: a ``goal_recalled`` event at that reply's call."""
        messages = getattr(self.agent, "messages", None) or []
        if log.turn < 2 or not self.goal or not messages or messages[-1].type != "ai":
            return
        request = next((text_of(message) for message in reversed(messages) if kind_of(message) == "user"), "")
        if self.goal in request:  # the reply to the goal's own request (typed asides may come before it) recalls nothing
            return
        if goal_given_back(text_of(messages[-1]), self.goal) and log.agent_call_count:
            last = log.agent_calls()[-1]
            event = log.record_event(GOAL_RECALLED_EVENT, last.input_tokens, last.input_tokens, goal=self.goal)
            event.call_index = last.index  # it belongs to the call that wrote the reply, not to the next one
            last.events.append(GOAL_RECALLED_EVENT)
            if GOAL_RECALLED_EVENT in log._pending_events:  # recorded after its call: no later call may claim it
                log._pending_events.remove(GOAL_RECALLED_EVENT)

    @property
    def latest(self) -> ContextView | None:
        return self.views[-1] if self.views else None

    def observe(self, purpose: str, request: list[BaseMessage], tools: list[Any]) -> None:
        """Called by the recorder as each request starts."""
        if purpose != "agent" or not request:
            return
        self.goal = self.goal or first_request(request)
        log = self.agent.log
        view = view_of_request(request, tools, self.agent.counter, visible=visible_part(self.agent.model, request, tools),
                               goal=self.goal, budget_tokens=self.agent.budget_tokens)
        view.call_index, view.turn = log.agent_call_count, log.turn
        if self.views and self.views[-1].goal_in_window and not view.goal_in_window:
            log.record_event(GOAL_LOST_EVENT, view.total_tokens, view.visible_tokens, goal=self.goal)
        self.views.append(view)


__all__ = [
    "GOAL_LOST_EVENT", "GOAL_RECALLED_EVENT", "KIND_COLOURS",
    "KIND_NAMES", "SEGMENT_KINDS", "ContextView", "ContextWatcher", "Segment", "SegmentKind",
    "first_request", "goal_given_back", "kind_of", "label_of", "view_of_agent", "view_of_request", "visible_part",
]
