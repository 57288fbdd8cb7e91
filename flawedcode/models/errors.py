"""Errors from choosing or calling a model, each said in one line; and overflow, recognised everywhere.

- ``ModelConfigError`` (a ``ValueError``) is raised by ``get_model`` when a spec
  cannot become a working model: an unknown spec, ``openai:`` without a key,
  a base URL nobody answers at. Its message is one line that says what to do.
- ``explain_model_error(exc)`` turns whatever a model raised mid-run (an API
  error, a timeout, a full context window) into one line the CLI and the agents
  can print instead of a traceback.
- ``context_overflow_from(exc)`` recognises a provider's "the prompt is longer
  than my window" error and returns a ``ProviderContextOverflowError`` (a
  LangChain ``ContextOverflowError``, which v2 answers by summarizing and
  retrying once), with the window the error names when it names one.

How an overflow is recognised (``OVERFLOW_CODES``, then ``OVERFLOW_WORDINGS``,
read in order; the first match wins). The openai SDK puts only the message in
the exception text; the code is in the error body (``exc.body`` / ``exc.code``),
and LM Studio's body is a bare string, so all three are read:

===================  ====================================================================
provider             what it says (the window it names, when it names one)
===================  ====================================================================
OpenAI, Groq, Azure  code ``context_length_exceeded``; "maximum context length is N tokens",
                     "Input tokens exceed the configured limit of N tokens"
vLLM                 "This model's maximum context length is N tokens", "... longer than the
                     maximum model length of N"
OpenRouter           "This endpoint's maximum context length is N tokens"
Ollama               "prompt too long; exceeded max context length", "the input length
                     exceeds the context length"
LM Studio            "... the model is loaded with context length of only N tokens",
                     "Trying to keep the first N tokens when context the overflows"
llama.cpp server     type ``exceed_context_size_error`` (``n_ctx`` in the body)
Anthropic, Mistral,  "prompt is too long: M tokens > N maximum", "too large for model with N
Gemini, TGI          maximum context length", "exceeds the maximum number of tokens allowed (N)",
                     "`inputs` tokens + `max_new_tokens` must be <= N"
===================  ====================================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.exceptions import ContextOverflowError

MAX_MESSAGE_CHARS = 300

OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
"""Error codes (or types) that mean "the prompt does not fit the window", wherever they appear in the body."""

_NUMBER = r"(\d[\d,_]*)"
OVERFLOW_WORDINGS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (provider, re.compile(pattern, re.IGNORECASE)) for provider, pattern in (
        ("OpenAI/vLLM/OpenRouter", rf"maximum context length is {_NUMBER} tokens"),
        ("OpenAI", rf"input tokens exceed the configured limit of {_NUMBER} tokens"),
        ("vLLM", rf"longer than the maximum model length of {_NUMBER}"),
        ("LM Studio", rf"loaded with context length of only {_NUMBER} tokens"),
        ("LM Studio", r"when context the overflows"),
        ("llama.cpp", r"exceeds? the available context size"),
        ("Ollama", r"prompt too long; exceeded (?:max )?context length"),
        ("Ollama", r"(?:input|prompt) length exceeds the (?:maximum )?context length"),
        ("Anthropic", rf"prompt is too long: \d[\d,]* tokens > {_NUMBER}"),
        ("Mistral", rf"too large for model with {_NUMBER} maximum context length"),
        ("Gemini", rf"exceeds the maximum number of tokens allowed \({_NUMBER}\)"),
        ("TGI", rf"`inputs` tokens \+ `max_new_tokens` must be <= {_NUMBER}"),
        ("generic", r"context[ _-]?(?:length|window)[ _-]?exceeded|exceeds? the context window"),
    )
)
"""Wordings of an overflow, provider by provider; a group, when present, captures the window it names."""

LIMIT_KEYS = ("n_ctx", "max_model_len", "context_length", "max_context_length")
EXCESS_WORDING = re.compile(rf"exceeded (?:max )?context length by {_NUMBER} tokens", re.IGNORECASE)
"""Ollama names no window, only how far over it the prompt was."""
"""Body fields some servers add to an overflow error: the window, in tokens."""


class ModelConfigError(ValueError):
    """A model spec or its settings cannot work; the message says how to fix it.

    A huge value quoted in the message (a 100,000-character model name) is cut to its start and its length.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        super().__init__(re.sub(r"\S{200,}", _cut_word, str(message)), *args)


