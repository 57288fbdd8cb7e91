"""What the checks read from an agent: its requests, the messages of each turn, its tool calls."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from flawedcode.demo import LESSON_STEPS
from flawedcode.formats import SUMMARY_PREFIX
from flawedcode.lab.window import goal_given_back, text_of

from .core import require

DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")


def is_agent(agent: Any, versions: Sequence[str] | None = None) -> None:
    """Refuse anything but an agent of one of ``versions`` (default: every version, ``flawedcode.agents.AGENTS``)."""
    from flawedcode.agents import AGENTS

    versions = tuple(AGENTS) if versions is None else versions
    require(hasattr(agent, "log") and hasattr(agent, "messages") and hasattr(agent, "version"),
            "that is not an agent (build one with lesson_agent(...))")
    require(agent.version in versions, f"this exercise needs a {' or '.join(versions)} agent; that one is {agent.version}")


def is_request(message: Any) -> bool:
    return message.type == "human" and not text_of(message).startswith(SUMMARY_PREFIX)


def turns(agent: Any) -> list[tuple[str, list[Any]]]:
    """(request, the messages after it up to the next request) for each request still in the agent's history."""
    found: list[tuple[str, list[Any]]] = []
    for message in agent.messages:
        if is_request(message):
            found.append((text_of(message), []))
        elif found:
            found[-1][1].append(message)
    return found


def tool_calls(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [call for message in messages for call in getattr(message, "tool_calls", None) or []]


def requests(agent: Any) -> list[str]:
    return [text for text, _ in turns(agent)]


def goal_recalled(reply: str, goal: str = LESSON_STEPS[0]) -> bool:
    """Does ``reply`` give the goal back: word for word, or every name and year in it (for paraphrases)?"""
    return goal_given_back(reply, goal)
