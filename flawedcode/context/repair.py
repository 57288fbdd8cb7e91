"""Repair: every tool call gets a result before the model sees the history.

A history can hold an AI message whose tool call never got its result (the run
was interrupted, a tool crashed the process, a notebook cell was stopped).
Providers reject such a history. Before each model call, ``repair_tool_calls``
inserts, right after the AI message, a ToolMessage for each call that has none::

    Error: this tool call was interrupted and has no result. Call the tool again if you still need it.

Nothing is removed, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.telemetry import SessionLog

INTERRUPTED_RESULT = "Error: this tool call was interrupted and has no result. Call the tool again if you still need it."


def repair_tool_calls(messages: Sequence[AnyMessage]) -> tuple[list[AnyMessage], list[str]]:
    """Return the history with a stand-in result for each unanswered tool call, and those calls' ids."""
    answered = {message.tool_call_id for message in messages if isinstance(message, ToolMessage)}
    repaired: list[AnyMessage] = []
    patched: list[str] = []
    for message in messages:
        repaired.append(message)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") and call["id"] not in answered:
                    repaired.append(ToolMessage(INTERRUPTED_RESULT, tool_call_id=call["id"], name=call["name"], status="error"))
                    patched.append(call["id"])
    return repaired, patched


class RepairToolCallsMiddleware(AgentMiddleware):
    """Thin adapter: repairs the stored history before each model call."""

    def __init__(self, log: SessionLog) -> None:
        super().__init__()
        self.log = log

    def before_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        with self.log.timing_wrapper():
            repaired, patched = repair_tool_calls(messages)
        if not patched:
            return None
        self.log.record_event("repair", 0, 0, tool_call_ids=patched)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}
