"""The lesson's demo: the same six requests through v1 and v2, side by side.

``LESSON_STEPS`` is the session the course uses to show context rot: the first
request states a real goal (``LESSON_GOAL``: compare SOFR and EFFR in 2024) and
asks for the catalog; then three large docs files and 50 rows of data; then
"What was my original goal?", whose answer must give back that first request.
On the offline model (``OfflineModel(max_input_tokens=budget, overflow="truncate")``,
built by ``flawedcode.lessons.lesson_agent``) v1's history outgrows the window,
the first request falls out of what the model sees, and v1 cannot say what the
goal was. v2 offloads the largest result to scratch/, summarizes near its
trigger (the summary repeats the goal verbatim) and answers.

``run_demo(out_dir)`` runs both agents in fresh copies of the demo project,
with scratch/ and archives/ under ``out_dir``, and writes:

- ``context_chart.png``: the context chart of both sessions (see ``flawedcode.charts``);
- ``demo_logs.json``: both session logs (every call, every event, totals) and replies.

It returns a ``DemoResult`` whose ``report()`` is what ``flawedcode demo``
prints: the numbered requests, each agent's answer to the goal question, the
step at which an agent lost the goal (or what kept it), a token table, the
files written and a "Next:" line.

``out_dir`` is never cleared: the demo writes only its own files there (the two
above, ``workspaces/`` with the agents' copies of the project and their
``scratch/`` and ``archives/``, and a ``.flawedcode-demo`` marker). A rerun into a
folder the demo wrote (it has the marker, or an earlier demo's ``demo_logs.json``)
replaces its old ``workspaces/`` and files; a folder holding a ``context_chart.png``, ``demo_logs.json`` or
``workspaces`` the demo did not write is refused, as is one that cannot be written,
with one ``DemoOutputError`` line. Nothing is deleted before that check.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from flawedcode.agents import AgentError, BaseAgent
from flawedcode.config import AgentConfig, V2Config
from flawedcode.infra.redact import redact_data
from flawedcode.lessons import LESSON_BUDGET, lesson_agent
from flawedcode.models import ModelConfigError, ModelOptions, OfflineModel, ReplayChatModel
from flawedcode.paths import write_atomically
from flawedcode.telemetry import EventKind, SessionLog

LESSON_GOAL = ("My goal: compare the average SOFR and EFFR rates in 2024 and explain the spread between them. "
               "First, list the ChartBook dataframes.")
LESSON_STEPS: tuple[str, ...] = (
    LESSON_GOAL,
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
WORKSPACES_NAME = "workspaces"
MARKER_NAME = ".flawedcode-demo"
MARKER_TEXT = ("This folder holds the output of `flawedcode demo`. A rerun here replaces "
               f"{CHART_NAME}, {LOGS_NAME} and {WORKSPACES_NAME}/v1, {WORKSPACES_NAME}/v2; nothing else is deleted.\n")

GOAL_LOST_EVENT = EventKind.GOAL_LOST  # recorded by flawedcode.lab.window.ContextWatcher (lesson_agent attaches it)
NEXT_LINE = ("Next: open the lessons with `make lab` (notebooks/00_react_loop_v0.ipynb first), or talk to an agent "
             "yourself: `.venv/bin/flawedcode chat --agent v1`")

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

    def goal_lost_step(self, name: str) -> int | None:
        """The step at which ``name``'s first request first fell out of what its model received, or None."""
        log = self.logs.get(name)
        lost = [event.turn for event in log.events if event.kind == GOAL_LOST_EVENT] if log else []
        return min(lost) if lost else None

    def gave_goal_back(self, name: str) -> bool:
        """True when ``name``'s reply to the last step repeats the first request verbatim."""
        return bool(self.steps) and self.steps[0] in self.goal_answers.get(name, "")

    def outcome_lines(self) -> list[str]:
        """One line per agent: where it lost the goal, or what kept it (offloads, summaries), and whether it gave it back."""
        lines = []
        for name, log in self.logs.items():
            lost = self.goal_lost_step(name)
            kept = f"{_counted(log.count(EventKind.OFFLOAD), 'offload')}, {_counted(log.count(EventKind.SUMMARIZE), 'summary', 'summaries')}"
            answered = (f"it gave the goal back at step {len(self.steps)}" if self.gave_goal_back(name)
                        else f"its answer at step {len(self.steps)} does not repeat the goal")
            if lost is not None:
                lines.append(f"{name} lost the goal at step {lost}: request 1 no longer fit in what the model received; {answered}.")
            else:
                lines.append(f"{name} kept the goal in its context ({kept}); {answered}.")
        return lines

    def report(self) -> str:
        """What ``flawedcode demo`` prints: the numbered requests, the answers, where the goal was lost, the table, Next."""
        lines = [f"The lesson's session: {len(self.steps)} requests through {' and '.join(self.replies)}, "
                 f"model {self.model}, budget {self.budget_tokens:,} tokens."]
        lines += [f"  {number}. {step}" for number, step in enumerate(self.steps, start=1)]
        lines += ["", f'Answers to request {len(self.steps)}, "{self.steps[-1]}":' if self.steps else "Answers:"]
        lines += [f"  {name}: {answer}" for name, answer in self.goal_answers.items()]
        for name, errors in self.errors.items():
            lines += [f"  ({name} had {len(errors)} failed turn(s): {errors[0]})"] if errors else []
        lines += ["", *self.outcome_lines()]
        lines += ["", "Tokens per session:", self.token_table(), "",
                  f"Chart: {self.chart_path}", f"Logs:  {self.logs_path}", "", NEXT_LINE]
        return "\n".join(lines)


