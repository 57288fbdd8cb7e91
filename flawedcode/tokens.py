"""Exact token counts, offline: what the model receives, counted with tiktoken.

Why exact counts matter
-----------------------
Every chart, budget and summarization trigger in flawedcode is measured in
tokens, so the counts must be the ones the model sees. The popular shortcut
"characters / 4" is close for English prose but badly wrong for the data this
course feeds an agent: a CSV of numeric rates splits into many short tokens
(digits, dots, commas), and chars/4 under-counts it by about 2.2x. An agent
whose budget is estimated that way overflows its window long before its
meter says so. (`tests/benchmarks/bench_tokens.py` prints the ratio per kind of text.)

Offline encodings
-----------------
`tiktoken.get_encoding` downloads its BPE file on first use, which fails with
no network. The package ships byte-identical copies of `cl100k_base.tiktoken`
and `o200k_base.tiktoken` in `flawedcode/encodings/`. tiktoken looks in the
directory named by `TIKTOKEN_CACHE_DIR` for a file named by the sha1 of the
download URL and checks the file's sha256 itself. `ensure_tiktoken_cache()`
puts the bundled files there under those names, after checking their sha256.
It runs on first use (the first count, or when a real model is built), never
on import: importing flawedcode changes no environment variable and writes no
file. If `TIKTOKEN_CACHE_DIR` is unset (or empty, which would disable
tiktoken's cache), it is then set to `~/.cache/flawedcode/tiktoken`, or to a
temporary folder when that is not writable. After `ensure_tiktoken_cache()`,
plain `tiktoken.get_encoding(...)` and langchain-openai's
`get_num_tokens_from_messages` work offline too.

What is counted
---------------
Text is counted with `encode_ordinary`: a user who pastes `<|endoftext|>` gets
it counted as the ordinary text it is, never as a special token (and never an
error). A chat request is counted the way OpenAI's cookbook counts it:

- each message: 3 tokens of framing + its role + its content + (if it has a
  name) 1 + the name;
- content given as a list of blocks: the text parts, joined; images and other
  non-text blocks are not counted;
- an AI message's tool calls: the JSON of `{"name": ..., "arguments": ...}`
  for each call;
- a tool message's `tool_call_id`: the id's text;
- the system prompt: one system message;
- tool schemas: the JSON of `convert_to_openai_tool(tool)` for each tool;
- the reply: 3 tokens that prime the assistant's answer.

Providers add their own undocumented framing, so a real API's reported usage
can differ by a few tokens per message; the content tokens are exact.

The caching rule
----------------
An agent recounts its whole history before every model call. `TokenCounter`
remembers each message's count under the key
`(type, id, hash(content as str), tool-calls signature)`, so a message seen
before costs one dictionary lookup and a turn costs O(new content). Python
caches a string's hash, so re-hashing the same content object is free. The
tool-calls signature also covers the message's name and tool_call_id (and a
ChatMessage's role), so two id-less messages with equal text but different
calls never share an entry. Any change to content or calls is a new key and
is counted afresh. The cache is an LRU bounded at `max_cached_messages`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, ToolCall, ToolMessage

from flawedcode.constants import ENCODING_NAME

ENCODINGS_DIR = Path(__file__).parent / "encodings"
DEFAULT_CACHE_DIR = Path("~/.cache/flawedcode/tiktoken")


@dataclass(frozen=True)
class BundledEncoding:
    """One BPE file shipped with the package and where tiktoken would download it."""

    name: str
    url: str
    sha256: str

    @property
    def bundled_path(self) -> Path:
        return ENCODINGS_DIR / f"{self.name}.tiktoken"

    @property
    def cache_file_name(self) -> str:
        """tiktoken's cache key: the sha1 of the download URL."""
        return hashlib.sha1(self.url.encode()).hexdigest()


# URLs and hashes exactly as in tiktoken_ext/openai_public.py.
BUNDLED_ENCODINGS: tuple[BundledEncoding, ...] = (
    BundledEncoding(
        name="cl100k_base",
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    BundledEncoding(
        name=ENCODING_NAME,
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
)

# Framing tokens, as in OpenAI's cookbook ("How to count tokens with tiktoken").
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3

ROLE_BY_MESSAGE_TYPE = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "developer": "developer",
}


class BundledEncodingError(RuntimeError):
    """A BPE file shipped with flawedcode is missing or does not match its sha256."""


# --------------------------------------------------------------------------- cache seeding

_seeded_dirs: set[Path] = set()


def _sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_writable_dir(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory):
            pass
    except OSError:
        return False
    return True


def _choose_default_cache_dir() -> Path:
    preferred = DEFAULT_CACHE_DIR.expanduser()
    if _is_writable_dir(preferred):
        return preferred
    fallback = Path(tempfile.gettempdir()) / f"flawedcode-tiktoken-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def _verified_bundled_bytes(encoding: BundledEncoding) -> bytes:
    path = encoding.bundled_path
    if not path.is_file():
        raise BundledEncodingError(
            f"Bundled encoding file is missing: {path}. Reinstall flawedcode "
            f"(pip install -e .) so that flawedcode/encodings/{path.name} is present."
        )
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != encoding.sha256:
        raise BundledEncodingError(
            f"Bundled encoding file is corrupt: {path} has sha256 {actual}, expected "
            f"{encoding.sha256}. Restore it from git (git checkout -- flawedcode/encodings/{path.name}) "
            f"or reinstall flawedcode."
        )
    return data


def _seed_one(encoding: BundledEncoding, cache_dir: Path) -> None:
    target = cache_dir / encoding.cache_file_name
    if target.is_file() and _sha256_of(target) == encoding.sha256:
        return
    data = _verified_bundled_bytes(encoding)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, target)


