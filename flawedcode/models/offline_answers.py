"""Data tasks step by step, and their answers: every figure labelled with what it is (docs/offline-model.md).

A data task makes its planned calls (loads, or one stat script; a failed script is replaced by loads); an offloaded
load is read back from scratch/ page by page when a statistic needs its rows. A statistic reads
``money_markets/sofr rate (percent), 2024-01-02 to 2024-12-31, 251 values: mean 5.1548 (515.4800 bp)``: the
dataframe, column, unit, dates covered and number of values, then each statistic asked, with ``DECIMALS`` decimals.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from flawedcode.figures import combined, figures, transformed
from flawedcode.models.offline_cues import data_file
from flawedcode.models.offline_data import DESCRIBE_STATS, PATTERNS, DataAsk, Series, load_steps, period_ranking
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_plan import Context, Step, Task, ToolResult
from flawedcode.models.offline_stats import (
    LOAD_HEADER,
    READ_BACK_PAGES,
    LoadedTable,
    assemble_pages,
    offload_path,
    parse_loaded_table,
    read_stat_output,
    stat_script,
)

DECIMALS = 4
PHRASES = data_file("offline_answers.toml")
NAMES, SAY = PHRASES["answers"], PHRASES["say"]
STAT_NAMES: dict[str, str] = NAMES["stats"]
"""How an answer names each statistic (a percentile ``pN`` is named by ``stat_name``)."""
TRANSFORM_NAMES, COMBINED_NAMES, UNIT_SHOWN = NAMES["transforms"], NAMES["combined"], NAMES["units"]


def number(value: float) -> str:
    return f"{value:.{DECIMALS}f}"


def data_next_step(task: Task, results: list[Any], context: Context) -> Step | None:
    ask: DataAsk = task.ask
    first = task.steps[0] if task.steps else None
    if first is not None and first.intent == "script":
        if not results:
            return Step("run_python", {"code": script_for(ask, context), "timeout": 60})
        if read_stat_output(results[0].content) is not None or ask.flag is not None:
            return None  # a flag condition has no other way: loads would lose it
        return _next_load_step(load_steps(ask), results[1:], needs_rows=True)
    if first is not None and first.intent == "read_file":  # rows already loaded, offloaded: read them back
        return read_back_step(first, results, lambda page: _copy_script(ask, page, context)) if results else first
    return _next_load_step(task.steps, results, needs_rows=not ask.wants_rows)


def read_back_step(first: Step, results: list[Any], script: Any) -> Step | None:
    """The next call of a read back of a scratch/ copy: none once it is whole (or a script ran); a script over the
    same rows after a first page that ends with a continuation line (``script(page)``, None if none can), else the next page."""
    if any(result.name != "read_file" for result in results):
        return None
    text, next_offset = assemble_pages([result.content for result in results])
    if text is not None or next_offset is None:
        return None
    if len(results) == 1 and (code := script(results[0].content)):
        return Step("run_python", {"code": code, "timeout": 60})
    return Step("read_file", {**first.roles, "offset": next_offset}) if len(results) < READ_BACK_PAGES else None


def _next_load_step(steps: list[Step], results: list[Any], needs_rows: bool) -> Step | None:
    """The next planned load; after an offloaded one whose rows are needed, the next page of its copy in scratch/."""
    position = 0
    for step in steps:
        if position >= len(results):
            return step
        path = offload_path(results[position].content)
        position += 1
        pages: list[str] = []
        while path and needs_rows and assemble_pages(pages)[0] is None and len(pages) <= 20:
            if position >= len(results):
                next_offset = assemble_pages(pages)[1]
                return Step("read_file", {"path": path, "limit": 2000, **({"offset": next_offset} if pages and next_offset else {})})
            pages.append(results[position].content)
            position += 1
    return None


def _copy_script(ask: DataAsk, page: str, context: Context) -> str | None:
    """A copy in scratch/ that pages in part: a stat script over the same rows (its dataframe, first and last dates)."""
    header = LOAD_HEADER.search(page)
    if header is None or "run_python" not in context.tool_names or [s.ref.key for s in ask.series] != [header["key"]]:
        return None
    return script_for(replace(ask, period=replace(ask.period, start=header["start"], end=header["end"])), context)


def script_for(ask: DataAsk, context: Context) -> str:
    series = [(s.ref.pipeline, s.ref.dataframe, s.column, s.ref.date_column) for s in ask.series[:2]]
    flag = (ask.flag[0], ask.flag[1].pipeline, ask.flag[1].dataframe, ask.flag[2], ask.flag[1].date_column) if ask.flag else None
    start, end = ask.period.start, ask.period.end
    if ask.period.point:
        start = None
    title = f"{', '.join(stat_name(stat) for stat in ask.stats)} of {_subject(ask)}"
    return stat_script(title, series, start, end, ask.combine, ask.period.last_rows or (None if (start or end or ask.period.every_row) else 100),
                       ask.percentiles, ask.threshold, context.catalog_root, ask.transform, flag, grouping(ask))


def answer_data(task: Task, results: list[Any], vocabulary: Vocabulary) -> str:
    ask: DataAsk = task.ask
    if task.steps and task.steps[0].intent == "script" and results:
        if (output := read_stat_output(results[0].content)) is not None:
            task.detail["figures"] = output
            return format_figures(ask, output, vocabulary)
        results = results[1:]
    if errors := [result for result in results if result.content.lstrip().startswith("Error")]:
        return relay_error(errors[0])
    scripted = [read_stat_output(result.content) for result in results if result.name == "run_python"]
    if scripted and scripted[0] is not None:  # a copy that paged in part, computed again over the same rows
        task.detail["figures"] = scripted[0]
        path = results[0].args.get("path", "scratch/")
        return f"{format_figures(ask, scripted[0], vocabulary)} (A script computed it over the rows of {path}: they did not fit my window.)"
    tables = tables_in([ToolResult("chartbook_load_data", {}, task.detail["rows"]), *results] if task.detail.get("rows") else results)
    if ask.wants_rows:
        loads = [r for r in results if r.name == "chartbook_load_data"]
        computed = [text for r in results if r.name == "run_python" and loads and (text := load_answer(
            f"{loads[0].args.get('pipeline')}/{loads[0].args.get('dataframe')}", r.content))]
        if computed:
            return computed[0]
        requested = [c for r in loads for c in named_columns(r.args, ask)]
        described = [describe_table(table, ask, vocabulary, requested) for table in tables.values()]
        stubs = [result for result in results if offload_path(result.content)]
        return describe_stub(stubs[0], vocabulary) if stubs and not described else "\n\n".join(described) or "I got no rows back."
    series_values = [_values(tables, series) for series in ask.series[:2]]
    if any(values is None for values in series_values):
        return SAY["rows_not_seen"]
    if len(ask.series) > 2 or (len(ask.series) == 2 and not ask.combine):  # each series on its own line
        singles = [replace(ask, series=[series], combine=None) for series in ask.series]
        return "\n".join(format_figures(single, _figures(single, _values(tables, single.series[0]) or [], None), vocabulary)
                         for single in singles)
    first, other = combined(*series_values, ask.combine) if ask.combine and len(series_values) > 1 else (series_values[0], None)
    task.detail["figures"] = _figures(ask, first, other)
    return format_figures(ask, task.detail["figures"], vocabulary)


def answer_period_gap(task: Task, vocabulary: Vocabulary) -> str:
    """'higher in H1 than in H2, and by how much?': each statistic of the first period minus the second's."""
    first, second = (part.detail.get("figures") or {} for part in task.detail["tasks"])
    ask: DataAsk = task.detail["tasks"][0].ask
    points = all(part.ask.period.one_day and part.detail.get("figures", {}).get("last_date") for part in task.detail["tasks"])
    # two days ('at the end of 2024 vs the start'): each day's value, not 'latest on or before'
    periods = [part.detail["figures"]["last_date"] if points else part.ask.period.describe() for part in task.detail["tasks"]]
    unit = vocabulary.unit(ask.series[0].ref, ask.series[0].column) if ask.series else ""
    if task.detail.get("ratio") and isinstance(first.get("mean"), float) and isinstance(second.get("mean"), float) and second["mean"]:
        return (f"{periods[0]} over {periods[1]} ({_subject(ask)}): the mean of the first is {first['mean'] / second['mean']:.4f} times the "
                f"second's ({first['mean']:.4f} / {second['mean']:.4f}).")
    gaps = [f"{'difference' if points else stat_name(stat)} {first[stat] - second[stat]:+.{DECIMALS}f}"
            f"{_converted(first[stat] - second[stat], unit, ask)}" for stat in ask.stats  # 'difference in bp': 47.59 bp
            if isinstance(first.get(stat), float) and isinstance(second.get(stat), float) and stat != "count"]
    if not gaps:
        return "I have no figures for both periods, so I can't give their difference."
    return f"{periods[0]} minus {periods[1]} ({_subject(ask)}): " + ", ".join(gaps) + "."


