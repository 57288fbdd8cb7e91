"""Peers: other context strategies, run on the same model, tools and telemetry as v0/v1/v2.

Every peer's model calls, its summarizer's included, reach the ``SessionLog``
through the agent's ``ModelCallRecorder`` (see ``telemetry.py``): nothing a peer
does with a model escapes the totals. ``v2`` below means v2's config (its
defaults, or the one the benchmark was given): the peers are triggered where v2
summarizes. ``fixed`` is what every request carries besides the messages
(system prompt and tool schemas, counted exactly).

Each peer, with its exact settings:

- ``lc-summarization``: LangChain's ``SummarizationMiddleware`` at its
  documented defaults: keep the last 20 messages, approximate counting (about
  characters / 4, messages only), ``trim_tokens_to_summarize=4000``, its own
  prompt; ``trigger=("tokens", v2's trigger)``.
- ``lc-summarization-tuned``: the same middleware with
  ``trigger=("tokens", v2's trigger - fixed)`` and ``keep=("tokens", v2's keep)``,
  both counted with the exact counter v2 uses: it fires when the request reaches
  v2's trigger and keeps what v2 keeps.
- ``lc-context-editing``: LangChain's ``ContextEditingMiddleware`` with
  ``ClearToolUsesEdit`` (old tool results become ``[cleared]``, the 3 most
  recent stay) at its documented defaults (approximate counting of messages),
  ``trigger=v2's trigger``.
- ``lc-context-editing-tuned``: the same with ``trigger=v2's trigger - fixed``,
  counted with the exact counter.
- ``deepagents``: ``deepagents.create_deep_agent`` as its documentation shows:
  a checkpointer (``InMemorySaver``) and a thread id per conversation, so each
  turn sends only the new user message; its own middleware at its defaults
  (summarization at 85% of the model's window, keep 10%); its own file tools on
  a ``FilesystemBackend`` rooted at the run's project folder (the history files
  its summaries point to land in ``conversation_history/`` there, readable with
  its ``read_file``); and our ChartBook tools, ``list_files``, ``search_files``
  and ``run_python`` (ours whose names clash with its built-ins are left out).
  Two things are made reproducible, nothing else changes: the history file is
  named after the conversation (not a random uuid), and the wall-clock time in
  its ``## Summarized at <time>`` headings becomes the turn number, since the
  model reads that file back and the tokens must be the same on every run.

The LangChain peers keep v1's memory (the whole managed history goes back
every turn). Only the optional ``deepagents`` package is needed for the last
one (``deepagents_missing()`` says why it cannot run). The thin ``Timed*``
subclasses only add bookkeeping: time spent in the wrapper (into
``SessionLog.wrapper_seconds``) and a context event when it acted
(``summarize`` / ``mask``), so peers and v2 are measured the same way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    ModelRequest,
    ModelResponse,
    SummarizationMiddleware,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool

from flawedcode.agents import BaseAgent
from flawedcode.config import AgentConfig, V2Config
from flawedcode.telemetry import EventKind, SessionLog
from flawedcode.tokens import TokenCounter

LANGCHAIN_DEFAULT_KEEP: tuple[str, int] = ("messages", 20)
LANGCHAIN_CLEAR_KEEP = 3
CLEARED_PLACEHOLDER = "[cleared]"
DEEPAGENTS_BUILTIN_TOOLS = ("ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "task")
"""Deep Agents' own tools; ours with the same names are left out of its tool list."""
DEEPAGENTS_FOLDERS = ("conversation_history", "large_tool_results")
"""Where Deep Agents writes what leaves its context, under its backend's root."""


def v2_trigger_tokens(budget_tokens: int, v2_config: V2Config | None = None) -> int:
    """The request size (tokens) at which v2 starts summarizing, for this budget."""
    return (v2_config or V2Config()).summarization.trigger_tokens(budget_tokens) or budget_tokens


