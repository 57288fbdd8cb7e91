"""Repair: every tool call gets a result before the model sees the history, and no cut-off call runs.

**Interrupted calls.** A history can hold an AI message whose tool call never
got its result (the run was interrupted, a tool crashed the process, a notebook
cell was stopped). Providers reject such a history. Before each model call,
``repair_tool_calls`` inserts, right after the AI message, a ToolMessage for
each call that has none::

    Error: this tool call was interrupted and has no result. Call the tool again if you still need it.

Nothing is removed, so nothing is lost.

**Cut-off calls.** A reply that reached the output token limit
(``finish_reason: length``) can end inside a tool call's arguments. Without
streaming, LangChain keeps such a call as an ``invalid_tool_call`` and the turn
ends with a blank reply; with streaming it completes the JSON itself and the
tool would run with half its arguments. ``cut_off_tool_calls`` finds them
(every call whose arguments are not valid JSON, and the last call of a reply
cut at the length limit), and ``CutOffToolCallsMiddleware`` answers each one
at once, so the tool never runs and the model is told, as the tool's result::

    Error: your call to write_file was cut off before its arguments were complete (the reply reached the
    output token limit), so it was not run. Make the call again with shorter arguments (write a long file in parts).

A ``tool_call_cut_off`` event is recorded (the REPL prints one line for it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.telemetry import EventKind, SessionLog

INTERRUPTED_RESULT = "Error: this tool call was interrupted and has no result. Call the tool again if you still need it."
CUT_OFF_RESULT = ("Error: your call to {tool} was cut off before its arguments were complete ({why}), so it was not "
                  "run. Make the call again with shorter arguments (write a long file in parts).")
CUT_AT_LIMIT = "the reply reached the output token limit"
NOT_JSON = "its arguments are not valid JSON"


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
        self.log.record_event(EventKind.REPAIR, 0, 0, tool_call_ids=patched)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}


# --- cut-off tool calls -------------------------------------------------------------------

def was_cut_at_limit(message: AIMessage) -> bool:
    """True when the reply stopped at the output token limit (OpenAI: ``length``; others: ``max_tokens``)."""
    metadata = message.response_metadata or {}
    return str(metadata.get("finish_reason") or metadata.get("stop_reason") or "") in ("length", "max_tokens")


def cut_off_tool_calls(message: AIMessage) -> tuple[AIMessage, list[ToolMessage]]:
    """The reply with its cut-off calls kept as plain calls (never run), and the results that answer them.

    Cut off: every call whose arguments were not valid JSON, and, in a reply cut
    at the length limit, its last call (streaming completes the JSON by itself).
    """
    at_limit = was_cut_at_limit(message)
    why = CUT_AT_LIMIT if at_limit else NOT_JSON
    invalid = [{"name": call.get("name") or "unknown_tool", "args": {}, "type": "tool_call",
                "id": call.get("id") or f"call_cut_{uuid.uuid4().hex[:12]}"} for call in message.invalid_tool_calls]
    calls = [*message.tool_calls, *invalid]
    cut = invalid or (calls[-1:] if at_limit else [])
    if not cut:
        return message, []
    results = [ToolMessage(CUT_OFF_RESULT.format(tool=call["name"], why=why), tool_call_id=call["id"], name=call["name"],
                           status="error") for call in cut]
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []}), results


class CutOffToolCallsMiddleware(AgentMiddleware):
    """Thin adapter: after each model call, answer cut-off tool calls so that the tools never run them."""

    def __init__(self, log: SessionLog) -> None:
        super().__init__()
        self.log = log

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        response = handler(request)
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        if not isinstance(response, ModelResponse) or not response.result:
            return response
        reply = response.result[0]
        if not isinstance(reply, AIMessage) or not (reply.invalid_tool_calls or (reply.tool_calls and was_cut_at_limit(reply))):
            return response
        fixed, results = cut_off_tool_calls(reply)
        if not results:
            return response
        self.log.record_event(EventKind.TOOL_CALL_CUT_OFF, 0, 0, tools=[result.name for result in results],
                              reason=CUT_AT_LIMIT if was_cut_at_limit(reply) else NOT_JSON)
        return ModelResponse(result=[fixed, *results, *response.result[1:]], structured_response=response.structured_response)