def _figures(ask: DataAsk, values: list[tuple[str, float]], other: list | None) -> dict[str, Any]:
    if ask.period.last_rows:
        values = values[-ask.period.last_rows:]
        other = other[-ask.period.last_rows:] if other else other
    elif ask.period.point and values:
        values = values[-1:]
    return figures(transformed(values, ask.transform), ask.percentiles, ask.threshold, other, grouping(ask))


def grouping(ask: DataAsk) -> tuple[str, str] | None:
    """('month', 'mean'): the groups and the statistic of each that a ranking of periods needs, if the ask has one."""
    unit, _, base = next((period_ranking(stat) for stat in ask.stats if stat.startswith("by_")), (None, None, None))
    return (unit, base) if unit else None


def _ranked_groups(stat: str, out: dict[str, Any]) -> str:
    """'which month had the highest average': the one that did, then each one's figure."""
    unit, side, _ = period_ranking(stat)
    groups = out.get("groups") or []
    each = "; ".join(f"{label} {number(figure)}" for label, figure, _ in groups)
    if side == "each":  # 'the average sofr in each quarter of 2024'
        return f"{stat_name(stat)}: {each}"
    if len(groups) < 2:
        return f"only {len(groups)} {unit} in that period, so there is no {unit} to rank"
    best = (max if side == "highest" else min)(groups, key=lambda group: group[1])
    tied = [label for label, figure, _ in groups if figure == best[1]]  # 'the lowest month' of two at 4.61: both, never the first alone
    if len(tied) > 1:
        named = stat_name(stat).replace(f"the {unit} ", f"the {unit}s ", 1)
        return f"{named} are {' and '.join(tied)}, tied at {number(best[1])} (each {unit}: {each})"
    return (f"{stat_name(stat)} is {best[0]}: "
            f"{number(best[1])} over {best[2]} values (each {unit}: {each})")

