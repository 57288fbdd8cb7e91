"""The yardstick: the least any agent could send and still answer each request of a task, the same for every agent.

An agent's input is compared with one number per task, computed from the task alone (never
from a run), so every agent on that task is divided by the same thing. Per step (user turn):

- **what every call of the step carries**: the system prompt (flawedcode's, ``prompts/system.md``),
  the schemas of the tools the step needs and no others, in their shortest form (v3's one-line
  descriptions, ``context/loadout.py``), the goal (the task's first step, once) and the request;
- **which tools a step needs**: its ``uses`` list, and ``chartbook_load_data`` for a step with a
  ``figures`` check (``Step.tools_needed``); a step that names none needs no tool;
- **the parts of the results the answer needs**: what the step's checks require the reply to
  state, and nothing more: every figure of a ``figures`` check, computed from the full data
  (``checks.expected_figures``: dates, and per column mean, min and max with their dates,
  latest), written as one compact line; the text of each ``contains`` check (a planted fact
  at its recall); a ``regex``, ``has_number`` or ``file_exists`` check adds nothing;
- **calls**: a step that needs a tool takes two calls (one asks for the tool, one answers
  with its result: the second also carries the tool call, with empty arguments, and the
  needed parts as its result); a step that needs none takes one call (the needed parts,
  such as a fact to recall, carried as one message). Each call ends with the 3 tokens
  that prime the reply. Summary calls add nothing: an agent at the yardstick never needs one.

Counted with the same exact counter as every agent's calls (``TokenCounter``). The yardstick of
a task is the sum over its steps; a run that failed at step k is compared with the sum up to
and including step k (``reached_tokens``). It is a lower bound: no agent that answers every
request can send less (``tests/test_bench_yardstick.py`` runs agents against it).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.bench.checks import expected_figures
from flawedcode.bench.tasks import Figures, Step, Task
from flawedcode.config import AgentConfig
from flawedcode.context.loadout import compact_tools
from flawedcode.tokens import REPLY_PRIMING_TOKENS, TokenCounter
from flawedcode.tools import TOOL_SPECS, Workspace, make_tools

TOOL_CALL_ID = "call_0"
"""The id of the yardstick's own tool call (the shortest an API accepts is no shorter in tokens)."""


@dataclass(frozen=True)
class Yardstick:
    """One task's yardstick: per step, the least that step's calls could send."""

    task: str
    steps: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return sum(self.steps)

    def reached_tokens(self, failed_step: int | None) -> int:
        """The yardstick of the steps a run reached (all of them, unless it failed at ``failed_step``)."""
        return self.tokens if failed_step is None else sum(self.steps[: failed_step + 1])


def task_yardstick(task: Task) -> Yardstick:
    """The task's yardstick (computed once per task: the same ``Task`` gives the same object)."""
    return _yardstick(task.model_dump_json(exclude_none=True))


@lru_cache(maxsize=64)
def _yardstick(task_json: str) -> Yardstick:
    task = Task.model_validate_json(task_json)
    counter, schemas = TokenCounter(), tool_schema_tokens()
    system = counter.count_system(AgentConfig().system_prompt)
    goal = counter.count_message(HumanMessage(task.goal_text))
    steps = []
    for step in task.all_steps():
        carried = system + counter.count_message(HumanMessage(step.say)) + (0 if step.say == task.goal_text else goal)
        steps.append(step_tokens(step, carried, schemas, counter))
    return Yardstick(task.name, tuple(steps))


def step_tokens(step: Step, carried: int, schemas: dict[str, int], counter: TokenCounter) -> int:
    """One step's least: one call without a tool, two with (module docstring)."""
    tools = step.tools_needed()
    unknown = [name for name in tools if name not in schemas]
    if unknown:
        raise ValueError(f"step {step.say!r} uses {unknown[0]!r}, which is no tool; tools: {', '.join(schemas)}")
    needed = needed_parts(step)
    if not tools:
        parts = counter.count_message(HumanMessage(needed)) if needed else 0
        return carried + parts + REPLY_PRIMING_TOKENS
    first = carried + sum(schemas[name] for name in tools) + REPLY_PRIMING_TOKENS
    call = AIMessage(content="", tool_calls=[{"name": name, "args": {}, "id": TOOL_CALL_ID} for name in tools])
    result = ToolMessage(content=needed, tool_call_id=TOOL_CALL_ID)
    return first + first + counter.count_message(call) + counter.count_message(result)


def needed_parts(step: Step) -> str:
    """What the step's checks require the reply to state, as one compact text."""
    parts = [figures_line(check.figures) for check in step.checks if check.figures is not None]
    parts += [check.contains for check in step.checks if check.contains]
    return "\n".join(parts)


def figures_line(wanted: Figures) -> str:
    """Every expected figure of a load, compactly: ``x/y 2024-11-18..2024-12-31; sofr mean 4.5403 min 4.31 2024-12-19 ...``."""
    items = expected_figures(wanted)
    span = "..".join(item.dates[0] for item in items if item.column is None)
    by_column: dict[str, list[str]] = {}
    for item in items:
        if item.column is not None:
            statistic = item.label.removeprefix(f"{item.column} ")
            by_column.setdefault(item.column, []).append(
                item.dates[0] if item.value is None else f"{statistic} {item.value:.4f}".rstrip("0").rstrip("."))
    return f"{wanted.dataframe} {span}".strip() + "".join(f"; {column} {' '.join(parts)}" for column, parts in by_column.items())


@lru_cache(maxsize=1)
def tool_schema_tokens() -> dict[str, int]:
    """Every tool's schema in its shortest form (one-line description), in tokens."""
    counter = TokenCounter()
    with tempfile.TemporaryDirectory(prefix="flawedcode-yardstick-") as folder:
        workspace = Workspace.create(Path(folder) / "project", scratch_dir=Path(folder) / "scratch",
                                     archive_dir=Path(folder) / "archives")
        tools = compact_tools(make_tools(workspace))
        counts = {tool.name: counter.count_tool(tool) for tool in tools}
    return {name: count for name, count in counts.items() if name in TOOL_SPECS}
