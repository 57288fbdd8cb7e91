"""The versioned agents. Read them in order; each file's diff from the last is the lesson.

| version | adds | context strategy |
| --- | --- | --- |
| v0 (``v0.py``) | ReAct loop, tools | none: every turn starts fresh |
| v1 (``v1.py``) | conversation memory | unbounded accumulation |
| v2 (``v2.py``) | offload + summarize-with-archive + recovery | active management |
| v3 (``v3.py``) | cache-stable compaction, a plan, sub-agents, memory, lean loadout | the 2026 production techniques |

``make_agent("v2", model="offline")`` builds one by name.
"""

from __future__ import annotations

from typing import Any

from flawedcode.agents.common import AgentError, BaseAgent, reply_text
from flawedcode.agents.v0 import AgentV0
from flawedcode.agents.v1 import AgentV1
from flawedcode.agents.v2 import AgentV2
from flawedcode.agents.v3 import AgentV3

AGENTS: dict[str, type[BaseAgent]] = {"v0": AgentV0, "v1": AgentV1, "v2": AgentV2, "v3": AgentV3}


def make_agent(version: str, **kwargs: Any) -> BaseAgent:
    """Build the agent named ``version`` ('v0', 'v1', 'v2' or 'v3'); kwargs go to its constructor."""
    try:
        return AGENTS[version](**kwargs)
    except KeyError:
        raise ValueError(f"Unknown agent {version!r}; choose one of: {', '.join(AGENTS)}") from None


__all__ = ["AGENTS", "AgentError", "AgentV0", "AgentV1", "AgentV2", "AgentV3", "BaseAgent", "make_agent", "reply_text"]
