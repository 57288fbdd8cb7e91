"""Read-back paging: reading an offloaded result back never re-inflates the context past the trigger.

``read_file`` is exempt from offloading (offloading a read would make the agent
read the offloaded copy, forever), so following a stub's hint
``read_file(path='scratch/...')`` would bring the whole result back in: on a
small window, a 400 from the server; on a large one, a context over budget.

Rule (``page_limit``): when ``read_file`` reads ``scratch/`` or ``archives/``
and its page would not fit the room left under the summary trigger (the
trigger, less what the model already receives), the read is repeated with a
smaller ``limit``: as many lines as fit, at least one. The page keeps
``read_file``'s own format, so its last line says how to read the next page::

    # scratch/chartbook_get_docs_yield_curve_repo_public_3f2a9c1d.txt (lines 1-23 of 98)
    ...
    # ... 75 more lines: read_file(path='scratch/chartbook_get_docs_yield_curve_repo_public_3f2a9c1d.txt', offset=23)

Paging through everything still works: each page fits the room there is at
the time, and the summarizer makes room between pages. A ``readback_paged``
event is recorded. ``ReadBackPagingMiddleware`` is the thin adapter; put it
inside the offload step (``resilience.with_guards`` does), so a recovery read is noted once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AnyMessage, ToolMessage

from flawedcode.constants import ENCODING_NAME
from flawedcode.context.budget import ContextBudget
from flawedcode.telemetry import EventKind, SessionLog
from flawedcode.tokens import TokenCounter, count_text

PAGED_PREFIXES = ("scratch/", "archives/")
"""Reads of these folders (offloaded results and archives) are paged to fit."""
MIN_PAGE_TOKENS = 200
"""A page is never asked to fit in less than this, so the model always gets something to read."""
PAGE_OVERHEAD_TOKENS = 60
"""The page's first line, its continuation line and the message's own overhead."""


def room_under_trigger(trigger_tokens: int, context_tokens: int, calibration: float = 1.0) -> int:
    """Tokens a new tool result may take before the context reaches the trigger (at least MIN_PAGE_TOKENS)."""
    return max(MIN_PAGE_TOKENS, math.floor(trigger_tokens / calibration) - context_tokens)


def page_limit(page_lines: Sequence[str], room_tokens: int, encoding: str = ENCODING_NAME) -> int:
    """How many of ``page_lines`` fit in ``room_tokens`` (with the page's overhead); at least 1."""
    budget = room_tokens - PAGE_OVERHEAD_TOKENS
    used = fitted = 0
    for line in page_lines:
        used += count_text(line, encoding) + 1
        if used > budget:
            break
        fitted += 1
    return max(1, fitted)


def page_body(page: str) -> list[str]:
    """The file lines of a read_file page: without its ``# path (lines a-b of n)`` first line and continuation line."""
    lines = page.splitlines()[1:]
    return lines[:-1] if lines and lines[-1].startswith("# ... ") else lines


class ReadBackPagingMiddleware(AgentMiddleware):
    """Thin adapter: a read of scratch/ or archives/ that would not fit under the trigger is re-read in a smaller page."""

    def __init__(self, log: SessionLog, counter: TokenCounter, budget: ContextBudget) -> None:
        super().__init__()
        self.log = log
        self.counter = counter
        self.budget = budget

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        arguments = call.get("args") or {}
        result = handler(request)
        if call["name"] != "read_file" or not self.pages(str(arguments.get("path", ""))):
            return result
        if not isinstance(result, ToolMessage) or not isinstance(result.content, str) or result.status == "error":
            return result
        with self.log.timing_wrapper():
            room = room_under_trigger(self.trigger_tokens(), self.context_tokens(request), self.budget.calibration.token_factor)
            full_tokens = self.counter.count_message(result)
            if full_tokens <= room:
                return result
            limit = page_limit(page_body(result.content), room, self.counter.encoding_name)
        paged = result
        while True:
            paged = handler(request.override(tool_call={**call, "args": {**arguments, "limit": limit}}))
            if limit == 1 or not isinstance(paged, ToolMessage) or self.counter.count_message(paged) <= room:
                break
            limit = max(1, limit // 2)
        self.log.record_event(EventKind.READBACK_PAGED, full_tokens, self.counter.count_message(paged),
                              path=str(arguments.get("path")), lines=limit, room=room)
        return paged

    def pages(self, path: str) -> bool:
        """Which reads this pages: scratch/ and archives/."""
        return path.startswith(PAGED_PREFIXES)

    def trigger_tokens(self) -> int:
        return self.budget.room_tokens

    def context_tokens(self, request: Any) -> int:
        state = request.state
        messages: Sequence[AnyMessage] = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
        return self.budget.fixed_tokens + self.counter.count_messages(messages)
