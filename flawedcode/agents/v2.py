"""v2: a ReAct loop with tools, memory, and active context management.

Unlike v1, v2 manages what stays in the context (rules in ``flawedcode.context``):

- offload: a tool result over 5,000 characters (or 1,250 tokens: numeric tables
  are dense) is saved to scratch/ and a short typed preview stays in its place;
- summarize with archive: when the context reaches 60% of the budget, older
  messages are archived under archives/ and replaced by a summary that names
  the archive file and repeats the user's original goal verbatim;
- recover: a ``search_archive`` tool, and ``read_file`` on scratch/ and archives/,
  bring a lost detail back;
- repair: a tool call left without a result is patched before the next call;
- read back in pages: reading scratch/ or archives/ returns a page that fits
  under the trigger, and says how to read the next one.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool

from flawedcode.agents.common import BaseAgent
from flawedcode.config import V2Config
from flawedcode.context import (  # NEW in v2
    ConversationArchive,
    OffloadMiddleware,
    ReadBackPagingMiddleware,
    RepairToolCallsMiddleware,
    SummarizeWithArchiveMiddleware,
    make_search_archive_tool,
)
from flawedcode.models import get_model  # NEW in v2: an optional separate summary model
from flawedcode.tools import make_tools


class AgentV2(BaseAgent):
    """A tool-using agent that remembers, and keeps its context within budget."""

    version = "v2"
    config_class = V2Config  # NEW in v2: V2Config adds the offload and summarization blocks

    def build_tools(self) -> list[BaseTool]:
        # NEW in v2: one archive per conversation, and a tool to search it
        self.archive = ConversationArchive(self.workspace.archive_dir, self.conversation_id)
        return [*make_tools(self.workspace), make_search_archive_tool(self.archive)]

    def build_middleware(self) -> list[AgentMiddleware]:
        # NEW in v2: the context wrappers, in the order they run before each model call
        summary_model = (get_model(self.config.summarization.model_name, timeout_seconds=self.config.timeout_seconds)
                         if self.config.summarization.model_name else None)
        summarize = SummarizeWithArchiveMiddleware(
            self.model, self.archive, self.config.summarization, self.counter,
            budget_tokens=self.budget_tokens, fixed_tokens=self.fixed_tokens, log=self.log,
            summary_model=summary_model,
        )
        if self.config.summarization.enabled:  # the chart's trigger line
            self.log.trigger_tokens = self.config.summarization.trigger_tokens(self.budget_tokens)
        return [
            RepairToolCallsMiddleware(self.log),
            summarize,
            OffloadMiddleware(self.config.offload, self.workspace, self.log, self.counter.encoding_name),
            ReadBackPagingMiddleware(self.log, self.counter, self.fixed_tokens),
        ]

    def reset(self, conversation_id: str | None = None) -> None:
        super().reset(conversation_id)
        self.archive.restart(self.conversation_id)  # NEW in v2: a new conversation gets its own archive

    def send(self, text: str) -> str:
        """Answer one request, with the managed conversation so far."""
        history = self.messages  # memory, as in v1; the wrappers keep it within budget
        return self.run_turn(history, text)
