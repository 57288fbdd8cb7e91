"""A student's agent, ready for the benchmark: v2 that summarizes earlier and keeps less.

Unlike v2 (summary at 60% of the budget, keep 10%), this agent summarizes at half
the budget and keeps 5% of it verbatim. Benchmark it exactly like v2::

    flawedcode bench --agents v2,docs/examples/my_agent.py:EarlySummaryAgent --tasks goal_long --runs 1

Its ``version`` is the name its row goes by in every table; it must not be a
built-in agent's name (v0-v3, or a peer's): the benchmark refuses one that is.
Any ``flawedcode.agents.BaseAgent`` subclass works the same way; copy this file
and change what you want to try.
"""

from __future__ import annotations

from typing import Any

from flawedcode.agents import AgentV2
from flawedcode.config import ContextSize, SummarizationConfig, V2Config


class EarlySummaryAgent(AgentV2):
    """v2, summarizing at 50% of the budget and keeping 5%."""

    version = "student-early-summary"

    def __init__(self, model: Any = None, *, config: V2Config | None = None, **kwargs: Any) -> None:
        earlier = SummarizationConfig(trigger=[ContextSize(type="fraction", value=0.5)],
                                      keep=ContextSize(type="fraction", value=0.05))
        config = (config or V2Config()).model_copy(update={"summarization": earlier})
        super().__init__(model, config=config, **kwargs)