def _cut_word(match: re.Match[str]) -> str:
    return f"{match.group()[:60]}... ({len(match.group()):,} characters)"


class ModelReplyError(RuntimeError):
    """A server's answer could not be used (a 200 holding an error, no choices, a web page; a Retry-After too long).

    The message is one sentence saying what came back and what to do; ``retryable``
    says whether one more try may help; ``body`` is what the server sent, when it
    was JSON (an overflow worded in it is still recognised).
    """

    def __init__(self, message: str, *, retryable: bool = False, body: Any = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.body = body


class RecordedModelError(RuntimeError):
    """A model error played back from a recording; its message is the line explained when it was recorded."""


class ProviderContextOverflowError(ContextOverflowError):
    """The prompt did not fit the model's window; ``limit_tokens`` is the window the error named (or None)."""

    def __init__(self, message: str, *, limit_tokens: int | None = None, provider: str = "",
                 excess_tokens: int | None = None) -> None:
        super().__init__(message)
        self.limit_tokens = limit_tokens
        self.provider = provider
        self.excess_tokens = excess_tokens
        """How far over the window the prompt was, when the error says only that (Ollama: "by N tokens")."""


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


# --- overflow ---------------------------------------------------------------------------

def _texts_and_codes(exc: BaseException) -> tuple[list[str], list[str], dict[str, Any]]:
    """What an error says: its texts (message, body message, a bare-string body), codes/types, and body fields."""
    texts = [str(exc), str(getattr(exc, "message", "") or "")]
    codes = [str(value) for value in (getattr(exc, "code", None), getattr(exc, "type", None)) if value]
    fields: dict[str, Any] = {}
    body = getattr(exc, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], Mapping):  # Gemini: a JSON list holding the error
        body = body[0]
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        inner = inner if isinstance(inner, Mapping) else {"message": inner}
        fields = {**body, **inner}
        texts += [str(fields.get(key) or "") for key in ("message", "detail", "error") if isinstance(fields.get(key), str)]
        codes += [str(fields[key]) for key in ("code", "type") if fields.get(key)]
    elif isinstance(body, str):
        texts.append(body)
    return [text for text in texts if text], codes, fields


def _as_int(text: Any) -> int | None:
    try:
        return int(str(text).replace(",", "").replace("_", ""))
    except ValueError:
        return None


def context_overflow_from(exc: BaseException) -> ProviderContextOverflowError | None:
    """A ``ProviderContextOverflowError`` when ``exc`` (or what it was raised from) is a context overflow; else None."""
    for cause in _causes(exc):
        if isinstance(cause, ProviderContextOverflowError):
            return cause
        texts, codes, fields = _texts_and_codes(cause)
        limit = next((_as_int(fields[key]) for key in LIMIT_KEYS if fields.get(key) is not None), None)
        provider = next(("code " + code for code in codes if code.lower() in OVERFLOW_CODES), "")
        for name, pattern in OVERFLOW_WORDINGS:
            match = next((found for text in texts if (found := pattern.search(text))), None)
            if match:
                provider = provider or name
                if match.groups() and limit is None:
                    limit = _as_int(match.group(1))
                break
        if provider or isinstance(cause, ContextOverflowError):
            message = texts[-1] if texts else type(cause).__name__  # the body's own words, when it has any
            excess = next((_as_int(found.group(1)) for text in texts if (found := EXCESS_WORDING.search(text))), None)
            return ProviderContextOverflowError(one_line(message), limit_tokens=limit, provider=provider or "LangChain",
                                                excess_tokens=excess)
    return None


