"""Offloading: a large tool result goes to scratch/, a short stub stays in the context.

Rules (defaults in ``OffloadConfig``):
- A result is offloaded when it is longer than ``threshold_chars`` (5,000) characters
  or ``threshold_tokens`` (1,250) tokens. The token test matters for numeric tables:
  3,200 characters of CSV are 2,200 tokens, so a character threshold alone lets
  them through (characters / 4 under-counts them 2-3x). ``per_tool_chars`` overrides the character
  threshold for one tool. Read-only tools (``ToolSpec(read_only=True)`` in ``tools.TOOL_SPECS``:
  ``read_file``, ``list_files``, ``search_files``, ``search_archive``) are exempt (``exempt_tools``),
  so reading an offloaded file back never offloads it again.
- The file is ``scratch/<tool>_<arguments>_<hash>.txt`` (the first ``HASH_DIGITS``, 16,
  hex digits of the content's SHA-256) and holds the result byte-identical (UTF-8). The
  name's words come from the redacted arguments, leaving out any word that looks random
  or is longer than ``MAX_NAME_WORD_CHARS`` (24): no secret reaches a name. Under an
  agent, the file is saved in its conversation's folder, ``<scratch>/<conversation id>/``
  (``Workspace.conversation_scratch_dir``), which is what ``scratch/`` means to that
  conversation's tools: another conversation cannot list, search or read it. The
  same result always lands in the same file; a file of that name with other content is
  never overwritten (the name then takes more of the hash).
- Byte-identical, with two exceptions, both visible: secrets are replaced first
  (``flawedcode.infra.redact``: an API key becomes ``[REDACTED:openai-key]``) and the stub's
  last line says how many (``Redacted before saving: 1 secret (openai-key x1).``); a lone
  surrogate, which has no UTF-8 form, is saved as its escape ``\xff`` (``flawedcode.infra.safe_text``).
  The stub describes the file as saved. NUL and other control characters are kept.
- A tool result holding a lone surrogate is escaped the same way even when it is not
  offloaded, so that no message in the context is text that cannot be sent or written.
- The stub is at most ``preview_fraction`` (12%) of the original's tokens (never
  less than 60 tokens, for header and footer) and reads::

      [Offloaded: scratch/chartbook_get_docs_yield_curve_repo_public_3f2a9c1d.txt | 5,312 characters, 98 lines, 1,402 tokens]
      Preview (docs: head and column names):
      # repo_public: ...
      Columns (44): date, tri_party_overnight_rate, ...
      Full result: read_file(path='scratch/chartbook_get_docs_yield_curve_repo_public_3f2a9c1d.txt')

  The preview is typed: docs show their head and as many column names as fit
  (then "+N more"); tables show their first rows and summary statistics per
  numeric column (rows named mean/min/max under the same header, for the first six
  columns of a wide table); other text shows its head and its tail. A table is the
  CSV that ``chartbook_load_data`` wrote, read back with the standard library's ``csv``
  the way ``pandas.read_csv`` reads it (same types, same figures: see ``read_table``).
- If the file cannot be written, the original result stays in the context
  (nothing is lost) and an ``offload_failed`` event is recorded.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flawedcode import paths
from flawedcode.config import OffloadConfig
from flawedcode.constants import ENCODING_NAME
from flawedcode.formats import LOAD_HEADER, STUB_PREFIX
from flawedcode.infra.redact import looks_random, redact
from flawedcode.infra.safe_text import escape_surrogates, has_surrogates
from flawedcode.paths import write_atomically
from flawedcode.telemetry import EventKind, SessionLog
from flawedcode.tokens import count_text
from flawedcode.tools import read_only_tools

HASH_DIGITS = 16
"""Hex digits of the content's SHA-256 in a scratch file's name (64 bits: no accidental collision in practice)."""
MAX_NAME_WORD_CHARS = 24
"""Longest word of a tool's arguments that goes into a scratch file's name (longer ones are left out)."""


@dataclass(frozen=True)
class Offloaded:
    """The outcome of one offload: where the result went and what replaced it."""

    stub: str
    path: Path
    display_path: str
    original_tokens: int
    stub_tokens: int
    redacted: Counter[str] = field(default_factory=Counter)  # secrets replaced in the saved file, by kind


def exempt_tools(config: OffloadConfig) -> list[str]:
    """The tools never offloaded: the read-only tools of the registry (``tools.TOOL_SPECS``), then the config's own."""
    return list(dict.fromkeys([*read_only_tools(), *config.exempt_tools]))


