"""The budget guard: v2 never sends a request over its budget, whatever one turn brings in.

v2's lesson offloads each large result and summarizes when the context nears the trigger;
``resilience.py`` compacts when no summary could be written. Three ways a single turn can still
push a request over the budget are closed here (``budget_guards(...)``, added to v2 in one line):

1. **Many results, each under the offload threshold** (``TurnOffloadMiddleware``): offloading
   considers the turn's cumulative size. A result that is not offloaded on its own is offloaded
   anyway when the results this turn has kept verbatim would, with it, exceed
   ``turn_results_tokens`` (twice the offload's ``threshold_tokens``: 2,500 tokens by default).
   The same stub and scratch/ file as ``maybe_offload`` (``offload.py``); an ``offload`` event with
   ``reason: turn_total``. Read tools stay exempt (``offload.exempt_tools``).
2. **A large workspace file read in one go** (``WorkspaceReadPaging``): ``read_file`` of a workspace
   file (not only scratch/ and archives/) is paged like a read-back (``readback.py``): a page that
   would not fit the room under the trigger is re-read with a smaller ``limit``; its last line says
   how to read on. A ``readback_paged`` event.
3. **The last resort** (``BudgetGuardMiddleware``, as each model call is made, after summaries and
   compaction): while the request (system prompt, tool schemas and messages) is over the budget,
   the largest tool result of the current turn (then of earlier turns) is saved to scratch/ and
   replaced by its stub (the offload stub: a typed preview and ``read_file(path='scratch/...')``),
   results already stubbed are left alone. The saved file is written before the result leaves the
   context (nothing is lost). A ``budget_guard`` event says how many results were stubbed; if the
   request still does not fit (nothing left to stub), ``budget_guard_failed`` says so. When scratch/
   cannot be written (read-only, full), the results stay in the context, whole, the request is sent
   as it is (``budget_guard_failed`` with the error) and one warning line says so: a turn never fails
   because a file could not be saved.

All three offload or page results, so ``offload: {enabled: false}`` turns them off too (v2 then sends
what v1 sends: ``tests/test_v2_equivalence.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from flawedcode import notices
from flawedcode.config import OffloadConfig
from flawedcode.context.budget import ContextBudget
from flawedcode.context.offload import exempt_tools, offload, should_offload
from flawedcode.context.readback import PAGED_PREFIXES, ReadBackPagingMiddleware
from flawedcode.formats import COMPACTED_PREFIX, STUB_PREFIX
from flawedcode.telemetry import EventKind, SessionLog
from flawedcode.tokens import TokenCounter

ScratchFolder = Path | Callable[[], Path]
"""Where a stubbed result is saved: a folder, or a function that returns the current one."""

TURN_RESULTS_FACTOR = 2
"""A turn keeps at most this many offload thresholds' worth of results verbatim."""


def folder_of(scratch_dir: ScratchFolder) -> Callable[[], Path]:
    """``scratch_dir`` as a function that returns the folder (a fixed folder always returns itself)."""
    return scratch_dir if callable(scratch_dir) else lambda: Path(scratch_dir)


def turn_start(messages: Sequence[AnyMessage]) -> int:
    """Index of the current turn's user message (0 when there is none)."""
    return next((index for index in range(len(messages) - 1, -1, -1) if isinstance(messages[index], HumanMessage)), 0)


def is_stub(message: ToolMessage) -> bool:
    return message.text.startswith((STUB_PREFIX, COMPACTED_PREFIX))


def tool_names(messages: Sequence[AnyMessage]) -> dict[str, tuple[str, dict[str, Any]]]:
    """tool_call_id -> (tool name, arguments), from the AI messages' calls."""
    return {call["id"]: (call["name"], call.get("args") or {}) for message in messages if isinstance(message, AIMessage)
            for call in message.tool_calls if call.get("id")}


def turn_results_tokens(config: OffloadConfig) -> int:
    return TURN_RESULTS_FACTOR * (config.threshold_tokens or 1_250)


def fit_to_budget(messages: Sequence[AnyMessage], budget_tokens: int, fixed_tokens: int, counter: TokenCounter,
                  scratch_dir: Path, config: OffloadConfig, failures: list[str] | None = None) -> tuple[list[AnyMessage], int]:
    """Stub the largest tool results (the current turn's first) until the request fits; (messages, stubbed).

    A result whose scratch/ file cannot be written (a read-only or full disk) stays in the context, whole:
    nothing is lost; why is appended to ``failures`` (when given) and no further result is tried.
    """
    fitted = list(messages)
    start = turn_start(fitted)
    calls = tool_names(fitted)
    candidates = [index for index, message in enumerate(fitted) if isinstance(message, ToolMessage)
                  and isinstance(message.content, str) and not is_stub(message)]
    order = sorted(candidates, key=lambda index: (index < start, -counter.count_message(fitted[index])))
    total, stubbed = fixed_tokens + counter.count_messages(fitted), 0
    for index in order:
        if total <= budget_tokens:
            break
        result = fitted[index]
        name, arguments = calls.get(result.tool_call_id, (result.name or "tool", {}))
        try:
            done = offload(result.content, name, arguments, scratch_dir=scratch_dir, config=config,
                           encoding=counter.encoding_name)
        except OSError as error:  # the same folder for every result: one failure says it for all
            if failures is not None:
                failures.append(error.strerror or str(error))
            break
        replaced = result.model_copy(update={"content": done.stub})
        total += counter.count_message(replaced) - counter.count_message(result)
        fitted[index], stubbed = replaced, stubbed + 1
    return fitted, stubbed


