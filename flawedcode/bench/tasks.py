"""Benchmark tasks are data: YAML files of scripted user turns with declarative checks.

A task file holds ``tasks:``, a list of tasks (or a single task mapping)::

    tasks:
      - name: sofr_average
        category: multi_step          # any name; the built-in ones: file_ops, multi_step, chartbook, goal_retention, long_session
        description: Load SOFR and report its average rate.
        goal: Load SOFR data          # what a goal-retention answer must contain (default: the first step)
        facts: ["4.8944"]             # strings planted early whose retention is measured at the end
        expected: {v0: ..., v1: ..., v2: ...}   # free text for the report
        steps:
          - List ChartBook dataframes             # a plain string is a step without checks
          - say: Load SOFR data and report the average rate
            checks:
              - has_number: {min: 3.0, max: 6.0}
              - contains: money_markets/sofr
          - say: What was my original goal?
            probe: goal                           # passes when the reply contains the goal
        repeat: ...                               # see below

Check kinds (each a one-key mapping; text checks are case-insensitive):

- ``{contains: "text"}`` / ``{not_contains: "text"}``: the reply has / lacks the text;
- ``{regex: "pattern"}``: the pattern is found in the reply (the ``regex`` package, which
  reads Python's ``re`` syntax, with a time limit of ``REGEX_SECONDS``: a pattern that
  backtracks without end fails its check instead of hanging the benchmark);
- ``{has_number: true}`` or ``{has_number: {min: 4.0, max: 6.0}}``: the reply
  states a number (one within the range, when given);
- ``{file_exists: "path"}``: the path exists in the run's workspace;
- ``{figures: {dataframe: "money_markets/sofr", rows: 50, columns: [rate]}}``: the reply
  states what a load of the last ``rows`` rows holds, computed from the full data (never
  from a preview): the first and last date, and per column its ``statistics`` (default
  mean, min with its date, max with its date, latest), each to the four decimals the
  tool prints (``checks.py``); without ``columns``, only the first and last date. Its
  result also says how complete the reply was (``score``).

A step may name the tools its request needs (``uses: [chartbook_get_docs]``; a step
with a ``figures`` check uses ``chartbook_load_data`` without saying so): the benchmark's
yardstick (``yardstick.py``) counts their schemas and nothing else.

A step with ``probe: goal`` is a goal-retention probe: it passes when the reply
contains the task's goal. ``probe: fact`` marks a planted-fact probe (give it a
``contains`` check for the fact).

Long sessions need not be typed out: ``cycle`` expands a list of steps (phrasings,
or steps with their checks) into many turns (see ``expand_cycle``)::

    cycle: {turns: 50, steps: ["Get docs for sofr", {say: "Load 30 rows of EFFR data", checks: [...]}],
            goal_probe_every: 10}

A malformed file fails with one line naming the file, the task and the field:
``tasks.yaml: task 'sofr_average', steps[2].checks[0]: unknown check 'contain';
expected one of contains, regex, has_number, file_exists, not_contains``.

Values are checked for meaning: a task name is safe as a file name (letters, digits,
``_ . -``, not starting with ``.``, at most 64 characters; the runner names transcript
files after it); a task has at most ``MAX_TASK_TURNS`` turns; ``has_number``'s ``min`` is
not above its ``max``; numbers are numbers (``turns: true`` or ``turns: 1e12`` is refused);
an error quotes at most a short prefix of a bad value. The YAML rules of
``flawedcode.config.read_yaml_file`` apply (no alias bombs, no duplicate keys, UTF-8).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flawedcode.config import brief_repr, read_yaml_file, shorten

CHECK_KINDS = ("contains", "regex", "has_number", "file_exists", "not_contains", "figures")
STATISTICS = ("mean", "min", "max", "latest")
"""What a ``figures`` check can ask a reply to state of each column (min and max with their dates)."""
CATEGORIES = ("file_ops", "multi_step", "chartbook", "goal_retention", "long_session")
GOAL_QUESTION = "What was my original goal?"
MAX_TASK_TURNS = 5_000
"""Most user turns in one task (listed steps, the expanded cycle and the closing steps together)."""
TASK_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
REGEX_SECONDS = 1.0
"""Time limit for one regex check on one reply."""
REGEX_SECONDS_PER_REPLY = 2.0
"""Time limit for all the regex checks of one step together (40 slow checks cost 2 s, not 40)."""
MAX_REGEX_CHARS = 1_000
"""Longest pattern a regex check may have."""
MAX_REGEX_UNROLLED = 100_000
"""Most atoms a pattern may unroll to once its counted repetitions are expanded (``((a{100}){100}){100}`` is 10^6)."""
COUNTED_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def unrolled_size(pattern: str) -> int:
    """About how many atoms ``pattern`` unrolls to when its counted repetitions are expanded (nested ones multiply).

    A plain scan, the same for every regex dialect: escapes and character classes are one atom, a group is the
    sum of its parts, ``X{m,n}`` is n times X (``{m,}``: m times). An upper bound: alternatives are added.
    """
    totals, last, index = [0], 0, 0
    while index < len(pattern):
        char, counted = pattern[index], COUNTED_REPEAT.match(pattern, index)
        if counted:
            count = min(int(counted[2] or counted[1]), MAX_REGEX_UNROLLED + 1)
            totals[-1] += last * (count - 1)
            last, index = last * count, counted.end()
            continue
        if char == "(":
            totals.append(0)
            index += 1
            continue
        if char == ")" and len(totals) > 1:
            last = totals.pop()
            totals[-1] += last
            index += 1
            continue
        index = _atom_end(pattern, index)
        last = 1
        totals[-1] += 1
    return sum(totals)


def _atom_end(pattern: str, index: int) -> int:
    """Where the atom starting at ``index`` ends: past an escape's next character, or a character class's ``]``."""
    if pattern[index] == "\\":
        return index + 2
    if pattern[index] != "[":
        return index + 1
    index += 2 if pattern[index + 1:index + 2] == "^" else 1
    index += 1 if pattern[index:index + 1] == "]" else 0  # a ] first in a class is a literal
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index + 1


class TaskFileError(ValueError):
    """A task file is malformed; the message names the file, the task and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # strict: true is not 1, nor 1e12 a whole number of turns