def _counted(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


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
    """v1 and v2 (``lesson_agent``), each in a fresh copy of the demo project under out_dir/workspaces.

    ``config`` (say, from ``--config``) is v2's; v1 takes the settings it shares with it. The budget wins over both.
    """
    v2_config = (config or V2Config()).model_copy(update={"budget_tokens": budget_tokens})
    configs = {"v2": v2_config, "v1": AgentConfig(**{name: getattr(v2_config, name) for name in AgentConfig.model_fields})}
    options = ModelOptions.of(model_spec)  # one for both agents: one recording, one replay
    return {version: lesson_agent(version, model=demo_model(options, budget_tokens), budget_tokens=budget_tokens,
                                  config=configs[version], folder=out_dir / "workspaces")
            for version in DEMO_AGENTS}


def run_demo(out_dir: str | Path, model_spec: str | ModelOptions | None = None, budget_tokens: int = LESSON_BUDGET,
             steps: Sequence[str] = LESSON_STEPS, progress: bool | None = None,
             config: V2Config | None = None) -> DemoResult:
    """Run the lesson through v1 and v2 (turn by turn, side by side); save the chart and the logs."""
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir)
    agents = build_demo_agents(out_dir, model_spec, budget_tokens, config)
    replies: dict[str, list[str]] = {name: [] for name in agents}
    errors: dict[str, list[str]] = {name: [] for name in agents}
    with tqdm(total=len(steps) * len(agents), desc="demo", unit="turn", disable=_progress_disabled(progress)) as bar:
        for step in steps:
            for name, agent in agents.items():
                replies[name].append(_send_or_note(agent, step, errors[name]))
                bar.update(1)
    logs = {name: agent.log for name, agent in agents.items()}
    spec = ModelOptions.of(model_spec).resolved_spec()
    model_name = (f"offline (window {budget_tokens:,})" if spec in (None, "offline")
                  else describe_model(next(iter(agents.values())).model))
    from flawedcode.charts import save_context_chart  # matplotlib is loaded only when a chart is drawn

    try:
        chart_path = save_context_chart(list(logs.values()), out_dir / CHART_NAME,
                                        title=f"The lesson's session: v1 vs v2 (budget {budget_tokens:,} tokens)")
        result = DemoResult(out_dir, model_name, budget_tokens, list(steps), replies, logs, chart_path,
                            out_dir / LOGS_NAME, errors)
        _write_logs(result)
    except OSError as error:
        raise DemoOutputError(f"--out {out_dir}: cannot write the demo's results ({error.strerror or error})") from None
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


class DemoOutputError(ValueError):
    """``out_dir`` cannot take the demo's results; the message says why in one line."""


def prepare_out_dir(out_dir: Path) -> None:
    """Make ``out_dir`` ready without touching what the demo did not write (rules in the module docstring)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DemoOutputError(f"--out {out_dir}: cannot create the folder ({error.strerror or error})") from None
    ours = written_by_demo(out_dir)
    if not ours:
        found = [name for name in (CHART_NAME, LOGS_NAME, WORKSPACES_NAME) if (out_dir / name).exists()]
        if found:
            raise DemoOutputError(f"--out {out_dir}: it already holds {', '.join(found)}, which flawedcode demo "
                                  "did not write; choose a new or empty folder")
    try:
        write_atomically(out_dir / MARKER_NAME, MARKER_TEXT)
        old = out_dir / WORKSPACES_NAME  # the agents' copies, scratch/ and archives/: all the demo's own
        if ours and old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)  # a rerun starts fresh, so it prints the same archive paths
    except OSError as error:
        raise DemoOutputError(f"--out {out_dir}: cannot write there ({error.strerror or error})") from None


def written_by_demo(out_dir: Path) -> bool:
    """True when ``out_dir`` holds the demo's marker, or the ``demo_logs.json`` of a demo run before the marker existed."""
    if (out_dir / MARKER_NAME).is_file():
        return True
    try:
        logs = json.loads((out_dir / LOGS_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(logs, dict) and {"model", "budget_tokens", "steps", "agents"} <= logs.keys()


def _write_logs(result: DemoResult) -> None:
    payload = {
        "model": result.model, "budget_tokens": result.budget_tokens, "steps": result.steps,
        "agents": {name: {**log.to_dict(), "replies": result.replies[name], "errors": result.errors[name]}
                   for name, log in result.logs.items()},
    }
    result.logs_path.parent.mkdir(parents=True, exist_ok=True)
    payload, _ = redact_data(json.loads(json.dumps(payload, default=str)))  # replies may repeat a secret
    write_atomically(result.logs_path, json.dumps(payload, indent=2) + "\n")


__all__ = ["DemoOutputError", "DemoResult", "LESSON_GOAL", "LESSON_STEPS", "GOAL_QUESTION", "build_demo_agents", "run_demo",
           "run_session"]
