"""Statistics the offline model computes, from loaded rows or with a short ``run_python`` script.

Rows in the context. A ``chartbook_load_data`` result (``# pipeline/dataframe: n rows x
k columns, a to b`` then CSV), also read back from its offloaded copy in scratch/
(``read_file`` pages are put back together by their ``(lines a-b of n)`` headers), is parsed
into a ``LoadedTable``. An offload stub is never a table, even though its preview quotes
a few rows: ``parse_loaded_table`` refuses any text that starts with the stub prefix.

Rows that would not fit. When the rows a statistic needs would take more than
``ROWS_IN_CONTEXT_SHARE`` of the window (about 5.5 tokens per cell), the model writes a
script instead (``stat_script``): it loads the same rows with ``flawedcode.catalog`` in
the run_python process, computes the figures with pandas and prints one line
``STATS {json}``, which ``read_stat_output`` reads back. Only that line enters the context.

The figures (``STATS``): ``mean``, ``median``, ``min`` / ``max`` (with their dates),
``std`` (sample), ``count``, ``latest`` / ``first`` (with dates), ``change`` (latest
minus first), ``pNN`` (linear percentile), ``corr`` (Pearson, two series) and counts
above / below a threshold. Both paths compute the same figures the same way.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from flawedcode.formats import LOAD_HEADER, STUB_PREFIX

ROWS_IN_CONTEXT_SHARE = 1 / 8
"""Above this share of the window, a statistic is computed by a script instead of loading the rows."""
TOKENS_PER_CELL = 5.5
OPERATORS = {"above": ">", "below": "<", "at or above": ">=", "at or below": "<="}
"""A count's side and the comparison it means ('not above 5.3' is 'at or below')."""
PAST = {"above": lambda value, limit: value > limit, "below": lambda value, limit: value < limit,
        "at or above": lambda value, limit: value >= limit, "at or below": lambda value, limit: value <= limit}
RANKED = 10
"""How many of the largest and smallest values (with their dates) the figures keep: 'top 3' shows the first 3."""
STAT_KEYS = ("mean", "median", "min", "max", "std", "count", "latest", "first", "change")

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
                value = float(raw)
            except ValueError:
                return []
            if not math.isnan(value):
                pairs.append((record.get("date", ""), value))
        return pairs


def parse_loaded_table(text: str) -> LoadedTable | None:
    """The table in a chartbook_load_data result (or a whole read-back of its copy); never an offload stub or part of a table."""
    if text.lstrip().startswith(STUB_PREFIX):
        return None
    match = LOAD_HEADER.search(text)
    if match is None:
        return None
    body_lines: list[str] = []
    for line in text[match.end():].lstrip("\n").splitlines():
        if line.startswith("# "):
            break
        body_lines.append(line)
    reader = csv.DictReader(io.StringIO("\n".join(body_lines)))
    records = [dict(row) for row in reader]
    if len(records) != int(match["rows"]):
        return None  # part of a table (a page of its copy): its figures would be figures of other rows
    return LoadedTable(key=match["key"], rows=int(match["rows"]), start=match["start"], end=match["end"],
                       header=list(reader.fieldnames or []), records=records)


def assemble_pages(contents: list[str]) -> tuple[str | None, int | None]:
    """Put read_file pages of one file back together: (whole text or None, offset of the next page or None)."""
    lines: dict[int, str] = {}
    total = None
    next_offset = None
    for content in contents:
        header = READ_HEADER.match(content)
        if header is None:
            continue
        total = int(header["n"])
        body = content.splitlines()[1:]
        more = CONTINUATION.search(content)
        if more:
            body = body[:-1]
            next_offset = int(more["offset"])
        for number, line in enumerate(body, start=int(header["a"])):
            lines[number] = line
    if total is None:
        return None, None
    if all(number in lines for number in range(1, total + 1)):
        return "\n".join(lines[number] for number in range(1, total + 1)), None
    missing = next(number for number in range(1, total + 1) if number not in lines)
    return None, (next_offset if next_offset is not None and next_offset + 1 >= missing else missing - 1)


# ----------------------------------------------------------------------------- the figures


def figures(pairs: list[tuple[str, float]], percentiles: list[int] = (), threshold: tuple[str, float] | None = None,
            other: list[tuple[str, float]] | None = None) -> dict[str, Any]:
    """Every figure of a series of (date, value) pairs, as ``STATS`` has them."""
    values = [value for _, value in pairs]
    if not values:
        return {"count": 0}
    low = min(pairs, key=lambda pair: pair[1])
    high = max(pairs, key=lambda pair: pair[1])
    out: dict[str, Any] = {
        "count": len(values), "first_date": pairs[0][0], "last_date": pairs[-1][0],
        "mean": statistics.fmean(values), "median": statistics.median(values),
        "min": low[1], "min_date": low[0], "max": high[1], "max_date": high[0],
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "latest": values[-1], "first": values[0], "change": values[-1] - values[0],
    }
    if values[0]:
        out["pct_change"] = (values[-1] / values[0] - 1) * 100
    for q in percentiles:
        out[f"p{q}"] = percentile(values, q)
    ordered = sorted(pairs, key=lambda pair: pair[1])
    out["top"], out["bottom"] = [list(pair) for pair in ordered[::-1][:RANKED]], [list(pair) for pair in ordered[:RANKED]]
    if threshold is not None:
        side, limit = threshold
        past = [date for date, value in pairs if PAST[side](value, limit)]
        out[side] = len(past)
        if past:
            out["first_when"] = past[0]
    if other is not None and len(other) == len(values) and len(values) > 1:
        try:
            out["corr"] = statistics.correlation(values, [value for _, value in other])
        except statistics.StatisticsError:
            pass
    return out


