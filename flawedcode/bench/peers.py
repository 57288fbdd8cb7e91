"""Peers: other context strategies, run on the same model, tools and telemetry as v0/v1/v2.

Each peer is a ``BaseAgent`` with v1-style memory (the whole managed history
goes back every turn) plus one strategy from someone else's library:

- ``lc-summarization``: LangChain's ``SummarizationMiddleware`` with its
  documented defaults (keep the last 20 messages, approximate token counting,
  ``trim_tokens_to_summarize=4000``, its own summary prompt), triggered at the
  same number of tokens as v2 (v2's trigger fraction of the same budget), and
  summarizing with the same model. Its summary calls go through
  ``RecordedChatModel``, so they land in the ``SessionLog`` with
  ``purpose="summary"`` and count in every total.
- ``lc-context-editing``: LangChain's ``ContextEditingMiddleware`` with
  ``ClearToolUsesEdit`` (observation masking: old tool results become
  ``[cleared]``, the 3 most recent stay), triggered at the same token threshold.
- ``deepagents``: ``deepagents.create_deep_agent`` with our tools and model,
  only when the optional ``deepagents`` package is installed (``deepagents_missing()``
  says why not). Its own built-in tools and middleware come with it.

The thin ``Timed*`` subclasses only add bookkeeping: time spent in the wrapper
(into ``SessionLog.wrapper_seconds``) and a context event when it acted
(``summarize`` / ``mask``), so peers and v2 are measured the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from flawedcode.agents import BaseAgent
from flawedcode.config import AgentConfig, V2Config
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import TokenCounter

LANGCHAIN_DEFAULT_KEEP: tuple[str, int] = ("messages", 20)
LANGCHAIN_CLEAR_KEEP = 3
CLEARED_PLACEHOLDER = "[cleared]"


def v2_trigger_tokens(budget_tokens: int) -> int:
    """The token count at which v2 (with its default config) starts summarizing, for this budget."""
    return V2Config().summarization.trigger_tokens(budget_tokens) or budget_tokens


class RecordedChatModel(BaseChatModel):
    """A chat model that forwards to ``inner`` and records each call in a ``SessionLog``.

    Give it to LangChain's ``SummarizationMiddleware(summarizer=...)`` so that the
    peer's summary calls are counted like v2's.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel
    log: SessionLog
    counter: TokenCounter
    purpose: str = "summary"

    @property
    def _llm_type(self) -> str:
        return f"recorded-{self.inner._llm_type}"

    def _resolve_model_profile(self) -> dict[str, Any] | None:
        return self.inner.profile

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return self.inner._get_ls_params(stop=stop, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        started = time.perf_counter()
        reply = self.inner.invoke(messages, stop=stop, **kwargs)
        self.log.record_call(self.counter.count_messages(messages), self.counter.count_message(reply), reply,
                             time.perf_counter() - started, purpose=self.purpose)
        return ChatResult(generations=[ChatGeneration(message=reply)])


class TimedSummarizationMiddleware(SummarizationMiddleware):
    """LangChain's ``SummarizationMiddleware``, unchanged, plus time and event bookkeeping."""

    def __init__(self, *args: Any, log: SessionLog, counter: TokenCounter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log = log
        self.counter = counter

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        with self.log.timing_wrapper():
            update = super().before_model(state, runtime)
        if update is not None:
            kept = [message for message in update["messages"] if isinstance(message, BaseMessage)]
            self.log.record_event("summarize", self.counter.count_messages(state["messages"]),
                                  self.counter.count_messages(kept), strategy="langchain")
        return update


class TimedContextEditingMiddleware(ContextEditingMiddleware):
    """LangChain's ``ContextEditingMiddleware``, unchanged, plus time and event bookkeeping."""

    def __init__(self, *args: Any, log: SessionLog, counter: TokenCounter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log = log
        self.counter = counter

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        seen: dict[str, Any] = {}

        def timed_handler(edited: ModelRequest) -> ModelResponse:
            seen["request"] = edited
            seen["handler_started"] = time.perf_counter()
            response = handler(edited)
            seen["handler_seconds"] = time.perf_counter() - seen["handler_started"]
            return response

        started = time.perf_counter()
        response = super().wrap_model_call(request, timed_handler)
        self.log.wrapper_seconds += time.perf_counter() - started - seen.get("handler_seconds", 0.0)
        edited = seen.get("request")
        if edited is not None:
            masked = _count_cleared(edited.messages) - _count_cleared(request.messages)
            if masked > 0:
                self.log.record_event("mask", self.counter.count_messages(request.messages),
                                      self.counter.count_messages(edited.messages), tool_results_cleared=masked)
        return response


def _count_cleared(messages: list[BaseMessage]) -> int:
    return sum(1 for message in messages if isinstance(message, ToolMessage) and message.content == CLEARED_PLACEHOLDER)


class PeerAgent(BaseAgent):
    """v1's memory (the whole managed history goes back every turn) plus one peer strategy."""

    config_class: ClassVar[type[AgentConfig]] = AgentConfig

    def __init__(self, model: str | BaseChatModel | None = None, *, trigger_tokens: int | None = None,
                 **kwargs: Any) -> None:
        self.requested_trigger_tokens = trigger_tokens
        super().__init__(model, **kwargs)

    def trigger_tokens(self) -> int:
        return self.requested_trigger_tokens or v2_trigger_tokens(self.budget_tokens)

    def send(self, text: str) -> str:
        return self.run_turn(self.messages, text)


class LangChainSummarizationPeer(PeerAgent):
    """LangChain's SummarizationMiddleware (defaults: keep 20 messages), at v2's trigger."""

    version = "lc-summarization"

    def __init__(self, model: str | BaseChatModel | None = None, *,
                 keep: tuple[str, int | float] = LANGCHAIN_DEFAULT_KEEP, **kwargs: Any) -> None:
        self.keep = keep
        super().__init__(model, **kwargs)

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = self.trigger_tokens()
        summarizer = RecordedChatModel(inner=self.model, log=self.log, counter=self.counter)
        return [TimedSummarizationMiddleware(self.model, trigger=("tokens", self.log.trigger_tokens), keep=self.keep,
                                             summarizer=summarizer, log=self.log, counter=self.counter)]


class LangChainContextEditingPeer(PeerAgent):
    """LangChain's ContextEditingMiddleware with ClearToolUsesEdit (observation masking), at v2's trigger."""

    version = "lc-context-editing"

    def __init__(self, model: str | BaseChatModel | None = None, *, keep_tool_results: int = LANGCHAIN_CLEAR_KEEP,
                 **kwargs: Any) -> None:
        self.keep_tool_results = keep_tool_results
        super().__init__(model, **kwargs)

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = self.trigger_tokens()
        edit = ClearToolUsesEdit(trigger=self.log.trigger_tokens, keep=self.keep_tool_results,
                                 placeholder=CLEARED_PLACEHOLDER)
        return [TimedContextEditingMiddleware(edits=[edit], log=self.log, counter=self.counter)]


def deepagents_missing() -> str | None:
    """Why the ``deepagents`` peer cannot run here, or None when it can."""
    try:
        import deepagents  # noqa: F401
    except ImportError:
        return "deepagents is not installed (optional extra: pip install deepagents)"
    return None


class DeepAgentsPeer(PeerAgent):
    """Deep Agents' ``create_deep_agent`` with our tools and model (its own middleware and built-in tools)."""

    version = "deepagents"

    def __init__(self, model: str | BaseChatModel | None = None, **kwargs: Any) -> None:
        reason = deepagents_missing()
        if reason:
            raise RuntimeError(reason)
        super().__init__(model, **kwargs)

    def build_graph(self, middleware: list[Any]) -> Any:
        from deepagents import create_deep_agent

        return create_deep_agent(model=self.model, tools=self.tools, system_prompt=self.config.system_prompt,
                                 middleware=middleware)


PEERS: dict[str, type[PeerAgent]] = {
    "lc-summarization": LangChainSummarizationPeer,
    "lc-context-editing": LangChainContextEditingPeer,
    "deepagents": DeepAgentsPeer,
}

