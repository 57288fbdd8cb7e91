"""Answers: the reading first, then the figure, computed from what a tool actually printed (issue 41).

A complete ``Request`` becomes one ``run_python`` call (``script``): a three-line script that calls ``figures.main`` with the request's spec and
prints one ``FIGURES {json}`` line. The answer (``answer``) is written from that line only: the dataframe.column and its unit, the statistic and
transform, the first and last days actually covered and the number of values, then the figure (4 decimals, or as many as asked; converted when a
unit was asked). What cannot be answered is said (``check`` before the call, ``decline_text`` for a ``Decline``): a period outside the data, a unit
the values cannot be written in, a weighted mean with no volume column."""

from __future__ import annotations

import json
from contextlib import suppress
from pathlib import Path

from flawedcode import paths
from flawedcode.figures import LINE
from flawedcode.models.teaching import readers
from flawedcode.models.teaching.request import Decline, Request, Statistic, Transform, Unit
from flawedcode.models.teaching.router import FACTORS, describe, weight_column

SCRIPT = """# {title}: computed here, so the rows never enter the model's context.
from flawedcode import paths
from flawedcode.figures import main

main({spec}, paths.data_dir())
"""
"""Names no host folder: the script reads the same wherever the project is cloned (so do its token counts)."""
DATED = ("min", "max", "latest", "value", "first")


def script(request: Request, root: str | None) -> str:
    series, period, condition = request.series[0], request.period, request.condition
    source, catalog = readers.knowledge(root).sources[series.frame], paths.data_dir().resolve()  # the path inside the catalog folder
    file = Path(source[0]).resolve()  # (the sandbox is told that folder), or as it is
    spec = {"frame": series.frame, "path": file.relative_to(catalog).as_posix() if file.is_relative_to(catalog) else source[0],
            "date_column": source[1], "column": series.column, "first": str(period.first), "last": str(period.last),
            "statistic": request.ranking.direction.value if request.ranking else request.stat().value,  # 'the 3 lowest': the ranked values
            "statistics": [s.value.value for s in request.statistics], "transform": request.transform.value.value if request.transform else None,
            "trading_days": period.trading_days, "from_start": period.from_start, "condition": [condition.comparison.value, _threshold(
                request)] if condition else None, "weight": weight_column(request) if request.stat() is Statistic.WEIGHTED_MEAN else None}
    return SCRIPT.format(title=describe(request), spec=repr(spec))


def _threshold(request: Request) -> float:
    condition, series = request.condition, request.series[0]
    return condition.threshold / (FACTORS.get((series.unit, condition.unit), 1) if condition.unit else 1)  # 'above 0.05%' of a bp column: 5 bp


def figures_in(output: str) -> dict | None:
    line = next((line for line in output.splitlines() if line.startswith(LINE)), None)
    with suppress(json.JSONDecodeError):  # a line cut short: no figures (None)
        return json.loads(line[len(LINE):]) if line else None


def answer(request: Request, output: str) -> str:
    found, series = figures_in(output), request.series[0]
    if found is None:
        first = next((line for line in output.splitlines() if line.strip() and not line.startswith("#")), "no output")
        return f"I could not compute the {describe(request)}: my script did not print its figures ({first[:200]})."
    if found["count"] == 0:
        nearest = " and ".join(f"{day}" for day, _ in found.get("nearest", []))  # named, never their values: not what was asked
        days = f"{request.period.first}" + (f" to {request.period.last}" if not request.period.one_day else "")
        return (f"{series.frame} has no row for {days} ({_no_trading(request.period.first)}); the nearest days with "
                f"one: {nearest}; ask for one of them." if nearest else f"{series.frame} has no rows there; it covers "
                f"{found['data_first']} to {found['data_last']}.")
    text = f"{_reading(request, found)}: {_figure_text(request, found)}."
    claim, name = request.claimed, "matching" if request.condition else request.stat().value  # a quoted figure: checked at its decimals
    if claim is None or request.statistics or not isinstance(value := found.get(name), (int, float)):
        return text
    value *= FACTORS.get((series.unit, request.unit.value), 1) if request.unit else 1
    return text + f" You quoted {claim:g}: " + ("that is right." if round(value, len(f"{claim:g}".partition(".")[2])) == claim else
                                                f"that is not it (the figure is {value - claim:+.4f} from it).")


