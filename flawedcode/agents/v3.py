"""v3: a ReAct loop with tools, memory, and the production context techniques of 2026.

Unlike v2, v3 keeps its context small *and* cheap to send again (rules in ``flawedcode.context``):

- cache-stable compaction (``stable.py``): the request is a layered prefix that only
  grows at its end (system prompt + memory, compact tool schemas, the pinned goal, then
  summary blocks and one-line digests of old turns, each appended once and never
  rewritten); answered tool results are cleared in batches worth a cache break; the
  rare consolidating summary is asked on the previous request's exact prefix, so a
  provider's prompt cache serves it;
- a plan that survives (``todos.py``): ``write_todos`` keeps a todo list outside the
  messages; whenever compaction takes it out of view it comes back as a short reminder;
  a finished item is never undone;
- isolated sub-agents (``subagents.py``): ``task(description)`` runs a child (a v2 agent)
  with its own context, budget, turn limit and trigger; the parent gets at most 300
  tokens and the path of the child's archived transcript;
- budgeted memory (``memory.py``): ``save_memory`` keeps facts in memory.md; every
  conversation starts with them, within 500 tokens, corrections first;
- a lean loadout (``loadout.py``): one-line tool descriptions; search_archive joins
  once something is archived, the file tools when ``load_tools('files')`` asks.

v2's offloading, recovery and guards are kept as they are; v2's summarize step is
replaced by v3's compaction (v2's summary stays the guards' last resort).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AnyMessage
from langchain_core.tools import BaseTool

from flawedcode.agents.common import BaseAgent
from flawedcode.agents.v2 import AgentV2, ManageContext
from flawedcode.config import ContextSize, V2Config, V3Config
from flawedcode.context import ContextBudget, SummaryOutcome, with_guards
from flawedcode.context.loadout import LayeredPrefixMiddleware, RequestPrefix, compact_tools, make_load_tools_tool
from flawedcode.context.memory import MemoryStore, make_save_memory_tool
from flawedcode.context.stable import StableCompactor
from flawedcode.context.subagents import SubagentRunner, make_task_tool
from flawedcode.context.todos import TodoList, make_write_todos_tool


class AgentV3(AgentV2):
    """A tool-using agent that plans, delegates, remembers across conversations, and stays cache-friendly."""

    version = "v3"
    config_class = V3Config  # NEW in v3: V3Config adds the compaction, subagents, memory and loadout blocks

    def prepare(self) -> None:
        super().prepare()
        self.todos = TodoList()  # NEW in v3: the plan, kept outside the messages
        memory_file = Path(self.config.memory.path) if self.config.memory.path else self.workspace.archive_dir / "memory.md"
        self.memory = MemoryStore(memory_file, self.config.memory.budget_tokens, self.counter)  # NEW in v3
        self.subagents = SubagentRunner(self.make_child, self.archive, self.log, self.counter, self.config.subagents)

    def build_tools(self) -> list[BaseTool]:
        tools = [*super().build_tools(), make_write_todos_tool(self.todos), make_task_tool(self.subagents)]  # NEW in v3
        if self.config.memory.enabled:
            tools.append(make_save_memory_tool(self.memory))  # NEW in v3
        tools = compact_tools(tools) if self.config.loadout.compact_schemas else tools  # NEW in v3: lean schemas
        self.prefix = RequestPrefix(self.config.system_prompt, tools, self.archive, self.counter,  # NEW in v3
                                    memory=self.memory if self.config.memory.enabled else None, loadout=self.config.loadout)
        return [*tools, self.prefix.add_tool(make_load_tools_tool(self.prefix))]

    def build_middleware(self) -> list[AgentMiddleware]:
        self.fixed_tokens = self.prefix.fixed_tokens()  # NEW in v3: the prefix decides what leads each request
        budget = ContextBudget(self.budget_tokens, self.fixed_tokens, self.config.summarization, self.log, self.calibration)
        self.compactor = StableCompactor(  # NEW in v3: clear, digest, consolidate from cache, keep the plan in view
            self.model, self.archive, self.config.compaction, self.counter, self.budget_tokens,
            system_text=self.prefix.system_text, tools=self.prefix.active_tools, todos=self.todos, log=self.log,
            on_boundary=lambda: self.at_boundary(budget))
        lesson = PlanAndCompact(self, budget)  # NEW in v3: v3's compaction in place of v2's summarize step
        guards = with_guards(lesson, archive=self.archive, counter=self.counter, budget=budget, log=self.log, model=self.model)
        return [*guards, LayeredPrefixMiddleware(self.prefix)]  # NEW in v3: the same prefix for every call

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
        return AgentV2(child_model, workspace=self.workspace, config=config, conversation_id=conversation_id,
                       name=f"{self.log.agent_name}/sub-agent")

    def context_tokens(self) -> int:
        return self.prefix.fixed_tokens() + self.counter.count_messages(self.messages)

    def reset(self, conversation_id: str | None = None) -> None:
        super().reset(conversation_id)
        self.todos.items, self.todos.version = [], 0  # NEW in v3: a new conversation has no plan yet...
        self.prefix.reset(self.archive)  # ...but starts with the memory block, read again from memory.md

    def send(self, text: str) -> str:
        """Answer one request, with the managed conversation so far."""
        history = self.messages  # memory, as in v1; the wrappers keep it small and cache-stable
        return self.run_turn(history, text)


class PlanAndCompact(ManageContext):
    """NEW in v3: v2's two hooks, with v3's compaction before each model call (offloading stays v2's)."""

    def summarize(self, messages: Sequence[AnyMessage], force: bool = False) -> SummaryOutcome:
        if force:  # the server refused the request: v2's summary, the guards' last resort
            return super().summarize(messages, force=True)
        step = self.agent.compactor.maybe_compact(messages)
        return SummaryOutcome(step.messages, step.changed, step.reason or "compacted", step.tokens_before, step.tokens_after)