def v2_keep_tokens(budget_tokens: int, v2_config: V2Config | None = None) -> int:
    """How many tokens of recent messages v2 keeps verbatim after a summary (its keep, in tokens)."""
    keep = (v2_config or V2Config()).summarization.keep
    return keep.in_tokens(budget_tokens) or budget_tokens // 10


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
            self.log.record_event(EventKind.SUMMARIZE, self.counter.count_messages(state["messages"]),
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
                self.log.record_event(EventKind.MASK, self.counter.count_messages(request.messages),
                                      self.counter.count_messages(edited.messages), tool_results_cleared=masked)
        return response


def _count_cleared(messages: list[BaseMessage]) -> int:
    return sum(1 for message in messages if isinstance(message, ToolMessage) and message.content == CLEARED_PLACEHOLDER)


class PeerAgent(BaseAgent):
    """v1's memory (the whole managed history goes back every turn) plus one peer strategy."""

    config_class: ClassVar[type[AgentConfig]] = AgentConfig
    tuned: ClassVar[bool] = False

    def __init__(self, model: str | BaseChatModel | None = None, *, trigger_tokens: int | None = None,
                 v2_config: V2Config | None = None, **kwargs: Any) -> None:
        self.requested_trigger_tokens = trigger_tokens
        self.v2_config = v2_config
        super().__init__(model, **kwargs)

    def trigger_tokens(self) -> int:
        """The request size at which the strategy acts (v2's trigger unless one was given)."""
        return self.requested_trigger_tokens or v2_trigger_tokens(self.budget_tokens, self.v2_config)

    def exact_message_counter(self, messages: Sequence[BaseMessage]) -> int:
        """The exact counter v2 uses, over messages (the fixed part of each request is left to the trigger)."""
        return self.counter.count_messages(messages)

    def strategy(self) -> dict[str, Any]:
        """The strategy's exact settings, for tables and summary.json."""
        return {}

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "strategy": self.strategy()}

    def send(self, text: str) -> str:
        return self.run_turn(self.messages, text)


class LangChainSummarizationPeer(PeerAgent):
    """LangChain's SummarizationMiddleware at its documented defaults (keep 20 messages), at v2's trigger."""

    version = "lc-summarization"

    def __init__(self, model: str | BaseChatModel | None = None, *,
                 keep: tuple[str, int | float] = LANGCHAIN_DEFAULT_KEEP, **kwargs: Any) -> None:
        self.keep = keep
        super().__init__(model, **kwargs)

    def middleware_arguments(self) -> dict[str, Any]:
        return {"trigger": ("tokens", self.trigger_tokens()), "keep": self.keep}

    def strategy(self) -> dict[str, Any]:
        arguments = self.middleware_arguments()
        return {"middleware": "langchain.agents.middleware.SummarizationMiddleware",
                "trigger": list(arguments["trigger"]), "keep": list(arguments["keep"]),
                "token_counter": "exact (flawedcode.tokens.TokenCounter)" if "token_counter" in arguments
                else "approximate (count_tokens_approximately, its default)",
                "trim_tokens_to_summarize": 4000, "summary_prompt": "LangChain's default",
                "fires_at_request_tokens": self.trigger_tokens()}

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = self.trigger_tokens()
        return [TimedSummarizationMiddleware(self.model, **self.middleware_arguments(), log=self.log, counter=self.counter)]


class TunedLangChainSummarizationPeer(LangChainSummarizationPeer):
    """The same middleware tuned to v2: fires when the request reaches v2's trigger, keeps v2's keep, counts exactly."""

    version = "lc-summarization-tuned"
    tuned = True

    def middleware_arguments(self) -> dict[str, Any]:
        messages_trigger = max(1, self.trigger_tokens() - self.fixed_tokens)
        keep = ("tokens", v2_keep_tokens(self.budget_tokens, self.v2_config))
        return {"trigger": ("tokens", messages_trigger), "keep": keep, "token_counter": self.exact_message_counter}


class LangChainContextEditingPeer(PeerAgent):
    """LangChain's ContextEditingMiddleware with ClearToolUsesEdit (observation masking) at its defaults, at v2's trigger."""

    version = "lc-context-editing"

    def __init__(self, model: str | BaseChatModel | None = None, *, keep_tool_results: int = LANGCHAIN_CLEAR_KEEP,
                 **kwargs: Any) -> None:
        self.keep_tool_results = keep_tool_results
        super().__init__(model, **kwargs)

    def edit_trigger(self) -> int:
        return self.trigger_tokens()

    def counter_arguments(self) -> dict[str, Any]:
        return {}

    def strategy(self) -> dict[str, Any]:
        return {"middleware": "langchain.agents.middleware.ContextEditingMiddleware",
                "edit": "ClearToolUsesEdit", "trigger": self.edit_trigger(), "keep": self.keep_tool_results,
                "placeholder": CLEARED_PLACEHOLDER,
                "token_counter": "exact (flawedcode.tokens.TokenCounter)" if self.counter_arguments()
                else "approximate (count_tokens_approximately, its default)",
                "fires_at_request_tokens": self.trigger_tokens()}

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = self.trigger_tokens()
        edit = ClearToolUsesEdit(trigger=self.edit_trigger(), keep=self.keep_tool_results, placeholder=CLEARED_PLACEHOLDER)
        return [TimedContextEditingMiddleware(edits=[edit], **self.counter_arguments(), log=self.log, counter=self.counter)]


class TunedLangChainContextEditingPeer(LangChainContextEditingPeer):
    """The same middleware tuned to v2: clears when the request reaches v2's trigger, counted exactly."""

    version = "lc-context-editing-tuned"
    tuned = True

    def edit_trigger(self) -> int:
        return max(1, self.trigger_tokens() - self.fixed_tokens)

    def counter_arguments(self) -> dict[str, Any]:
        return {"token_counter": self.exact_message_counter}


