"""One helper for the lessons: the lesson's model and a fresh agent, in one call.

Every lesson, the demo and the tests build agents the same way::

    from flawedcode.lessons import lesson_agent
    agent = lesson_agent("v1", model=MODEL)          # MODEL = "offline" or e.g. "openai:gpt-4o-mini"
    agent = lesson_agent("v2", config={"summarization": {"trigger": {"type": "fraction", "value": 0.5}}})

Rules:

- **The model.** ``"offline"`` (also ``None`` when ``FLAWEDCODE_MODEL`` is unset)
  is the teaching model with a window of exactly the budget and
  ``overflow="truncate"``: what does not fit in ``budget_tokens`` is forgotten,
  which is how lesson 1 loses its goal. Any other spec (``openai:gpt-4o-mini``,
  ``offline:16000``) goes to ``flawedcode.models.get_model`` unchanged; a
  ready chat model object is used as given (a copy of it, so that each agent's
  watcher hears only its own calls).
- **The budget** is ``LESSON_BUDGET`` (8,192 tokens) unless ``budget_tokens`` or
  the config says otherwise.
- **The config** is the version's own config class (``AgentConfig`` for v0 and
  v1, ``V2Config`` for v2), from an object, a dict of settings (validated as a
  YAML file would be), or its defaults.
- **The folder.** Each agent works in a fresh copy of the demo project under
  ``folder`` (a new temporary folder by default; never the repository), with
  ``folder/scratch`` and ``folder/archives`` shared by the agents of one folder.
  Its conversation id is its workspace's name (``v1``, then ``v1-2``, ...), so a
  lesson prints the same archive paths every time.
- **The watcher.** A ``ContextWatcher`` (``flawedcode.lab.window``) listens to the
  agent's model: ``agent.context_watcher.latest`` is what the model received at
  its latest call, and the session log gets a ``goal_lost`` event at the call
  where the first request left the model's window (the charts mark it).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from flawedcode.agents import AGENTS, BaseAgent
from flawedcode.config import AgentConfig, parse_config
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.lab.window import ContextWatcher
from flawedcode.models import OfflineModel, get_model
from flawedcode.tools import Workspace

LESSON_BUDGET = DEFAULT_BUDGET_TOKENS
OFFLINE = "offline"

ModelArgument = str | BaseChatModel | None
ConfigArgument = AgentConfig | Mapping[str, Any] | None


def model_spec(model: ModelArgument = None) -> str:
    """The spec a lesson runs on: the argument, else ``FLAWEDCODE_MODEL``, else ``offline``."""
    if isinstance(model, BaseChatModel):
        return getattr(model, "model_name", None) or type(model).__name__
    return (model or os.environ.get("FLAWEDCODE_MODEL") or OFFLINE).strip()


def is_offline(model: ModelArgument = None) -> bool:
    """True when the lesson runs on the offline teaching model."""
    return isinstance(model, OfflineModel) or model_spec(model).partition(":")[0] == OFFLINE


def lesson_model(model: ModelArgument = None, budget_tokens: int = LESSON_BUDGET) -> BaseChatModel:
    """The offline model with a window equal to the budget, or the model ``model`` names (or is)."""
    if isinstance(model, BaseChatModel):
        return model.model_copy()
    spec = model_spec(model)
    if spec == OFFLINE:
        return OfflineModel(max_input_tokens=budget_tokens, overflow="truncate")
    return get_model(spec)


def lesson_folder(name: str = "lesson") -> Path:
    """A new temporary folder for one lesson's workspaces, scratch/ and archives/."""
    return Path(tempfile.mkdtemp(prefix=f"flawedcode-{_safe(name)}-"))


def lesson_config(version: str, config: ConfigArgument = None, budget_tokens: int | None = None) -> AgentConfig:
    """The version's config: the given object, or a dict of settings over the defaults; ``budget_tokens`` wins."""
    config_class = _agent_class(version).config_class
    if isinstance(config, AgentConfig):
        chosen = config if isinstance(config, config_class) else parse_config(config.model_dump(), config_class, "config")
    else:
        chosen = parse_config(dict(config or {}), config_class, source="config")
    if budget_tokens is not None and chosen.budget_tokens != budget_tokens:
        chosen = chosen.model_copy(update={"budget_tokens": budget_tokens})
    return chosen