def should_offload(result: str, tool_name: str, config: OffloadConfig, encoding: str = ENCODING_NAME) -> bool:
    """True when ``result`` from ``tool_name`` is over its threshold and the tool is not exempt."""
    if not config.enabled or tool_name in exempt_tools(config):
        return False
    threshold_chars = config.per_tool_chars.get(tool_name, config.threshold_chars)
    if threshold_chars is not None and len(result) > threshold_chars:
        return True
    return config.threshold_tokens is not None and count_text(result, encoding) > config.threshold_tokens


def offload(result: str, tool_name: str, arguments: dict[str, Any] | None = None, *,
            scratch_dir: Path | None = None, config: OffloadConfig | None = None,
            encoding: str = ENCODING_NAME) -> Offloaded:
    """Save ``result`` (secrets redacted, lone surrogates escaped) under scratch/ and return the stub that replaces it."""
    config = config or OffloadConfig()
    scratch_dir = Path(scratch_dir or paths.scratch_dir())
    redaction = redact(escape_surrogates(result))
    saved = redaction.text
    path = save_result(saved, scratch_dir, tool_name, arguments or {})
    display_path = f"scratch/{path.name}"
    original_tokens = count_text(saved, encoding)
    stub = build_stub(saved, tool_name, display_path, original_tokens, config.preview_fraction, encoding,
                      key_lines_whole=config.key_lines_whole)
    if redaction.changed:
        stub += "\n" + redaction_note(redaction.kinds)
    return Offloaded(stub, path, display_path, original_tokens, count_text(stub, encoding), redaction.kinds)


def redaction_note(kinds: Counter[str]) -> str:
    """The stub's last line when secrets were replaced in the saved file."""
    total = sum(kinds.values())
    listed = ", ".join(f"{kind} x{count}" for kind, count in sorted(kinds.items()))
    return f"Redacted before saving: {total} secret{'s' if total != 1 else ''} ({listed})."


def save_result(text: str, scratch_dir: Path, tool_name: str, arguments: dict[str, Any]) -> Path:
    """Write ``text`` to its scratch file (or find it already there); never overwrite a file with other content."""
    data = text.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    for digits in (HASH_DIGITS, 32, 64):
        path = scratch_dir / scratch_file_name(text, tool_name, arguments, digest[:digits])
        if not path.exists():
            write_atomically(path, data)
            return path
        if path.is_file() and path.read_bytes() == data:
            return path
    for copy in range(2, 1000):  # the whole hash is taken by other content: a file changed by hand
        path = scratch_dir / scratch_file_name(text, tool_name, arguments, f"{digest}-{copy}")
        if not path.exists() or (path.is_file() and path.read_bytes() == data):
            if not path.exists():
                write_atomically(path, data)
            return path
    raise FileExistsError(f"no free scratch file name for this result in {scratch_dir}")


def maybe_offload(result: str, tool_name: str, arguments: dict[str, Any] | None = None, *,
                  scratch_dir: Path | None = None, config: OffloadConfig | None = None,
                  encoding: str = ENCODING_NAME, log: SessionLog | None = None) -> str:
    """The lesson's function: the stub if ``result`` is large, else ``result`` (a lone surrogate escaped).

    With a ``log``, an ``offload`` event is recorded, and a scratch file that cannot be written leaves
    ``result`` in place (nothing is lost) with an ``offload_failed`` event; without one, that error is raised.
    """
    config = config or OffloadConfig()
    if has_surrogates(result):  # e.g. a file name that is not UTF-8: it could never be sent or saved
        result = escape_surrogates(result)
    if not should_offload(result, tool_name, config, encoding):
        return result
    try:
        done = offload(result, tool_name, arguments, scratch_dir=scratch_dir, config=config, encoding=encoding)
    except OSError as error:
        if log is None:
            raise
        tokens = count_text(result, encoding)
        log.record_event(EventKind.OFFLOAD_FAILED, tokens, tokens, tool=tool_name, error=str(error))
        return result
    if log is not None:
        log.record_event(EventKind.OFFLOAD, done.original_tokens, done.stub_tokens, tool=tool_name, path=done.display_path,
                         characters=len(result), **({"redacted": dict(done.redacted)} if done.redacted else {}))
    return done.stub


