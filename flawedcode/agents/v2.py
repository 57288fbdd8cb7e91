"""v2: a ReAct loop with tools, memory, and active context management.

Unlike v1, v2 manages what stays in the context (rules in ``flawedcode.context``):

- offload: a tool result over 5,000 characters (or 1,250 tokens: numeric tables
  are dense) is saved to scratch/ and a short typed preview stays in its place;
- summarize with archive: when the context reaches 60% of the budget, older
  messages are archived under archives/ and replaced by a summary that names
  the archive file and repeats the user's original goal verbatim;
- recover: a ``search_archive`` tool, and ``read_file`` on scratch/ and archives/,
  bring a lost detail back.

The two steps are the two hooks of ``ManageContext`` below: ``maybe_summarize``
before each model call, ``maybe_offload`` after each tool call. ``ManageContext`` is
one middleware in the agent's list; what can go wrong beside it (a failing
summarizer, a server that refuses the request or has a smaller window, a read-back
that would not fit, an interrupted tool call) is handled by guards before and after
it in that list (``flawedcode/context/resilience.py``), added in one line.
"""

from __future__ import annotations

# NEW in v2: what the lesson's two hooks are made of (LangChain's middleware, messages and tools)
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AnyMessage, RemoveMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.agents.common import BaseAgent
from flawedcode.config import V2Config
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
from flawedcode.models import get_model  # NEW in v2: an optional separate summary model
from flawedcode.tools import make_tools


class AgentV2(BaseAgent):
    """A tool-using agent that remembers, and keeps its context within budget."""

    version = "v2"
    config_class = V2Config  # NEW in v2: V2Config adds the offload and summarization blocks

    def prepare(self) -> None:
        # NEW in v2: one archive per conversation: summaries write it, search_archive reads it
        self.archive = ConversationArchive(self.workspace.archive_dir, self.conversation_id)

    def build_tools(self) -> list[BaseTool]:
        return [*make_tools(self.workspace), make_search_archive_tool(self.archive)]  # NEW in v2: search_archive

    def build_middleware(self) -> list[AgentMiddleware]:
        # NEW in v2: the budget the wrappers manage to, and the lesson's two steps
        budget = ContextBudget(self.budget_tokens, self.fixed_tokens, self.config.summarization, self.log, self.calibration)
        lesson = ManageContext(self, budget)
        # NEW in v2: the lesson in the list, the guards beside it (repair, back-off, compaction, overflow retry, read-back paging)
        return [*with_guards(lesson, archive=self.archive, counter=self.counter, budget=budget, log=self.log, model=self.model,
                             summary_model=lesson.summary_model),
                *budget_guards(budget, counter=self.counter, log=self.log, scratch_dir=lambda: self.workspace.conversation_scratch_dir,
                               config=self.config.offload)]  # NEW in v2: never over the budget (context/budget_guard.py)

    def reset(self, conversation_id: str | None = None) -> None:
        super().reset(conversation_id)
        self.archive.restart(self.conversation_id)  # NEW in v2: a new conversation gets its own archive

    def send(self, text: str) -> str:
        """Answer one request, with the managed conversation so far."""
        history = self.messages  # memory, as in v1 (NEW in v2: the wrappers keep it within budget)
        return self.run_turn(history, text)


class ManageContext(AgentMiddleware):
    """NEW in v2: the lesson as two LangChain hooks over two plain functions."""

    def __init__(self, agent: AgentV2, budget: ContextBudget) -> None:
        super().__init__()
        self.agent, self.budget = agent, budget
        settings = agent.config.summarization
        self.summary_model = (get_model(settings.model_name, timeout_seconds=agent.config.timeout_seconds)
                              if settings.model_name else None)  # else the run's own model summarizes

    def summarize(self, messages: Sequence[AnyMessage]) -> SummaryOutcome:
        """When the context is nearly full: archive the older messages, and a summary takes their place."""
        agent = self.agent
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