class NumberRange(_Strict):
    """Bounds for ``has_number``: some number in the reply lies within [min, max]."""

    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _ordered(self) -> NumberRange:
        if any(bound is not None and math.isnan(bound) for bound in (self.min, self.max)):
            raise ValueError("min and max must be numbers, not NaN")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is above max ({self.max:g}); no number could pass")
        return self


class Figures(_Strict):
    """What a load of the last ``rows`` rows of ``columns`` holds, which the reply must state (``figures`` check)."""

    dataframe: str = Field(min_length=3, description="pipeline/dataframe, as the catalog names it.")
    rows: int = Field(gt=0, le=100_000, description="The load's last N rows (the tool's `limit`).")
    columns: list[str] = Field(default_factory=list, description="The columns whose figures the reply must state (none: only the dates).")
    statistics: list[Literal["mean", "min", "max", "latest"]] = Field(default_factory=lambda: list(STATISTICS),
                                                                       description="Per column, these figures.")
    dates: bool = Field(True, description="Also the first and last date loaded, and the dates of min and max.")


class Check(_Strict):
    """One declarative success check on a step's reply (exactly one kind is set)."""

    contains: str | None = None
    regex: str | None = None
    has_number: bool | NumberRange | None = None
    file_exists: str | None = None
    not_contains: str | None = None
    figures: Figures | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_known_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"a check is a one-key mapping such as {{contains: \"text\"}}; found {brief_repr(data)}")
        unknown = [key for key in data if key not in CHECK_KINDS]
        if unknown:
            raise ValueError(f"unknown check {brief_repr(unknown[0])}; expected one of {', '.join(CHECK_KINDS)}")
        if len(data) != 1:
            raise ValueError(f"a check has exactly one kind; found {', '.join(data) or 'none'}")
        return data

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            if len(value) > MAX_REGEX_CHARS:
                raise ValueError(f"the pattern has {len(value):,} characters; a check may have at most {MAX_REGEX_CHARS:,}")
            if (size := unrolled_size(value)) > MAX_REGEX_UNROLLED:
                raise ValueError(f"the pattern's counted repetitions ({{m}}, {{m,n}}) unroll to about {size:,} atoms; "
                                 f"at most {MAX_REGEX_UNROLLED:,} (compiling it could take gigabytes): use + or * instead")
            try:
                regex.compile(value, flags=regex.IGNORECASE)
            except regex.error as error:
                raise ValueError(f"not a valid regular expression ({error})") from None
        return value

    @property
    def kind(self) -> str:
        return next(kind for kind in CHECK_KINDS if getattr(self, kind) is not None)

    @property
    def expected(self) -> Any:
        value = getattr(self, self.kind)
        return value.model_dump() if isinstance(value, NumberRange | Figures) else value

    def describe(self) -> str:
        return f"{self.kind}: {self.expected!r}"


