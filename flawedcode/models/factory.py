"""``get_model``: one entry point from a spec string to a LangChain chat model.

Accepted specs (from the argument, else ``FLAWEDCODE_MODEL``, else ``offline``):

- ``offline``: the deterministic teaching model, 8,192-token window;
- ``offline:<window tokens>``: the same with another window, e.g. ``offline:4096``;
- ``openai:<model name>``: ``FlawedChatOpenAI`` (LangChain's ``ChatOpenAI``). It
  needs ``OPENAI_API_KEY``, unless a base URL is given (``base_url=`` or
  ``OPENAI_BASE_URL``) for an OpenAI-compatible server such as Ollama, vLLM,
  LM Studio or OpenRouter; without a key a placeholder key is sent;
- ``replay:<file>``: a recorded session played back offline (see ``replay.py``).

The window (``profile["max_input_tokens"]``, which LangChain's fraction
triggers read too) comes from, first match wins:

1. ``window_tokens=`` (the CLI's ``--window``): the server's context window;
2. the server's own ``/v1/models`` entry (vLLM's ``max_model_len``, OpenRouter's
   ``context_length``; ``SERVER_WINDOW_FIELDS`` lists every name read), or for
   Ollama, ``/api/ps``'s ``context_length`` or ``num_ctx`` in ``/api/show``;
3. the model's profile (``profiles.py``).

A server's window holds prompt and reply, so the prompt gets
``profiles.input_window(window)`` (4,096 -> 3,584). Later, an overflow error
that names the window lowers it again (``learn_window``). ``budget_tokens``
records a smaller managed budget (read it back with ``budget_for(model)``,
which never returns more than the window).

Calls time out after ``timeout_seconds`` (``DEFAULT_TIMEOUT_SECONDS``: LangChain
sends no timeout of its own, so a stalled server would block forever).
``FlawedChatOpenAI`` retries a rate limit, a server error (5xx) or a refused
connection at most ``DEFAULT_MAX_RETRIES`` times, but never a timeout (the
openai SDK's own retries would, multiplying the wait), and raises every
provider's overflow error as ``ContextOverflowError`` (see ``errors.py``).

``ModelOptions`` bundles the CLI's model settings (``--model``, ``--timeout``,
``--record``, ``--window``) so ``chat``, ``demo`` and ``bench`` build their
models the same way, and share one recording file.

Failures are one-line ``ModelConfigError``s, raised here rather than on the
first call: an unknown spec, ``openai:`` without a key, a base URL where
nothing accepts a TCP connection within ``CONNECT_TIMEOUT_SECONDS``, a
recording that cannot be read.
"""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel

from flawedcode.infra.safe_text import is_plain_name, shown_name
from flawedcode.models.errors import ModelConfigError
from flawedcode.models.offline import OfflineModel
from flawedcode.models.profiles import (
    BUDGET_METADATA_KEY,
    FALLBACK_PROFILE,
    OFFLINE_WINDOW_TOKENS,
    PRICES_KEY,
    WINDOW_SOURCE_KEY,
    bare_name,
    input_window,
    known_profile,
    reply_reserve_tokens,
    unknown_model_text,
)
from flawedcode.models.replay import REPLAY_PREFIX, Player, Recording, ReplayChatModel, load_recording
from flawedcode.notices import warn_once
from flawedcode.prompt_cache import BadFigure, price_figure
from flawedcode.tokens import ensure_tiktoken_cache

DEFAULT_SPEC = "offline"
ACCEPTED_SPECS = ("'offline', 'offline:<window tokens>' (e.g. offline:4096), 'openai:<model>' (e.g. openai:gpt-4o-mini) "
                  "or 'replay:<recording.jsonl>'")
CONNECT_TIMEOUT_SECONDS = 2.0
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_TIMEOUT_SECONDS = 120.0
"""How long one model request may take before it fails with one clear line (``--timeout``, ``timeout_seconds``)."""
SERVER_INFO_TIMEOUT_SECONDS = 3.0
OPENAI_HOSTS = ("api.openai.com",)
"""Servers whose /v1/models publishes no window (their models' windows are in the profiles)."""
SERVER_WINDOW_FIELDS = ("loaded_context_length", "max_model_len", "context_length", "context_window",
                        "max_context_length")
