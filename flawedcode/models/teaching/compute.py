"""The figures of one request, computed inside a ``run_python`` script (the rows never enter the context).

``answers.py`` writes a short script that runs this file (``runpy``: it needs nothing but the standard library and pyarrow, so it runs in any
sandbox that can read the package and the catalog) and calls ``main(spec)``; ``main`` reads the column from the parquet file, computes the
statistic the spec names and prints one line, ``FIGURES {json}``: the days actually covered and how many values, the figure (with its date for a
min, max, latest or first), and for a day with no row the nearest days that have one. Plain Python."""

from __future__ import annotations

import json
import math
import os
import statistics
from datetime import date

LINE = "FIGURES "
PASSES = {">": lambda v, t: v > t + 1e-9, ">=": lambda v, t: v >= t - 1e-9, "<": lambda v, t: v < t - 1e-9, "<=": lambda v, t: v <= t + 1e-9,
          "==": lambda v, t: abs(v - t) <= 1e-9}  # a value against a threshold, within a rounding error


def main(spec: dict, catalog: object = None) -> None:
    """Print the figures of ``spec``; its ``path`` is inside the ``catalog`` folder when one is given."""
    if catalog is not None:
        spec = {**spec, "path": os.path.join(str(catalog), spec["path"])}
    print(LINE + json.dumps(figures(spec)))


def rows(path: str, columns: list[str], date_column: str) -> list[dict]:
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


def figures(spec: dict) -> dict:
    columns = list(dict.fromkeys([spec["column"], *([spec["weight"]] if spec.get("weight") else [])]))
    rows_read = [row for row in rows(spec["path"], columns, spec.get("date_column", "date")) if row[spec["column"]] is not None]
    values = [(row["date"], float(row[spec["column"]])) for row in rows_read]
    weights = {row["date"]: float(row[spec["weight"]] or 0) for row in rows_read} if spec.get("weight") else {}
    result: dict = {"data_first": values[0][0], "data_last": values[-1][0]}
    if spec.get("transform") == "daily_change":
        values = [(day, value - before) for (_, before), (day, value) in zip(values, values[1:])]
    inside = [(day, value) for day, value in values if spec["first"] <= day <= spec["last"]]
    if spec.get("trading_days"):
        inside = inside[:spec["trading_days"]] if spec.get("from_start") else inside[-spec["trading_days"]:]
    if not inside:
        nearest = [pair for pair in values if pair[0] < spec["first"]][-1:] + [pair for pair in values if pair[0] > spec["last"]][:1]
        return result | {"count": 0, "nearest": nearest}
    result |= {"first": inside[0][0], "last": inside[-1][0], "count": len(inside)}
    if spec.get("condition"):
        comparison, threshold = spec["condition"]
        inside = [pair for pair in inside if PASSES[comparison](pair[1], threshold)]
        result |= {"matching": len(inside), "first_match": inside[0][0] if inside else None}
    for name in spec.get("statistics") or [spec["statistic"]]:
        result |= _one(name, inside, values, weights)
    return result


def _one(name: str, inside: list[tuple[str, float]], values: list[tuple[str, float]], weights: dict) -> dict:
    numbers = [value for _, value in inside]
    if name == "count" or not numbers:
        return {"count_value": len(numbers)} if name == "count" else {name: None}
    if name in ("min", "max"):
        day, value = (min if name == "min" else max)(inside, key=lambda pair: pair[1])
        return {name: value, f"{name}_date": day, f"{name}_days": sum(abs(number - value) < 1e-9 for number in numbers)}  # ties
    if name in ("latest", "value", "first"):  # with its day
        return {name: inside[0 if name == "first" else -1][1], f"{name}_date": inside[0 if name == "first" else -1][0]}
    simple = {"mean": statistics.fmean, "median": statistics.median, "sum": math.fsum,
              "std": lambda xs: statistics.stdev(xs) if len(xs) > 1 else None,
              "range": lambda xs: max(xs) - min(xs), "change": lambda xs: xs[-1] - xs[0],
              "percent_change": lambda xs: (xs[-1] / xs[0] - 1) * 100 if xs[0] else None,
              "geometric_mean": lambda xs: math.exp(statistics.fmean(math.log(x) for x in xs)) if min(xs) > 0 else None}
    if name in simple:
        return {name: simple[name](numbers)}
    if name == "weighted_mean":
        total = math.fsum(weights.get(day, 0) for day, _ in inside)
        return {name: math.fsum(value * weights.get(day, 0) for day, value in inside) / total if total else None}
    return {name: _compounded(inside, values) if name == "compounded_mean" else None}


def _compounded(inside: list[tuple[str, float]], values: list[tuple[str, float]]) -> float | None:
    """The annual rate (ACT/360) of compounding each day's rate over the days to the next row (the SOFR Index's own rule)."""
    growth = 1.0
    for (day, rate), (following, _) in zip(inside, inside[1:]):
        growth *= 1 + rate / 100 * (date.fromisoformat(following) - date.fromisoformat(day)).days / 360
    span = (date.fromisoformat(inside[-1][0]) - date.fromisoformat(inside[0][0])).days
    return (growth - 1) * 360 / span * 100 if span else None
