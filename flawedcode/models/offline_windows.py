"""What the offline model does when it is told about its context window: budget notes, notes tools, new windows.

Three generic rules, for every agent alike; each acts only where the tools it needs are offered, and tools are
recognised by what their descriptions say, never by one agent's names:

1. **Running out.** A system note in view after the latest request says how many tokens are left ("N tokens
   left", "N remaining") and that is at most a quarter of its window, or the note asks it to write notes. Then,
   once per note: if a tool is offered whose description says it writes (creates) notes and takes a path and a
   text, it writes to ``notes.md`` the summary it would write of what it sees (``teaching/summary.py``);
   then, if a tool is offered whose description says it starts a new context window, it calls that.
2. **A new window.** Its system context names a previous context window, nothing of the conversation before the
   latest request is in view, and a tool is offered whose description says it reads notes: before anything else
   it reads ``notes.md``.
3. **Notes read back are its own summary.** A notes-reading call whose result is a summary it wrote (it opens
   with ``## SESSION INTENT``) is read as a summary message of what came before the request (in the request's
   place in the conversation: before it), so the goal and figures it noted are in view as after any summary.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.models.offline_memory import LANGCHAIN_SUMMARY_PREFIX, is_summary_message
from flawedcode.models.teaching import summary

NOTES_FILE = "notes.md"
RUNNING_OUT_SHARE = 0.25
"""A note saying at most this share of its window is left means the window is running out."""
TOKENS_LEFT = re.compile(r"(\d[\d,]*)\s+(?:tokens\s+)?(?:left|remaining)\b", re.IGNORECASE)
WRITE_NOTES = re.compile(r"\bwrite\b[^.]*\bnotes\b", re.IGNORECASE)
SUMMARY_HEAD = "## SESSION INTENT"

ToolCallPlan = tuple[str, dict[str, Any]]


def described(tool_schemas: dict[str, dict[str, Any]], *words: str, parameters: tuple[str, ...] = ()) -> str | None:
    """The first offered tool whose description has every word (any of ``a|b``) and takes ``parameters``."""
    for name, schema in tool_schemas.items():
        function = schema.get("function", {})
        text = str(function.get("description", "")).lower()
        properties = function.get("parameters", {}).get("properties", {})
        if all(any(option in text for option in word.split("|")) for word in words) and set(parameters) <= set(properties):
            return name
    return None


def window_tool(tool_schemas: dict[str, dict[str, Any]]) -> str | None:
    return described(tool_schemas, "new context window")


def notes_writer(tool_schemas: dict[str, dict[str, Any]]) -> str | None:
    return described(tool_schemas, "notes", "write|create", parameters=("path", "text"))


def notes_reader(tool_schemas: dict[str, dict[str, Any]]) -> str | None:
    return described(tool_schemas, "notes", "read", parameters=("path",))


def running_out(note: str, window_tokens: int) -> bool:
    """A note that asks for notes, or says that at most a quarter of the window is left."""
    if WRITE_NOTES.search(note):
        return True
    match = TOKENS_LEFT.search(note)
    return match is not None and int(match.group(1).replace(",", "")) <= RUNNING_OUT_SHARE * window_tokens


def called_after(visible: list[BaseMessage], index: int, name: str) -> bool:
    return any(isinstance(message, AIMessage) and any(call["name"] == name for call in message.tool_calls)
               for message in visible[index + 1:])


def window_call(visible: list[BaseMessage], latest: int, system_prompt: str, tool_schemas: dict[str, dict[str, Any]],
                window_tokens: int) -> ToolCallPlan | None:
    """Rules 1 and 2: the call the window's state asks for now, or None."""
    notes = [index for index in range(latest + 1, len(visible))
             if isinstance(visible[index], SystemMessage) and running_out(visible[index].text, window_tokens)]
    if notes:
        for name, arguments in ((notes_writer(tool_schemas), {"path": NOTES_FILE, "text": summary_of(visible)}),
                                (window_tool(tool_schemas), {})):
            if name is not None and not called_after(visible, notes[-1], name):
                return name, arguments
    reader = notes_reader(tool_schemas)
    fresh = not any(not isinstance(message, SystemMessage) for message in visible[:latest])
    if reader and fresh and "previous context window" in system_prompt.lower() and not called_after(visible, latest, reader):
        return reader, {"path": NOTES_FILE}
    return None


def summary_of(visible: list[BaseMessage]) -> str:
    """The summary it writes of what it sees (the one it writes when asked to summarize)."""
    conversation = [message for message in visible if not isinstance(message, SystemMessage)]
    return summary.write([summary.said(message) for message in conversation])


def notes_as_summaries(visible: list[BaseMessage], tool_schemas: dict[str, dict[str, Any]]) -> list[BaseMessage]:
    """Rule 3: each notes read-back that is its own summary becomes a summary message before the request it served."""
    reader = notes_reader(tool_schemas)
    if reader is None:
        return visible
    calls = {call["id"]: call["name"] for message in visible if isinstance(message, AIMessage) for call in message.tool_calls}
    read = {index for index, message in enumerate(visible) if isinstance(message, ToolMessage)
            and calls.get(message.tool_call_id) == reader and message.text.lstrip().startswith(SUMMARY_HEAD)}
    if not read:
        return visible
    result: list[BaseMessage] = []
    for index, message in enumerate(visible):
        if index in read:
            if result and isinstance(result[-1], AIMessage) and result[-1].tool_calls:
                result.pop()  # the call that read it
            request = max((i for i, kept in enumerate(result) if isinstance(kept, HumanMessage)
                           and not is_summary_message(kept)), default=len(result))
            result.insert(request, HumanMessage(f"{LANGCHAIN_SUMMARY_PREFIX}\n\n{message.text.strip()}"))
        else:
            result.append(message)
    return result