def ensure_tiktoken_cache() -> Path:
    """Seed tiktoken's cache with the bundled encodings and return the cache folder.

    Sets `TIKTOKEN_CACHE_DIR` when it is unset or empty. Idempotent and cheap:
    a folder already seeded in this process is not checked again.
    """
    configured = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    if configured:
        cache_dir = Path(configured).expanduser()
    else:
        cache_dir = _choose_default_cache_dir()
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    if cache_dir in _seeded_dirs:
        return cache_dir
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for encoding in BUNDLED_ENCODINGS:
            _seed_one(encoding, cache_dir)
    except OSError as error:
        fallback = _choose_default_cache_dir()
        warnings.warn(
            f"Could not seed tiktoken's cache at TIKTOKEN_CACHE_DIR={cache_dir} ({error}); "
            f"using {fallback} instead, so that tiktoken never downloads.",
            RuntimeWarning,
            stacklevel=2,
        )
        if fallback == cache_dir:
            raise
        os.environ["TIKTOKEN_CACHE_DIR"] = str(fallback)
        return ensure_tiktoken_cache()
    _seeded_dirs.add(cache_dir)
    return cache_dir


# --------------------------------------------------------------------------- encodings

_CL100K_MODEL_PREFIXES = ("gpt-4-", "gpt-3.5", "gpt-35", "text-embedding-")
_CL100K_MODELS = frozenset({"gpt-4"})


def _bare_model_name(model_name: str) -> str:
    """'openai:gpt-4o' -> 'gpt-4o'; 'ft:gpt-4o-mini:org::id' -> 'gpt-4o-mini'."""
    name = model_name.strip().lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    elif ":" in name:
        name = name.split(":", 1)[1]
    return name.rsplit("/", 1)[-1]


def encoding_name_for_model(model_name: str) -> str:
    """The tiktoken encoding of a model: cl100k_base for gpt-4, gpt-3.5-turbo and
    text-embedding-*; o200k_base for everything else (gpt-4o, gpt-4.1, gpt-5,
    o1/o3/o4, the offline model and unknown names)."""
    name = _bare_model_name(model_name)
    if name in _CL100K_MODELS or name.startswith(_CL100K_MODEL_PREFIXES):
        return "cl100k_base"
    return ENCODING_NAME


@cache
def get_encoding(name: str = ENCODING_NAME) -> tiktoken.Encoding:
    """A tiktoken encoding, loaded once (cl100k_base and o200k_base work offline)."""
    ensure_tiktoken_cache()
    return tiktoken.get_encoding(name)


def count_text(text: str, encoding: str = ENCODING_NAME) -> int:
    """Tokens in `text`; special-token text such as `<|endoftext|>` counts as ordinary text."""
    if not text:
        return 0
    return len(get_encoding(encoding).encode_ordinary(text))


# --------------------------------------------------------------------------- messages

def _content_as_text(content: str | list[Any]) -> str:
    """Message content as the text a model reads: list content joins its text parts."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _content_hash(content: str | list[Any]) -> int:
    return hash(content if isinstance(content, str) else str(content))


def _tool_call_json(name: str, arguments: Any) -> str:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _tool_calls_of(message: BaseMessage) -> list[ToolCall]:
    return message.tool_calls if isinstance(message, AIMessage) else []


def _tool_calls_as_json(message: BaseMessage) -> tuple[str, ...]:
    return tuple(_tool_call_json(call["name"], call["args"]) for call in _tool_calls_of(message))


def _tool_call_id_of(message: BaseMessage) -> str | None:
    return message.tool_call_id if isinstance(message, ToolMessage) else None


def _role_of(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    return ROLE_BY_MESSAGE_TYPE.get(message.type, message.type)


def _tool_calls_signature(message: BaseMessage) -> tuple[Any, ...]:
    """Everything besides content that changes the count: calls, name, tool_call_id, role.

    Tool-call arguments enter as their repr (cheap for the small dicts models send).
    """
    calls = tuple((call["id"], call["name"], repr(call["args"])) for call in _tool_calls_of(message))
    return (
        calls,
        message.name,
        _tool_call_id_of(message),
        message.role if isinstance(message, ChatMessage) else None,
    )


def message_cache_key(message: BaseMessage) -> tuple[Any, ...]:
    """`(type, id, hash(content as str), tool-calls signature)`."""
    return (message.type, message.id, _content_hash(message.content), _tool_calls_signature(message))


@dataclass(frozen=True)
class CacheInfo:
    """How often TokenCounter found a message's count already known."""

    hits: int
    misses: int
    size: int
    max_size: int


