"""The versioned agents. Read them in order; each file's diff from the last is the lesson.

| version | adds | context strategy |
| --- | --- | --- |
| v0 (``v0.py``) | ReAct loop, tools | none: every turn starts fresh |
| v1 (``v1.py``) | conversation memory | unbounded accumulation |
| v2 (``v2.py``) | offload + summarize-with-archive + recovery | active management |
| v3 (``v3.py``) | cache-stable compaction, a plan, sub-agents, memory, lean loadout | the 2026 production techniques |

``make_agent("v2", model="offline")`` builds one by name. The versions (and LangChain's agent machinery
under them, most of a second) are imported on first use, by ``make_agent`` or any name below, as
``flawedcode.lab`` does with its widgets: ``import flawedcode.agents`` and the command line start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flawedcode.agents.common import AgentError, BaseAgent, reply_text
    from flawedcode.agents.v0 import AgentV0
    from flawedcode.agents.v1 import AgentV1
    from flawedcode.agents.v2 import AgentV2
    from flawedcode.agents.v3 import AgentV3

def agent_classes() -> dict[str, type[BaseAgent]]:
    """``AGENTS``: the agent class of each version, imported the first time it is asked for."""
    from flawedcode.agents.v0 import AgentV0
    from flawedcode.agents.v1 import AgentV1
    from flawedcode.agents.v2 import AgentV2
    from flawedcode.agents.v3 import AgentV3

    return globals().setdefault("AGENTS", {"v0": AgentV0, "v1": AgentV1, "v2": AgentV2, "v3": AgentV3})


def make_agent(version: str, **kwargs: Any) -> BaseAgent:
    """Build the agent named ``version`` ('v0', 'v1', 'v2' or 'v3'); kwargs go to its constructor."""
    agents = agent_classes()
    try:
        return agents[version](**kwargs)
    except KeyError:
        raise ValueError(f"Unknown agent {version!r}; choose one of: {', '.join(agents)}") from None


def __getattr__(name: str) -> Any:  # PEP 562: asked only for a name this module has not defined (yet)
    if name == "AGENTS":
        return agent_classes()
    if name in ("AgentV0", "AgentV1", "AgentV2", "AgentV3"):
        return {agent.__name__: agent for agent in agent_classes().values()}[name]
    if name in ("AgentError", "BaseAgent", "reply_text"):
        from flawedcode.agents import common

        return getattr(common, name)
    raise AttributeError(f"module 'flawedcode.agents' has no attribute {name!r}")


__all__ = ["AGENTS", "AgentError", "AgentV0", "AgentV1", "AgentV2", "AgentV3", "BaseAgent", "agent_classes",
           "make_agent", "reply_text"]
