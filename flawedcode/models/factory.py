"""``get_model``: one entry point from a spec string to a LangChain chat model.

Accepted specs (from the argument, else ``FLAWEDCODE_MODEL``, else ``offline``):

- ``offline``: the deterministic teaching model, 8,192-token window;
- ``offline:<window tokens>``: the same with another window, e.g. ``offline:4096``;
- ``openai:<model name>``: ``langchain_openai.ChatOpenAI``. It needs
  ``OPENAI_API_KEY``, unless a base URL is given (``base_url=`` or
  ``OPENAI_BASE_URL``) for an OpenAI-compatible server such as Ollama, vLLM or
  OpenRouter; without a key a placeholder key is sent.

Every model gets ``profile["max_input_tokens"]`` = its window, so LangChain's
fraction triggers work. ``budget_tokens`` records a smaller managed budget
(read it back with ``budget_for(model)``).

Failures are one-line ``ModelConfigError``s, raised here rather than on the
first call: an unknown spec, ``openai:`` without a key, or a base URL where
nothing accepts a TCP connection within ``CONNECT_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import os
import socket
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel

from flawedcode.models.errors import ModelConfigError
from flawedcode.models.offline import OfflineModel
from flawedcode.models.profiles import BUDGET_METADATA_KEY, OFFLINE_WINDOW_TOKENS, profile_for

DEFAULT_SPEC = "offline"
ACCEPTED_SPECS = "'offline', 'offline:<window tokens>' (e.g. offline:4096) or 'openai:<model>' (e.g. openai:gpt-4o-mini)"
CONNECT_TIMEOUT_SECONDS = 2.0
PLACEHOLDER_API_KEY = "not-needed"


def get_model(
    spec: str | None = None,
    *,
    base_url: str | None = None,
    budget_tokens: int | None = None,
    **kwargs: Any,
) -> BaseChatModel:
    """Build the chat model a spec names; extra keyword arguments go to its constructor."""
    spec = (spec or os.environ.get("FLAWEDCODE_MODEL") or DEFAULT_SPEC).strip()
    provider, _, name = spec.partition(":")
    if provider == "offline":
        model: BaseChatModel = _offline_model(spec, name, kwargs)
    elif provider == "openai" and name.strip():
        model = _openai_model(name.strip(), base_url, kwargs)
    else:
        raise ModelConfigError(f"Unknown model spec {spec!r}: use {ACCEPTED_SPECS}.")
    if budget_tokens is not None:
        model.metadata = {**(model.metadata or {}), BUDGET_METADATA_KEY: int(budget_tokens)}
    return model


def _offline_model(spec: str, window_text: str, kwargs: dict[str, Any]) -> OfflineModel:
    if not window_text:
        return OfflineModel(**{"max_input_tokens": OFFLINE_WINDOW_TOKENS, **kwargs})
    window_text = window_text.replace("_", "").replace(",", "").strip()
    if not window_text.isdigit() or int(window_text) < 256:
        raise ModelConfigError(
            f"Bad model spec {spec!r}: the window after 'offline:' must be a whole number of tokens >= 256; "
            f"use {ACCEPTED_SPECS}."
        )
    return OfflineModel(max_input_tokens=int(window_text), **kwargs)


def _openai_model(name: str, base_url: str | None, kwargs: dict[str, Any]) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = kwargs.pop("api_key", None) or os.environ.get("OPENAI_API_KEY")
    if not api_key and not base_url:
        raise ModelConfigError(
            f"'openai:{name}' needs an API key: set OPENAI_API_KEY "
            "(or give base_url= / OPENAI_BASE_URL for an OpenAI-compatible server), or use 'offline'."
        )
    if base_url:
        check_reachable(base_url)
    window = profile_for(name).max_input_tokens
    model = ChatOpenAI(model=name, base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, **kwargs)
    model.profile = {**(model.profile or {}), "max_input_tokens": window}
    return model


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