def lesson_agent(version: str = "v1", *, model: ModelArgument = None, budget_tokens: int | None = None,
                 config: ConfigArgument = None, folder: str | Path | None = None, name: str | None = None,
                 goal: str | None = None, watch: bool = True) -> BaseAgent:
    """A fresh ``version`` agent for a lesson (the rules are in this module's docstring).

    ``name`` labels the agent in charts and tables (default: the version); ``goal``
    is the text the watcher looks for (default: the conversation's first request).
    """
    agent_class = _agent_class(version)
    chosen = lesson_config(version, config, budget_tokens)
    window = chosen.budget_tokens or LESSON_BUDGET
    workspace_root = _fresh_subfolder(Path(folder) if folder is not None else lesson_folder(version), name or version)
    workspace = Workspace.create(workspace_root, workspace_root.parent / "scratch", workspace_root.parent / "archives")
    agent = agent_class(lesson_model(model, window), workspace=workspace, config=chosen,
                        conversation_id=workspace_root.name, name=name or version)
    agent.context_watcher = ContextWatcher.attach(agent, goal) if watch else None
    return agent


def _agent_class(version: str) -> type[BaseAgent]:
    try:
        return AGENTS[version]
    except KeyError:
        raise ValueError(f"Unknown agent {version!r}; choose one of: {', '.join(AGENTS)}") from None


def _fresh_subfolder(folder: Path, name: str) -> Path:
    """``folder/name``, or ``name-2``, ``name-3``... when taken."""
    base, number = _safe(name), 1
    candidate = folder / base
    while candidate.exists():
        number += 1
        candidate = folder / f"{base}-{number}"
    return candidate


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "agent"


# --- lesson 4: a bench task on an agent you built, and a table that fits a projector -----------
def run_task(task: Any, agent: BaseAgent) -> dict[str, Any]:
    """Run one benchmark task's steps on ``agent``; its checks and goal probes, as the bench scores them.

    Returns ``{"task", "agent", "success", "checks", "goal_probes", "totals"}``. Unlike the
    bench, which builds its own agents, this runs *your* agent (any config you gave it).
    """
    from flawedcode.bench import evaluate_step, goal_kept

    checks, probes = [], []
    for number, step in enumerate(task.all_steps()):
        reply = agent.send(step.say)
        checks += [result.to_dict() for result in evaluate_step(step.checks, reply, agent.workspace.root, number)]
        if step.probe == "goal":
            probes.append({"step": number, "kept": goal_kept(reply, task.goal_text)})
    success = all(check["passed"] for check in checks) and all(probe["kept"] for probe in probes)
    return {"task": task.name, "agent": agent.log.agent_name, "success": success, "checks": checks,
            "goal_probes": probes, "totals": agent.log.totals()}


PROJECTOR_COLUMNS: tuple[tuple[str, str], ...] = (
    ("success", "success_rate"), ("goal kept", "goal_retention"), ("tokens per success", "tokens_per_success"),
    ("peak context", "peak_context_tokens"), ("calls over budget", "calls_over_budget"),
)


def projector_table(summary: Mapping[str, Any], columns: Sequence[tuple[str, str]] = PROJECTOR_COLUMNS) -> str:
    """A narrow Markdown table (agent + a few columns) from a benchmark ``summary.json``."""
    rows = ["| agent | " + " | ".join(title for title, _ in columns) + " |", "|---" + "|---:" * len(columns) + "|"]
    for agent, metrics in summary.get("agents", {}).items():
        rows.append(f"| {agent} | " + " | ".join(_cell(key, metrics.get(key)) for _, key in columns) + " |")
    return "\n".join(rows)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key.endswith(("_rate", "_retention")):
        return f"{100 * value:.0f}%"
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


__all__ = [
    "LESSON_BUDGET", "PROJECTOR_COLUMNS", "is_offline", "lesson_agent", "lesson_config", "lesson_folder",
    "lesson_model", "model_spec", "projector_table", "run_task",
]
