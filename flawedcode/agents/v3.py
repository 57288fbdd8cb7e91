"""v3: a ReAct loop with tools, memory, and the production context techniques of 2026.

Unlike v2, v3 keeps its context small *and* cheap to send again (rules in ``flawedcode.context``);
``diff agents/v2.py agents/v3.py`` shows only what v3 adds, each block marked ``# NEW in v3``:

- cache-stable compaction (``stable.py``): the request is a layered prefix that only
  grows at its end (system prompt + memory, compact tool schemas, the pinned goal, then
  summary blocks and one-line digests of old turns, each appended once and never
  rewritten); answered tool results are cleared in batches worth a cache break; the
  rare consolidating summary is asked on the previous request's own leading messages,
  so a provider's prompt cache serves it. It takes the place of v2's summarize step, in the
  same hook (``ManageContext.before_model``; with ``compaction: {enabled: false}`` v2's summary
  runs there instead); v2's summary stays the guards' last resort, when a server refuses the request;
- a plan that survives (``todos.py``): ``write_todos`` keeps a todo list outside the
  messages; whenever compaction takes it out of view it comes back as a short reminder;
  a finished item is never undone;
- isolated sub-agents (``subagents.py``): ``task(description)`` runs a child (a v2 agent)
  with its own context, budget, turn limit and trigger; the parent gets at most 64
  tokens of its answer and the path of the child's archived transcript;
- budgeted memory (``memory.py``): ``save_memory`` keeps facts in memory.md; every
  conversation starts with them, within 500 tokens, corrections first;
- a lean loadout (``loadout.py``): one-line tool descriptions; search_archive joins
  once something is archived, the file tools when ``load_tools('files')`` asks; and a
  tool result over 600 tokens is offloaded (v2: 1,250), since the current turn's
  results are what a cache cannot serve.

v2's offloading, recovery and guards are kept as they are.
"""

from __future__ import annotations

# NEW in v2: what the lesson's two hooks are made of (LangChain's middleware, messages and tools)
from collections.abc import Callable, Sequence
from pathlib import Path  # NEW in v3: where memory.md lives
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AnyMessage, RemoveMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.agents.common import BaseAgent
from flawedcode.agents.v2 import AgentV2  # NEW in v3: a sub-agent is a v2 agent
from flawedcode.config import ContextSize, V2Config, V3Config  # NEW in v3: V3Config; a child's V2Config
from flawedcode.context import (  # NEW in v2
    ContextBudget,
    ConversationArchive,
    SummaryOutcome,
    budget_guards,
    make_search_archive_tool,
    maybe_offload,
    maybe_summarize,
    with_guards,
)
from flawedcode.context.loadout import LayeredPrefixMiddleware, RequestPrefix, compact_tools, make_load_tools_tool  # NEW in v3
from flawedcode.context.memory import MemoryStore, make_save_memory_tool  # NEW in v3
from flawedcode.context.stable import StableCompactor  # NEW in v3
from flawedcode.context.subagents import SubagentRunner, make_task_tool  # NEW in v3
from flawedcode.context.todos import TodoList, make_write_todos_tool  # NEW in v3
from flawedcode.models import get_model  # NEW in v2: an optional separate summary model
from flawedcode.tools import make_tools


