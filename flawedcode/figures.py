"""The figures of a dated series, in plain Python: what the offline model states, from rows in its context or in a script.

``figures(pairs, percentiles, threshold, other)`` takes ``(date, value)`` pairs in date order and
returns the ``STATS`` dict: ``mean``, ``median``, ``min`` / ``max`` (with ``min_date`` /
``max_date``), ``std`` (sample), ``count``, ``latest`` / ``first`` (``first_date`` / ``last_date``),
``change`` (latest minus first), ``pct_change``, ``sum``, ``range`` (max minus min), ``iqr`` (75th minus
25th percentile), ``pNN`` (linear interpolation, numpy's and pandas'
default), ``top`` / ``bottom`` (the ``RANKED`` largest and smallest, earlier dates first on ties, as
pandas' ``nlargest``), the count past a ``threshold`` (``above``, ``below``, ``at or above``, ``at or
below``, or ``true`` for a flag column) with ``first_when``, and with ``other``: ``corr`` (Pearson),
``other_mean`` and ``mean_ratio`` (the mean over the mean of ``other``); with ``by`` (a ``month``,
``quarter``, ``week`` or ``year`` and a statistic): ``groups``, that statistic of each one, in date order.

``pairs(rows, column)`` makes the pairs from ``Catalog.rows`` (missing values dropped, a flag as 1.0 /
0.0); ``transformed`` gives daily changes (``diff``) or percent changes (``pct``); ``combined`` lines
two series up on the dates both have (a ``difference``, a ``ratio``, or both sides for a
``correlation``).

``main(spec, catalog)`` is what the teaching model's ``run_python`` scripts call (``models/teaching/answers.py``): it reads one
column of a parquet file (pyarrow), keeps the request's period (or its last or first N trading days, a daily change, a
condition), and prints one line, ``FIGURES {json}``: the days actually covered and how many values, each statistic the spec
names (from ``figures``, or a weighted, geometric or daily-compounded mean), and for a period with no row the nearest days
that have one.

Only the standard library: a ``run_python`` script that imports this (and reads its rows with
``Catalog.rows``, pyarrow without pandas) starts in about a quarter of a second, not half a second.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

RANKED = 10
"""How many of the largest and smallest values (with their dates) the figures keep: 'top 3' shows the first 3."""
TOLERANCE = 1e-9
"""How far apart two values may be and still be equal: a difference of two rates (5.38 - 5.33) carries float noise, and
'above 5 bp' must not count a spread of exactly 5 bp."""
PAST: dict[str, Callable[[float, float], bool]] = {
    "above": lambda value, limit: value > limit + TOLERANCE, "below": lambda value, limit: value < limit - TOLERANCE,
    "at or above": lambda value, limit: value >= limit - TOLERANCE, "at or below": lambda value, limit: value <= limit + TOLERANCE,
    "true": lambda value, limit: bool(value), "equal to": lambda value, limit: math.isclose(value, limit, abs_tol=TOLERANCE),
    "not equal to": lambda value, limit: not math.isclose(value, limit, abs_tol=TOLERANCE),
    "beyond": lambda value, limit: abs(value) > limit + TOLERANCE, "within": lambda value, limit: abs(value) <= limit + TOLERANCE,
}
"""A threshold's side and the comparison it means ('not above 5.3' is 'at or below'; 'true' counts a flag's days;
'beyond' and 'within' are either way: 'moved by more than 5 bp')."""

Pairs = list[tuple[str, float]]


def pairs(rows: list[dict[str, Any]], column: str, date_column: str = "date") -> Pairs:
    """``(date, value)`` of one column of ``Catalog.rows``: missing values (None, NaN) dropped, True/False as 1.0/0.0."""
    found: Pairs = []
    for row in rows:
        value = row.get(column)
        if value is None or isinstance(value, str):
            continue
        value = float(value)
        if not math.isnan(value):
            found.append((str(row[date_column])[:10], value))
    return found


def figures(values: Pairs, percentiles: list[int] = (), threshold: tuple[str, float] | None = None,
            other: Pairs | None = None, by: tuple[str, str] | None = None) -> dict[str, Any]:
    """Every figure of a series of (date, value) pairs, as a ``STATS`` line has them."""
    numbers = [value for _, value in values]
    if not numbers:
        return {"count": 0}
    low = min(values, key=lambda pair: pair[1])
    high = max(values, key=lambda pair: pair[1])
    out: dict[str, Any] = {
        "count": len(numbers), "first_date": values[0][0], "last_date": values[-1][0],
        "mean": statistics.fmean(numbers), "median": statistics.median(numbers),
        "min": low[1], "min_date": low[0], "max": high[1], "max_date": high[0],
        "min_days": sum(abs(value - low[1]) <= TOLERANCE for value in numbers),  # a low held on several days: the first is named, and
        "max_days": sum(abs(value - high[1]) <= TOLERANCE for value in numbers),  # how many days held it
        "std": statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
        "latest": numbers[-1], "first": numbers[0], "change": numbers[-1] - numbers[0],
    }
    if numbers[0]:
        out["pct_change"] = (numbers[-1] / numbers[0] - 1) * 100
    out["sum"], out["range"] = math.fsum(numbers), high[1] - low[1]
    out["iqr"] = percentile(numbers, 75) - percentile(numbers, 25)
    steps = [(date, value - before) for (_, before), (date, value) in zip(values, values[1:]) if abs(value - before) > TOLERANCE]
    out["moves"] = len(steps)  # 'how many times did the target change': and each change, when there are few
    out["move_days"] = [[date, step] for date, step in steps] if len(steps) <= RANKED else []
    out["moves_up"] = sum(1 for _, step in steps if step > 0)
    for q in percentiles:
        out[f"p{q}"] = percentile(numbers, q)
    if len(values) <= RANKED:  # 'the last 5 values': few enough to show each
        out["values"] = [list(pair) for pair in values]
    out["top"] = [list(pair) for pair in sorted(values, key=lambda pair: -pair[1])[:RANKED]]
    out["bottom"] = [list(pair) for pair in sorted(values, key=lambda pair: pair[1])[:RANKED]]
    if threshold is not None:
        side, limit = threshold
        past = [date for date, value in values if PAST[side](value, limit)]
        out[side] = len(past)
        if past:
            out["first_when"] = past[0]
    if by is not None:  # 'which month had the highest average': each month's mean
        out["groups"] = grouped(values, *by)
    if other is not None and len(other) == len(numbers) and statistics.fmean(value for _, value in other):
        out["other_mean"] = statistics.fmean(value for _, value in other)
        out["mean_ratio"] = out["mean"] / out["other_mean"]  # 'the ratio of average A to average B'
    if other is not None and len(other) == len(numbers) and len(numbers) > 1:
        try:
            out["corr"] = statistics.correlation(numbers, [value for _, value in other])
        except statistics.StatisticsError:  # a series that does not vary: no correlation
            pass
    return out


GROUP_OF: dict[str, Callable[[str], str]] = {
    "month": lambda day: day[:7], "year": lambda day: day[:4], "quarter": lambda day: f"{day[:4]}-Q{(int(day[5:7]) + 2) // 3}",
    "week": lambda day: f"week of {(date.fromisoformat(day) - timedelta(days=date.fromisoformat(day).weekday())).isoformat()}",
}
"""The month, quarter, year or week (its Monday) a day is in."""


def grouped(values: Pairs, unit: str, stat: str) -> list[list[Any]]:
    """``[label, figure, count]`` of each month (quarter, week, year) the pairs cover: ``stat`` of its values."""
    parts: dict[str, Pairs] = {}
    for day, value in values:
        parts.setdefault(GROUP_OF[unit](day), []).append((day, value))
    return [[label, out[stat], len(part)] for label, part in parts.items() if stat in (out := figures(part))]


def transformed(values: Pairs, transform: str | None) -> Pairs:
    """Daily changes ('diff': each value minus the one before) or percent changes ('pct'), dated by the later day."""
    if transform == "diff":
        return [(date, value - before) for (_, before), (date, value) in zip(values, values[1:])]
    if transform == "pct":
        return [(date, (value / before - 1) * 100) for (_, before), (date, value) in zip(values, values[1:]) if before]
    return values


def percentile(numbers: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's and pandas' default)."""
    ordered = sorted(numbers)
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def aligned(first: Pairs, second: Pairs) -> tuple[Pairs, Pairs]:
    """The two series on the dates both have, in date order."""
    lookup = dict(second)
    shared = [(date, value) for date, value in first if date in lookup]
    return shared, [(date, lookup[date]) for date, _ in shared]