class Step(_Strict):
    """One user turn, its checks, and whether it probes the goal or a planted fact."""

    say: str = Field(min_length=1, description="The user's message for this turn.")
    checks: list[Check] = Field(default_factory=list, description="All must pass for the task to succeed.")
    probe: Literal["goal", "fact"] | None = Field(None, description="goal: reply must contain the task's goal.")
    new_conversation: bool = Field(False, description="Start a new conversation before this step (the REPL's clear; v3's memory.md stays).")
    uses: list[str] = Field(default_factory=list, description="The tools this request needs (the yardstick counts their schemas).")

    def tools_needed(self) -> list[str]:
        """``uses``, and chartbook_load_data for a step with a ``figures`` check."""
        implied = ["chartbook_load_data"] if any(check.figures is not None for check in self.checks) else []
        return list(dict.fromkeys([*self.uses, *implied]))


class Cycle(_Strict):
    """A long session written compactly: ``turns`` turns cycling through ``steps``."""

    @field_validator("steps", mode="before")
    @classmethod
    def _strings_are_steps(cls, value: Any) -> Any:
        return _as_steps(value)

    turns: int = Field(gt=0, le=MAX_TASK_TURNS, description="How many turns the cycle adds.")
    steps: list[Step] = Field(min_length=1, description="Steps (a phrasing, or a step with checks) used in turn, round-robin.")
    goal_probe_every: int | None = Field(None, gt=0, description="Every N-th turn asks 'What was my original goal?'.")


class Task(_Strict):
    """One benchmark task."""

    name: str = Field(pattern=TASK_NAME_PATTERN, description="Unique id (used in file names): letters, digits, _ . - (not first: .)")
    category: str = Field(min_length=1, max_length=64, description="Any name; results are grouped by it (built-in: CATEGORIES).")
    description: str = ""
    steps: list[Step] = Field(min_length=1)
    cycle: Cycle | None = Field(None, description="Turns added after the listed steps; closing steps follow.")
    closing_steps: list[Step] = Field(default_factory=list, description="Steps after the cycle.")
    goal: str | None = Field(None, description="Text a goal answer must contain; default: the first step.")
    facts: list[str] = Field(default_factory=list, description="Strings planted early; retention measured at the end.")
    expected: dict[str, str] = Field(default_factory=dict, description="Expected behaviour per agent, for the report.")

    @field_validator("steps", "closing_steps", mode="before")
    @classmethod
    def _strings_are_steps(cls, value: Any) -> Any:
        return _as_steps(value)

    @model_validator(mode="after")
    def _bounded_turns(self) -> Task:
        turns = len(self.steps) + (self.cycle.turns if self.cycle else 0) + len(self.closing_steps)
        if turns > MAX_TASK_TURNS:
            raise ValueError(f"the task has {turns:,} turns; at most {MAX_TASK_TURNS:,} are allowed")
        return self

    @property
    def goal_text(self) -> str:
        return self.goal or self.steps[0].say

    def all_steps(self) -> list[Step]:
        """Every turn in order: the listed steps, the expanded cycle, the closing steps."""
        return [*self.steps, *expand_cycle(self.cycle), *self.closing_steps]


def _as_steps(value: Any) -> Any:
    """A plain string in a list of steps is a step without checks."""
    if isinstance(value, list):
        return [{"say": item} if isinstance(item, str) else item for item in value]
    return value