MAX_CACHED_TOOL_OBJECTS = 256
"""Tool objects whose schema count ``TokenCounter.count_tool`` remembers by identity (least recently used go)."""


class TokenCounter:
    """Counts a chat request exactly, caching each message's count.

    `count_request(system_prompt, tools, messages)` is everything the model
    receives; the parts are `count_system`, `count_tools` and `count_messages`.
    """

    def __init__(self, encoding: str = ENCODING_NAME, max_cached_messages: int = 50_000) -> None:
        self.encoding_name = encoding
        self.encoding = get_encoding(encoding)
        self.max_cached_messages = max_cached_messages
        self._message_counts: OrderedDict[tuple[Any, ...], int] = OrderedDict()
        self._tool_counts: dict[tuple[str, str], int] = {}
        self._tools_by_object: OrderedDict[int, tuple[Any, int]] = OrderedDict()
        self._system_counts: dict[str, int] = {}
        self._hits = 0
        self._misses = 0

    def _count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text)) if text else 0

    def _count_uncached(self, message: BaseMessage) -> int:
        tokens = TOKENS_PER_MESSAGE + self._count(_role_of(message))
        tokens += self._count(_content_as_text(message.content))
        if message.name:
            tokens += TOKENS_PER_NAME + self._count(message.name)
        for call_json in _tool_calls_as_json(message):
            tokens += self._count(call_json)
        tool_call_id = _tool_call_id_of(message)
        if tool_call_id:
            tokens += self._count(tool_call_id)
        return tokens

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one message as a chat API receives it (framing included)."""
        key = message_cache_key(message)
        known = self._message_counts.get(key)
        if known is not None:
            self._hits += 1
            self._message_counts.move_to_end(key)
            return known
        self._misses += 1
        tokens = self._count_uncached(message)
        self._message_counts[key] = tokens
        if len(self._message_counts) > self.max_cached_messages:
            self._message_counts.popitem(last=False)
        return tokens

    def count_messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens of a conversation, plus the tokens that prime the reply."""
        return sum(self.count_message(message) for message in messages) + REPLY_PRIMING_TOKENS

    def count_tool(self, tool: Any) -> int:
        """Tokens of one tool's schema as sent: the compact JSON of convert_to_openai_tool.

        Cached per tool object (the object is kept alive by the cache, so its id stays
        unique); a new tool object is counted afresh (to change a tool, build a new one).
        That cache keeps the ``MAX_CACHED_TOOL_OBJECTS`` most recently used objects: a model
        handed fresh schema dicts on every call must not grow it call after call.
        """
        from langchain_core.utils.function_calling import convert_to_openai_tool

        known = self._tools_by_object.get(id(tool))
        if known is not None and known[0] is tool:
            self._tools_by_object.move_to_end(id(tool))
            return known[1]
        schema = convert_to_openai_tool(tool)
        schema_json = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        key = (schema.get("function", {}).get("name", ""), schema_json)
        if key not in self._tool_counts:
            self._tool_counts[key] = self._count(schema_json)
        self._tools_by_object[id(tool)] = (tool, self._tool_counts[key])
        if len(self._tools_by_object) > MAX_CACHED_TOOL_OBJECTS:
            self._tools_by_object.popitem(last=False)
        return self._tool_counts[key]

    def count_tools(self, tools: Sequence[Any] | None) -> int:
        """Tokens of all tool schemas (0 when there are none)."""
        return sum(self.count_tool(tool) for tool in tools or ())

    def count_system(self, system_prompt: str | None) -> int:
        """Tokens of the system prompt, sent as one system message (0 when there is none)."""
        if not system_prompt:
            return 0
        if system_prompt not in self._system_counts:
            self._system_counts[system_prompt] = (
                TOKENS_PER_MESSAGE + self._count("system") + self._count(system_prompt)
            )
        return self._system_counts[system_prompt]

    def count_request(
        self,
        system_prompt: str | None,
        tools: Sequence[Any] | None,
        messages: Iterable[BaseMessage],
    ) -> int:
        """Everything the model receives: system prompt + tool schemas + messages."""
        return self.count_system(system_prompt) + self.count_tools(tools) + self.count_messages(messages)

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self._hits, self._misses, len(self._message_counts), self.max_cached_messages)

    def clear_cache(self) -> None:
        self._message_counts.clear()
        self._tool_counts.clear()
        self._tools_by_object.clear()
        self._system_counts.clear()
        self._hits = self._misses = 0
