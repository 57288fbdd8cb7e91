"""Probes that measure the context strategy, not the model's English.

At a probe step (``probe: goal`` or ``probe: fact`` in a task) the benchmark asks,
for the goal text and for each planted fact:

- ``in_context``: was it present, verbatim (exact characters), in the messages
  the model received on the first model call of that step? "Received" means the
  request cut to the model's window the way a truncating server cuts it (system
  messages stay, the oldest other messages go, a tool result never starts the
  rest): a request larger than the window does not deliver its start.
- ``recoverable``: when it was not, could a tool call bring it back: is it in a
  file under the agent's ``recovery_paths()`` (v2: scratch/ and archives/;
  Deep Agents: also its ``conversation_history/`` and ``large_tool_results/``)?
- ``answered``: does the reply contain it (case and spacing ignored)? This one
  depends on the model.

``ProbeWatcher`` collects the request: it listens on the agent's
``ModelCallRecorder`` and keeps the first ``agent`` call after ``arm()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from flawedcode.agents import BaseAgent
from flawedcode.bench.checks import goal_kept
from flawedcode.bench.records import ProbeKind, ProbeRecord
from flawedcode.models import profile_for
from flawedcode.tokens import TokenCounter

MAX_RECOVERY_FILE_BYTES = 20_000_000
"""Files larger than this under a recovery folder are not searched."""


class ProbeWatcher:
    """Keeps what the model received on the first agent call after ``arm()``."""

    def __init__(self, agent: BaseAgent) -> None:
        self.armed = False
        self.request: tuple[list[BaseMessage], list[Any]] | None = None
        agent.recorder.observers.append(self.observe)

    def arm(self, armed: bool = True) -> None:
        self.armed, self.request = armed, None

    def observe(self, purpose: str, messages: list[BaseMessage], tools: list[Any]) -> None:
        if self.armed and purpose == "agent" and self.request is None:
            self.request = (messages, tools)


def model_window(agent: BaseAgent) -> int | None:
    """The model's context window in tokens (its profile), or None when unknown."""
    profile = getattr(agent.model, "profile", None) or {}
    window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(window) if window else profile_for(agent.model_name).max_input_tokens


def received(messages: Sequence[BaseMessage], tools: Sequence[Any], window: int | None, counter: TokenCounter) -> list[BaseMessage]:
    """The part of a request a model with ``window`` tokens receives (all of it when it fits)."""
    system = [message for message in messages if isinstance(message, SystemMessage)]
    rest = [message for message in messages if not isinstance(message, SystemMessage)]
    fixed = sum(counter.count_message(message) for message in system) + counter.count_tools(tools)
    if window is None or fixed + counter.count_messages(rest) <= window:
        return list(messages)
    room = window - fixed - counter.count_messages([])
    first = len(rest)
    while first > 0 and counter.count_message(rest[first - 1]) <= room:
        room -= counter.count_message(rest[first - 1])
        first -= 1
    while first < len(rest) and isinstance(rest[first], ToolMessage):
        first += 1
    return system + rest[first:]


def text_of(messages: Iterable[BaseMessage]) -> str:
    """Everything a model reads in ``messages``: contents and tool-call arguments."""
    parts = []
    for message in messages:
        parts.append(message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False))
        parts += [json.dumps(call.get("args", {}), ensure_ascii=False) for call in getattr(message, "tool_calls", None) or []]
    return "\n".join(parts)


def recovery_text(agent: BaseAgent) -> str:
    """The text of every file under the agent's recovery folders, in a stable order."""
    texts = []
    for folder in agent.recovery_paths():
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.stat().st_size <= MAX_RECOVERY_FILE_BYTES:
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def probe_items(kind: ProbeKind, goal: str, facts: list[str], expected: list[str]) -> list[str]:
    """What a probe looks for: the goal, or the planted facts (else the step's ``contains`` checks)."""
    if kind == "goal":
        return [goal]
    return facts or expected


def probe_records(agent: BaseAgent, watcher: ProbeWatcher, step: int, kind: ProbeKind, items: list[str],
                  reply: str) -> list[ProbeRecord]:
    """One record per item at this probe step."""
    if watcher.request is not None:
        messages, tools = watcher.request
        context = text_of(received(messages, tools, model_window(agent), agent.counter))
    else:
        context = ""
    stored: str | None = None
    records = []
    for item in items:
        in_context = item in context
        if not in_context and stored is None:
            stored = recovery_text(agent)
        records.append(ProbeRecord(step=step, kind=kind, text=item, in_context=in_context,
                                   recoverable=in_context or item in (stored or ""), answered=goal_kept(reply, item)))
    return records


def end_of_run_facts(agent: BaseAgent, facts: list[str]) -> list[dict[str, Any]]:
    """For each planted fact at the end: is it in the final history, and in a recoverable file?"""
    history = text_of(agent.messages)
    stored = recovery_text(agent) if facts else ""
    return [{"fact": fact, "in_context": fact in history, "in_archive": fact in stored} for fact in facts]