def scratch_file_name(result: str, tool_name: str, arguments: dict[str, Any], digest: str | None = None) -> str:
    """``<tool>_<argument words>_<content hash>.txt``: readable, and stable for the same content.

    The words come from the arguments *after* redaction, and a word that looks random (a key of a
    shape the redactor does not know, a hash) or is over ``MAX_NAME_WORD_CHARS`` is left out: a
    file name is copied into stubs and archives, so it must never carry a secret.
    """
    values = [redact(str(value)).text for value in arguments.values() if isinstance(value, (str, int, float))]
    words = [word for word in re.split(r"[^A-Za-z0-9]+", " ".join(values))
             if word and len(word) <= MAX_NAME_WORD_CHARS and not looks_random(word, 8) and word != "REDACTED"]
    slug = "_".join(words)[:60].strip("_")
    if digest is None:
        digest = hashlib.sha256(escape_surrogates(result).encode("utf-8")).hexdigest()[:HASH_DIGITS]
    return "_".join(part for part in (tool_name, slug, digest) if part) + ".txt"


# --- the stub ------------------------------------------------------------------

def build_stub(result: str, tool_name: str, display_path: str, original_tokens: int,
               preview_fraction: float = 0.12, encoding: str = ENCODING_NAME, key_lines_whole: bool = False) -> str:
    """Header, a typed preview that fits the budget, and how to read the rest.

    ``key_lines_whole`` (v3): the kind's key lines (``KEY_LINES``) are kept whole whatever the share, and a
    later line that does not fit is left out rather than cut.
    """
    lines = result.splitlines()
    kind, candidates = preview_candidates(result, tool_name)
    header = (f"{STUB_PREFIX}{display_path} | {len(result):,} characters, {len(lines):,} lines, "
              f"{original_tokens:,} tokens]\nPreview ({kind}):")
    footer = f"Full result: read_file(path='{display_path}')"
    budget = max(int(original_tokens * preview_fraction), 60)
    used = count_text(header, encoding) + count_text(footer, encoding) + 2
    if key_lines_whole:
        key = candidates[:KEY_LINES.get(kind.split(":")[0], 0)]
        budget = max(budget, used + sum(count_text(line, encoding) + 1 for line in key))
    kept: list[str] = []
    for candidate in candidates:
        cost = count_text(candidate, encoding) + 1
        if used + cost > budget:
            fitted = None if key_lines_whole else _fit_list_line(candidate, budget - used, encoding)
            if fitted:
                kept.append(fitted)
            break
        kept.append(candidate)
        used += cost
    return "\n".join([header, *kept, footer])


KEY_LINES = {"docs": 2, "table": 5}
"""Per preview kind, how many of its first lines are key: a docs page's title and column list; a table's
title, header and mean/min/max rows (kept whole under ``key_lines_whole``)."""


def preview_candidates(result: str, tool_name: str) -> tuple[str, list[str]]:
    """The preview lines, most important first, for the kind of result this is."""
    lines = result.splitlines()
    if lines and LOAD_HEADER.match(lines[0]):  # chartbook_load_data's table (its header, read where it is written)
        table = _table_preview(lines)
        if table:
            return "table: first rows and summary statistics", table
    columns = _markdown_columns(lines)
    if columns:
        head = [line for line in lines[:12] if line.strip()][:3]
        return "docs: head and column names", [head[0], f"Columns ({len(columns)}): " + ", ".join(columns), *head[1:]]
    head = lines[:6]
    tail = lines[-3:] if len(lines) > 9 else []
    return "text: head and tail", [*head, *(["...", *tail] if tail else [])]


