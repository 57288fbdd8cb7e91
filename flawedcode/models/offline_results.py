"""How the offline model reads tool results and answers from them.

It recognises these formats (the real tools' outputs, see flawedcode.tools):

- ``chartbook_list``: lines ``pipeline/dataframe: title (N rows, K columns, start to end)``;
- ``chartbook_get_docs``: Markdown; the title is the first ``# `` heading and the
  columns are the first cells of the Markdown tables;
- ``chartbook_load_data``: a line ``# pipeline/dataframe: n rows x k columns, a to b``
  then CSV. From the rows it computes mean / min / max / latest of a column
  (the asked one, else the dataframe's main rate column) and spreads, printed
  with ``DECIMALS`` decimals. The same table inside a ``read_file`` result
  (an offloaded copy in scratch/) is read the same way;
- an offload stub: content starting ``[Offloaded: scratch/...`` (it says where
  the full result is and quotes the preview);
- anything starting ``Error:`` (it relays the error and what to do);
- read_file / list_files / search_files / run_python / write_file /
  search_archive text (quoted, shortened).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from typing import Any

from flawedcode.formats import STUB_PREFIX
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_intents import Request, main_column

DECIMALS = 4
QUOTE_LINES = 12

LOAD_HEADER = re.compile(
    r"^# (?P<key>[\w.-]+/[\w.-]+): (?P<rows>\d+) rows x (?P<columns>\d+) columns, (?P<start>\S+) to (?P<end>\S+)\s*$",
    re.MULTILINE,
)
LIST_LINE = re.compile(r"^(?P<key>[\w.-]+/[\w.-]+): (?P<title>.*?) \((?P<detail>\d[\d,]* rows.*)\)\s*$", re.MULTILINE)
OFFLOAD_PATH = re.compile(rf"^{re.escape(STUB_PREFIX)}(?P<path>[^\s|\]]+)(?P<detail>[^\]\n]*)\]?")
READ_HEADER = re.compile(r"^# (?P<path>\S+) \(lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\)")


@dataclass
class ToolResult:
    """One tool call after the latest request and what came back."""

    name: str
    args: dict[str, Any]
    content: str


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


def number(value: float) -> str:
    return f"{value:.{DECIMALS}f}"


# ----------------------------------------------------------------------------- parsing


def parse_loaded_table(text: str) -> LoadedTable | None:
    """The table in a chartbook_load_data result (also inside a read_file of its offloaded copy)."""
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
    return LoadedTable(
        key=match["key"], rows=int(match["rows"]), start=match["start"], end=match["end"],
        header=list(reader.fieldnames or []), records=records,
    )


def parse_catalog_list(text: str) -> list[tuple[str, str, str]]:
    """(pipeline/dataframe, title, detail) per line of chartbook_list."""
    return [(match["key"], match["title"], match["detail"]) for match in LIST_LINE.finditer(text)]


def parse_docs(text: str) -> tuple[str, list[str]]:
    """(title, column names) of a Markdown data dictionary."""
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    columns: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            continue
        first = stripped.strip("|").split("|")[0].strip().strip("`*").strip()
        if not first or set(first) <= set("-: ") or first.lower() in ("column", "name", "field", "variable"):
            continue
        if re.fullmatch(r"[\w.%-]+", first) and first not in columns:
            columns.append(first)
    return title, columns


def offload_path(text: str) -> str | None:
    match = OFFLOAD_PATH.match(text)
    return match["path"] if match else None


def paths_named(text: str) -> list[str]:
    """scratch/ and archives/ paths a text names, in order."""
    found = re.findall(r"(?<![\w/])((?:scratch|archives)/[\w/-]*[\w-]\.[a-z]+)(?![\w])", text)
    return list(dict.fromkeys(found))


# ----------------------------------------------------------------------------- statistics


def describe_column(table: LoadedTable, column: str) -> str | None:
    pairs = table.values(column)
    if not pairs:
        return None
    values = [value for _, value in pairs]
    low_date, low = min(pairs, key=lambda pair: pair[1])
    high_date, high = max(pairs, key=lambda pair: pair[1])
    last_date, last = pairs[-1]
    mean = sum(values) / len(values)
    return (
        f"{table.key} {column}: mean {number(mean)}, min {number(low)} on {low_date}, max {number(high)} on {high_date}, "
        f"latest {number(last)} on {last_date} ({len(values)} values)"
    )


def mean_of(table: LoadedTable, column: str) -> float | None:
    values = [value for _, value in table.values(column)]
    return sum(values) / len(values) if values else None


def columns_to_describe(table: LoadedTable, request: Request | None, asked: list[str] | None) -> list[str]:
    numeric = table.numeric_columns()
    wanted = [column for column in (asked or []) if column in numeric]
    if request is not None:
        wanted += [column for column in request.mentions.columns if column in numeric and column not in wanted]
    if not wanted:
        main = main_column(numeric)
        wanted = [main] if main else []
    return wanted[:4]


def describe_table(table: LoadedTable, request: Request | None, asked: list[str] | None = None) -> str:
    lines = [f"Loaded {table.rows} rows of {table.key}, {table.start} to {table.end}."]
    columns = columns_to_describe(table, request, asked)
    for column in columns:
        described = describe_column(table, column)
        if described:
            lines.append(described + ".")
    if request is not None and "spread" in request.stats and len(columns) >= 2:
        lines.append(_spread_between_columns(table, columns[0], columns[1]))
    return " ".join(lines)


def _spread_between_columns(table: LoadedTable, first: str, second: str) -> str:
    a, b = dict(table.values(first)), dict(table.values(second))
    differences = [a[date] - b[date] for date in a if date in b]
    if not differences:
        return f"No dates where both {first} and {second} have values, so no spread."
    return (
        f"Spread {first} minus {second}: mean {number(sum(differences) / len(differences))}, "
        f"latest {number(differences[-1])} ({len(differences)} dates)."
    )


def spread_between_tables(tables: list[LoadedTable]) -> str | None:
    """'Spread sofr minus effr' from the means of each table's main column."""
    if len(tables) < 2:
        return None
    first, second = tables[0], tables[1]
    first_column, second_column = main_column(first.numeric_columns()), main_column(second.numeric_columns())
    if not first_column or not second_column:
        return None
    first_mean, second_mean = mean_of(first, first_column), mean_of(second, second_column)
    if first_mean is None or second_mean is None:
        return None
    return (
        f"Spread {first.key} {first_column} minus {second.key} {second_column} (difference of means): "
        f"{number(first_mean - second_mean)}."
    )