def _values(tables: dict[str, LoadedTable], series: Series) -> list[tuple[str, float]] | None:
    table = tables.get(series.ref.key)
    return table.values(series.column) if table is not None and series.column in table.header else None


def tables_in(results: list[Any]) -> dict[str, LoadedTable]:
    """The loaded tables among the results, by dataframe key (read-backs of offloaded copies put together)."""
    texts, pages = [], {}
    for result in results:
        if result.name == "read_file" or result.content.startswith("# scratch/"):
            pages.setdefault(str(result.args.get("path") or result.args.get("file_path") or ""), []).append(result.content)
        else:
            texts.append(result.content)
    texts += [text for contents in pages.values() if (text := assemble_pages(contents)[0])]
    return {table.key: table for text in texts if (table := parse_loaded_table(text)) is not None}


def _subject(ask: DataAsk) -> str:
    labels = [series.label for series in ask.series[:2]]
    if ask.transform and labels:
        return f"{TRANSFORM_NAMES[ask.transform]} of {labels[0]}"
    if ask.combine in COMBINED_NAMES and len(labels) == 2:
        return COMBINED_NAMES[ask.combine].format(*labels)
    subject = labels[0] if labels else "the data"
    if ask.flag:
        how, ref, column = ask.flag
        subject += f" {'without' if how == 'exclude' else 'only on'} the days {ref.key} {column} marks"
    return subject