def deepagents_missing() -> str | None:
    """Why the ``deepagents`` peer cannot run here, or None when it can."""
    try:
        import deepagents  # noqa: F401
    except ImportError:
        return "deepagents is not installed (optional extra: pip install deepagents)"
    return None


class DeterministicHistoryName(AgentMiddleware):
    """Names Deep Agents' history file after the conversation instead of a random uuid.

    Deep Agents' summary tells the model the path of that file, so a random name
    would change the token counts from one run to the next. Nothing else changes.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        from deepagents.middleware.summarization import SUMMARIZATION_SESSION_ID_KEY

        if state.get(SUMMARIZATION_SESSION_ID_KEY):
            return None
        return {SUMMARIZATION_SESSION_ID_KEY: self.session_id}


HISTORY_STAMP = re.compile(r"^## Summarized at \d{4}-\d{2}-\d{2}T[0-9:.]+(?:[+-]\d{2}:\d{2}|Z)?$", re.MULTILINE)
"""The heading Deep Agents writes above each section of its history file (a wall-clock time)."""


def reproducible_history_backend(root: Path, turn: Callable[[], int]) -> Any:
    """A ``FilesystemBackend`` on ``root`` that stamps history sections with the turn number instead of the time."""
    from deepagents.backends import FilesystemBackend

    class ReproducibleHistoryBackend(FilesystemBackend):
        def _stamped(self, file_path: str, content: str) -> str:
            if not file_path.lstrip("/").startswith(DEEPAGENTS_FOLDERS[0] + "/"):
                return content
            return HISTORY_STAMP.sub(f"## Summarized at turn {turn()}", content)

        def write(self, file_path: str, content: str) -> Any:
            return super().write(file_path, self._stamped(file_path, content))

        def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> Any:
            return super().edit(file_path, old_string, self._stamped(file_path, new_string), replace_all)

    return ReproducibleHistoryBackend(root_dir=root, virtual_mode=True)


class DeepAgentsPeer(PeerAgent):
    """Deep Agents' ``create_deep_agent`` with a checkpointer, its own file tools on the run's folder, and our tools."""

    version = "deepagents"

    def __init__(self, model: str | BaseChatModel | None = None, **kwargs: Any) -> None:
        reason = deepagents_missing()
        if reason:
            raise RuntimeError(reason)
        super().__init__(model, **kwargs)

    def build_tools(self) -> list[BaseTool]:
        return [tool for tool in super().build_tools() if tool.name not in DEEPAGENTS_BUILTIN_TOOLS]

    def build_graph(self, middleware: list[Any]) -> Any:
        from deepagents import create_deep_agent
        from langgraph.checkpoint.memory import InMemorySaver

        self.backend = reproducible_history_backend(self.workspace.root, lambda: self.log.turn)
        return create_deep_agent(model=self.model, tools=self.tools, system_prompt=self.config.system_prompt,
                                 middleware=[DeterministicHistoryName(f"session_{self.conversation_id}"), *middleware],
                                 backend=self.backend, checkpointer=InMemorySaver())

    def graph_config(self) -> dict[str, Any]:
        config = super().graph_config()
        config.pop("recursion_limit")  # Deep Agents sets its own (9,999 steps)
        return {**config, "configurable": {"thread_id": self.conversation_id}}

    def send(self, text: str) -> str:
        """Only the new message: the checkpointer holds the conversation (and Deep Agents' record of its summaries)."""
        return self.run_turn([], text)

    def recovery_paths(self) -> list[Path]:
        return [*super().recovery_paths(), *(self.workspace.root / folder for folder in DEEPAGENTS_FOLDERS)]

    def context_tokens(self) -> int:
        """What the model received at the last call (Deep Agents keeps its raw history and compacts per call)."""
        calls = self.log.agent_calls()
        return calls[-1].input_tokens if calls else self.fixed_tokens

    def strategy(self) -> dict[str, Any]:
        from deepagents.middleware.summarization import compute_summarization_defaults

        defaults = compute_summarization_defaults(self.model)
        return {"factory": "deepagents.create_deep_agent", "checkpointer": "langgraph InMemorySaver",
                "thread_id": self.conversation_id, "backend": "FilesystemBackend(root_dir=<run>/project, virtual_mode=True)",
                "summarization_trigger": list(defaults["trigger"]), "summarization_keep": list(defaults["keep"]),
                "history_file": f"/conversation_history/session_{self.conversation_id}.md",
                "our_tools_left_out": sorted(set(DEEPAGENTS_BUILTIN_TOOLS) & {tool.name for tool in super().build_tools()})}


PEERS: dict[str, type[PeerAgent]] = {
    peer.version: peer
    for peer in (LangChainSummarizationPeer, TunedLangChainSummarizationPeer, LangChainContextEditingPeer,
                 TunedLangChainContextEditingPeer, DeepAgentsPeer)
}
