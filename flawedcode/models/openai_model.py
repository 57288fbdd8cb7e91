"""``FlawedChatOpenAI``: LangChain's ``ChatOpenAI``, with every provider's overflow recognised and bounded retries.

- An overflow error in any provider's wording (``errors.OVERFLOW_WORDINGS``:
  OpenAI's code in the body, vLLM, Ollama, OpenRouter, LM Studio, llama.cpp, ...)
  is raised as LangChain's ``ContextOverflowError``, so v2 summarizes and
  retries the call (langchain-openai recognises only some of them, and reads
  the code from the exception text, where the openai SDK does not put it).
- A rate limit (not an exhausted quota), a server error (5xx) or a refused
  connection is retried at most ``DEFAULT_MAX_RETRIES`` times, after the
  server's Retry-After (at most ``MAX_RETRY_WAIT_SECONDS``) or 0.5 s, 1 s, ...
  A timeout is **not** retried: the openai SDK's own retries (switched off
  here) would retry it, so a stalled server would cost three timeouts, not one.

Built by ``get_model("openai:<name>")``; this module imports langchain-openai,
so ``factory.py`` imports it only when such a model is asked for.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
from langchain_openai import ChatOpenAI

from flawedcode.models.errors import context_overflow_from

DEFAULT_MAX_RETRIES = 2
"""Retries of a rate limit, a server error or a refused connection (never of a timeout)."""
RETRY_BASE_SECONDS = 0.5
MAX_RETRY_WAIT_SECONDS = 20.0


def is_transient(error: BaseException) -> bool:
    """Worth one more try: a rate limit (not an exhausted quota), a server error (5xx), a refused connection."""
    if context_overflow_from(error) is not None or isinstance(error, openai.APITimeoutError):
        return False
    if isinstance(error, openai.RateLimitError):
        return getattr(error, "code", None) != "insufficient_quota"
    return isinstance(error, (openai.InternalServerError, openai.APIConnectionError))


def retry_wait_seconds(error: BaseException, attempt: int) -> float:
    """The server's Retry-After (capped), else 0.5 s, 1 s, 2 s, ..."""
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        return min(float(headers.get("retry-after", "")), MAX_RETRY_WAIT_SECONDS)
    except ValueError:
        return RETRY_BASE_SECONDS * 2**attempt


class FlawedChatOpenAI(ChatOpenAI):
    """ChatOpenAI that recognises every provider's overflow and retries only what is worth retrying.

    - an overflow error in any provider's wording (``errors.OVERFLOW_WORDINGS``) is
      raised as ``ContextOverflowError``, so v2 summarizes and retries the call;
    - a rate limit, a 5xx or a refused connection is retried ``transient_retries``
      times; a timeout is not (the SDK's own retries are off: they retry timeouts).
    """

    transient_retries: int = DEFAULT_MAX_RETRIES
    """How many times a transient failure is retried."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(self.transient_retries + 1):
            try:
                return super()._generate(*args, **kwargs)
            except Exception as error:
                self._raise_unless_retrying(error, attempt)
                time.sleep(retry_wait_seconds(error, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        import asyncio

        for attempt in range(self.transient_retries + 1):
            try:
                return await super()._agenerate(*args, **kwargs)
            except Exception as error:
                self._raise_unless_retrying(error, attempt)
                await asyncio.sleep(retry_wait_seconds(error, attempt))
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

    def _raise_unless_retrying(self, error: Exception, attempt: int) -> None:
        overflow = context_overflow_from(error)
        if overflow is not None:
            if overflow is error:
                raise error
            raise overflow from error
        if attempt >= self.transient_retries or not is_transient(error):
            raise error
