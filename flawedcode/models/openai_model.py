"""``FlawedChatOpenAI``: LangChain's ``ChatOpenAI``, with every provider's overflow recognised, every common
malformed reply made whole, bounded retries, and a timeout that is a deadline.

- An overflow error in any provider's wording (``errors.OVERFLOW_WORDINGS``:
  OpenAI's code in the body, vLLM, Ollama, OpenRouter, LM Studio, llama.cpp,
  Gemini's JSON list, ...) is raised as LangChain's ``ContextOverflowError``, so
  v2 summarizes and retries the call (langchain-openai recognises only some of
  them, and reads the code from the exception text, where the openai SDK does
  not put it).
- Every reply is made whole before the agent sees it (``replies.py``): tool calls
  without an id get one, arguments sent as an object or double-encoded are
  decoded, ``<tool_call>`` text becomes a tool call when that tool was offered,
  reasoning (``<think>`` blocks, ``reasoning_content``) moves out of the content.
- A 200 that holds no reply is one sentence (``ModelReplyError``): an ``error``
  body (retried when its code is a 5xx or 429), no ``choices`` (retried), a web
  page at the base URL (a wrong URL: not retried).
- A rate limit (not an exhausted quota), a server error (5xx) or a refused
  connection is retried at most ``DEFAULT_MAX_RETRIES`` times, after the
  server's Retry-After or 0.5 s, 1 s, ... A wait longer than
  ``ANNOUNCED_WAIT_SECONDS`` prints one line first (``rate limited: retrying in
  30 s``); a Retry-After longer than ``MAX_RETRY_WAIT_SECONDS`` fails at once,
  saying so. A timeout is **not** retried: the openai SDK's own retries (switched
  off here) would retry it, so a stalled server would cost three timeouts, not one.
- The timeout is a **deadline** for the whole request: httpx's timeout is per
  read, so a server that trickles bytes would never trip it; ``DeadlineTransport``
  fails the request once its wall clock passes the timeout.

Built by ``get_model("openai:<name>")``; this module imports langchain-openai,
so ``factory.py`` imports it only when such a model is asked for.
"""

from __future__ import annotations

import asyncio
import email.utils
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import openai
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from langchain_openai._compat import httpx  # the httpx the openai SDK itself uses (httpx2 for openai>=3)

from flawedcode.models.errors import ModelReplyError, context_overflow_from, one_line
from flawedcode.models.replies import REASONING_KEY, reasoning_in, repair_completion, tidy_reply

DEFAULT_MAX_RETRIES = 2
"""Retries of a rate limit, a server error or a refused connection (never of a timeout)."""
RETRY_BASE_SECONDS = 0.5
MAX_RETRY_WAIT_SECONDS = 20.0
"""The longest Retry-After flawedcode waits; a longer one fails the call at once, saying so."""
ANNOUNCED_WAIT_SECONDS = 2.0
"""A wait longer than this prints one line before it starts."""


# --- what is worth retrying, and after how long -------------------------------------------------

def is_transient(error: BaseException) -> bool:
    """Worth one more try: a rate limit (not an exhausted quota), a server error (5xx), a refused connection,
    a 200 without a reply that may come next time."""
    if context_overflow_from(error) is not None or isinstance(error, openai.APITimeoutError):
        return False
    if isinstance(error, ModelReplyError):
        return error.retryable
    if isinstance(error, openai.RateLimitError):
        return getattr(error, "code", None) != "insufficient_quota"
    return isinstance(error, (openai.InternalServerError, openai.APIConnectionError))


def retry_after_seconds(error: BaseException) -> float | None:
    """The server's Retry-After (seconds, or an HTTP date; ``retry-after-ms`` too), or None when it sent none."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def retry_wait_seconds(error: BaseException, attempt: int) -> float:
    """The server's Retry-After, else 0.5 s, 1 s, 2 s, ...; a Retry-After over the cap is a ModelReplyError."""
    asked = retry_after_seconds(error)
    if asked is None:
        return RETRY_BASE_SECONDS * 2**attempt
    if asked > MAX_RETRY_WAIT_SECONDS:
        status = getattr(error, "status_code", None)
        raise ModelReplyError(
            f"The model server {'rate limited this request' if status == 429 else f'answered {status}'} and asks to "
            f"wait {asked:,.0f} s before trying again, longer than flawedcode waits ({MAX_RETRY_WAIT_SECONDS:g} s): "
            "try again later.") from error
    return asked