class AgentV3(BaseAgent):
    """A tool-using agent that plans, delegates, remembers across conversations, and stays cache-friendly."""

    version = "v3"
    config_class = V3Config  # NEW in v3: V3Config adds the compaction, subagents, memory and loadout blocks
    cache_breakpoints = ("tools", "goal", "digests", "request")  # NEW in v3: also after the pinned goal and the digests

    def prepare(self) -> None:
        # NEW in v2: one archive per conversation: summaries write it, search_archive reads it
        self.archive = ConversationArchive(self.workspace.archive_dir, self.conversation_id)
        # NEW in v3: the plan (kept outside the messages), memory.md, and the sub-agents' runner
        self.todos = TodoList()
        memory_file = Path(self.config.memory.path) if self.config.memory.path else self.workspace.archive_dir / "memory.md"
        memory_budget = min(self.config.memory.budget_tokens, self.budget_tokens // 4)  # never near the context budget
        self.memory = MemoryStore(memory_file, memory_budget, self.counter)
        self.subagents = SubagentRunner(self.make_child, self.archive, self.log, self.counter, self.config.subagents)
        # NEW in v3: the request prefix holds v3's tools and decides which are sent when (context/loadout.py)
        self.prefix = RequestPrefix(self.config.system_prompt, self.lean_tools(), self.archive, self.counter,
                                    memory=self.memory if self.config.memory.enabled else None, loadout=self.config.loadout)
        self.prefix.add_tool(make_load_tools_tool(self.prefix))

    def lean_tools(self) -> list[BaseTool]:
        """NEW in v3: v2's tools, then write_todos, task and save_memory, each with a one-line schema."""
        tools = [*make_tools(self.workspace), make_search_archive_tool(self.archive)]  # NEW in v2: search_archive
        tools += [make_write_todos_tool(self.todos), make_task_tool(self.subagents)]
        tools += [make_save_memory_tool(self.memory)] if self.config.memory.enabled else []
        return compact_tools(tools) if self.config.loadout.compact_schemas else tools

    def build_tools(self) -> list[BaseTool]:
        return list(self.prefix.tools)  # NEW in v3: the prefix's tools (it sends the useful ones)

    def count_fixed_tokens(self) -> int:
        return self.prefix.fixed_tokens()  # NEW in v3: the prefix decides what leads each request

    def build_middleware(self) -> list[AgentMiddleware]:
        # NEW in v2: the budget the wrappers manage to, and the lesson's two steps
        budget = ContextBudget(self.budget_tokens, self.fixed_tokens, self.config.summarization, self.log, self.calibration)
        compactor = StableCompactor(  # NEW in v3: clear, digest, consolidate from cache, keep the plan in view
            self.model, self.archive, self.config.compaction, self.counter, self.budget_tokens,
            system_text=self.prefix.system_text, tools=self.prefix.active_tools, todos=self.todos, log=self.log,
            on_boundary=lambda: self.at_boundary(budget), leading=self.prefix.leading_messages)
        lesson = ManageContext(self, budget, compactor)  # NEW in v3: its summary step compacts
        # NEW in v2: the lesson in the list, the guards beside it (repair, back-off, compaction, overflow retry, read-back paging)
        return [*with_guards(lesson, archive=self.archive, counter=self.counter, budget=budget, log=self.log, model=self.model,
                             summary_model=lesson.summary_model),
                *budget_guards(budget, counter=self.counter, log=self.log, scratch_dir=lambda: self.workspace.conversation_scratch_dir,
                               config=self.config.offload),  # NEW in v2: never over the budget (context/budget_guard.py)
                LayeredPrefixMiddleware(self.prefix)]  # NEW in v3: the same prefix for every call

    def at_boundary(self, budget: ContextBudget) -> None:
        """NEW in v3: after a compaction, the loadout and memory may change; the budget knows the new prefix."""
        self.prefix.boundary()
        budget.fixed_tokens = self.fixed_tokens = self.prefix.fixed_tokens()

    def make_child(self, conversation_id: str) -> BaseAgent:
        """NEW in v3: a sub-agent: a v2 agent with its own budget, turn limit and trigger, and no task tool."""
        limits = self.config.subagents
        config = V2Config(budget_tokens=limits.budget_tokens, recursion_limit=limits.recursion_limit,
                          system_prompt=self.config.system_prompt, timeout_seconds=self.config.timeout_seconds,
                          summarization={"trigger": [ContextSize(type="fraction", value=limits.summary_trigger)]})
        child_model = self.model.model_copy(update={"callbacks": None})  # its calls are recorded by its own log
        if isinstance(getattr(child_model, "max_input_tokens", None), int):  # a simulated window: the child's budget
            child_model.max_input_tokens = min(child_model.max_input_tokens, limits.budget_tokens)
        return AgentV2(child_model, workspace=self.workspace.scoped(conversation_id), config=config,  # its own scope
                       conversation_id=conversation_id,
                       name=f"{self.log.agent_name}/sub-agent")

    def context_tokens(self) -> int:
        return self.prefix.fixed_tokens() + self.counter.count_messages(self.messages)  # NEW in v3: the prefix's size

    def reset(self, conversation_id: str | None = None) -> None:
        super().reset(conversation_id)
        self.archive.restart(self.conversation_id)  # NEW in v2: a new conversation gets its own archive
        self.todos.items, self.todos.version = [], 0  # NEW in v3: a new conversation has no plan yet...
        self.prefix.reset(self.archive)  # ...but starts with the memory block, read again from memory.md

    def send(self, text: str) -> str:
        """Answer one request, with the managed conversation so far."""
        history = self.messages  # memory, as in v1 (NEW in v2: the wrappers keep it within budget)
        return self.run_turn(history, text)


class ManageContext(AgentMiddleware):
    """NEW in v2: the lesson as two LangChain hooks over two plain functions."""

    def __init__(self, agent: AgentV3, budget: ContextBudget, compactor: StableCompactor) -> None:  # NEW in v3: compactor
        super().__init__()
        self.agent, self.budget = agent, budget
        self.compactor = compactor  # NEW in v3: cache-stable compaction (stable.py)
        settings = agent.config.summarization
        self.summary_model = (get_model(settings.model_name, timeout_seconds=agent.config.timeout_seconds)
                              if settings.model_name else None)  # else the run's own model summarizes

    def summarize(self, messages: Sequence[AnyMessage]) -> SummaryOutcome:
        """When the context is nearly full: archive the older messages, and a summary takes their place."""
        agent = self.agent
        if agent.config.compaction.enabled:  # NEW in v3: cache-stable compaction takes the place of v2's summary
            step = self.compactor.maybe_compact(messages)
            return SummaryOutcome(step.messages, step.changed, step.reason or "compacted", step.tokens_before,
                                  step.tokens_after)
        return maybe_summarize(messages, self.summary_model or agent.model, archive=agent.archive,
                               config=agent.config.summarization, counter=agent.counter,
                               budget_tokens=self.budget.tokens, fixed_tokens=self.budget.fixed_tokens,
                               fallback_model=agent.model if self.summary_model else None, log=agent.log,
                               calibration=self.budget.calibration.token_factor)

    def before_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        """Step 1, before each model call: summarize with archive if a trigger is met."""
        if self.budget.summaries_paused:  # a summarizer that just failed waits a few calls (resilience.py)
            return None
        outcome = self.summarize(state["messages"])
        if not outcome.summarized:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *outcome.messages]}  # the new history

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Step 2, after each tool call: a large result goes to scratch/, a short preview stays in its place."""
        result = handler(request)
        if not isinstance(result, ToolMessage) or not isinstance(result.content, str):
            return result
        call, agent = request.tool_call, self.agent
        content = maybe_offload(result.content, call["name"], call.get("args"),
                                scratch_dir=agent.workspace.conversation_scratch_dir, config=agent.config.offload,
                                encoding=agent.counter.encoding_name, log=agent.log)
        return result if content == result.content else result.model_copy(update={"content": content})
