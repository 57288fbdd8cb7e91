"""What every agent version shares: building the LangChain agent and running one user turn.

The versions differ only in what they pass back into the next turn and which
context wrappers they add; that difference lives in ``v0.py``, ``v1.py`` and
``v2.py``. Everything here is plumbing:

- ``BaseAgent.__init__`` picks the model, the workspace, the token counter and
  the session log, attaches a ``ModelCallRecorder`` to the model (every call
  any part of the agent makes is recorded as the model receives it), then
  builds the version in an order a reader can follow: ``prepare()`` (the
  version's own state), ``build_tools()``, ``count_fixed_tokens()``, ``build_middleware()``
  (builders return what they build and set nothing), and calls ``create_agent`` with them
  (telemetry always innermost, so the agent's own calls are told apart from summaries).
- ``run_turn(history, text)`` sends ``history + [text]`` through the agent and
  keeps the resulting messages. It streams the graph (with ``graph_config()``,
  which carries the recorder to any model built during the run) so that if the
  model or a tool fails mid-turn, the messages produced so far are kept
  (nothing is lost) and the error is raised as one clear ``AgentError`` line.

The small API every version exposes: ``send(text) -> reply``, ``messages``,
``token_log`` (one ``CallRecord`` per model call), ``events`` (context events)
and ``log`` (the whole ``SessionLog``, which charts and the benchmark read).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError

from flawedcode.config import AgentConfig
from flawedcode.context.repair import CutOffToolCallsMiddleware
from flawedcode.infra.safe_text import escape_surrogates
from flawedcode.models import budget_for, explain_model_error, get_model, profile_for
from flawedcode.telemetry import CallRecord, ContextEvent, ModelCallRecorder, ServerCalibration, SessionLog, TelemetryMiddleware
from flawedcode.tokens import TokenCounter, encoding_name_for_model
from flawedcode.tools import Workspace, make_tools


class AgentError(RuntimeError):
    """A turn failed (the model or the graph raised); the message is one clear line."""


class BaseAgent:
    """Shared plumbing; each version overrides ``send`` and, in v2, adds wrappers and a tool."""

    version: ClassVar[str] = "base"
    config_class: ClassVar[type[AgentConfig]] = AgentConfig
    cache_breakpoints: ClassVar[tuple[str, ...]] = ("tools", "request")
    """Where this agent's requests mark cache breakpoints for Anthropic (``prompt_cache.Breakpoint``): data the
    cost model reads, as a well-built agent would mark them (the end of its tools, the end of each request)."""

    def __init__(self, model: str | BaseChatModel | None = None, *, workspace: Workspace | None = None,
                 config: AgentConfig | None = None, conversation_id: str | None = None, name: str | None = None) -> None:
        self.config = config or self.config_class()
        self.model = (model if isinstance(model, BaseChatModel)
                      else get_model(model or self.config.model, timeout_seconds=self.config.timeout_seconds))
        self.model_name = _model_name(self.model)
        self.workspace = workspace or Workspace.create()
        self.conversation_id = conversation_id or f"{self.version}-{uuid.uuid4().hex[:10]}"
        self.workspace.archive_scope = self.conversation_id  # read_file sees only this conversation's archive
        self.counter = TokenCounter(encoding_name_for_model(self.model_name))
        self.budget_tokens = budget_for(self.model, self.config.budget_tokens)
        profile = profile_for(self.model)  # the model's own window and any prices its server published
        self.log = SessionLog(agent_name=name or self.version, budget_tokens=self.budget_tokens,
                              price_input_per_million=profile.input_per_million,
                              price_output_per_million=profile.output_per_million,
                              price_cached_input_per_million=profile.cached_input_per_million,
                              price_cache_write_per_million=profile.cache_write_per_million,
                              cache_scheme=profile.cache_scheme, cache_breakpoints=self.cache_breakpoints)
        self.calibration = ServerCalibration.watching(self.log)  # what the server's own counts reveal (v2's budget holds it)
        self.recorder = ModelCallRecorder(self.log, self.counter)
        self.recorder.attach(self.model)
        self.prepare()
        self.tools = self.build_tools()
        self.fixed_tokens = self.count_fixed_tokens()
        middleware = [*self.build_middleware(), CutOffToolCallsMiddleware(self.log), TelemetryMiddleware(self.log, self.counter)]
        self.graph = self.build_graph(middleware)
        self.graph_steps = graph_steps(self.config.recursion_limit, middleware)  # the step limit, in the graph's own steps
        self.messages: list[AnyMessage] = []

    # --- what a version may change (called in this order) ------------------------------
    def prepare(self) -> None:
        """Make the version's own state before its tools and middleware are built (v2: its archive)."""

    def build_tools(self) -> list[BaseTool]:
        return make_tools(self.workspace)

    def count_fixed_tokens(self) -> int:
        """What every call sends besides the messages: the system prompt and the tool schemas."""
        return self.counter.count_system(self.config.system_prompt) + self.counter.count_tools(self.tools)

    def build_middleware(self) -> list[AgentMiddleware]:
        return []

    def build_graph(self, middleware: list[AgentMiddleware]) -> Any:
        """The ReAct loop itself: LangChain's ``create_agent`` with this agent's tools and middleware."""
        from langchain.agents import create_agent  # on first use: importing flawedcode.agents stays light

        return create_agent(self.model, tools=self.tools, system_prompt=self.config.system_prompt, middleware=middleware)

    def send(self, text: str) -> str:
        raise NotImplementedError

    def graph_config(self) -> dict[str, Any]:
        """The config of each turn's graph run: the step limit, and the recorder for every model in it."""
        return {"recursion_limit": self.graph_steps, "callbacks": [self.recorder]}

    def recovery_paths(self) -> list[Path]:
        """Folders whose files hold what left the context (a benchmark looks for lost facts there)."""
        return [self.workspace.scratch_dir, self.workspace.archive_dir]

    def settings(self) -> dict[str, Any]:
        """This agent's effective settings: what a benchmark table must state to be reproduced."""
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "model": self.model_name,
            "budget_tokens": self.budget_tokens,
            "trigger_tokens": self.log.trigger_tokens,
            "fixed_tokens": self.fixed_tokens,
            "tools": [tool.name for tool in self.tools],
            "config": self.config.model_dump(mode="json", exclude={"system_prompt"}),
            "system_prompt_tokens": self.counter.count_system(self.config.system_prompt),
        }

    # --- the shared turn ------------------------------------------------------------
    def run_turn(self, history: Sequence[AnyMessage], text: str) -> str:
        """Send ``history + [text]`` through the agent; keep every message it produced; return the reply."""
        self.log.start_turn()
        start = {"messages": [*history, HumanMessage(escape_surrogates(text))]}  # never text that cannot be sent or saved
        try:
            with self.recorder.active():
                for state in self.graph.stream(start, self.graph_config(), stream_mode="values"):
                    self.messages = list(state["messages"])
        except GraphRecursionError:
            self.messages.append(AIMessage(f"I stopped after {self.config.recursion_limit} steps without a final answer."))
        except Exception as error:
            raise AgentError(f"{self.version}: the turn failed: {explain_model_error(error)}") from error
        finally:
            self.log.end_turn()
        return reply_text(self.messages)

    def reset(self, conversation_id: str | None = None) -> None:
        """Start a new conversation (the REPL's ``clear``): empty history, new id; the session log goes on."""
        self.messages = []
        self.conversation_id = conversation_id or f"{self.version}-{uuid.uuid4().hex[:10]}"
        self.workspace.archive_scope = self.conversation_id

    # --- what everyone reads --------------------------------------------------------
    @property
    def token_log(self) -> list[CallRecord]:
        return self.log.agent_calls()

    @property
    def events(self) -> list[ContextEvent]:
        return self.log.events

    def context_tokens(self) -> int:
        """Tokens the model would receive right now (system prompt + tools + history)."""
        return self.fixed_tokens + self.counter.count_messages(self.messages)