"""Fields of a /v1/models entry that hold the served window, most specific first."""


# --- the window a server publishes -------------------------------------------------------------

@dataclass(frozen=True)
class ServerInfo:
    """What a server says about one of its models: the window it serves (prompt + reply) and prices."""

    window_tokens: int | None = None
    source: str = ""
    prices: tuple[float, float] | None = None
    served: tuple[str, ...] = ()
    """Every model id the server's /v1/models lists (empty when it lists none or was not asked)."""
    listed_as: str | None = None
    """The id ``name`` was found under (``qwen2.5-coder:7b`` for ``qwen2.5-coder``), or None."""


def _get_json(url: str, api_key: str | None, timeout: float, payload: dict | None = None) -> Any:
    headers = {"Accept": "application/json"}
    if api_key and api_key != PLACEHOLDER_API_KEY:
        headers["Authorization"] = f"Bearer {api_key}"
    data = json.dumps(payload).encode() if payload is not None else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's own base URL
            return json.loads(response.read(5_000_000).decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _int_field(entry: Any, names: tuple[str, ...]) -> tuple[str, int] | None:
    if not isinstance(entry, dict):
        return None
    for name in names:
        value = entry.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return name, int(value)
    return None


def server_info(base_url: str, name: str, api_key: str | None = None,
                timeout: float = SERVER_INFO_TIMEOUT_SECONDS) -> ServerInfo:
    """Ask an OpenAI-compatible server what it serves ``name`` with; an empty ServerInfo if it does not say."""
    base = base_url.rstrip("/")
    listing = _get_json(f"{base}/models", api_key, timeout)
    entries = [item for item in (listing.get("data") if isinstance(listing, dict) else None) or []
               if isinstance(item, dict)]
    served = tuple(shown_name(item.get("id") or item.get("name"), "?") for item in entries if item.get("id") or item.get("name"))
    entry = listed_entry(entries, name)
    listed_as = entry.get("id") or entry.get("name") if entry else None
    listed_as = listed_as if is_plain_name(listed_as) else None  # a name with escapes or controls is never adopted
    as_named = f" for {listed_as}" if listed_as and listed_as != name else ""
    prices = _published_prices(entry)
    found = _int_field(entry, SERVER_WINDOW_FIELDS) or _int_field((entry or {}).get("top_provider"), ("context_length",))
    if found:
        return ServerInfo(found[1], f"{found[0]} {found[1]:,}{as_named} on {base}/models", prices, served, listed_as)
    root = re.sub(r"/v1$", "", base)
    ollama = _ollama_info(root, listed_as or name, api_key, timeout)
    if ollama:
        return ServerInfo(ollama.window_tokens, ollama.source, prices, served, listed_as)
    return ServerInfo(prices=prices, served=served, listed_as=listed_as)


def listed_entry(entries: list[dict], name: str) -> dict | None:
    """The /v1/models entry for ``name``: the same id; else the same model under a tag or without one
    (``qwen2.5-coder`` is ``qwen2.5-coder:latest``, or the one ``qwen2.5-coder:<tag>`` listed; ``llama3.1:latest``
    is ``llama3.1``). Several tags of a bare name and no ``:latest``: None (which one is served is not known)."""
    def ids(item: dict) -> set[str]:
        return {str(value) for value in (item.get("id"), item.get("name")) if value}

    exact = [item for item in entries if name in ids(item)]
    if exact:
        return exact[0]
    base, _, tag = name.partition(":")
    if tag in ("", "latest"):
        latest = [item for item in entries if f"{base}:latest" in ids(item) or base in ids(item)]
        if latest:
            return latest[0]
        tagged = [item for item in entries if any(value.partition(":")[0] == base for value in ids(item))]
        return tagged[0] if len(tagged) == 1 else None
    return None


def _published_prices(entry: Any) -> tuple[float, float] | None:
    """OpenRouter-style ``pricing`` (US dollars per token, as strings) -> dollars per million tokens."""
    pricing = entry.get("pricing") if isinstance(entry, dict) else None
    try:
        prices = float(pricing["prompt"]) * 1e6, float(pricing["completion"]) * 1e6
    except (TypeError, KeyError, ValueError):
        return None
    try:  # a published price that no bill can hold (NaN, negative, absurd): no prices, the cost shows as unknown
        return price_figure(prices[0], "published prompt price"), price_figure(prices[1], "published completion price")
    except BadFigure as refused:
        warn_once(f"bad-price:{refused}", f"ignored the prices the server published: {refused}; the cost shows as unknown")
        return None


def _ollama_info(root: str, name: str, api_key: str | None, timeout: float) -> ServerInfo | None:
    """Ollama's native API: a loaded model's ``context_length`` (/api/ps), else ``num_ctx`` set for it (/api/show)."""
    running = _get_json(f"{root}/api/ps", api_key, timeout)
    names = {name, f"{name}:latest"}
    for model in (running or {}).get("models", []) if isinstance(running, dict) else []:
        if isinstance(model, dict) and names & {model.get("name"), model.get("model")}:
            found = _int_field(model, ("context_length",))
            if found:
                return ServerInfo(found[1], f"context_length {found[1]:,} on {root}/api/ps")
    shown = _get_json(f"{root}/api/show", api_key, timeout, payload={"model": name})
    match = re.search(r"^\s*num_ctx\s+(\d+)", str((shown or {}).get("parameters", "")) if isinstance(shown, dict) else "",
                      re.MULTILINE)
    if match:
        return ServerInfo(int(match.group(1)), f"num_ctx {int(match.group(1)):,} on {root}/api/show")
    return None


# --- get_model --------------------------------------------------------------------------------

def get_model(
    spec: str | None = None,
    *,
    base_url: str | None = None,
    budget_tokens: int | None = None,
    timeout_seconds: float | None = None,
    window_tokens: int | None = None,
    record: str | Path | Recording | None = None,
    **kwargs: Any,
) -> BaseChatModel:
    """Build the chat model a spec names; extra keyword arguments go to its constructor.

    ``timeout_seconds`` bounds each request (default ``DEFAULT_TIMEOUT_SECONDS``);
    ``window_tokens`` is the server's window when you know it better than the
    profile (``--window``); ``record`` writes every call to a JSONL recording.
    """
    spec = (spec or os.environ.get("FLAWEDCODE_MODEL") or DEFAULT_SPEC).strip()
    provider, _, name = spec.partition(":")
    if provider == "offline":
        model: BaseChatModel = _offline_model(spec, name, window_tokens, kwargs)
    elif provider == "openai" and name.strip():
        model = _openai_model(name.strip(), base_url, timeout_seconds, window_tokens, kwargs)
    elif spec.startswith(REPLAY_PREFIX) and name.strip():
        model = ReplayChatModel.from_file(name.strip())
    else:
        raise ModelConfigError(f"Unknown model spec {spec!r}: use {ACCEPTED_SPECS}.")
    if budget_tokens is not None:
        model.metadata = {**(model.metadata or {}), BUDGET_METADATA_KEY: int(budget_tokens)}
    if record is not None:
        (record if isinstance(record, Recording) else Recording(record)).attach(model)
    return model


def _offline_model(spec: str, window_text: str, window_tokens: int | None, kwargs: dict[str, Any]) -> OfflineModel:
    if window_tokens is not None:
        window_text = str(window_tokens)
    if not window_text:
        return OfflineModel(**{"max_input_tokens": OFFLINE_WINDOW_TOKENS, **kwargs})
    window_text = window_text.replace("_", "").replace(",", "").strip()
    if not window_text.isdigit() or int(window_text) < 256:
        raise ModelConfigError(
            f"Bad model spec {spec!r}: the window after 'offline:' must be a whole number of tokens >= 256; "
            f"use {ACCEPTED_SPECS}."
        )
    return OfflineModel(**{**kwargs, "max_input_tokens": int(window_text)})


def _openai_model(name: str, base_url: str | None, timeout_seconds: float | None, window_tokens: int | None,
                  kwargs: dict[str, Any]) -> BaseChatModel:
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = kwargs.pop("api_key", None) or os.environ.get("OPENAI_API_KEY")
    if not api_key and not base_url:
        raise ModelConfigError(
            f"'openai:{name}' needs an API key: set OPENAI_API_KEY "
            "(or give base_url= / OPENAI_BASE_URL for an OpenAI-compatible server), or use 'offline'."
        )
    if base_url:
        check_reachable(base_url)
    timeout = timeout_seconds or kwargs.pop("timeout", None) or DEFAULT_TIMEOUT_SECONDS
    kwargs.pop("timeout", None)
    from flawedcode.models.openai_model import (  # imported on first use: it is heavy
        DEFAULT_MAX_RETRIES,
        FlawedChatOpenAI,
        deadline_clients,
    )

    ensure_tiktoken_cache()  # langchain-openai counts tokens with tiktoken: the bundled files, never a download
    retries = kwargs.pop("max_retries", DEFAULT_MAX_RETRIES)
    clients = {} if "http_client" in kwargs else deadline_clients(timeout)
    model = FlawedChatOpenAI(model=name, base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, timeout=timeout,
                             max_retries=0, transient_retries=retries, **clients, **kwargs)
    info = _window_and_prices(name, base_url, api_key, window_tokens)
    model.served_models = info.served
    if info.listed_as and info.listed_as != name:
        warn_once(f"listed-as:{base_url}:{name}", f"the server at {base_url} lists {name!r} as {info.listed_as!r}: "
                                                  f"using {info.listed_as!r}")
        model.model_name = info.listed_as
    set_window(model, info.window_tokens, info.source)
    if info.prices:
        model.metadata = {**(model.metadata or {}), PRICES_KEY: info.prices}
    return model


def _window_and_prices(name: str, base_url: str | None, api_key: str | None, window_tokens: int | None) -> ServerInfo:
    """The model's input window and where it came from (--window, the server, the profile), and any published prices."""
    profile = known_profile(name)
    served = ServerInfo()
    if base_url and urlsplit(base_url).hostname not in OPENAI_HOSTS:
        served = server_info(base_url, name, api_key)
    if window_tokens:
        window, source = input_window(window_tokens), f"--window {window_tokens:,}, less {reply_reserve_tokens(window_tokens):,} for the reply"
    elif served.window_tokens:
        window = input_window(served.window_tokens)
        source = f"{served.source}, less {reply_reserve_tokens(served.window_tokens):,} for the reply"
    else:
        window, source = (profile or FALLBACK_PROFILE).max_input_tokens, ""
    if profile is None and not served.prices:
        note = f"its window is {window:,} input tokens ({source})" if source else None
        warn_once(f"unknown-model:{bare_name(name)}", unknown_model_text(bare_name(name), note))
    if served.served and served.listed_as is None:
        warn_once(f"not-listed:{base_url}:{name}",
                  f"the server at {base_url} does not list {name!r}; it serves: {served_names_text(served.served)}")
    return ServerInfo(window, source, served.prices, served.served, served.listed_as)


def served_names_text(names: tuple[str, ...], most: int = 12) -> str:
    """``a, b, c`` (and how many more)."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def set_window(model: BaseChatModel, window_tokens: int, source: str = "") -> None:
    """Give ``model`` this input window (its profile, and the offline model's own window), saying where it came from."""
    if isinstance(model, OfflineModel):
        model.max_input_tokens = window_tokens
    model.profile = {**(model.profile or {}), "max_input_tokens": int(window_tokens)}
    if source:
        model.metadata = {**(model.metadata or {}), WINDOW_SOURCE_KEY: source}


def learn_window(model: BaseChatModel, total_window_tokens: int, source: str) -> int | None:
    """An overflow error named the server's window: lower the model's input window to fit it.

    Returns the new input window, or None when it was already that small.
    """
    window = input_window(total_window_tokens)
    current = (model.profile or {}).get("max_input_tokens")
    if current is not None and current <= window:
        return None
    set_window(model, window, f"{source}, less {reply_reserve_tokens(total_window_tokens):,} for the reply")
    return window


def check_reachable(base_url: str, timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
    """Fail fast, naming the URL, when nothing accepts a TCP connection at the base URL's host:port."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelConfigError(f"Bad base URL {base_url!r}: expected e.g. http://localhost:11434/v1.")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ModelConfigError(
            f"Cannot reach the model server at {base_url} ({reason}): start the server or fix "
            "base_url / OPENAI_BASE_URL."
        ) from None


# --- the CLI's model settings, in one place ----------------------------------------------------------

@dataclass
class ModelOptions:
    """The model settings of ``chat``, ``demo`` and ``bench`` (``--model``, ``--timeout``, ``--record``, ``--window``).

    ``build()`` makes one model; every model one ModelOptions builds writes to the
    same recording. ``spec`` None means ``FLAWEDCODE_MODEL``, else the command's
    own default (``build(default=...)``), else ``offline``.
    """

    spec: str | None = None
    timeout_seconds: float | None = None
    record_path: Path | None = None
    window_tokens: int | None = None
    command: str | None = None
    """The command line, written into a recording's header (so a failed replay can say how it was made)."""
    _recording: Recording | None = field(default=None, repr=False, compare=False)
    _player: Player | None = field(default=None, repr=False, compare=False)

    def resolved_spec(self) -> str | None:
        """The spec in force: ``spec``, else ``FLAWEDCODE_MODEL``, else None (the command's default)."""
        return self.spec or os.environ.get("FLAWEDCODE_MODEL") or None

    def recording(self) -> Recording | None:
        if self.record_path is not None and self._recording is None:
            self._recording = Recording(self.record_path, self.command)
        return self._recording

    def build(self, default: Callable[[], BaseChatModel] | None = None, **kwargs: Any) -> BaseChatModel:
        """The model: the resolved spec's, or the command's ``default()`` when no spec (or plain ``offline``)
        is in force; --window and --record apply to it too."""
        spec = self.resolved_spec()
        if spec in (None, DEFAULT_SPEC) and default is not None:
            model = default()
            if self.window_tokens:
                set_window(model, self.window_tokens, f"--window {self.window_tokens:,}")
            recording = self.recording()
            return recording.attach(model) if recording is not None else model
        if spec and spec.startswith(REPLAY_PREFIX):  # every model of this command plays one shared recording
            self._player = self._player or load_recording(spec.removeprefix(REPLAY_PREFIX).strip())
            model = ReplayChatModel.from_file(self._player.path, self._player)
            recording = self.recording()
            return recording.attach(model) if recording is not None else model
        return get_model(spec, timeout_seconds=self.timeout_seconds, window_tokens=self.window_tokens,
                         record=self.recording(), **kwargs)

    def conversation_id(self, prefix: str, archive_dir: Path | None = None) -> str | None:
        """The id of the next conversation of an agent named ``prefix``: when replaying, the recorded one (unless
        ``archive_dir`` already holds it); when recording, a fresh one written to the recording; else None (any)."""
        spec = self.resolved_spec()
        if spec and spec.startswith(REPLAY_PREFIX):
            self._player = self._player or load_recording(spec.removeprefix(REPLAY_PREFIX).strip())
            recorded = self._player.next_conversation_id(prefix)
            return recorded if recorded and claim_folder(archive_dir, recorded) else None
        recording = self.recording()
        return recording.new_conversation_id(prefix) if recording is not None else None

    def __str__(self) -> str:
        return self.resolved_spec() or DEFAULT_SPEC

    @classmethod
    def of(cls, value: str | ModelOptions | None) -> ModelOptions:
        """A ModelOptions from a spec string (or None), or the ModelOptions itself."""
        return value if isinstance(value, ModelOptions) else cls(spec=value)


def claim_folder(archive_dir: Path | None, conversation_id: str) -> bool:
    """Make ``archive_dir/conversation_id`` now, in one step: False when it exists (another session has it).

    Two replays of one recording started together would both find the recorded id's folder missing and
    write into one archive; ``mkdir`` succeeds for exactly one of them.
    """
    if archive_dir is None:
        return True
    try:
        Path(archive_dir).mkdir(parents=True, exist_ok=True)
        (Path(archive_dir) / conversation_id).mkdir()
    except FileExistsError:
        return False
    except OSError:
        return True  # an archive folder that cannot be made now fails later, with its own clear line
    return True