def format_figures(ask: DataAsk, out: dict[str, Any], vocabulary: Vocabulary) -> str:
    """One line: what, its unit, the dates covered, how many values, then each statistic asked."""
    count, last = int(out.get("count", 0)), out.get("last_date")
    if not count:
        return f"No values of {_subject(ask)} in {ask.period.describe()}, so there is no figure to give."
    unit = vocabulary.unit(ask.series[0].ref, ask.series[0].column) if ask.series else ""
    dates = f"{out.get('first_date')} to {last}" if out.get("first_date") != last else f"on {last}"
    dates += f" ({ask.period.assumed})" if ask.period.assumed else ""
    shown = ("a ratio, no unit" if ask.combine in ("ratio", "ratio_of_means")
             else "percentage points" if ask.combine == "difference" and unit == "percent" else unit)
    head = f"{_subject(ask)} ({shown})" if shown else _subject(ask)
    if ask.stats == ["latest"] and ask.combine != "correlation" and ask.threshold is None:
        figure = f"{number(out['latest'])}{_converted(out['latest'], unit, ask)}"
        if ask.period.start and ask.period.start == ask.period.end:  # one day asked: that day's value
            return f"{head} on {last}: {figure}."
        if ask.period.point:  # 'at the end of 2024': the last row on or before that day
            where = "" if last == ask.period.end else f", the last day with a row on or before {ask.period.end}"
            return f"{head} on {last}{where}: {figure}."
        return f"{head}: latest {figure} on {last}."
    if ask.combine == "correlation":
        value = number(out["corr"]) if isinstance(out.get("corr"), float) else "not defined (a series does not vary)"
        return f"Correlation of {_subject(ask)}, {dates}, {count} dates: {value}."
    if ask.threshold is not None:
        side, limit = ask.threshold
        past = f"{side} {'±' if side in ('beyond', 'within') else ''}{limit:g}{UNIT_SHOWN.get(unit, '')}"  # 'beyond ±0.05%': either way
        if ask.combine == "difference" and not limit and len(ask.series) == 2:  # 'the days sofr was above iorb'
            past = f"with {ask.series[0].label} {side} {ask.series[1].label}"
        if ask.stats == ["first_when"]:
            found = f"first on {out['first_when']}" if out.get("first_when") else "never"
            return f"{head}, {dates}, {count} values: {past} {found}."
        if side == "true":
            return f"{head}, {dates}: {int(out.get(side, 0))} of {count} days with {ask.series[0].column} set."
        share = f" ({100 * out.get(side, 0) / count:.2f}% of the days)" if re.search(PATTERNS["share"], ask.text) else ""
        return f"{head}, {dates}: {int(out.get(side, 0))} of {count} days {past}{share}."
    head += f", {dates}, {count} values:"
    ranked = next(filter(None, (re.fullmatch(r"(nth_)?(top|bottom)(\d+)", stat) for stat in sorted(ask.stats, key=lambda s: s[:4] != "nth_"))), None)
    if ranked:  # 'the 5 highest days' or 'the 3rd lowest'
        nth, side, place = ranked[1], ranked[2], int(ranked[3])
        ranking, extreme = out.get(side, []), "highest" if side == "top" else "lowest"
        if not nth:
            shown = ranking[:place]  # never more than the figures keep (RANKED): said, never 'the 12 highest' over 10
            cut = f" (I rank at most {len(shown)} of the {place} asked)" * (len(shown) < min(place, count))
            return f"{head} the {len(shown)} {extreme}{cut}: " + "; ".join(f"{date} {number(value)}" for date, value in shown) + "."
        if len(ranking) < place:
            return f"{head} there is no {_ordinal(place)} {extreme}."
        before = "; ".join(f"{day} {number(figure)}" for day, figure in ranking[:place - 1])
        return f"{head} the {_ordinal(place)} {extreme}: {ranking[place - 1][0]} {number(ranking[place - 1][1])} (before it: {before})."
    each = ""
    if (ask.period.last_rows or ask.period.first_rows) and out.get("values") and ask.stats == DESCRIBE_STATS:  # 'the last 5 values'
        each = " Each value: " + "; ".join(f"{day} {number(value)}" for day, value in out["values"]) + "."
    return f"{head} " + ", ".join(_stated(stat, out, unit, ask) for stat in ask.stats
                             if stat in out or stat in ("factor", "from_max", "from_min") or stat.startswith("by_")) + "." + each


