"""What OpenAI-compatible servers send back, made whole before the agent sees it.

Real servers bend the Chat Completions format in a handful of common ways. Each
is put right at the model boundary (``FlawedChatOpenAI``), so the agent, the
history, the archive and a recording all see one well-formed reply:

==============================================  =====================================================
what a server sends                              what the agent gets
==============================================  =====================================================
a tool call with no ``id``, or ``""`` (older    a fresh unique id, ``call_<24 hex>`` (a strict
Ollama and llama.cpp; Gemini's layer)            endpoint refuses every later turn otherwise)
``arguments`` as a JSON object, or as a JSON     the arguments as the object they mean
string inside a string
``<tool_call>{"name": ..., "arguments": ...}``   a real tool call, when that tool was offered;
written in the content (Hermes/Qwen style)       otherwise the text stays and ``reply_notes`` says
                                                 "the model wrote a tool call as text"
a reply that is only ``{"name": <a tool>,        that tool call, when that tool was offered
"parameters": {...}}`` (Llama 3.x on Ollama)
``<think>...</think>`` before the answer (or     the reasoning moved out of the content into
``<thinking>``), or ``reasoning_content`` /      ``additional_kwargs["reasoning_content"]``: kept
``reasoning`` beside it                          with the message (archived, recorded), never sent
                                                 back to the model, never counted as context
==============================================  =====================================================

A 200 that holds no reply is raised as ``ModelReplyError`` (``errors.py``) with
one sentence: an ``error`` body (retried when its code is a 5xx or 429), no
``choices`` (retried), a web page instead of JSON (a wrong base URL).

``reply_notes(message)`` says, one line each, what a user should know about a
reply: no answer text at all, a content filter, a text answer cut at the output
limit, a tool call written as text; ``folded_reasoning(messages)`` shows a turn's
reasoning folded (``[reasoning: 2,213 tokens, hidden]``; the provider's count of
reasoning tokens, else the kept reasoning counted). The REPL prints both.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.messages import AIMessage

from flawedcode.tokens import count_text

REASONING_KEY = "reasoning_content"
"""Where a reply's reasoning is kept: ``message.additional_kwargs[REASONING_KEY]``."""
REASONING_FIELDS = ("reasoning_content", "reasoning")
"""The fields servers put reasoning in, beside the content (vLLM, DeepSeek, LM Studio; OpenRouter)."""
TEXT_TOOL_CALL_KEY = "flawedcode_text_tool_calls"
"""Set in ``additional_kwargs`` to the tool names a reply wrote as text but that were not offered (not run)."""
THINK_BLOCK = re.compile(r"^\s*<(think|thinking|reasoning)>(.*?)(?:</\1>|$)", re.DOTALL)
TEXT_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
BARE_JSON_CALL = re.compile(r"^\s*(?:```(?:json)?\s*)?(\{.*\})\s*(?:```)?\s*$", re.DOTALL)
"""A reply that is nothing but one JSON object (Llama 3.x on Ollama writes ``{"name": ..., "parameters": ...}``)."""


def fresh_call_id() -> str:
    """A new tool-call id, unique in any conversation."""
    return f"call_{uuid.uuid4().hex[:24]}"


# --- the completion, as the server sent it -----------------------------------------------------