def announce_wait(error: BaseException, seconds: float) -> None:
    """One line on stderr before a long wait, so a silent pause is never mistaken for a hang."""
    if seconds <= ANNOUNCED_WAIT_SECONDS:
        return
    status = getattr(error, "status_code", None)
    why = "rate limited" if status == 429 else (f"the model server answered {status}" if status
                                                 else "the model server failed")
    print(f"{why}: retrying in {seconds:,.0f} s", file=sys.stderr, flush=True)


# --- a timeout that is a deadline --------------------------------------------------------------

def _deadline(request: Any) -> float | None:
    timeout = request.extensions.get("timeout") or {}
    seconds = timeout.get("read") if isinstance(timeout, Mapping) else None
    return time.monotonic() + float(seconds) if seconds else None


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: Any) -> None:
        self.inner, self.deadline, self.request = inner, deadline, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout("the whole answer took longer than the timeout", request=self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _AsyncDeadlineStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: Any) -> None:
        self.inner, self.deadline, self.request = inner, deadline, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout("the whole answer took longer than the timeout", request=self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport, with the request's read timeout also a deadline for the whole answer."""

    def handle_request(self, request: Any) -> Any:
        deadline = _deadline(request)
        response = super().handle_request(request)
        if deadline is not None:
            response.stream = _DeadlineStream(response.stream, deadline, request)
        return response


class AsyncDeadlineTransport(httpx.AsyncHTTPTransport):
    """The async twin of ``DeadlineTransport``."""

    async def handle_async_request(self, request: Any) -> Any:
        deadline = _deadline(request)
        response = await super().handle_async_request(request)
        if deadline is not None:
            response.stream = _AsyncDeadlineStream(response.stream, deadline, request)
        return response


def deadline_clients(timeout: float) -> dict[str, Any]:
    """``http_client`` and ``http_async_client`` for ChatOpenAI whose timeout is a deadline."""
    return {"http_client": httpx.Client(transport=DeadlineTransport(), timeout=timeout),
            "http_async_client": httpx.AsyncClient(transport=AsyncDeadlineTransport(), timeout=timeout)}


# --- the model ---------------------------------------------------------------------------------

def _offered_tools(kwargs: Mapping[str, Any]) -> list[str]:
    return [str((tool.get("function") or tool).get("name")) for tool in kwargs.get("tools") or []
            if isinstance(tool, Mapping)]


class FlawedChatOpenAI(ChatOpenAI):
    """ChatOpenAI that recognises every provider's overflow, makes replies whole and retries only what is worth it.

    - an overflow error in any provider's wording (``errors.OVERFLOW_WORDINGS``) is
      raised as ``ContextOverflowError``, so v2 summarizes and retries the call;
    - each reply is made whole (``replies.tidy_reply``) before the agent sees it;
    - a rate limit, a 5xx, a refused connection or a 200 without a reply is retried
      ``transient_retries`` times; a timeout is not (the SDK's own retries are off:
      they retry timeouts).
    """

    transient_retries: int = DEFAULT_MAX_RETRIES
    """How many times a transient failure is retried."""
    served_models: tuple[str, ...] = ()
    """The model ids the server's /v1/models listed when the model was built (a 404 names them)."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(self.transient_retries + 1):
            try:
                return super()._generate(*args, **kwargs)
            except Exception as error:
                self._raise_unless_retrying(error, attempt)
                wait = retry_wait_seconds(error, attempt)
                announce_wait(error, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(self.transient_retries + 1):
            try:
                return await super()._agenerate(*args, **kwargs)
            except Exception as error:
                self._raise_unless_retrying(error, attempt)
                wait = retry_wait_seconds(error, attempt)
                announce_wait(error, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            yield from super()._stream(*args, **kwargs)
        except Exception as error:
            self._raise_unless_retrying(error, self.transient_retries)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
        except Exception as error:
            self._raise_unless_retrying(error, self.transient_retries)

    def _generate_with_cache(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        result = super()._generate_with_cache(messages, stop=stop, run_manager=run_manager, **kwargs)
        return self._tidied(result, kwargs)

    async def _agenerate_with_cache(self, messages: Any, stop: Any = None, run_manager: Any = None,
                                    **kwargs: Any) -> ChatResult:
        result = await super()._agenerate_with_cache(messages, stop=stop, run_manager=run_manager, **kwargs)
        return self._tidied(result, kwargs)

    def _tidied(self, result: ChatResult, kwargs: Mapping[str, Any]) -> ChatResult:
        if not result.generations:
            raise ModelReplyError("The model server answered with no reply (an empty 'choices' list).", retryable=True)
        for generation in result.generations:
            if isinstance(generation.message, AIMessage):
                tidy_reply(generation.message, _offered_tools(kwargs))
        return result

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        """The reply as LangChain builds it, from a completion made whole first (or one sentence saying why not)."""
        body = self._completion_body(response)
        repaired = repair_completion(body)
        result = super()._create_chat_result(repaired, generation_info)
        for generation, choice in zip(result.generations, repaired["choices"]):
            reasoning = reasoning_in(choice.get("message") or {})
            if reasoning and isinstance(generation.message, AIMessage):
                generation.message.additional_kwargs[REASONING_KEY] = reasoning
        return result

    def _completion_body(self, response: Any) -> dict[str, Any]:
        if isinstance(response, (str, bytes)):
            text = response.decode("utf-8", "replace") if isinstance(response, bytes) else response
            if "<html" in text[:2000].lower() or "<!doctype" in text[:200].lower():
                raise ModelReplyError(f"The server at {self.openai_api_base} answered with a web page (HTML), not the "
                                      "OpenAI API: check the base URL (for most servers it ends in /v1).")
            raise ModelReplyError(f"The server at {self.openai_api_base} answered with text that is not an API reply: "
                                  f"{one_line(text, 120)!r}; check the base URL.")
        body = response if isinstance(response, dict) else response.model_dump(warnings=False)
        error = body.get("error")
        if error:
            raise self._error_in_body(error)
        if not body.get("choices"):
            raise ModelReplyError("The model server answered with no reply (an empty 'choices' list).", retryable=True,
                                  body=body)
        return body

    @staticmethod
    def _error_in_body(error: Any) -> ModelReplyError:
        """A 200 whose body is an error (proxies pass an upstream failure on this way)."""
        inner = error if isinstance(error, Mapping) else {"message": str(error)}
        code = inner.get("code") or inner.get("status")
        message = one_line(str(inner.get("message") or error), 200)
        status = int(code) if isinstance(code, (int, str)) and str(code).isdigit() else None
        retryable = status is not None and (status >= 500 or status == 429)
        said = f" ({code})" if code else ""
        return ModelReplyError(f"The model server answered 200 but with an error{said}: {message}", retryable=retryable,
                               body={"error": inner})

    def _convert_chunk_to_generation_chunk(self, chunk: dict, default_chunk_class: type,
                                           base_generation_info: dict | None) -> Any:
        """A streamed chunk as LangChain builds it, keeping any reasoning delta (LangChain drops it)."""
        if chunk.get("error"):
            raise self._error_in_body(chunk["error"])
        generation = super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)
        choices = chunk.get("choices") or []
        delta = choices[0].get("delta") if choices and isinstance(choices[0], Mapping) else None
        if generation is not None and isinstance(delta, Mapping) and (reasoning := reasoning_in(delta)):
            generation.message.additional_kwargs[REASONING_KEY] = reasoning
        return generation

    def _raise_unless_retrying(self, error: Exception, attempt: int) -> None:
        overflow = context_overflow_from(error)
        if overflow is not None:
            if overflow is error:
                raise error
            raise overflow from error
        if isinstance(error, openai.NotFoundError) and self.served_models and self.model_name not in self.served_models:
            raise ModelReplyError(
                f"The model server has no model {self.model_name!r} (404); it serves: "
                f"{', '.join(self.served_models[:12])}{' and more' if len(self.served_models) > 12 else ''}. "
                "Use one of those names (--model openai:<name>).") from error
        if attempt >= self.transient_retries or not is_transient(error):
            raise error