# ----------------------------------------------------------------------------- answers


def answer_from_results(request: Request | None, results: list[ToolResult], vocabulary: Vocabulary) -> str:
    """The reply after tool results: one paragraph per result, then any spread across them."""
    paragraphs = [answer_one(request, result, vocabulary) for result in results]
    tables = [table for result in results if (table := parse_loaded_table(result.content)) is not None]
    if request is not None and "spread" in request.stats:
        spread = spread_between_tables(tables)
        if spread:
            paragraphs.append(spread)
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


def answer_one(request: Request | None, result: ToolResult, vocabulary: Vocabulary) -> str:
    content = result.content.strip()
    if content.startswith("Error"):
        return _relay_error(result, content)
    if content.startswith(STUB_PREFIX):
        return _describe_offload(result, content, vocabulary)
    table = parse_loaded_table(content)
    if table is not None:
        described = describe_table(table, request, result.args.get("columns"))
        where = READ_HEADER.match(content)
        return described + (f" (Read from {where['path']}.)" if where else "")
    name = result.name
    if name == "chartbook_list":
        return _describe_catalog(request, content)
    if name == "chartbook_get_docs" or (name == "read_file" and "|" in content and "\n# " in "\n" + content):
        return _describe_docs(result, content) + _asked_column_rows(request, content)
    if name == "run_python" or name == "execute":
        return _describe_run(content)
    if name == "write_file":
        return content.splitlines()[0] + "."
    if name == "search_files":
        return _quote(f"search_files found {len(content.splitlines())} matching lines:", content)
    if name == "list_files":
        return _quote("The workspace has:", content, max_lines=40)
    if name == "search_archive":
        return _quote("The archive search returned:", content)
    return _quote(f"{name} returned:", content)