def repair_completion(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a chat completion with every tool call's ``arguments`` a JSON string of an object."""
    repaired = json.loads(json.dumps(body, default=str))
    for choice in repaired.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        for call in (message or {}).get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                function["arguments"] = arguments_text(function.get("arguments"))
    return repaired


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments as a JSON string of an object: an object is encoded, a double-encoded string decoded once."""
    if isinstance(arguments, Mapping):
        return json.dumps(arguments, ensure_ascii=False)
    if arguments is None or arguments == "":
        return "{}"
    text = str(arguments)
    try:
        decoded = json.loads(text)
    except ValueError:
        return text  # not JSON at all (or cut off): LangChain reports it as an invalid tool call
    if isinstance(decoded, str):
        try:
            if isinstance(json.loads(decoded), Mapping):
                return decoded
        except ValueError:
            pass
    return text


def reasoning_in(message_body: Mapping[str, Any]) -> str:
    """The reasoning a server put beside the content (``reasoning_content`` or ``reasoning``), or ``""``."""
    for name in REASONING_FIELDS:
        value = message_body.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


# --- the reply, as the agent will see it ------------------------------------------------------------

def tidy_reply(message: AIMessage, offered_tools: Iterable[str] = (), reasoning: str = "") -> AIMessage:
    """The reply made whole (in place, and returned): ids, arguments, reasoning and text tool calls (module docstring)."""
    offered = set(offered_tools)
    _move_reasoning_out(message, reasoning)
    if isinstance(message.content, str) and "<tool_call>" in message.content:
        _parse_text_tool_calls(message, offered)
    elif isinstance(message.content, str) and offered and not message.tool_calls and message.content.lstrip()[:1] in "{`":
        _parse_bare_json_call(message, offered)
    _rescue_double_encoded(message)
    for call in message.tool_calls:
        if not call.get("id"):
            call["id"] = fresh_call_id()
    for call in message.invalid_tool_calls:  # answered too (the agent tells the model it was invalid)
        if not call.get("id"):
            call["id"] = fresh_call_id()
    return message


def _move_reasoning_out(message: AIMessage, reasoning: str) -> None:
    parts = [reasoning.strip()] if reasoning.strip() else []
    if isinstance(message.content, str):
        match = THINK_BLOCK.match(message.content)
        if match:
            parts.append(match.group(2).strip())
            message.content = message.content[match.end():].lstrip()
    existing = message.additional_kwargs.get(REASONING_KEY)
    if parts and not existing:
        message.additional_kwargs[REASONING_KEY] = "\n\n".join(part for part in parts if part)


def _parse_text_tool_calls(message: AIMessage, offered: set[str]) -> None:
    """Turn ``<tool_call>{...}</tool_call>`` blocks into tool calls when each names an offered tool."""
    blocks = TEXT_TOOL_CALL.findall(message.content)
    calls = [_text_call(block) for block in blocks]
    if not calls:
        return
    if any(call is None for call in calls):
        message.additional_kwargs[TEXT_TOOL_CALL_KEY] = ["one that could not be read"]
        return
    names = [call["name"] for call in calls]
    if not offered or not set(names) <= offered:
        message.additional_kwargs[TEXT_TOOL_CALL_KEY] = names
        return
    message.tool_calls = [*message.tool_calls, *calls]
    message.content = TEXT_TOOL_CALL.sub("", message.content).strip()


def _parse_bare_json_call(message: AIMessage, offered: set[str]) -> None:
    """A reply that is only ``{"name": <an offered tool>, "arguments"|"parameters": {...}}`` is that tool call."""
    match = BARE_JSON_CALL.match(message.content)
    call = _text_call(match.group(1)) if match else None
    if call is not None and call["name"] in offered:
        message.tool_calls = [*message.tool_calls, call]
        message.content = ""


def _text_call(block: str) -> dict[str, Any] | None:
    try:
        data = json.loads(block)
    except ValueError:
        return None
    if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = json.loads(arguments_text(arguments)) if arguments_text(arguments).startswith("{") else {}
    if not isinstance(arguments, Mapping):
        return None
    return {"name": data["name"], "args": dict(arguments), "id": fresh_call_id(), "type": "tool_call"}


def _rescue_double_encoded(message: AIMessage) -> None:
    """A streamed call whose arguments were a JSON string inside a string lands in ``invalid_tool_calls``: rescue it."""
    rescued, still_invalid = [], []
    for call in message.invalid_tool_calls:
        text = arguments_text(call.get("args"))
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        if isinstance(arguments, Mapping) and call.get("name"):
            rescued.append({"name": call["name"], "args": dict(arguments), "id": call.get("id") or fresh_call_id(),
                            "type": "tool_call"})
        else:
            still_invalid.append(call)
    if rescued:
        message.tool_calls = [*message.tool_calls, *rescued]
        message.invalid_tool_calls = still_invalid


# --- what a user should know about a reply -------------------------------------------------------------

def reasoning_tokens(message: AIMessage, count_tokens: Callable[[str], int] = count_text) -> int:
    """The reply's reasoning in tokens: as the provider reported it, else counted from the reasoning kept aside."""
    reported = int(((message.usage_metadata or {}).get("output_token_details") or {}).get("reasoning") or 0)
    return reported or count_tokens(message.additional_kwargs.get(REASONING_KEY) or "")


def folded_reasoning(messages: Iterable[Any]) -> str | None:
    """``[reasoning: 2,213 tokens, hidden]`` for the replies among ``messages`` that reasoned; else None."""
    tokens = sum(reasoning_tokens(message) for message in messages if isinstance(message, AIMessage))
    return f"[reasoning: {tokens:,} tokens, hidden]" if tokens else None


def reply_notes(message: AIMessage) -> list[str]:
    """One line each: no answer text, a content filter, a text answer cut short, a tool call written as text."""
    notes = []
    reasoning = message.additional_kwargs.get(REASONING_KEY) or ""
    finish = (message.response_metadata or {}).get("finish_reason")
    has_text = bool(message.text.strip())
    if finish == "content_filter":
        notes.append("the provider's content filter stopped this reply" + ("" if has_text else ": no answer text"))
    elif not has_text and not message.tool_calls and not message.invalid_tool_calls:
        notes.append("the model gave no answer text" + (" (only reasoning)" if reasoning else ""))
    elif finish == "length" and has_text and not message.tool_calls:
        notes.append("the answer was cut off at the output token limit (finish_reason: length)")
    written = message.additional_kwargs.get(TEXT_TOOL_CALL_KEY)
    if written:
        notes.append(f"the model wrote a tool call as text ({', '.join(written)}), not one offered to it: not run")
    return notes
