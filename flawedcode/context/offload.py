"""Offloading: a large tool result goes to scratch/, a short stub stays in the context.

Rules (defaults in ``OffloadConfig``):
- A result is offloaded when it is longer than ``threshold_chars`` (5,000) characters
  or ``threshold_tokens`` (1,250) tokens. The token test matters for numeric tables:
  3,200 characters of CSV are 2,200 tokens, so a character threshold alone lets
  them through (characters / 4 under-counts them 2-3x). ``per_tool_chars`` overrides the character
  threshold for one tool. Read tools (``read_file``, ``list_files``, ``search_files``,
  ``search_archive``) are exempt, so reading an offloaded file back never offloads it again.
- The file is ``scratch/<tool>_<arguments>_<hash>.txt`` and holds the result
  byte-identical (UTF-8). The same result always lands in the same file.
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
  columns of a wide table); other text shows its head and its tail.
- If the file cannot be written, the original result stays in the context
  (nothing is lost) and an ``offload_failed`` event is recorded.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from flawedcode import paths
from flawedcode.config import OffloadConfig
from flawedcode.formats import STUB_PREFIX
from flawedcode.paths import write_atomically
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import count_text


@dataclass(frozen=True)
class Offloaded:
    """The outcome of one offload: where the result went and what replaced it."""

    stub: str
    path: Path
    display_path: str
    original_tokens: int
    stub_tokens: int


def should_offload(result: str, tool_name: str, config: OffloadConfig, encoding: str = "o200k_base") -> bool:
    """True when ``result`` from ``tool_name`` is over its threshold and the tool is not exempt."""
    if not config.enabled or tool_name in config.exempt_tools:
        return False
    threshold_chars = config.per_tool_chars.get(tool_name, config.threshold_chars)
    if threshold_chars is not None and len(result) > threshold_chars:
        return True
    return config.threshold_tokens is not None and count_text(result, encoding) > config.threshold_tokens


def offload(result: str, tool_name: str, arguments: dict[str, Any] | None = None, *,
            scratch_dir: Path | None = None, config: OffloadConfig | None = None,
            encoding: str = "o200k_base") -> Offloaded:
    """Save ``result`` byte-identical under scratch/ and return the stub that replaces it."""
    config = config or OffloadConfig()
    scratch_dir = Path(scratch_dir or paths.scratch_dir())
    name = scratch_file_name(result, tool_name, arguments or {})
    path = scratch_dir / name
    if not (path.exists() and path.read_bytes() == result.encode("utf-8")):
        write_atomically(path, result.encode("utf-8"))
    display_path = f"scratch/{name}"
    original_tokens = count_text(result, encoding)
    stub = build_stub(result, tool_name, display_path, original_tokens, config.preview_fraction, encoding)
    return Offloaded(stub, path, display_path, original_tokens, count_text(stub, encoding))


def maybe_offload(result: str, tool_name: str, arguments: dict[str, Any] | None = None, *,
                  scratch_dir: Path | None = None, config: OffloadConfig | None = None) -> str:
    """The lesson's function: the stub if ``result`` is large, else ``result`` unchanged."""
    config = config or OffloadConfig()
    if not should_offload(result, tool_name, config):
        return result
    return offload(result, tool_name, arguments, scratch_dir=scratch_dir, config=config).stub


def scratch_file_name(result: str, tool_name: str, arguments: dict[str, Any]) -> str:
    """``<tool>_<argument values>_<content hash>.txt``: readable, and stable for the same content."""
    words = [str(value) for value in arguments.values() if isinstance(value, (str, int, float)) and str(value)]
    slug = re.sub(r"[^A-Za-z0-9]+", "_", "_".join(words)).strip("_")[:60]
    digest = hashlib.sha256(result.encode("utf-8")).hexdigest()[:8]
    return "_".join(part for part in (tool_name, slug, digest) if part) + ".txt"


# --- the stub ------------------------------------------------------------------

def build_stub(result: str, tool_name: str, display_path: str, original_tokens: int,
               preview_fraction: float = 0.12, encoding: str = "o200k_base") -> str:
    """Header, a typed preview that fits the budget, and how to read the rest."""
    lines = result.splitlines()
    kind, candidates = preview_candidates(result, tool_name)
    header = (f"{STUB_PREFIX}{display_path} | {len(result):,} characters, {len(lines):,} lines, "
              f"{original_tokens:,} tokens]\nPreview ({kind}):")
    footer = f"Full result: read_file(path='{display_path}')"
    budget = max(int(original_tokens * preview_fraction), 60)
    used = count_text(header, encoding) + count_text(footer, encoding) + 2
    kept: list[str] = []
    for candidate in candidates:
        cost = count_text(candidate, encoding) + 1
        if used + cost > budget:
            fitted = _fit_list_line(candidate, budget - used, encoding)
            if fitted:
                kept.append(fitted)
            break
        kept.append(candidate)
        used += cost
    return "\n".join([header, *kept, footer])


def preview_candidates(result: str, tool_name: str) -> tuple[str, list[str]]:
    """The preview lines, most important first, for the kind of result this is."""
    lines = result.splitlines()
    if lines and re.match(r"# \S+/\S+: \d+ rows x \d+ columns", lines[0]):
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
    try:
        frame = pd.read_csv(io.StringIO("\n".join(lines[1:])))
    except (ValueError, pd.errors.ParserError):
        return []
    numeric = frame.select_dtypes("number")
    if numeric.empty or len(frame) == 0:
        return []
    shown = list(frame.columns[: max_columns + 1])
    more = f",(+{len(frame.columns) - len(shown)} more columns)" if len(frame.columns) > len(shown) else ""
    rows = [",".join(shown) + more]
    for stat in ("mean", "min", "max"):
        rows.append(",".join(f"{getattr(frame[column], stat)():.4g}" if column in numeric else stat for column in shown))
    first_rows = [",".join(str(value) for value in row) for row in frame[shown].head(2).itertuples(index=False)]
    return [lines[0], *rows, *first_rows]


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


# --- the middleware --------------------------------------------------------------

RECOVERY_PREFIXES = ("scratch/", "archives/")


class OffloadMiddleware(AgentMiddleware):
    """Thin adapter: runs each tool, then offloads its result if it is large."""

    def __init__(self, config: OffloadConfig, scratch_dir: Path, log: SessionLog, encoding: str = "o200k_base") -> None:
        super().__init__()
        self.config = config
        self.scratch_dir = Path(scratch_dir)
        self.log = log
        self.encoding = encoding

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        with self.log.timing_wrapper():
            call = request.tool_call
            self._note_recovery(call)
            if not isinstance(result, ToolMessage) or not isinstance(result.content, str):
                return result
            if not should_offload(result.content, call["name"], self.config, self.encoding):
                return result
            try:
                done = offload(result.content, call["name"], call.get("args"), scratch_dir=self.scratch_dir,
                               config=self.config, encoding=self.encoding)
            except OSError as error:
                tokens = count_text(result.content, self.encoding)
                self.log.record_event("offload_failed", tokens, tokens, tool=call["name"], error=str(error))
                return result
            self.log.record_event("offload", done.original_tokens, done.stub_tokens, tool=call["name"],
                                  path=done.display_path, characters=len(result.content))
            return result.model_copy(update={"content": done.stub})

    def _note_recovery(self, call: dict[str, Any]) -> None:
        arguments = call.get("args") or {}
        path = str(arguments.get("path") or arguments.get("file_path") or "")
        if call["name"] == "search_archive" or path.startswith(RECOVERY_PREFIXES):
            self.log.record_event("recovery", 0, 0, tool=call["name"], target=path or arguments.get("query", ""))
