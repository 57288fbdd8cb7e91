"""The lesson's demo: the same six requests through v1 and v2, side by side.

``LESSON_STEPS`` is the session the course uses to show context rot: list the
catalog, read three large docs files and 50 rows of data, then ask "What was my
original goal?". On the offline model (``OfflineModel(max_input_tokens=budget,
overflow="truncate")``) v1's history outgrows the window, the first request
falls out of what the model sees, and v1 cannot say what the goal was. v2
offloads the largest result to scratch/, summarizes near its trigger (the
summary repeats the goal verbatim) and answers.

``run_demo(out_dir)`` runs both agents in fresh copies of the demo project,
with scratch/ and archives/ under ``out_dir``, and writes:

- ``context_chart.png``: the context chart of both sessions (see ``flawedcode.charts``);
- ``demo_logs.json``: both session logs (every call, every event, totals) and replies.

It returns a ``DemoResult`` whose ``report()`` is what ``flawedcode demo``
prints: each agent's answer to the goal question and a token table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from flawedcode.agents import AgentError, BaseAgent, make_agent
from flawedcode.charts import save_context_chart
from flawedcode.config import AgentConfig, V2Config
from flawedcode.models import ModelConfigError, ModelOptions, OfflineModel, ReplayChatModel
from flawedcode.paths import write_atomically
from flawedcode.telemetry import SessionLog
from flawedcode.tools import Workspace

LESSON_STEPS: tuple[str, ...] = (
    "List ChartBook dataframes",
    "Get docs for yield_curve/repo_public",
    "Now get docs for money_markets/sofr",
    "Load 50 rows of SOFR data",
    "Get docs for treasury_yields",
    "What was my original goal?",
)
GOAL_QUESTION = LESSON_STEPS[-1]
DEMO_AGENTS = ("v1", "v2")
CHART_NAME = "context_chart.png"
LOGS_NAME = "demo_logs.json"

TurnCallback = Callable[[int, str, str], None]


def run_session(agent: BaseAgent, steps: Sequence[str], on_turn: TurnCallback | None = None) -> list[str]:
    """Send each step to ``agent`` in order; returns the replies. ``on_turn(i, step, reply)`` after each."""
    replies = []
    for number, step in enumerate(steps):
        reply = agent.send(step)
        replies.append(reply)
        if on_turn is not None:
            on_turn(number, step, reply)
    return replies


@dataclass
class DemoResult:
    """What the demo produced: replies per agent, their logs, and the files written."""

    out_dir: Path
    model: str
    budget_tokens: int
    steps: list[str]
    replies: dict[str, list[str]]
    logs: dict[str, SessionLog]
    chart_path: Path
    logs_path: Path
    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def goal_answers(self) -> dict[str, str]:
        """Each agent's reply to the last step ("What was my original goal?")."""
        return {name: replies[-1] if replies else "" for name, replies in self.replies.items()}

    def token_rows(self) -> list[dict[str, Any]]:
        rows = []
        for name, log in self.logs.items():
            totals = log.totals()
            rows.append({"agent": name, "calls": totals["model_calls"], "peak context": totals["peak_context_tokens"],
                         "input tokens": totals["input_tokens"], "output tokens": totals["output_tokens"],
                         "calls over budget": totals["calls_over_budget"], "offloads": totals["offloads"],
                         "summaries": totals["summaries"]})
        return rows

    def token_table(self) -> str:
        """A Markdown table: per agent, calls, peak context, total tokens in/out, calls over budget, events."""
        rows = self.token_rows()
        headers = list(rows[0]) if rows else []
        cells = [[str(row["agent"])] + [f"{row[key]:,}" for key in headers[1:]] for row in rows]
        widths = [max(len(header), *(len(line[i]) for line in cells)) for i, header in enumerate(headers)]
        lines = ["| " + " | ".join(header.ljust(width) for header, width in zip(headers, widths)) + " |",
                 "|" + "|".join(("-" * (width + 1)) + ":" if i else "-" * (width + 2) for i, width in enumerate(widths)) + "|"]
        lines += ["| " + " | ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                                      for i, (cell, width) in enumerate(zip(line, widths))) + " |" for line in cells]
        return "\n".join(lines)

    def report(self) -> str:
        """What ``flawedcode demo`` prints."""
        lines = [f"The lesson's session ({len(self.steps)} requests) through {' and '.join(self.replies)}, "
                 f"model {self.model}, budget {self.budget_tokens:,} tokens.", "", f'Answers to "{GOAL_QUESTION}":']
        lines += [f"  {name}: {answer}" for name, answer in self.goal_answers.items()]
        for name, errors in self.errors.items():
            lines += [f"  ({name} had {len(errors)} failed turn(s): {errors[0]})"] if errors else []
        lines += ["", "Tokens per session:", self.token_table(), "",
                  f"Chart: {self.chart_path}", f"Logs:  {self.logs_path}"]
        return "\n".join(lines)


def demo_model(model_spec: str | ModelOptions | None, budget_tokens: int) -> Any:
    """The named model (``--model``, else ``FLAWEDCODE_MODEL``), else the offline model with a window equal
    to the budget (so v1 visibly forgets). A ModelOptions brings --timeout, --record and --window too."""
    options = ModelOptions.of(model_spec)
    return options.build(default=lambda: OfflineModel(max_input_tokens=budget_tokens, overflow="truncate"))


def describe_model(model: Any) -> str:
    """The model's name, and for a replay, which recording it plays."""
    if isinstance(model, ReplayChatModel):
        return f"{model.model_name} (replayed from {model.recording_path.name})"
    return str(getattr(model, "model_name", None) or "offline")


def build_demo_agents(out_dir: Path, model_spec: str | ModelOptions | None, budget_tokens: int,
                      config: V2Config | None = None) -> dict[str, BaseAgent]:
    """v1 and v2, each in a fresh copy of the demo project, sharing scratch/ and archives/ under out_dir.

    ``config`` (say, from ``--config``) is v2's; v1 takes the settings it shares with it. The budget wins over both.
    """
    v2_config = (config or V2Config()).model_copy(update={"budget_tokens": budget_tokens})
    configs = {"v2": v2_config, "v1": AgentConfig(**{name: getattr(v2_config, name) for name in AgentConfig.model_fields})}
    options = ModelOptions.of(model_spec)  # one for both agents: one recording, one replay
    agents = {}
    for version in DEMO_AGENTS:
        workspace = Workspace.create(out_dir / "workspaces" / version, scratch_dir=out_dir / "scratch",
                                     archive_dir=out_dir / "archives")
        agents[version] = make_agent(version, model=demo_model(options, budget_tokens), workspace=workspace,
                                     config=configs[version], name=version,
                                     conversation_id=options.conversation_id(version, workspace.archive_dir))
    return agents


def run_demo(out_dir: str | Path, model_spec: str | ModelOptions | None = None, budget_tokens: int = 8192,
             steps: Sequence[str] = LESSON_STEPS, progress: bool | None = None,
             config: V2Config | None = None) -> DemoResult:
    """Run the lesson through v1 and v2 (turn by turn, side by side); save the chart and the logs."""
    out_dir = Path(out_dir)
    _clear_previous_workspaces(out_dir)
    agents = build_demo_agents(out_dir, model_spec, budget_tokens, config)
    replies: dict[str, list[str]] = {name: [] for name in agents}
    errors: dict[str, list[str]] = {name: [] for name in agents}
    with tqdm(total=len(steps) * len(agents), desc="demo", unit="turn", disable=_progress_disabled(progress)) as bar:
        for step in steps:
            for name, agent in agents.items():
                replies[name].append(_send_or_note(agent, step, errors[name]))
                bar.update(1)
    logs = {name: agent.log for name, agent in agents.items()}
    model_name = (describe_model(next(iter(agents.values())).model) if ModelOptions.of(model_spec).resolved_spec()
                  else f"offline (window {budget_tokens:,})")
    chart_path = save_context_chart(list(logs.values()), out_dir / CHART_NAME,
                                    title=f"The lesson's session: v1 vs v2 (budget {budget_tokens:,} tokens)")
    result = DemoResult(out_dir, model_name, budget_tokens, list(steps), replies, logs, chart_path,
                        out_dir / LOGS_NAME, errors)
    _write_logs(result)
    return result


def _send_or_note(agent: BaseAgent, step: str, errors: list[str]) -> str:
    try:
        return agent.send(step)
    except AgentError as error:
        if isinstance(error.__cause__, ModelConfigError):  # e.g. a replay that left its recording: nothing to go on
            raise error.__cause__ from None
        errors.append(str(error))
        return f"[error] {error}"


def _progress_disabled(progress: bool | None) -> bool | None:
    return None if progress is None else not progress  # None: tqdm shows it only on a terminal


def _clear_previous_workspaces(out_dir: Path) -> None:
    """Workspace.create wants fresh folders; a rerun into the same out_dir replaces the old copies."""
    import shutil

    shutil.rmtree(out_dir / "workspaces", ignore_errors=True)


def _write_logs(result: DemoResult) -> None:
    payload = {
        "model": result.model, "budget_tokens": result.budget_tokens, "steps": result.steps,
        "agents": {name: {**log.to_dict(), "replies": result.replies[name], "errors": result.errors[name]}
                   for name, log in result.logs.items()},
    }
    result.logs_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(result.logs_path, json.dumps(payload, indent=2, default=str) + "\n")


__all__ = ["DemoResult", "LESSON_STEPS", "GOAL_QUESTION", "build_demo_agents", "run_demo", "run_session"]