def _stated(stat: str, out: dict[str, Any], unit: str, ask: DataAsk) -> str:
    """One statistic as the answer states it: named, signed for a change, converted, and dated where it has a date."""
    span = f"(from {number(out.get('first', 0))} on {out.get('first_date')} to {number(out.get('latest', 0))} on {out.get('last_date')})"
    if stat.startswith("by_"):
        return _ranked_groups(stat, out)
    if stat in ("from_max", "from_min"):  # the latest value minus the extreme before it
        extreme = stat[5:]
        moved = out["latest"] - out[extreme]
        return (f"latest minus {extreme} {moved:+.{DECIMALS}f}{_converted(moved, unit, ask)} (from "
                f"{number(out[extreme])} on {out[f'{extreme}_date']} to {number(out['latest'])} on {out['last_date']})")
    if stat == "factor":  # 'by what factor': latest / first, and its inverse (which way it moved)
        if not (out.get("first") and out.get("latest")):
            return "no factor: the first or latest value is zero"
        return f"latest / first {out['latest'] / out['first']:.{DECIMALS}f}, first / latest {out['first'] / out['latest']:.{DECIMALS}f} {span}"
    if stat == "count":
        return f"count {int(out['count'])}"
    if stat == "moves":  # each change from the row before, up or down, with its day
        days = "; ".join(f"{day} {step:+.{DECIMALS}f}" for day, step in out["move_days"])
        return (f"{out['moves']} changes from one row to the next ({out['moves_up']} up, {out['moves'] - out['moves_up']} down)"
                + (f": {days}" if days else ""))
    if stat == "mean_ratio":  # each mean over the dates both have, then one over the other
        return f"mean {number(out['mean'])} / mean {number(out['other_mean'])} = {number(out[stat])}"
    if stat == "pct_change":  # relative: (latest / first - 1) x 100, whatever the column's unit
        return f"percent change {out[stat]:+.{DECIMALS}f}% {span}"
    ties = {extreme: f" (the first of {out[f'{extreme}_days']} days at that value)" if out.get(f"{extreme}_days", 1) > 1 else ""
            for extreme in ("min", "max")}  # a low or high held on several days: the first is named, and how many held it
    when = {"min": f" on {out.get('min_date')}{ties['min']}", "max": f" on {out.get('max_date')}{ties['max']}",
            "latest": f" on {out.get('last_date')}", "change": f" {span}"}.get(stat, "")
    value = out[stat]
    return f"{stat_name(stat)} {f'{value:+.{DECIMALS}f}' if stat == 'change' else number(value)}{_converted(value, unit, ask)}{when}"


def _ordinal(place: int) -> str:
    return f"{place}{'th' if 10 <= place % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(place % 10, 'th')}"


def _converted(value: float, unit: str, ask: DataAsk | None) -> str:
    """The figure in the unit asked (bp, percentage points, $ trillion or million), or in bp for a spread or change of percents."""
    if unit == "percent" and (ask.unit == "bp" or ask.combine == "difference" or {"change", "from_max", "from_min"} & set(ask.stats)):
        return f" ({number(value * 100)} bp)"
    if unit == "bp" and ask.unit == "percent":
        return f" ({number(value / 100)} percentage points)"
    if unit == "$bn" and ask.unit in ("trillion", "million"):
        factor, name = (0.001, "trillion") if ask.unit == "trillion" else (1000, "million")
        return f" (${number(value * factor)} {name})"
    return ""


