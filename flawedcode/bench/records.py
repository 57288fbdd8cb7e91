"""One home for run records: the typed line of ``runs.jsonl``, and reading and appending that file safely.

The runner writes one ``RunRecord`` per run; scoring reads them back. Neither
imports the other: both import this module.

A ``RunRecord`` (one JSON object per line)::

    agent, task, category, run, model, budget_tokens   which run this was
    success, checks, error, failed_step                 how it went (error: one line, or null)
    replies       each step's reply as the user saw it, in order (a summary later never changes them)
    yardstick_tokens   the task's yardstick over the steps this run reached (yardstick.py: the same for every agent)
    probes        one ``ProbeRecord`` per probe step and item (the goal, or each planted fact)
    facts         planted facts at the end: in_context (the final history), in_archive (recoverable files)
    totals        SessionLog.totals(): every model call (agent, summary, internal)
    turns, fixed_tokens, summary_tokens, masks, wrapper_seconds, wrapper_seconds_per_turn, seconds
    settings      the agent's effective settings;  transcript   path of its transcript, relative to out_dir

``ProbeRecord``: at a probe step (``probe: goal`` or ``probe: fact``), for the
goal text or each planted fact: ``in_context`` (present verbatim in the
messages the model received on the first call of that step, cut to the model's
window), ``recoverable`` (present in the run's scratch/ and archive files at
that moment) and ``answered`` (the reply contains it; depends on the model).
A probe step the run never reached (it failed earlier) is recorded with
``reached: false`` and counts as a miss: an agent does not score by stopping.

Reading ``runs.jsonl`` (``read_runs``) never raises on bad content:

- a last line without its newline that does not parse is a write cut short by
  a crash: it is dropped (and reported); its run is not done, so it is redone;
- any other line that is not a JSON object naming ``agent`` (text), ``task``
  (text) and ``run`` (a whole number), e.g. ``null``, ``{}``, ``[1]`` or broken
  JSON, is reported in one line (file and line number) and skipped;
- when a run appears twice, the last line wins.

Before appending, ``end_cleanly`` cuts a partial last line away (or closes a
whole one with its newline), so a new record is never glued onto it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

RUNS_FILE = "runs.jsonl"
ProbeKind = Literal["goal", "fact"]


@dataclass(frozen=True)
class RunKey:
    agent: str
    task: str
    run: int


@dataclass
class ProbeRecord:
    """One item (the goal, or one planted fact) at one probe step."""

    step: int
    kind: ProbeKind
    text: str
    in_context: bool
    recoverable: bool
    answered: bool
    reached: bool = True  # False: the run failed before this step (counted as a miss)


@dataclass
class RunRecord:
    """One run of one task by one agent (one line of runs.jsonl)."""

    agent: str
    task: str
    run: int
    category: str = ""
    model: str = ""
    budget_tokens: int | None = None
    success: bool = False
    error: str | None = None
    failed_step: int | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    yardstick_tokens: int | None = None
    probes: list[ProbeRecord] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    fixed_tokens: int = 0
    summary_tokens: int = 0
    masks: int = 0
    wrapper_seconds: float = 0.0
    wrapper_seconds_per_turn: list[float] = field(default_factory=list)
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)
    transcript: str = ""

    @property
    def key(self) -> RunKey:
        return RunKey(self.agent, self.task, self.run)

    def probes_of(self, kind: ProbeKind) -> list[ProbeRecord]:
        return [probe for probe in self.probes if probe.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_line(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> RunRecord:
        """Validate one decoded line; ``ValueError`` says what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object; found {_json_type(data)}")
        for name, kind in (("agent", str), ("task", str), ("run", int)):
            value = data.get(name)
            if not isinstance(value, kind) or isinstance(value, bool) or value == "":
                raise ValueError(f"'{name}' must be {'a whole number' if kind is int else 'text'}; found {value!r}")
        known = {item.name for item in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        try:
            values["probes"] = [ProbeRecord(**probe) for probe in data.get("probes") or []]
            record = cls(**values)
        except TypeError as error:
            raise ValueError(f"a field has the wrong shape ({error})") from None
        if not isinstance(record.totals, dict) or not isinstance(record.checks, list) or not isinstance(record.facts, list):
            raise ValueError("'totals' must be an object; 'checks' and 'facts' lists")
        return record


def _json_type(value: Any) -> str:
    names = {type(None): "null", list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


@dataclass
class RunsFile:
    """What ``read_runs`` found: the records (last line wins) and one line per problem."""

    records: list[RunRecord]
    problems: list[str]
    partial_last_line: bool = False

    @property
    def lines_skipped(self) -> int:
        return len(self.problems)


def runs_path(out_dir: str | Path) -> Path:
    return Path(out_dir) / RUNS_FILE


def read_runs(out_dir: str | Path) -> RunsFile:
    """Every valid record in out_dir/runs.jsonl (the last one wins when a run repeats), and the problems seen."""
    path = runs_path(out_dir)
    if not path.exists():
        return RunsFile([], [])
    data = path.read_bytes()
    lines = data.split(b"\n")
    ends_cleanly = data.endswith(b"\n") or not data
    latest: dict[RunKey, RunRecord] = {}
    problems: list[str] = []
    partial = False
    for number, raw in enumerate(lines, start=1):
        last = number == len(lines)
        if not raw.strip():
            continue
        try:
            record = RunRecord.from_dict(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
            if last and not ends_cleanly:
                partial = True
                problems.append(f"{path}: line {number} was cut short (an interrupted write); dropped, its run will be redone")
            else:
                problems.append(f"{path}: line {number} skipped: {_describe(error)}")
            continue
        latest[record.key] = record
    return RunsFile(list(latest.values()), problems, partial)


def _describe(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error.msg} at column {error.colno})"
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(error)


def end_cleanly(out_dir: str | Path) -> bool:
    """Make runs.jsonl end with a newline before appending: a partial last line is cut away (True), a whole one closed."""
    path = runs_path(out_dir)
    if not path.exists():
        return False
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    start = data.rfind(b"\n") + 1
    try:
        RunRecord.from_dict(json.loads(data[start:].decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
        with path.open("r+b") as stream:
            stream.truncate(start)
        return True
    with path.open("ab") as stream:  # a whole record that only lacks its newline
        stream.write(b"\n")
    return False


def append_run(out_dir: str | Path, record: RunRecord) -> None:
    """Append one record as one line, flushed to disk (call ``end_cleanly`` once before the first)."""
    with runs_path(out_dir).open("a", encoding="utf-8") as stream:
        stream.write(record.to_line())
        stream.flush()
        os.fsync(stream.fileno())


def completed_runs(runs: RunsFile) -> set[RunKey]:
    """Runs recorded without an error (a failed run is run again)."""
    return {record.key for record in runs.records if not record.error}
