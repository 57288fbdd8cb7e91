"""v1: a ReAct loop with tools, and conversation memory that grows without bound.

Unlike v0, v1 sends the whole conversation back with every request, so it can
answer "what did you just read?". Nothing ever leaves: every tool result stays
in the context until the window fills, the earliest messages (the user's goal
among them) fall out, and the agent loses track. That is context rot.
Diff this file against ``v2.py`` to see the cure.
"""

from __future__ import annotations

from flawedcode.agents.common import BaseAgent
from flawedcode.config import AgentConfig


class AgentV1(BaseAgent):
    """A tool-using agent that remembers everything, forever."""

    version = "v1"
    config_class = AgentConfig

    def send(self, text: str) -> str:
        """Answer one request, with the whole conversation so far."""
        history = self.messages  # memory: the whole history goes back in, every turn
        return self.run_turn(history, text)