# --- one line per error ----------------------------------------------------------------------

def _timeout_seconds(exc: BaseException) -> float | None:
    """The read timeout the request was sent with (httpx keeps it on the request)."""
    request = getattr(exc, "_request", None) or getattr(exc, "request", None)
    try:
        timeout = request.extensions.get("timeout") or {}
    except (AttributeError, RuntimeError):
        return None
    seconds = timeout.get("read") if isinstance(timeout, Mapping) else None
    return float(seconds) if seconds is not None else None


def _web_page_status(exc: BaseException, openai: Any) -> int | None:
    """The HTTP status of an error whose body is a web page (a wrong base URL, a proxy's error page), else None."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    texts = [str(getattr(exc, "body", "") or ""), str(getattr(exc, "message", "") or "")]
    return exc.status_code if any("<html" in text[:2000].lower() or "<!doctype html" in text[:200].lower()
                                  for text in texts) else None


def _is_httpx_timeout(exc: BaseException) -> bool:
    """httpx's own timeout (a stream read past the deadline reaches the caller unwrapped)."""
    return any(cls.__name__ == "TimeoutException" and cls.__module__.startswith("httpx") for cls in type(exc).__mro__)


def _explain_openai_error(exc: BaseException) -> str | None:
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on openai
        return None
    detail = one_line(getattr(exc, "message", None) or str(exc), 160)
    page = _web_page_status(exc, openai)
    if page is not None:
        advice = ("the server or a proxy in front of it failed: try again later" if page >= 500
                  else "check the base URL (for most servers it ends in /v1)")
        return f"The model server answered HTTP {page} with a web page (HTML), not an API reply: {advice}."
    if isinstance(exc, openai.APITimeoutError) or _is_httpx_timeout(exc):
        seconds = _timeout_seconds(exc)
        within = f"within {seconds:g} s" if seconds is not None else "in time"
        return (f"The model server did not answer {within}: it may be stalled or overloaded. "
                "Try again, or raise the timeout (--timeout, or timeout_seconds in the config).")
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
        if getattr(exc, "code", None) == "insufficient_quota":
            return f"Out of quota (429): check your plan and billing; waiting will not help. ({detail})"
        asked = (getattr(getattr(exc, "response", None), "headers", None) or {}).get("retry-after")
        wait = f"the server asks to wait {asked} s, then try again" if asked else "wait and try again"
        return f"Rate limited (429): {wait}. ({detail})"
    if isinstance(exc, openai.BadRequestError):
        texts = _texts_and_codes(exc)[0]
        body_text = one_line(texts[-1], 160) if len(texts) > 2 else detail  # the body says more than "Error code: 400"
        return f"The model server refused the request (400): {body_text}"
    if isinstance(exc, openai.APIStatusError):
        return f"The model server returned HTTP {exc.status_code}: {detail}"
    return None


def explain_model_error(exc: BaseException) -> str:
    """One line that says what went wrong with a model call and what to do about it."""
    for cause in _causes(exc):
        if isinstance(cause, ContextOverflowError):
            limit = getattr(cause, "limit_tokens", None)
            window = f" (its window is {limit:,} tokens)" if limit else ""
            return one_line(
                f"The model's context window is full{window}: {cause}. "
                "Start a fresh conversation, or use an agent that summarizes (v2)."
            )
        if isinstance(cause, (ModelConfigError, RecordedModelError, ModelReplyError)):
            return one_line(str(cause))
        explained = _explain_openai_error(cause)
        if explained is not None:
            return one_line(explained)
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    return one_line(f"The model call failed with {type(exc).__name__}: {first}" if first
                    else f"The model call failed with {type(exc).__name__}.")