def graph_steps(recursion_limit: int, middleware: Sequence[AgentMiddleware]) -> int:
    """``recursion_limit`` (the agent's steps: a model call, a round of tool calls) in LangGraph's steps.

    Each ``before_model`` and ``after_model`` hook is a node of the graph, and LangGraph counts every
    node run as a step. A hook is no step of the agent's: v2's lesson hook (``ManageContext``), its
    guards (``RepairToolCallsMiddleware``, ``CompactionGuard``) and v3's stand in the loop beside the
    model and the tools, so the limit is stretched to let the model and the tools run exactly as often
    as in v1, which has no hook (25 steps: 13 model calls and 12 rounds of tool calls in every version).
    Counted as steps, v2's three hook nodes let a 25-step turn make 6 model calls where v1 made 13.
    """
    hooks = sum(1 for m in middleware for hook in ("before_model", "after_model")
                if getattr(type(m), hook) is not getattr(AgentMiddleware, hook))
    loops, into_loop = divmod(recursion_limit, 2)  # whole rounds of (model, tools), then the model of one more
    return loops * (hooks + 2) + (hooks + into_loop if into_loop else 0)


def reply_text(messages: Sequence[AnyMessage]) -> str:
    """The text of the last AI message (empty if there is none)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message.text
    return ""


def _model_name(model: BaseChatModel) -> str:
    for attribute in ("model_name", "model"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return "offline"


def describe_settings(agent: BaseAgent) -> dict[str, Any]:
    """A few facts about an agent, for tables and transcripts."""
    return {"version": agent.version, "model": agent.model_name, "budget_tokens": agent.budget_tokens,
            "conversation_id": agent.conversation_id, "workspace": str(agent.workspace.root)}