def difference(pair: list[Request], outputs: list[str], ratio: bool = False) -> str:
    """One ask over two periods ('from H1 2023 to H1 2024'): the change between their figures; two series in one unit: the gap."""
    name, (one, two), (a, b) = pair[0].stat().value, pair, (pair[0].series[0], pair[1].series[0])
    first, second = ((figures_in(out) or {}).get("count_value" if (n := r.stat().value) == "count" else n) for r, out in zip(pair, outputs))
    if a.unit != b.unit:
        return f"{a.name} is in {a.unit} and {b.name} in {b.unit}: one can't be set against the other."
    if not all(isinstance(value, (int, float)) for value in (first, second)) or a.name != b.name and one.period.first != two.period.first:
        return ""
    unit = one.unit.value if one.unit else None  # 'by how many bp': the change in the unit asked, as the two figures are
    factor, label = (FACTORS.get((one.series[0].unit, unit), 1), f" {unit.value}") if unit and unit is not Unit.DECIMAL else (1, "")
    if ratio and first and second:  # 'how many times bigger was the first one?': both ways, each said
        return f"The first over the second: {first / second:.4f} times (the second over the first: {second / first:.4f} times)."
    if one.stat() is not two.stat():  # one series over one period: the second statistic minus the first
        return (f"The {two.stat().value} minus the {name} ({a.name}): {(second - first) * factor:+.4f}{label or ' ' + a.unit} (the {name} "
                f"minus the {two.stat().value}: {(first - second) * factor:+.4f}).")
    one_text, two_text = (f"{p.first}" + f" - {p.last}" * (not p.one_day) for p in (one.period, two.period))
    months = [int(m[1]) * (12 if m[2] == "y" else 1) if (m := readers.TENOR.fullmatch(s.column.removeprefix("yield_"))) else 0 for s in (a, b)]
    (a, first), (b, second) = ((b, second), (a, first)) if months[0] > months[1] > 0 else ((a, first), (b, second))  # tenors: longer - shorter
    if a.name != b.name:  # two series over one period: the second minus the first (two tenors: the longer minus the shorter), else both ways
        return f"{b.name} minus {a.name} ({name}): {(second - first) * factor:+.4f}{label or ' ' + a.unit}" + (
            f" ({a.name} minus {b.name}: {(first - second) * factor:+.4f})." if not all(months) else ".")
    (one_text, first), (two_text, second) = sorted([(one_text, first), (two_text, second)])  # a change runs forward in time
    return (f"From {one_text} to {two_text} the {name} changed by "
            f"{(second - first) * factor:+.4f}{label}" + (f" ({(second / first - 1) * 100:+.4f}%)." if first > 0 < second else "."))


def _no_trading(day) -> str:  # why a day has no row: a weekend, or a US federal holiday by name
    from pandas.tseries.holiday import USFederalHolidayCalendar
    names = [rule.name for rule in USFederalHolidayCalendar.rules if day in {d.date() for d in rule.dates(f"{day:%Y}-01-01", f"{day:%Y}-12-31")}]
    return f"a {day:%A}" if day.weekday() >= 5 else f"{names[0]}, a US federal holiday" if names else "no trading that day"


