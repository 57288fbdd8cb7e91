"""Record a session's model calls once; replay them later with no network and no key.

``--record FILE`` (``record=`` in ``get_model``) writes every model request and
response as JSON Lines; ``--model replay:FILE`` plays them back, offline and
deterministically. That is how an instructor shows a real model's session in
class: record it once at home, replay it on the projector.

The file (secrets replaced by ``flawedcode.infra.redact`` before anything is written)::

    {"type": "header", "format": "flawedcode-recording/1", "model": "gpt-4o-mini", "provider": "openai",
     "server": "api.openai.com", "window_tokens": 128000, "recorded_at": "...", "command": "flawedcode demo ..."}
    {"type": "call", "n": 1, "model": "gpt-4o-mini", "request": {"messages": [...], "tools": [...]},
     "response": {"type": "ai", "data": {... the reply: text, tool calls, usage, finish reason ...}}}
    {"type": "call", "n": 2, ..., "error": {"kind": "context_overflow", "message": "...", "limit_tokens": 4096}}

Recording is a LangChain callback (``RecordingHandler``) on the chat model, so
it sees each request as the model receives it (system prompt, messages, tool
names and parameters) and each reply as the agent receives it (usage and
reasoning tokens included). An error is recorded too, and replayed as the
same kind of error: an overflow replays as a ``ContextOverflowError``.

Replay (``ReplayChatModel``) answers a request with the reply recorded for the
same request: the first unused one, else (a repeated run) the last one used.
Every model one command builds (the demo's v1 and v2, the benchmark's runs)
shares one ``Player``, so each recorded reply is played once, in order.
It takes on the recorded model's name and window, so token counts, budgets and
prices come out as they did. The conversation ids a recording was made with are
written in it (``conversations``), and ``chat`` and ``demo`` reuse them when they
replay, unless that conversation's archive folder already exists: an id reaches the
model inside archive paths, and another id would count differently. Two things differ between runs and are not the
model's doing, so matching ignores them: message and tool-call ids, and the
conversation id inside ``archives/<conversation>/`` paths (random per
conversation; a replayed reply's archive paths are renamed to this session's).

The recording is written readable by its owner only (mode 0600: it holds prompts), never through a
symbolic link; ``--record`` refuses a link and an existing file that is not a recording. A
recording is checked line by line before anything is replayed: a line that is not the
shape above (a list for a header, a call without a request, wrong types) or a recorded
conversation id that is not one plain folder name (``..``, ``/``) stops with one line
naming the line, and a device or FIFO given as the file is refused unread.

A request that is not in the recording stops the replay with one line naming
it (``ReplayMismatchError``), e.g.::

    replay: request 9 is not in the recording lesson.jsonl: the closest recorded request (#9) differs at
    message 7 (tool chartbook_get_docs): recorded '...', now '...'. Replay with the settings it was recorded
    with (made by: flawedcode demo --record lesson.jsonl), or record it again.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from flawedcode.infra.redact import redact_data
from flawedcode.infra.safe_text import MAX_NAME_CHARS, is_plain_name, shown_name
from flawedcode.infra.safefs import check_folder_name
from flawedcode.models.errors import (
    ModelConfigError,
    ProviderContextOverflowError,
    RecordedModelError,
    context_overflow_from,
    explain_model_error,
    one_line,
)

FORMAT = "flawedcode-recording/1"
REPLAY_PREFIX = "replay:"
ARCHIVE_PATH = re.compile(r"archives/([^/\s'\"`\\]+)/")
"""An archive path, ``archives/<conversation id>/``: the id is random per conversation."""
ARCHIVE_PLACEHOLDER = "archives/<conversation>/"
SNIPPET_CHARS = 60


class ReplayMismatchError(ModelConfigError):
    """A replayed session sent a request the recording does not hold; the message names it."""


# --- what a request is -------------------------------------------------------------------

def request_record(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None,
                   settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request as written to a recording: messages by role, tool names and their parameters."""
    record: dict[str, Any] = {"messages": [_message_record(message) for message in messages],
                              "tools": [_tool_record(tool) for tool in tools or []]}
    if settings:
        record["settings"] = settings
    return record


