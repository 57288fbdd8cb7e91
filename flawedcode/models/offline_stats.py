"""Statistics from rows in the context, or from a short script when the rows would not fit.

``parse_loaded_table`` reads a ``chartbook_load_data`` result (also put back together from read_file pages of
its copy in scratch/; never an offload stub) into a ``LoadedTable``. ``stat_script`` writes a run_python script
that reads the rows with ``Catalog.rows`` and prints one ``STATS {json}`` line of ``flawedcode.figures``
(the same function both paths use), which ``read_stat_output`` reads back.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from flawedcode.formats import LOAD_HEADER, STUB_PREFIX

ROWS_IN_CONTEXT_SHARE = 1 / 8
"""Above this share of the window, a statistic is computed by a script instead of loading the rows."""
TOKENS_PER_CELL = 5.5
READ_HEADER = re.compile(r"^# (?P<path>\S+) \(lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\)")
CONTINUATION = re.compile(r"^# \.\.\. (?P<more>\d+) more lines: read_file\(path='(?P<path>[^']+)', offset=(?P<offset>\d+)\)\s*$",
                          re.MULTILINE)
STUB_PATH = re.compile(rf"^{re.escape(STUB_PREFIX)}(?P<path>[^\s|\]]+)")
READ_BACK_PAGES = 20
"""How many pages of a copy in scratch/ are read back, when no script can compute its figures over the same rows."""
STATS_LINE = re.compile(r"^STATS (?P<json>\{.*\})\s*$", re.MULTILINE)


def offload_path(text: str) -> str | None:
    """The scratch/ path an offload stub names, or None if the text is not a stub."""
    match = STUB_PATH.match(text.lstrip())
    return match["path"] if match else None


@dataclass
class LoadedTable:
    key: str
    rows: int
    start: str
    end: str
    header: list[str]
    records: list[dict[str, str]]

    def numeric_columns(self) -> list[str]:
        return [column for column in self.header if column != "date" and self.values(column)]

    def values(self, column: str) -> list[tuple[str, float]]:
        """(date, value) pairs of a numeric column; empty if it is not numeric."""
        pairs: list[tuple[str, float]] = []
        for record in self.records:
            raw = (record.get(column) or "").strip()
            if not raw:
                continue
            try:
                value = float({"True": 1.0, "False": 0.0}.get(raw, raw))  # a flag column counts its set days
            except ValueError:
                return []
            if not math.isnan(value):
                pairs.append((record.get("date", ""), value))
        return pairs


def parse_loaded_table(text: str) -> LoadedTable | None:
    """The table in a chartbook_load_data result (or a whole read-back of its copy); never an offload stub or part of a table."""
    match = None if text.lstrip().startswith(STUB_PREFIX) else LOAD_HEADER.search(text)
    if match is None:
        return None
    body = itertools.takewhile(lambda line: not line.startswith("# "), text[match.end():].lstrip("\n").splitlines())
    reader = csv.DictReader(io.StringIO("\n".join(body)))
    records = [dict(row) for row in reader]
    if len(records) != int(match["rows"]):
        return None  # part of a table (a page of its copy): its figures would be figures of other rows
    return LoadedTable(key=match["key"], rows=int(match["rows"]), start=match["start"], end=match["end"],
                       header=list(reader.fieldnames or []), records=records)


def assemble_pages(contents: list[str]) -> tuple[str | None, int | None]:
    """Put read_file pages of one file back together: (whole text or None, offset of the next page or None)."""
    lines: dict[int, str] = {}
    total = next_offset = None
    for content in contents:
        if (header := READ_HEADER.match(content)) is None:
            continue
        total, body = int(header["n"]), content.splitlines()[1:]
        if more := CONTINUATION.search(content):  # the last line says where the next page starts
            body, next_offset = body[:-1], int(more["offset"])
        lines.update(enumerate(body, start=int(header["a"])))
    if total is None:
        return None, None
    missing = next((number for number in range(1, total + 1) if number not in lines), None)
    if missing is None:
        return "\n".join(lines[number] for number in range(1, total + 1)), None
    return None, (next_offset if next_offset is not None and next_offset + 1 >= missing else missing - 1)


# ----------------------------------------------------------------------------- the script


SCRIPT = '''\
# {title}: computed here so that the rows never enter the model's context.
import json

from flawedcode.catalog import Catalog
from flawedcode.figures import {imports}

catalog = Catalog({root})
{reads}
print("STATS " + json.dumps(figures({arguments})))
'''


def stat_script(title: str, series: list[tuple[str, str, str, str]], start: str | None, end: str | None,
                combine: str | None, last_rows: int | None, percentiles: list[int], threshold: tuple[str, float] | None,
                root: str | None, transform: str | None = None, flag: tuple[str, str, str, str, str] | None = None,
                by: tuple[str, str] | None = None) -> str:
    """A script computing the figures of ``series`` ((pipeline, dataframe, column, date column) each); ``flag``
    ('exclude' | 'only', pipeline, dataframe, flag column, its date column) leaves out (or keeps only) the days it marks;
    ``by`` (a month, quarter, week or year, and a statistic) adds that statistic of each one."""
    names = ["values", "other"][:len(series)]
    reads = [f"{name} = pairs(catalog.rows({pipeline!r}, {dataframe!r}, [{column!r}], start={start!r}, end={end!r}), "
             f"{column!r}{'' if date_column == 'date' else f', {date_column!r}'})"
             for name, (pipeline, dataframe, column, date_column) in zip(names, series)]
    if flag is not None:
        how, pipeline, dataframe, column, date_column = flag
        reads.append(f"marked = {{row[{date_column!r}] for row in catalog.rows({pipeline!r}, {dataframe!r}, [{column!r}], "
                     f"start={start!r}, end={end!r}) if row[{column!r}]}}")
        reads += [f"{name} = [pair for pair in {name} if pair[0] {'not in' if how == 'exclude' else 'in'} marked]" for name in names]
    imports = ["figures", "pairs"]
    if len(series) > 1:
        reads.append(f"values, other = combined(values, other, {combine!r})")
        imports.append("combined")
    if last_rows:
        reads.append(f"values, other = values[-{last_rows}:], other[-{last_rows}:] if other else None" if len(series) > 1
                     else f"values = values[-{last_rows}:]")
    if transform:
        reads.append(f"values = transformed(values, {transform!r})")
        imports.append("transformed")
    arguments = ["values"] + ([f"percentiles={list(percentiles)!r}"] if percentiles else [])
    arguments += [f"threshold={tuple(threshold)!r}"] if threshold is not None else []
    arguments += ["other=other"] if len(series) > 1 else []
    arguments += [f"by={tuple(by)!r}"] if by else []
    return SCRIPT.format(title=title, imports=", ".join(sorted(imports)), root=repr(root) if root else "",
                         reads="\n".join(reads), arguments=", ".join(arguments))


def read_stat_output(content: str) -> dict[str, Any] | None:
    """The ``STATS`` line a stat script printed, or None (the script failed or printed something else)."""
    match = STATS_LINE.search(content) if content.startswith("# exit code 0") else None
    try:
        return json.loads(match["json"]) if match else None
    except json.JSONDecodeError:
        return None