def describe_table(table: LoadedTable, ask: DataAsk | None, vocabulary: Vocabulary, requested: Sequence[str] = ()) -> str:
    """A load described: its row count and dates, then mean / min / max / latest of every column the user named
    (``named_columns``), else of the first four of the request's reading, or of the main column."""
    numeric = table.numeric_columns()
    asked = [column for column in dict.fromkeys(requested) if column in numeric] or [
        series.column for series in (ask.series if ask else []) if series.ref.key == table.key and series.column in numeric][:4]
    if not asked:
        ref = vocabulary.frame(table.key)
        main = vocabulary.main_column(ref) if ref else None
        asked = [main] if main in numeric else numeric[:1]
    described = [f"{table.key} {column}: " + ", ".join(_stated(stat, out, "", ask) for stat in ("mean", "min", "max", "latest"))
                 + f" ({out['count']} values)." for column in asked if (out := figures(table.values(column)))["count"]]
    rows = [",".join(record.get(column, "") for column in table.header) for record in table.records] if table.rows <= SHOWN_ROWS else []
    shown = "\n" + "\n".join([",".join(table.header), *rows]) if rows else ""  # a few rows asked ('every day of the first week'): shown
    return " ".join([f"Loaded {table.rows} rows of {table.key}, {table.start} to {table.end}.", *described]) + shown


SHOWN_ROWS = 10
"""A load of at most this many rows is shown row by row after its figures."""


def describe_stub(result: Any, vocabulary: Vocabulary | None = None) -> str:
    content = result.content.strip()
    lines = content.splitlines()
    path = offload_path(content) or "scratch/"
    detail = lines[0].split("|", 1)[1].strip(" ]") if "|" in lines[0] else ""
    detail = f" ({detail})" if detail else ""
    preview = [line for line in lines[1:] if line.strip() and "read_file(" not in line][:8]
    text = f"The full result of {call_label(result)} is saved in {path}{detail}. I can read it with read_file(path='{path}')."
    if statistics := preview_statistics(preview, vocabulary):
        return f"{text} {statistics}"
    return text + (" Preview:\n" + "\n".join(f"> {line}" for line in preview) if preview else "")


def call_label(result: Any) -> str:
    """'chartbook_get_docs for money_markets/sofr': a tool result named by its call."""
    pipeline, dataframe = result.args.get("pipeline"), result.args.get("dataframe")
    return f"{result.name} for {pipeline}/{dataframe}" if pipeline and dataframe else result.name


def preview_statistics(preview: list[str], vocabulary: Vocabulary | None) -> str:
    """A table stub's summary rows (named mean/min/max under its CSV header), for the main column: never its rows."""
    title = next((LOAD_HEADER.match(line) for line in preview if LOAD_HEADER.match(line)), None)
    header_index = next((i for i, line in enumerate(preview) if line.startswith("date,")), None)
    if title is None or header_index is None:
        return ""
    columns = preview[header_index].split(",")
    rows = {line.split(",", 1)[0]: line.split(",") for line in preview if line.split(",", 1)[0] in ("mean", "min", "max")}
    ref = vocabulary.frame(title["key"]) if vocabulary is not None else None
    column = vocabulary.main_column(ref) if ref is not None else None
    if column not in columns or not rows:
        return ""
    position = columns.index(column)
    figures_shown = ", ".join(f"{stat} {row[position]}" for stat, row in rows.items() if position < len(row))
    return (f"From the preview's summary statistics: {title['key']} {column}: {figures_shown} "
            f"over {title['rows']} rows ({title['start']} to {title['end']}).")


def relay_error(result: Any) -> str:
    problem = result.content.strip().removeprefix("Error:").strip()
    advice = ("Check the names (ask me to list the ChartBook dataframes)" if result.name.startswith("chartbook") else
              "Check the path (ask me to list the files)" if result.name in ("read_file", "list_files", "search_files", "write_file")
              else "Fix the input")
    return f"{result.name} failed: {problem} {advice} and ask again."