class BudgetGuardMiddleware(AgentMiddleware):
    """Rule 3: as each model call is made, stub the largest results while the request is over the budget.

    A ``wrap_model_call`` hook (not a graph step of its own, so the turn's step limit is unchanged): the
    fitted messages are sent, and they replace the history in the same state update as the reply.
    """

    def __init__(self, budget: ContextBudget, counter: TokenCounter, log: SessionLog, scratch_dir: ScratchFolder,
                 config: OffloadConfig) -> None:
        super().__init__()
        self.budget, self.counter, self.log, self.config = budget, counter, log, config
        self.scratch_dir = folder_of(scratch_dir)

    def fit(self, messages: Sequence[AnyMessage]) -> list[AnyMessage] | None:
        """The messages stubbed to fit the budget, or None when they already fit (or nothing could be stubbed)."""
        with self.log.timing_wrapper():
            before = self.budget.fixed_tokens + self.counter.count_messages(messages)
            limit = int(self.budget.tokens / max(1.0, self.budget.calibration.token_factor))
            if before <= limit:
                return None
            failures: list[str] = []
            fitted, stubbed = fit_to_budget(messages, limit, self.budget.fixed_tokens, self.counter,
                                            self.scratch_dir(), self.config, failures)
            after = self.budget.fixed_tokens + self.counter.count_messages(fitted)
            if failures:
                notices.warn_once(f"scratch-unwritable:{failures[0]}", f"scratch/ cannot be written ({failures[0]}): "
                                  "large tool results are kept in the context, so requests may go over the budget")
            if after > limit:
                self.log.record_event(EventKind.BUDGET_GUARD_FAILED, before, after, stubbed=stubbed, budget=limit,
                                      **({"error": failures[0]} if failures else {}))
            if not stubbed:
                return None
            self.log.record_event(EventKind.BUDGET_GUARD, before, after, stubbed=stubbed, budget=limit)
            return fitted

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        fitted = self.fit(request.messages)
        if fitted is None:
            return handler(request)
        response = handler(request.override(messages=fitted))
        model_response = response if isinstance(response, ModelResponse) else ModelResponse(result=[response])
        for reply in model_response.result:  # an id lets the update below replace the reply rather than repeat it
            if reply.id is None:
                reply.id = f"budget-guard-{uuid.uuid4().hex}"
        update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fitted, *model_response.result]
        return ExtendedModelResponse(model_response=model_response, command=Command(update={"messages": update}))


class TurnOffloadMiddleware(AgentMiddleware):
    """Rule 1: a result under the threshold is still offloaded when the turn's verbatim results would exceed their share."""

    def __init__(self, counter: TokenCounter, log: SessionLog, scratch_dir: ScratchFolder, config: OffloadConfig) -> None:
        super().__init__()
        self.counter, self.log, self.config = counter, log, config
        self.scratch_dir = folder_of(scratch_dir)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        call = request.tool_call
        if (not isinstance(result, ToolMessage) or not isinstance(result.content, str) or not self.config.enabled
                or call["name"] in exempt_tools(self.config)
                or should_offload(result.content, call["name"], self.config, self.counter.encoding_name)):
            return result  # not ours: exempt, or the lesson's own offload takes it
        with self.log.timing_wrapper():
            state = request.state
            messages = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
            kept = sum(self.counter.count_message(message) for message in messages[turn_start(messages):]
                       if isinstance(message, ToolMessage) and not is_stub(message))
            tokens = self.counter.count_message(result)
            if kept + tokens <= turn_results_tokens(self.config):
                return result
            try:
                done = offload(result.content, call["name"], call.get("args"), scratch_dir=self.scratch_dir(),
                               config=self.config, encoding=self.counter.encoding_name)
            except OSError as error:
                self.log.record_event(EventKind.OFFLOAD_FAILED, tokens, tokens, tool=call["name"], error=str(error))
                return result
            self.log.record_event(EventKind.OFFLOAD, done.original_tokens, done.stub_tokens, tool=call["name"],
                                  path=done.display_path, characters=len(result.content), reason="turn_total",
                                  turn_results_tokens=kept + tokens)
        return result.model_copy(update={"content": done.stub})


class WorkspaceReadPaging(ReadBackPagingMiddleware):
    """Rule 2: ``read_file`` of a workspace file is paged like a read-back (scratch/ and archives/ are readback's)."""

    def pages(self, path: str) -> bool:
        return not path.startswith(PAGED_PREFIXES)


def budget_guards(budget: ContextBudget, *, counter: TokenCounter, log: SessionLog, scratch_dir: ScratchFolder,
                  config: OffloadConfig) -> list[AgentMiddleware]:
    """Rules 1-3, in the order they must run (put them after v2's own middleware); none with offloading off.

    ``scratch_dir`` is the folder read_file shows as scratch/, or a function that returns it: an agent's
    is its conversation's own folder, which changes when the conversation does.
    """
    if not config.enabled:  # they offload and page: a config that turns offloading off turns them off too
        return []
    return [TurnOffloadMiddleware(counter, log, scratch_dir, config), WorkspaceReadPaging(log, counter, budget),
            BudgetGuardMiddleware(budget, counter, log, scratch_dir, config)]