def _markdown_columns(lines: list[str]) -> list[str]:
    """Column names from a Markdown data dictionary: the first cell of each row under a 'column' header."""
    columns: list[str] = []
    in_table = False
    for line in lines:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if not cells:
            in_table = False
            continue
        if cells[0].strip("*` ").lower() in ("column", "name", "field"):
            in_table = True
            continue
        if in_table and not set(cells[0]) <= set("-: "):
            columns.append(cells[0].strip("`* "))
    return columns


def _table_preview(lines: list[str], max_columns: int = 6) -> list[str]:
    """Title, then header, mean/min/max and first rows for the first few columns (wide tables say how many more)."""
    columns = read_table("\n".join(lines[1:]))
    shown = (columns or [])[: max_columns + 1]
    if not shown or not shown[0].cells or not any(column.is_numeric for column in [*shown, *columns[len(shown):]]):
        return []
    more = f",(+{len(columns) - len(shown)} more columns)" if len(columns) > len(shown) else ""
    rows = [",".join(column.name for column in shown) + more]
    for stat in ("mean", "min", "max"):
        rows.append(",".join(f"{column.statistic(stat):.4g}" if column.is_numeric else stat for column in shown))
    first_rows = [",".join(column.shown(row) for column in shown) for row in range(min(2, len(shown[0].cells)))]
    return [lines[0], *rows, *first_rows]


# --- reading the tool's CSV as pandas.read_csv would, without pandas ---------------------------
# Why not pandas: importing it costs a third of a second, and the preview needs three figures per
# column. These rules reproduce read_csv's defaults for what a table preview shows: which columns
# are numbers, their values, and numpy's pairwise sums (so a mean is the same to the last bit).

NA_TEXTS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})  # read_csv's na_values
TRUE_TEXTS, FALSE_TEXTS = frozenset({"True", "TRUE", "true"}), frozenset({"False", "FALSE", "false"})
INTEGER = re.compile(r"[+-]?\d+")
DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf(?:inity)?", re.IGNORECASE)


@dataclass
class TableColumn:
    """One column of a CSV table: its name, its cells as text, and its type and values (worked out when first asked)."""

    name: str
    cells: list[str | None]  # None: the row had no field here

    @functools.cached_property
    def _typed(self) -> tuple[str, list[Any]]:
        return _infer(self.cells)

    @property
    def kind(self) -> str:
        """"int", "float" (numbers, NaN where missing), "bool", "text-bool" (booleans, NaN where missing) or "text"."""
        return self._typed[0]

    @property
    def values(self) -> list[Any]:
        return self._typed[1]

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("int", "float")

    def statistic(self, name: str) -> float:
        """``mean``, ``min`` or ``max`` of the values, skipping NaN (NaN if there is none)."""
        present = [value for value in self.values if not (isinstance(value, float) and math.isnan(value))]
        if not present:
            return math.nan
        if name == "min":
            return min(present)
        if name == "max":
            return max(present)
        if self.kind == "int":
            return _chunked_sum([float(value) for value in self.values]) / len(present)
        return _pairwise_sum([0.0 if math.isnan(value) else value for value in self.values], 0, len(self.values)) / len(present)

    def shown(self, row: int) -> str:
        """A cell as pandas prints it: numbers as numbers (``5.0`` in a float column), missing as ``nan``."""
        if self.values:
            return str(self.values[row])
        cell = self.cells[row]
        return "nan" if cell is None or cell in NA_TEXTS else cell