def stat_name(stat: str) -> str:
    """How an answer names a statistic: ``std`` -> 'standard deviation', ``p90`` -> '90th percentile', ``p1`` -> '1st percentile'."""
    if stat.startswith("by_"):  # 'by_month_high_mean'
        unit, side, base = period_ranking(stat)
        return f"{stat_name(base)} of each {unit}" if side == "each" else f"the {unit} with the {side} {stat_name(base)}"
    if stat in STAT_NAMES or not re.fullmatch(r"p\d+", stat):
        return STAT_NAMES.get(stat, stat)
    return f"{_ordinal(int(stat[1:]))} percentile"


LOAD_SCRIPT = """# the figures of {count} column(s) of {key} over the rows the load read: computed here, so the rows never enter the model's context.
from flawedcode.catalog import Catalog
from flawedcode.figures import figures, pairs

catalog = Catalog()
date = catalog.info({pipeline!r}, {dataframe!r}).date_column
rows = catalog.rows({pipeline!r}, {dataframe!r}, {columns!r}, start={start!r}, end={end!r})[-{limit}:]
for column in {columns!r}:
    found = figures(pairs(rows, column, date))
    print("ROWS", column, *(found.get(key) for key in {keys!r}))
"""
"""A load's figures by a script: one short ``ROWS column ...`` line per column (so it is never offloaded itself); it
names no folder of this machine (the sandbox's catalog is the default one)."""
LOAD_KEYS = ["count", "first_date", "last_date", "mean", "min", "min_date", "max", "max_date", "latest", "last_date"]


def named_columns(load_args: dict[str, Any], ask: DataAsk | None) -> list[str]:
    """The columns of a load call that the request names word for word: its answer states every one of them (a load
    of columns the reader chose, 'Load 30 rows of treasury_yields', is described by its first four)."""
    return [str(column) for column in load_args.get("columns") or [] if ask and str(column).lower() in ask.text.lower()]


def load_script(args: dict[str, Any], columns: Sequence[str], vocabulary: Vocabulary, root: str | None) -> str | None:
    """A script computing each column's figures over the rows a ``chartbook_load_data`` call loaded (same dataframe,
    columns, dates and last ``limit`` rows), for a saved load that does not fit the window: never its preview."""
    ref = vocabulary.frame(f"{args.get('pipeline')}/{args.get('dataframe')}")
    columns = [column for column in dict.fromkeys(columns) if ref is not None and column in ref.columns]
    if root is not None or not columns:
        return None  # another catalog than the sandbox's default one, or no column to describe
    return LOAD_SCRIPT.format(count=len(columns), key=ref.key, pipeline=ref.pipeline, dataframe=ref.dataframe,
                              columns=columns, start=args.get("start"), end=args.get("end"),
                              limit=int(args.get("limit") or 20), keys=LOAD_KEYS)


def load_answer(key: str, output: str) -> str | None:
    """The load's rows and every column's figures, from the script's ``ROWS`` lines (``None``: none printed)."""
    found = [dict(zip(["column", *LOAD_KEYS], line.split()[1:])) for line in output.splitlines()
             if line.startswith("ROWS ") and len(line.split()) == len(LOAD_KEYS) + 2 and "None" not in line.split()]
    if not found:
        return None
    head = (f"Loaded {found[0]['count']} rows of {key}, {found[0]['first_date']} to {found[0]['last_date']} (each "
            "column's figures computed by a script over the same rows: the saved result did not fit my window).")
    return " ".join([head, *(f"{key} {item['column']}: mean {float(item['mean']):.4f}, min {float(item['min']):.4f} on "
                             f"{item['min_date']}, max {float(item['max']):.4f} on {item['max_date']}, latest "
                             f"{float(item['latest']):.4f} on {item['last_date']} ({item['count']} values)." for item in found)])