def _message_record(message: BaseMessage) -> dict[str, Any]:
    record: dict[str, Any] = {"role": message.type, "content": message.content}
    if getattr(message, "name", None):
        record["name"] = message.name
    if getattr(message, "tool_calls", None):
        record["tool_calls"] = [{"name": call["name"], "args": call.get("args", {}), "id": call.get("id")}
                                for call in message.tool_calls]
    if getattr(message, "tool_call_id", None):
        record["tool_call_id"] = message.tool_call_id
    return record


def _tool_record(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    properties = (function.get("parameters") or {}).get("properties") or {}
    return {"name": function.get("name", ""), "parameters": sorted(properties)}


def matching_key(request: dict[str, Any]) -> str:
    """What two requests must share to be the same request: everything but ids and conversation ids."""
    messages = []
    for message in request["messages"]:
        kept = {key: value for key, value in message.items() if key not in ("tool_call_id",)}
        if "tool_calls" in kept:
            kept["tool_calls"] = [{"name": call["name"], "args": call["args"]} for call in kept["tool_calls"]]
        messages.append(kept)
    text = json.dumps({"messages": messages, "tools": request.get("tools", [])}, sort_keys=True, ensure_ascii=False)
    return ARCHIVE_PATH.sub(ARCHIVE_PLACEHOLDER, text)


def conversation_id_in(request: dict[str, Any]) -> str | None:
    """The first conversation id named in an archive path of the request, if any."""
    match = ARCHIVE_PATH.search(json.dumps(request["messages"], ensure_ascii=False))
    return match.group(1) if match else None


def _settings(invocation_params: dict[str, Any]) -> dict[str, Any]:
    keys = ("model", "model_name", "temperature", "max_tokens", "max_completion_tokens", "reasoning_effort", "top_p")
    return {key: invocation_params[key] for key in keys if invocation_params.get(key) is not None}


# --- recording ---------------------------------------------------------------------------

def describe_model(model: BaseChatModel) -> dict[str, Any]:
    """Who answered: model name, provider, server host (never a key) and window."""
    name = next((value for attribute in ("model_name", "model") if isinstance(value := getattr(model, attribute, None), str)
                 and value), type(model).__name__)
    base_url = str(getattr(model, "openai_api_base", None) or "")
    provider = "flawedcode" if name == "offline" or type(model).__name__ == "OfflineModel" else "openai"
    if isinstance(model, ReplayChatModel):
        return {"model": model.model_name, "provider": model.provider, "server": model.server,
                "window_tokens": model.window_tokens}
    server = re.sub(r"^https?://", "", base_url).split("/", 1)[0] if base_url else (
        "api.openai.com" if provider == "openai" else None)
    window = (getattr(model, "profile", None) or {}).get("max_input_tokens")
    return {"model": name, "provider": provider, "server": server, "window_tokens": window}


class Recording:
    """One JSONL recording file; the first write replaces any older file, later writes append."""

    def __init__(self, path: str | Path, command: str | None = None) -> None:
        self.path = Path(path)
        self.command = command
        """How the session was made (e.g. ``flawedcode demo --model openai:gpt-4o-mini``), shown when a replay differs."""
        self.calls = 0
        self.conversation_ids: list[str] = []
        self._lock = threading.Lock()
        self._started = False

    def new_conversation_id(self, prefix: str) -> str:
        """A fresh conversation id (``<prefix>-<10 hex>``), written to the recording so a replay can reuse it."""
        conversation_id = f"{prefix}-{uuid.uuid4().hex[:10]}"
        with self._lock:
            self.conversation_ids.append(conversation_id)
            if self._started:
                self._write_line({"type": "conversation", "id": conversation_id})
        return conversation_id

    def attach(self, model: BaseChatModel) -> BaseChatModel:
        """Record every call ``model`` makes (a callback added to its own callbacks); returns the model."""
        handler = RecordingHandler(self, describe_model(model))
        callbacks = model.callbacks
        if callbacks is None or isinstance(callbacks, list):
            model.callbacks = [*(callbacks or []), handler]
        else:  # a callback manager: add ours to it
            callbacks.add_handler(handler, inherit=False)
        return model

    def write_call(self, model: dict[str, Any], request: dict[str, Any], outcome: dict[str, Any]) -> None:
        with self._lock:
            if not self._started:
                self._write_line({"type": "header", "format": FORMAT, **model,
                                  "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                  "command": self.command, "conversations": list(self.conversation_ids)}, mode="w")
                self._started = True
            self.calls += 1
            self._write_line({"type": "call", "n": self.calls, "model": model["model"], "request": request, **outcome})

    def _write_line(self, record: dict[str, Any], mode: str = "a") -> None:
        clean, _ = redact_data(record)
        flags = (os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if mode == "w" else os.O_APPEND) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_NOFOLLOW", 0))  # a symbolic link put in its place is never followed
        descriptor = os.open(self.path, flags, 0o600)  # it holds prompts: readable by its owner only
        if mode == "w":
            os.chmod(self.path, 0o600)  # an older file of that name keeps no wider mode
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(clean, ensure_ascii=False, default=str) + "\n")
            stream.flush()


class RecordingHandler(BaseCallbackHandler):
    """A LangChain callback that writes each chat model call (request, then reply or error) to a Recording."""

    def __init__(self, recording: Recording, model: dict[str, Any]) -> None:
        super().__init__()
        self.recording = recording
        self.model = model
        self._pending: dict[UUID, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *,
                            run_id: UUID, **kwargs: Any) -> None:
        params = kwargs.get("invocation_params") or {}
        with self._lock:
            self._pending[run_id] = request_record(messages[0], params.get("tools"), _settings(params))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            request = self._pending.pop(run_id, None)
        if request is None:
            return
        generation = response.generations[0][0]
        message = getattr(generation, "message", None) or AIMessage(generation.text)
        reply = message_to_dict(message)
        reply["data"].pop("id", None)
        self.recording.write_call(self.model, request, {"response": reply})

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            request = self._pending.pop(run_id, None)
        if request is None:
            return
        overflow = context_overflow_from(error)
        if overflow is not None:
            recorded = {"kind": "context_overflow", "message": str(overflow), "limit_tokens": overflow.limit_tokens}
        else:
            recorded = {"kind": "error", "message": explain_model_error(error)}
        self.recording.write_call(self.model, request, {"error": recorded})


# --- replaying ---------------------------------------------------------------------------

@dataclass
class Exchange:
    n: int
    key: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: dict[str, Any] | None
    used: bool = False


@dataclass
class Player:
    """A recording loaded for replay: its header and exchanges, and which have been played."""

    path: Path
    header: dict[str, Any]
    exchanges: list[Exchange]
    conversation_ids: list[str] = field(default_factory=list)
    requests_seen: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def next_conversation_id(self, prefix: str) -> str | None:
        """The next recorded conversation id of an agent named ``prefix`` (the replay reuses it), or None."""
        with self._lock:
            found = next((conversation for conversation in self.conversation_ids
                          if conversation.startswith(prefix + "-")), None)
            if found is not None:
                self.conversation_ids.remove(found)
            return found

    def play(self, request: dict[str, Any]) -> Exchange:
        """The recorded exchange for this request, or ReplayMismatchError naming it."""
        key = matching_key(request)
        with self._lock:
            self.requests_seen += 1
            matches = [exchange for exchange in self.exchanges if exchange.key == key]
            unused = next((exchange for exchange in matches if not exchange.used), None)
            if unused is not None:
                unused.used = True
                return unused
            if matches:
                return matches[-1]  # the same request again (a re-run): the same answer
            raise ReplayMismatchError(self._mismatch(request))

    def _mismatch(self, request: dict[str, Any]) -> str:
        expected = self._closest(request)
        command = self.header.get("command")
        where = f"replay: request {self.requests_seen} is not in the recording {self.path.name}"
        advice = ("Replay with the settings it was recorded with" + (f" (made by: {command})" if command else "")
                  + ", or record it again.")
        if expected is None:
            return f"{where}: every recorded request has been played ({len(self.exchanges)}). {advice}"
        return f"{where}: the closest recorded request (#{expected.n}) {first_difference(expected.request, request)}. {advice}"

    def _closest(self, request: dict[str, Any]) -> Exchange | None:
        """The unplayed recorded request most like this one: same tools, then the most messages alike from the start."""
        keys = [matching_key({"messages": [message]}) for message in request["messages"]]

        def likeness(exchange: Exchange) -> tuple[bool, int, int]:
            recorded = [matching_key({"messages": [message]}) for message in exchange.request["messages"]]
            alike = next((i for i, (a, b) in enumerate(zip(recorded, keys)) if a != b), min(len(recorded), len(keys)))
            return exchange.request.get("tools", []) == request.get("tools", []), alike, -exchange.n

        unplayed = [exchange for exchange in self.exchanges if not exchange.used]
        return max(unplayed, key=likeness, default=None)


def first_difference(recorded: dict[str, Any], current: dict[str, Any]) -> str:
    """Where two requests first differ, in words: the tools, or a message's role and text."""
    if recorded.get("tools", []) != current.get("tools", []):
        return (f"offered {_tools_in_words(recorded)} with {_count(recorded['messages'], 'message')}; this one offers "
                f"{_tools_in_words(current)} with {_count(current['messages'], 'message')}")
    old, new = recorded["messages"], current["messages"]
    for index, (before, after) in enumerate(zip(old, new)):
        if matching_key({"messages": [before]}) != matching_key({"messages": [after]}):
            label = before.get("role", "?") + (f" {before['name']}" if before.get("name") else "")
            return (f"differs at message {index + 1} ({label}): recorded {_snippet(before, after)!r}, "
                    f"now {_snippet(after, before)!r}")
    return f"had {_count(old, 'message')}, this one has {len(new)}"


def _count(items: Sequence[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _tools_in_words(request: dict[str, Any]) -> str:
    names = [tool["name"] for tool in request.get("tools", [])]
    if not names:
        return "no tools (a summary request, say)"
    return ", ".join(names) if len(names) <= 3 else f"{len(names)} tools ({', '.join(names[:2])}, ...)"


def _snippet(message: dict[str, Any], other: dict[str, Any]) -> str:
    """The text around the first character where ``message`` differs from ``other``."""
    text, other_text = _message_text(message), _message_text(other)
    at = next((i for i, (a, b) in enumerate(zip(text, other_text)) if a != b), min(len(text), len(other_text)))
    start = max(0, at - SNIPPET_CHARS // 3)
    return one_line(("..." if start else "") + text[start : start + SNIPPET_CHARS], SNIPPET_CHARS + 10)


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    calls = " ".join(f"-> {call['name']}({json.dumps(call.get('args', {}), ensure_ascii=False)})"
                     for call in message.get("tool_calls") or [])
    return ARCHIVE_PATH.sub(ARCHIVE_PLACEHOLDER, " ".join(part for part in (text, calls) if part))


def load_recording(path: str | Path) -> Player:
    """Read a recording for replay: its header and exchanges, none played yet."""
    path = Path(path).expanduser()
    if not path.is_file():
        reason = ("it is a folder" if path.is_dir() else "not a regular file (a device or a FIFO)" if path.exists()
                  else "no such file")
        raise ModelConfigError(f"replay:{path}: cannot read the recording ({reason}); record one with --record FILE")
    return _read_player(path)


def _read_player(path: Path) -> Player:
    """Parse and check every line; anything malformed is one ``ModelConfigError`` line naming the line and the fault."""
    lines = _read_recording_text(path).splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            if number == len(lines):  # a recording cut off mid-line (the recorder was stopped): drop that line
                break
            raise ModelConfigError(f"replay:{path}: line {number} is not valid JSON; the recording is damaged") from None
    header = records[0][1] if records else None
    if not isinstance(header, dict) or header.get("type") != "header" or header.get("format") != FORMAT:
        raise ModelConfigError(f"replay:{path}: not a flawedcode recording (it must start with a {FORMAT} header; "
                               "make one with --record FILE)")
    exchanges, conversations = [], []
    for number, record in records:
        problem = _record_problem(record, number == records[0][0])
        if problem:
            raise ModelConfigError(f"replay:{path}: line {number}: {problem}; the recording is damaged "
                                   "(record it again with --record FILE)")
        if record.get("type") == "call":
            exchanges.append(Exchange(record.get("n", len(exchanges) + 1), matching_key(record["request"]),
                                      record["request"], record.get("response"), record.get("error")))
        conversations += record.get("conversations", []) if record.get("type") == "header" else (
            [record["id"]] if record.get("type") == "conversation" else [])
    return Player(path, header, exchanges, conversations)


MAX_RECORDING_BYTES = 512 * 1024**2
"""Largest recording read for replay (a device such as ``/dev/zero`` is refused unread)."""


def _read_recording_text(path: Path) -> str:
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(descriptor, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise ModelConfigError(f"replay:{path}: not a regular file (a device or a FIFO); give a recording "
                                       "made with --record FILE")
            data = stream.read(MAX_RECORDING_BYTES + 1)
        if len(data) > MAX_RECORDING_BYTES:
            raise ModelConfigError(f"replay:{path}: larger than {MAX_RECORDING_BYTES:,} bytes; not a recording")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ModelConfigError(f"replay:{path}: cannot read the recording ({one_line(reason, 120)})") from None


MAX_RECORDED_WINDOW_TOKENS = 100_000_000
"""Largest input window a recording's header may state."""


def _header_fields_problem(header: dict[str, Any]) -> str | None:
    """What is wrong with the header's own fields: a window that is not a whole number of tokens, a name that is not text."""
    window = header.get("window_tokens")
    if window is not None and (type(window) is not int or not 0 < window <= MAX_RECORDED_WINDOW_TOKENS):
        return (f"'window_tokens' is {one_line(repr(window), 40)}; it must be a whole number of tokens from 1 to "
                f"{MAX_RECORDED_WINDOW_TOKENS:,}")
    for name in ("model", "provider"):
        value = header.get(name)
        if value is not None and not is_plain_name(value):
            return (f"'{name}' is not a plain name of at most {MAX_NAME_CHARS} characters "
                    f"({shown_name(repr(value), 'empty')[:60]})")
    return None


def _record_problem(record: Any, first: bool) -> str | None:
    """What is wrong with one line of a recording, or None (the shapes the module docstring shows)."""
    if not isinstance(record, dict):
        return f"expected a JSON object, found {type(record).__name__}"
    kind = record.get("type")
    if first or kind == "header":
        if not first:
            return "a second header"
        header_problem = _header_fields_problem(record)
        if header_problem:
            return header_problem
        conversations = record.get("conversations", [])
        if not isinstance(conversations, list):
            return "'conversations' is not a list"
        return next((problem for conversation in conversations if (problem := _conversation_problem(conversation))), None)
    if kind == "conversation":
        return _conversation_problem(record.get("id"))
    if kind != "call":
        return f"unknown record type {one_line(repr(kind), 40)}"
    if "n" in record and (type(record["n"]) is not int):
        return "'n' is not a whole number"
    request = record.get("request")
    if not isinstance(request, dict):
        return "the call has no request" if request is None else "'request' is not an object"
    messages, tools = request.get("messages"), request.get("tools", [])
    if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
        return "'request.messages' is not a list of messages"
    for message in messages:
        calls = message.get("tool_calls", [])
        if not isinstance(message.get("role"), str) or not isinstance(calls, list) or not all(
                isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("args", {}), dict)
                for call in calls):
            return "a request message has no role, or malformed tool calls"
    if not isinstance(tools, list) or not all(isinstance(tool, dict) and isinstance(tool.get("name"), str) for tool in tools):
        return "'request.tools' is not a list of tools"
    response, error = record.get("response"), record.get("error")
    if response is None and error is None:
        return "the call has neither a response nor an error"
    if response is not None and not (isinstance(response, dict) and isinstance(response.get("type"), str)
                                     and isinstance(response.get("data"), dict)):
        return "'response' is not a recorded message"
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("message", ""), str)):
        return "'error' is not a recorded error"
    return None


def _conversation_problem(conversation: Any) -> str | None:
    """A recorded conversation id becomes a folder under archives/: it must be one plain folder name."""
    if not isinstance(conversation, str):
        return "a conversation id is not a string"
    try:
        check_folder_name(conversation, "conversation id")
    except ValueError as error:
        return one_line(str(error), 200)
    return None


class ReplayChatModel(BaseChatModel):
    """Answers each request with the reply recorded for it; no network, no key. Read the module docstring."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    recording_path: Path
    """The recording file."""
    model_name: str = "replay"
    """The recorded model's name (so counts, windows and prices match the recording)."""
    provider: str = "openai"
    """The recorded model's provider (``openai`` or ``flawedcode`` for the offline model)."""
    server: str | None = None
    """The host that answered when it was recorded (no key is ever stored)."""
    window_tokens: int | None = None
    """The recorded model's input window."""

    _player: Player | None = PrivateAttr(default=None)

    @classmethod
    def from_file(cls, path: str | Path, player: Player | None = None) -> ReplayChatModel:
        """A replay of the recording at ``path``; models that share a ``player`` share what has been played."""
        player = player or load_recording(path)
        header = player.header
        model = cls(recording_path=Path(path), model_name=str(header.get("model") or "replay"),
                    provider=str(header.get("provider") or "openai"), server=header.get("server"),
                    window_tokens=header.get("window_tokens"))
        model._player = player
        if model.window_tokens:
            model.profile = {"max_input_tokens": int(model.window_tokens), "tool_calling": True}
        return model

    @property
    def see(self) -> Any:
        """For a recording of the offline model, its ``see`` (what fits its window), so a lesson's window view
        and its "goal lost" marker replay too; any other recorded model has none (a real API reads it all)."""
        if self.provider != "flawedcode" or not self.window_tokens:
            raise AttributeError("see")
        from flawedcode.models.offline import OfflineModel

        return OfflineModel(max_input_tokens=int(self.window_tokens)).see

    @property
    def player(self) -> Player:
        if self._player is None:
            self._player = load_recording(self.recording_path)
        return self._player

    @property
    def _llm_type(self) -> str:
        return "flawedcode-replay"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "recording": str(self.recording_path)}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self.provider
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI tool schemas (they are part of what a request is matched on)."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        request = request_record(messages, kwargs.get("tools"))
        exchange = self.player.play(redact_data(request)[0])
        if exchange.error is not None:
            raise _replayed_error(exchange.error)
        reply = _renamed_archives(exchange.response or {}, conversation_id_in(exchange.request),
                                  conversation_id_in(request))
        message = messages_from_dict([reply])[0]
        return ChatResult(generations=[ChatGeneration(message=message)])


def _replayed_error(error: dict[str, Any]) -> Exception:
    if error.get("kind") == "context_overflow":
        return ProviderContextOverflowError(str(error.get("message", "")), limit_tokens=error.get("limit_tokens"),
                                            provider="recorded")
    return RecordedModelError(str(error.get("message", "the recorded call failed")))


def _renamed_archives(reply: dict[str, Any], recorded_id: str | None, current_id: str | None) -> dict[str, Any]:
    """The reply with the recorded conversation's archive paths renamed to this conversation's."""
    if not recorded_id or not current_id or recorded_id == current_id:
        return reply
    text = json.dumps(reply, ensure_ascii=False).replace(f"archives/{recorded_id}/", f"archives/{current_id}/")
    return json.loads(text)
