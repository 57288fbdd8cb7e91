"""Errors from choosing or calling a model, each said in one line.

- ``ModelConfigError`` (a ``ValueError``) is raised by ``get_model`` when a spec
  cannot become a working model: an unknown spec, ``openai:`` without a key,
  a base URL nobody answers at. Its message is one line that says what to do.
- ``explain_model_error(exc)`` turns whatever a model raised mid-run (an API
  error, a timeout, a full context window) into one line the CLI and the agents
  can print instead of a traceback.
"""

from __future__ import annotations

import re

from langchain_core.exceptions import ContextOverflowError

MAX_MESSAGE_CHARS = 300


class ModelConfigError(ValueError):
    """A model spec or its settings cannot work; the message says how to fix it."""


def one_line(text: str, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """Collapse whitespace to single spaces and cut to ``max_chars``."""
    flat = re.sub(r"\s+", " ", str(text)).strip()
    return flat if len(flat) <= max_chars else flat[: max_chars - 3].rstrip() + "..."


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything it was raised from, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _explain_openai_error(exc: BaseException) -> str | None:
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on openai
        return None
    detail = one_line(getattr(exc, "message", None) or str(exc), 160)
    if isinstance(exc, openai.APITimeoutError):
        return "The model server did not answer in time: try again, or raise the timeout."
    if isinstance(exc, openai.APIConnectionError):
        url = getattr(getattr(exc, "request", None), "url", None)
        where = f" at {url}" if url else ""
        return f"Could not reach the model server{where}: check the base URL and that the server is running."
    if isinstance(exc, openai.AuthenticationError):
        return f"The model server rejected the API key (401): check OPENAI_API_KEY. ({detail})"
    if isinstance(exc, openai.PermissionDeniedError):
        return f"The API key may not use this model (403): {detail}"
    if isinstance(exc, openai.NotFoundError):
        return f"Model or endpoint not found (404): check the model name and base URL. ({detail})"
    if isinstance(exc, openai.RateLimitError):
        return f"Rate limited or out of quota (429): wait and retry, or check your plan. ({detail})"
    if isinstance(exc, openai.BadRequestError):
        return f"The model server refused the request (400): {detail}"
    if isinstance(exc, openai.APIStatusError):
        return f"The model server returned HTTP {exc.status_code}: {detail}"
    return None


def explain_model_error(exc: BaseException) -> str:
    """One line that says what went wrong with a model call and what to do about it."""
    for cause in _causes(exc):
        if isinstance(cause, ContextOverflowError):
            return one_line(
                f"The model's context window is full: {cause}. "
                "Start a fresh conversation, or use an agent that summarizes (v2)."
            )
        if isinstance(cause, ModelConfigError):
            return one_line(str(cause))
        explained = _explain_openai_error(cause)
        if explained is not None:
            return one_line(explained)
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    return one_line(f"The model call failed with {type(exc).__name__}: {first}" if first
                    else f"The model call failed with {type(exc).__name__}.")