def transformed(pairs: list[tuple[str, float]], transform: str | None) -> list[tuple[str, float]]:
    """Daily changes ('diff': each value minus the one before) or percent changes ('pct'), dated by the later day."""
    if transform == "diff":
        return [(date, value - before) for (_, before), (date, value) in zip(pairs, pairs[1:])]
    if transform == "pct":
        return [(date, (value / before - 1) * 100) for (_, before), (date, value) in zip(pairs, pairs[1:]) if before]
    return pairs


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's and pandas' default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def aligned(first: list[tuple[str, float]], second: list[tuple[str, float]]) -> tuple[list, list]:
    """The two series on the dates both have, in date order."""
    lookup = dict(second)
    shared = [(date, value) for date, value in first if date in lookup]
    return shared, [(date, lookup[date]) for date, _ in shared]


# ----------------------------------------------------------------------------- the script


SCRIPT = '''\
# {title}: computed here so that the rows never enter the model's context.
import json

from flawedcode.catalog import Catalog

catalog = Catalog({root})
{loads}
rows = {merge}
{tail}values = {values}
out = {{"count": int(values.count()), "first_date": str(rows["date"][values.index[0]])[:10], "last_date": str(rows["date"].iloc[-1])[:10]}}
out.update(mean=values.mean(), median=values.median(), min=values.min(), max=values.max(), std=values.std(),
           latest=values.iloc[-1], first=values.iloc[0], change=values.iloc[-1] - values.iloc[0],
           min_date=str(rows["date"][values.idxmin()])[:10], max_date=str(rows["date"][values.idxmax()])[:10])
out["pct_change"] = (out["latest"] / out["first"] - 1) * 100 if out["first"] else None
{extra}out = {{key: (value if isinstance(value, (str, list)) else float(value)) for key, value in out.items() if value is not None}}
print("STATS " + json.dumps(out))
'''


def stat_script(title: str, series: list[tuple[str, str, str, str]], start: str | None, end: str | None,
                combine: str | None, last_rows: int | None, percentiles: list[int], threshold: tuple[str, float] | None,
                root: str | None, transform: str | None = None) -> str:
    """A short script computing the figures of ``series`` ((pipeline, dataframe, column, date column) each)."""
    loads = []
    for index, (pipeline, dataframe, column, date_column) in enumerate(series):
        loads.append(f"s{index} = catalog.load({pipeline!r}, {dataframe!r}, columns=[{column!r}], start={start!r}, "
                     f"end={end!r}).rename(columns={{{date_column!r}: 'date', {column!r}: 'v{index}'}})")
    merge = "s0" if len(series) == 1 else "s0.merge(s1, on='date')"
    values = {"difference": "rows['v0'] - rows['v1']", "ratio": "rows['v0'] / rows['v1']"}.get(combine or "", "rows['v0']")
    values += {"diff": ".diff().dropna()", "pct": ".pct_change().dropna() * 100"}.get(transform or "", "")
    extra = "".join(f"out['p{q}'] = values.quantile({q / 100!r})\n" for q in percentiles)
    extra += (f"out['top'] = [[str(rows['date'][i])[:10], float(v)] for i, v in values.nlargest({RANKED}).items()]\n"
              f"out['bottom'] = [[str(rows['date'][i])[:10], float(v)] for i, v in values.nsmallest({RANKED}).items()]\n")
    if threshold is not None:
        side, limit = threshold
        extra += (f"past = values[values {OPERATORS[side]} {limit!r}]\nout[{side!r}] = int(past.count())\n"
                  "out['first_when'] = str(rows['date'][past.index[0]])[:10] if len(past) else None\n")
    if combine == "correlation":
        extra += "out['corr'] = rows['v0'].corr(rows['v1'])\n"
    tail = f"rows = rows.tail({last_rows}).reset_index(drop=True)\n" if last_rows else ""
    return SCRIPT.format(title=title, root=repr(root) if root else "", loads="\n".join(loads), merge=merge, tail=tail,
                         values=values, extra=extra)


def read_stat_output(content: str) -> dict[str, Any] | None:
    """The ``STATS`` line a stat script printed, or None (the script failed or printed something else)."""
    if not content.startswith("# exit code 0"):
        return None
    match = STATS_LINE.search(content)
    if match is None:
        return None
    try:
        return json.loads(match["json"])
    except json.JSONDecodeError:
        return None