def combined(first: Pairs, second: Pairs, how: str | None) -> tuple[Pairs, Pairs | None]:
    """Two series as one: A minus B ('difference'), A / B ('ratio'), or A with B beside it ('correlation')."""
    first, second = aligned(first, second)
    if how == "difference":
        return [(date, a - b) for (date, a), (_, b) in zip(first, second)], None
    if how == "ratio":
        return [(date, a / b) for (date, a), (_, b) in zip(first, second) if b], None
    return first, second


# ----------------------------------------------------------------------------- one request's figures, printed by a teaching model's script
LINE = "FIGURES "
SIDES = {">": "above", ">=": "at or above", "<": "below", "<=": "at or below", "==": "equal to"}  # a condition's sign: its side in PAST


def main(spec: dict[str, Any], catalog: object = None) -> None:
    """Print the figures of ``spec``; its ``path`` is inside the ``catalog`` folder when one is given."""
    if catalog is not None:
        spec = {**spec, "path": os.path.join(str(catalog), spec["path"])}
    print(LINE + json.dumps(request_figures(spec)))


def parquet_rows(path: str, columns: list[str], date_column: str) -> list[dict[str, Any]]:
    """The columns' rows in date order, each day as 'YYYY-MM-DD'."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pq.read_table(path, columns=[date_column, *columns])
    dates = table.column(date_column)
    if pa.types.is_timestamp(dates.type) or pa.types.is_date(dates.type):
        days = [day.isoformat() if day is not None else "" for day in dates.cast(pa.date32()).to_pylist()]
    else:
        days = [str(day)[:10] for day in dates.to_pylist()]
    found = [dict(zip(["date", *columns], row)) for row in zip(days, *(table.column(c).to_pylist() for c in columns))]
    return sorted(found, key=lambda row: row["date"])


def request_figures(spec: dict[str, Any]) -> dict[str, Any]:
    columns = list(dict.fromkeys([spec["column"], *([spec["weight"]] if spec.get("weight") else [])]))
    rows_read = [row for row in parquet_rows(spec["path"], columns, spec.get("date_column", "date")) if row[spec["column"]] is not None]
    values = [(row["date"], float(row[spec["column"]])) for row in rows_read]
    weights = {row["date"]: float(row[spec["weight"]] or 0) for row in rows_read} if spec.get("weight") else {}
    result: dict[str, Any] = {"data_first": values[0][0], "data_last": values[-1][0]}
    if spec.get("transform") == "daily_change":
        values = transformed(values, "diff")
    inside = [(day, value) for day, value in values if spec["first"] <= day <= spec["last"]]
    if spec.get("trading_days"):
        inside = inside[:spec["trading_days"]] if spec.get("from_start") else inside[-spec["trading_days"]:]
    if not inside:
        nearest = [pair for pair in values if pair[0] < spec["first"]][-1:] + [pair for pair in values if pair[0] > spec["last"]][:1]
        return result | {"count": 0, "nearest": nearest}
    result |= {"first": inside[0][0], "last": inside[-1][0], "count": len(inside)}
    if spec.get("condition"):
        comparison, threshold = spec["condition"]
        inside = [pair for pair in inside if PAST[SIDES[comparison]](pair[1], threshold)]
        result |= {"matching": len(inside), "first_match": inside[0][0] if inside else None}
    found = figures(inside)
    for name in spec.get("statistics") or [spec["statistic"]]:
        result |= _one(name, inside, found, weights)
    return result


def _one(name: str, inside: Pairs, found: dict[str, Any], weights: dict[str, float]) -> dict[str, Any]:
    """One statistic of the values kept (with its date for a min, max, latest or first; a low or high held on several days, how many)."""
    if name in ("top", "bottom"):  # the ranked values with their days
        return {name: found.get(name, [])}
    if name == "count" or not inside:
        return {"count_value": len(inside)} if name == "count" else {name: None}
    if name in ("min", "max", "latest", "value", "first"):
        key, day = ("latest", "last_date") if name in ("latest", "value") else (name, f"{name}_date")
        return {name: found[key], f"{name}_date": found[day], **({f"{name}_days": found[f"{name}_days"]} if name in ("min", "max") else {})}
    if name in ("mean", "median", "sum", "range", "change", "std", "percent_change"):
        return {name: found.get("pct_change") if name == "percent_change" else found[name] if name != "std" or len(inside) > 1 else None}
    numbers = [value for _, value in inside]
    if name == "geometric_mean":
        return {name: math.exp(statistics.fmean(math.log(x) for x in numbers)) if min(numbers) > 0 else None}
    if name == "weighted_mean":
        total = math.fsum(weights.get(day, 0) for day, _ in inside)
        return {name: math.fsum(value * weights.get(day, 0) for day, value in inside) / total if total else None}
    return {name: _compounded(inside) if name == "compounded_mean" else None}


def _compounded(inside: Pairs) -> float | None:
    """The annual rate (ACT/360) of compounding each day's rate over the days to the next row (the SOFR Index's own rule)."""
    growth = 1.0
    for (day, rate), (following, _) in zip(inside, inside[1:]):
        growth *= 1 + rate / 100 * (date.fromisoformat(following) - date.fromisoformat(day)).days / 360
    span = (date.fromisoformat(inside[-1][0]) - date.fromisoformat(inside[0][0])).days
    return (growth - 1) * 360 / span * 100 if span else None