def expand_cycle(cycle: Cycle | None) -> Iterator[Step]:
    """Turn a ``Cycle`` into steps; every ``goal_probe_every``-th turn is a goal probe."""
    if cycle is None:
        return
    phrasings = iter(_round_robin(cycle.steps))
    for turn in range(1, cycle.turns + 1):
        if cycle.goal_probe_every and turn % cycle.goal_probe_every == 0:
            yield Step(say=GOAL_QUESTION, probe="goal")
        else:
            yield next(phrasings).model_copy(deep=True)


def _round_robin(items: list[Step]) -> Iterator[Step]:
    while True:
        yield from items


# --- loading ----------------------------------------------------------------------

def builtin_tasks_dir() -> Path:
    return Path(str(resources.files("flawedcode.bench") / "tasks"))


def builtin_task_files() -> list[Path]:
    """The built-in suite's files, in the course's order (file_ops.yaml first, long_session.yaml last)."""
    order = {category: position for position, category in enumerate(CATEGORIES)}
    return sorted(builtin_tasks_dir().glob("*.yaml"), key=lambda path: (order.get(path.stem, len(order)), path.name))


def load_task_file(path: str | Path) -> list[Task]:
    """Read and validate one YAML task file; raise ``TaskFileError`` with file, task and field."""
    return parse_tasks(read_yaml_file(path, TaskFileError, "task file"), source=Path(path).name)


def parse_tasks(data: Any, source: str = "tasks") -> list[Task]:
    """Validate already-parsed YAML (``{tasks: [...]}``, a list, or one task mapping)."""
    if isinstance(data, dict) and "tasks" in data:
        data = data["tasks"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise TaskFileError(f"{source}: expected 'tasks:' with a list of tasks; found {type(data).__name__}")
    if len(data) > MAX_TASK_TURNS:
        raise TaskFileError(f"{source}: {len(data):,} tasks; at most {MAX_TASK_TURNS:,} are allowed in one file")
    tasks: list[Task] = []
    for position, item in enumerate(data):
        label = _task_label(item, position)
        if not isinstance(item, dict):
            raise TaskFileError(f"{source}: {label}: expected a mapping with name, category and steps")
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as error:
            raise TaskFileError(f"{source}: {label}, {_describe(error)}") from None
    _reject_duplicates(tasks, source)
    return tasks


def load_tasks(task_names: list[str] | None = None, tasks_file: str | Path | None = None) -> list[Task]:
    """The built-in suite (or ``tasks_file``), optionally only the named tasks, in file order."""
    files = [Path(tasks_file)] if tasks_file else builtin_task_files()
    tasks = [task for file in files for task in load_task_file(file)]
    _reject_duplicates(tasks, str(tasks_file or builtin_tasks_dir()))
    if not task_names:
        return tasks
    by_name = {task.name: task for task in tasks}
    unknown = [name for name in task_names if name not in by_name]
    if unknown:
        raise TaskFileError(f"unknown task {brief_repr(unknown[0])}; choose from: {', '.join(by_name)}")
    return [by_name[name] for name in task_names]


def _task_label(item: Any, position: int) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"task {brief_repr(name)}" if isinstance(name, str) else f"task #{position + 1}"


def _describe(error: ValidationError) -> str:
    errors = error.errors()
    first = next((item for item in errors if item["type"] == "value_error"), errors[0])  # ours say the most
    location = ""
    for part in first["loc"]:
        if isinstance(part, int):
            location += f"[{part}]"
        elif part in ("bool", "NumberRange") or str(part).startswith("function-"):  # pydantic's own names: noise
            continue
        else:
            part = shorten(str(part))
            location += f".{part}" if location else part
    message = first["msg"].removeprefix("Value error, ")
    if message.startswith("Input should be "):
        message = f"expected {message.removeprefix('Input should be ')}; found {brief_repr(first.get('input'))}"
    if first["type"] == "extra_forbidden":
        message = "unknown field (check its spelling and indentation)"
    elif first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "string_pattern_mismatch" and location == "name":
        message = ("a task name is used in file names: letters, digits, _ . - only, not starting with '.', "
                   f"at most 64 characters; found {brief_repr(first.get('input'))}")
    return f"{location or '(top level)'}: {message}"


def _reject_duplicates(tasks: list[Task], source: str) -> None:
    seen: set[str] = set()
    for task in tasks:
        if task.name in seen:
            raise TaskFileError(f"{source}: task {task.name!r}, name: used by more than one task")
        seen.add(task.name)