def _relay_error(result: ToolResult, content: str) -> str:
    problem = content.removeprefix("Error:").strip()
    if result.name.startswith("chartbook"):
        advice = "Check the names (ask me to list the ChartBook dataframes) and ask again."
    elif result.name in ("read_file", "list_files", "search_files", "write_file"):
        advice = "Check the path (ask me to list the files) and ask again."
    else:
        advice = "Fix the input and ask again."
    return f"{result.name} failed: {problem} {advice}"


def _describe_offload(result: ToolResult, content: str, vocabulary: Vocabulary) -> str:
    lines = content.splitlines()
    match = OFFLOAD_PATH.match(lines[0])
    path = match["path"] if match else "scratch/"
    detail = match["detail"].strip(" |]") if match else ""
    preview = [line for line in lines[1:] if line.strip() and "read_file(" not in line][:8]
    what = _call_label(result)
    text = f"The full result of {what} is saved in {path}" + (f" ({detail})" if detail else "") + "."
    text += f" I can read it with read_file(path='{path}')."
    statistics = _preview_statistics(preview)
    if statistics:
        return text + " " + statistics
    if preview:
        text += " Preview:\n" + "\n".join(f"> {line}" for line in preview)
    return text


def _preview_statistics(preview: list[str]) -> str:
    """From a table stub's preview (title, CSV header, rows named mean/min/max): the main column's figures."""
    title = next((LOAD_HEADER.match(line) for line in preview if LOAD_HEADER.match(line)), None)
    header_index = next((i for i, line in enumerate(preview) if line.startswith("date,")), None)
    if title is None or header_index is None:
        return ""
    columns = preview[header_index].split(",")
    rows = {line.split(",", 1)[0]: line.split(",") for line in preview if line.split(",", 1)[0] in ("mean", "min", "max")}
    column = main_column([name for name in columns[1:]])
    if column is None or not rows:
        return ""
    position = columns.index(column)
    figures = ", ".join(f"{stat} {row[position]}" for stat, row in rows.items() if position < len(row))
    return (f"From the preview's summary statistics: {title['key']} {column}: {figures} "
            f"over {title['rows']} rows ({title['start']} to {title['end']}).")


def _call_label(result: ToolResult) -> str:
    pipeline, dataframe = result.args.get("pipeline"), result.args.get("dataframe")
    if pipeline and dataframe:
        return f"{result.name} for {pipeline}/{dataframe}"
    return result.name


def _describe_catalog(request: Request | None, content: str) -> str:
    entries = parse_catalog_list(content)
    if not entries:
        return _quote("chartbook_list returned:", content)
    pipelines = request.mentions.pipelines if request is not None else []
    if pipelines:
        entries = [entry for entry in entries if entry[0].split("/")[0] in pipelines] or entries
    listed = "; ".join(f"{key} ({title}, {detail})" for key, title, detail in entries)
    return f"The ChartBook catalog has {len(entries)} dataframes: {listed}."


def _describe_docs(result: ToolResult, content: str) -> str:
    title, columns = parse_docs(content)
    label = _call_label(result)
    text = f"Docs from {label}: {title or 'untitled'}."
    if columns:
        text += f" Columns ({len(columns)}): {', '.join(columns)}."
    else:
        text += " I found no column table in what I can see."
    return text


def _asked_column_rows(request: Request | None, content: str) -> str:
    """The data-dictionary rows of the columns the request names, quoted."""
    if request is None or not request.mentions.columns:
        return ""
    rows = [line.strip() for line in content.splitlines() if line.lstrip().startswith("|")
            and any(re.search(rf"(?<![\w]){re.escape(column)}(?![\w])", line) for column in request.mentions.columns)]
    return "".join(f"\nFrom the docs: {row}" for row in rows[:5])


def _describe_run(content: str) -> str:
    lines = content.splitlines()
    status = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("# exit code") else "finished"
    output = lines[1:] if lines and lines[0].startswith("# exit code") else lines
    tail = output[-20:]
    text = f"The code ran ({status})."
    if tail:
        text += " Output" + (" (last 20 lines)" if len(output) > 20 else "") + ":\n" + "\n".join(tail)
    return text


def _quote(lead: str, content: str, max_lines: int = QUOTE_LINES) -> str:
    lines = content.splitlines()
    shown = "\n".join(lines[:max_lines])
    more = f"\n(... {len(lines) - max_lines} more lines)" if len(lines) > max_lines else ""
    return f"{lead}\n{shown}{more}"