def read_table(text: str) -> list[TableColumn] | None:
    """The columns of a CSV text (header first), typed as ``pandas.read_csv`` types them; None if it is not a table."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row and not (len(row) == 1 and row[0] and not row[0].strip(" \t"))]
    if not rows:
        return None
    header, body = rows[0], rows[1:]
    if body and len(body[0]) == len(header) + 1:
        body = [row[1:] for row in body]  # one field more than the header: the first is an index, which is not shown
    if any(len(row) > len(header) for row in body):
        return None  # read_csv would fail: "Expected N fields, saw M"
    names = _dedup_names([name or f"Unnamed: {position}" for position, name in enumerate(header)])
    return [TableColumn(name, [row[position] if position < len(row) else None for row in body])
            for position, name in enumerate(names)]


def _infer(cells: Sequence[str | None]) -> tuple[str, list[Any]]:
    """A column's type and values: integers, floats (NaN where missing), booleans, or text.

    Integers must fit 64 bits (signed, or unsigned when none is negative), as in a DataFrame;
    beyond that read_csv keeps the column as text, and so does this.
    """
    missing = [cell is None or cell in NA_TEXTS for cell in cells]
    present = [cell.strip(" \t") for cell, gone in zip(cells, missing) if not gone and cell is not None]
    integers = [int(cell) for cell in present if INTEGER.fullmatch(cell)]
    signed = all(-2**63 <= value < 2**63 for value in integers)
    unsigned = all(0 <= value < 2**64 for value in integers)
    if present and len(integers) == len(present) and not any(missing):
        return ("int", integers) if signed or unsigned else ("text", [])
    if not (signed or (unsigned and not any(missing) and min(integers, default=0) >= 0)):
        return "text", []
    if all(INTEGER.fullmatch(cell) or DECIMAL.fullmatch(cell) for cell in present):
        whole = any(missing) and len(integers) == len(present)  # integers with gaps: read as integers first
        numbers = iter(float(int(cell)) if whole else float(cell) for cell in present)
        return "float", [math.nan if gone else next(numbers) for gone in missing]
    if present and all(cell in TRUE_TEXTS or cell in FALSE_TEXTS for cell in present):
        booleans = iter(cell in TRUE_TEXTS for cell in present)  # shown as True/False (and nan where missing)
        return ("bool" if not any(missing) else "text-bool"), [math.nan if gone else next(booleans) for gone in missing]
    return "text", []


def _dedup_names(names: list[str]) -> list[str]:
    """Repeated column names become ``name.1``, ``name.2``, ... (read_csv's rule)."""
    counts: dict[str, int] = {}
    unique = []
    for name in names:
        count = counts.get(name, 0)
        while count > 0:
            counts[name] = count + 1
            name = f"{name}.{count}"
            count = counts.get(name, 0)
        unique.append(name)
        counts[name] = count + 1
    return unique


def _pairwise_sum(values: list[float], start: int, count: int) -> float:
    """numpy's float64 sum, step for step: eight running sums in blocks of up to 128, halves above that."""
    if count < 8:
        total = 0.0
        for position in range(start, start + count):
            total += values[position]
        return total
    if count <= 128:
        sums = values[start:start + 8]
        position = 8
        while position < count - count % 8:
            for lane in range(8):
                sums[lane] += values[start + position + lane]
            position += 8
        total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
        for rest in range(start + position, start + count):
            total += values[rest]
        return total
    half = count // 2
    half -= half % 8
    return _pairwise_sum(values, start, half) + _pairwise_sum(values, start + half, count - half)


def _chunked_sum(values: list[float]) -> float:
    import numpy  # on first use: numpy sums a column it converts (integers to floats) in chunks of its buffer size

    chunk, total = numpy.getbufsize(), 0.0
    for start in range(0, len(values), chunk):
        total += _pairwise_sum(values, start, min(chunk, len(values) - start))
    return total


def _fit_list_line(line: str, budget_tokens: int, encoding: str) -> str | None:
    """Shorten a 'Label (n): a, b, c' line to what fits, saying how many items were left out."""
    if ": " not in line or budget_tokens < 12:
        return None
    label, items_text = line.split(": ", 1)
    items = items_text.split(", ")
    for keep in range(len(items) - 1, 0, -1):
        shortened = f"{label}: {', '.join(items[:keep])}, +{len(items) - keep} more"
        if count_text(shortened, encoding) + 1 <= budget_tokens:
            return shortened
    return None
