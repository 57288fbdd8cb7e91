"""v0: a ReAct loop with tools, and no memory.

The model reads the request, calls tools, reads their results and answers
(Thought -> Action -> Observation, Yao et al. 2023). That loop is LangChain's
``create_agent``; the plumbing is in ``common.py``.

What v0 lacks is memory: every user turn starts from an empty history, so
"what did you just read?" has no answer. Diff this file against ``v1.py``.
"""

from __future__ import annotations

from flawedcode.agents.common import BaseAgent
from flawedcode.config import AgentConfig


class AgentV0(BaseAgent):
    """A tool-using agent that forgets everything between turns."""

    version = "v0"
    config_class = AgentConfig

    def send(self, text: str) -> str:
        """Answer one request, starting from nothing."""
        history = []  # no memory: each turn starts fresh
        return self.run_turn(history, text)