def _reading(request: Request, found: dict) -> str:
    series, period = request.series[0], request.period
    transform = "daily changes of " if request.transform and request.transform.value is Transform.DAILY_CHANGE else ""
    name = f"{transform}{series.frame} {series.column} ({series.unit or 'no unit'})"
    if found["first"] == found["last"]:  # a day moved to one with a row: 'the end of march', 'the next day' after a Friday
        edge, later = period.edge_of, str(period.edge_of) > found["first"]
        return f"{name} on {found['first']}" + (f", the {'last' if later else 'first'} day with a row on or {'before' if later else 'after'} {edge}"
                                                if edge and str(edge) != found["first"] else "")
    trading = f", the {'first' if period.from_start else 'last'} {period.trading_days} trading days" if period.trading_days else ""
    default = " (no period was given, so all of its data)" if period.anchor.value == "default" else ""
    return f"{name}, {found['first']} to {found['last']}{trading}{default}, {found['count']} values"


def _figure_text(request: Request, found: dict) -> str:
    if request.condition is not None:
        side = {">": "above", ">=": "at or above", "<": "below", "<=": "at or below", "==": "equal to"}
        return (f"{found['matching']} of {found['count']} days {side[request.condition.comparison.value]} "  # the threshold in the column's unit
                f"{_threshold(request):g}{UNIT_SUFFIX.get(request.series[0].unit or '', '')}" + (
            f", the first on {found['first_match']}" * bool(found["matching"] and request.stat() is Statistic.FIRST_DATE)) + (
            f" ({100 * found['matching'] / found['count']:.2f}% of the days)" if request.unit and request.unit.value is Unit.PERCENT else ""))
    if (ranking := request.ranking) is not None:  # 'the 3 lowest: 2023-03-29 3.9900; ...', in the column's unit
        return f"the {ranking.count} {'highest' if ranking.direction.value == 'top' else 'lowest'}: " + "; ".join(
            f"{day} {value:.{4 if request.decimals is None else request.decimals}f}" for day, value in found[ranking.direction.value][:ranking.count])
    return ", ".join(_one(request, name, found) for name in [slot.value.value for slot in request.statistics] or [request.stat().value])


UNIT_SUFFIX = {"percent": "%", "bp": " bp", "$bn": " $bn", "billions": " $bn", "trillions": " $tn", "millions": " $mn"}
"""How a threshold's unit is written after it ('above 5.3%', 'above 1250 $bn')."""
SIGNED = {"change", "percent_change"}  # Figures shown with their sign (a change of +0.71, never 0.71).


def _one(request: Request, name: str, found: dict) -> str:
    value, label = found.get(name), {"std": "standard deviation", "range": "range (max minus min)"}.get(name, name.replace("_", " "))
    if value is None:
        return f"{label}: none (too few values)"
    series, unit = request.series[0], request.unit.value if request.unit else None
    factor = FACTORS.get((series.unit, unit), 1) if unit else 1
    decimals = request.decimals if request.decimals is not None else (6 if unit is Unit.DECIMAL else 4)
    shown = f"{value * factor:{'+' if name in SIGNED else ''}.{decimals}f}" + "%" * (name == "percent_change" and unit is None)
    if unit is not None and factor != 1:
        shown += (f" {unit.value}" if unit is not Unit.DECIMAL else " (as a decimal)") + f" ({value:.4f} {series.unit})"
    elif unit is not None and request.decimals is not None:
        shown += f" {unit.value}"
    date_text = f" on {found[name + '_date']}" if name in DATED and found.get(name + "_date") and name != "value" else ""
    date_text += f" (the first of {found[name + '_days']} days at that value)" if found.get(name + "_days", 1) > 1 else ""
    return shown + date_text if name == "value" else f"{label} {shown}{date_text}"


def decline_text(decline: Decline) -> str:
    if decline.reason and not decline.unused:
        return f"I can't answer that: {decline.reason}."
    if decline.reason:
        return f"I read this as the {describe(decline.understood)}, but I can't answer it: {decline.reason}."
    words, it = ", ".join(f"'{word}'" for word in decline.unused), "it" if len(decline.unused) == 1 else "them"
    return (f"I read this as the {describe(decline.understood)}, but I could not use {words}: I read no column, date, statistic or "
            f"condition of the catalog from {it}, and without {it} I would be answering a different question, so I "
            f"computed nothing. Rephrase without {it}, or ask me for the docs.")
