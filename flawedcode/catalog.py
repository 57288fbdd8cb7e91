"""A small reader for the ChartBook catalog in ``data/``, without the ``chartbook`` package.

The catalog is laid out the way ChartBook (0.2.x) expects, so the real package can
read it too (``chartbook.data.load(pipeline=..., dataframe=..., catalog_path="data")``)::

    data/chartbook.toml                      the catalog: [project] type = "catalog",
                                             and a [pipelines] registry of folders
    data/pipelines/<pipeline>/chartbook.toml one manifest per pipeline, with a
                                             [dataframes.<id>] table per dataframe:
                                             name, description, path (parquet),
                                             docs_path (Markdown), date_col
    data/pipelines/<pipeline>/_data/<id>.parquet
    data/pipelines/<pipeline>/docs_src/dataframes/<id>.md

The pipelines are ``yield_curve`` (``repo_public``, ``treasury_yields``,
``fed_yield_curve``) and ``money_markets`` (``sofr``, ``effr``): SAMPLE data, made by
``data/generate.py``, one row per business day from 2023-01-03 to 2024-12-31, with the
date in a ``date`` column.

Rules:
- Only ``tomllib``, ``pyarrow`` and ``pandas``: no dependency on ``chartbook``.
- Listing is cheap: row counts, columns and the date span come from the parquet
  metadata, never from reading the rows.
- ``load`` always includes the date column, sorts by date ascending, filters
  ``start``/``end`` inclusively (``YYYY-MM-DD``) and then keeps the LAST ``limit`` rows.
- Every mistake raises ``CatalogError`` with a message a person or a model can act
  on: the close names it meant, the valid columns, the dates the data covers.
"""

from __future__ import annotations

import datetime as dt
import difflib
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flawedcode import paths

if TYPE_CHECKING:  # pandas and pyarrow are imported where rows are read (CONTRIBUTING: no heavy imports up front)
    import pandas as pd
    import pyarrow.parquet as pq

    DateLike = str | dt.date | pd.Timestamp

MANIFEST_NAME = "chartbook.toml"
DATE_FORMAT_HINT = "YYYY-MM-DD, e.g. 2024-09-18"
# Keys of a catalog's [pipelines] table that configure the registry instead of naming a pipeline
RESERVED_PIPELINE_KEYS = frozenset({"members", "exclude", "disabled"})

class CatalogError(ValueError):
    """A catalog request that cannot be served; the message says what to do instead."""


@dataclass(frozen=True)
class DataframeInfo:
    """What the catalog knows about one dataframe, without loading its rows."""

    pipeline: str
    dataframe: str
    title: str
    description: str
    path: Path
    docs_path: Path
    rows: int
    columns: list[str]
    date_column: str
    start: str
    end: str

    @property
    def ref(self) -> str:
        """The dataframe's full name, ``pipeline/dataframe``."""
        return f"{self.pipeline}/{self.dataframe}"

    def summary_line(self) -> str:
        """One line for a listing: ``pipeline/dataframe: title (N rows, K columns, start to end)``."""
        return f"{self.ref}: {self.title} ({self.rows} rows, {len(self.columns)} columns, {self.start} to {self.end})"


@dataclass(frozen=True)
class ColumnDoc:
    """One row of a dataframe's data dictionary (the docs' ``| column | type | unit | description |`` table)."""

    name: str
    type: str = ""
    unit: str = ""
    description: str = ""


@dataclass(frozen=True)
class _Entry:
    """One ``[dataframes.<id>]`` table of a pipeline manifest, with its paths resolved."""

    pipeline: str
    dataframe: str
    title: str
    description: str
    path: Path
    docs_path: Path
    inline_docs: str | None
    date_column: str


class Catalog:
    """The ChartBook catalog at ``root`` (default: ``paths.data_dir()``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else paths.data_dir()
        self._entries = _read_catalog(self.root)
        self._infos: dict[tuple[str, str], DataframeInfo] = {}

    # ------------------------------------------------------------ listing

    def pipelines(self) -> list[str]:
        """Pipeline names, in the order the catalog registers them."""
        return list(self._entries)

    def dataframes(self, pipeline: str | None = None) -> list[DataframeInfo]:
        """Every dataframe of one pipeline, or of the whole catalog."""
        names = [self._check_pipeline(pipeline)] if pipeline is not None else self.pipelines()
        return [self.info(name, dataframe) for name in names for dataframe in self._entries[name]]

    def info(self, pipeline: str, dataframe: str) -> DataframeInfo:
        """One dataframe's description, row count, columns and date span (from parquet metadata)."""
        entry = self._entry(pipeline, dataframe)
        key = (entry.pipeline, entry.dataframe)
        if key not in self._infos:
            self._infos[key] = _describe(entry)
        return self._infos[key]

    def resolve(self, name: str) -> tuple[str, str]:
        """``"sofr"`` or ``"money_markets/sofr"`` -> ``("money_markets", "sofr")``."""
        name = str(name).strip()
        for separator in ("/", ":"):
            if separator in name:
                pipeline, _, dataframe = name.partition(separator)
                entry = self._entry(pipeline.strip(), dataframe.strip())
                return entry.pipeline, entry.dataframe
        owners = [pipeline for pipeline, frames in self._entries.items() if name in frames]
        if len(owners) == 1:
            return owners[0], name
        if len(owners) > 1:
            options = ", ".join(f"{owner}/{name}" for owner in owners)
            raise CatalogError(f"Dataframe {name!r} is in more than one pipeline; name one of: {options}.")
        if name in self._entries:
            options = ", ".join(f"{name}/{frame}" for frame in self._entries[name])
            raise CatalogError(f"{name!r} is a pipeline, not a dataframe. Name one of its dataframes: {options}.")
        every = [f"{pipeline}/{frame}" for pipeline, frames in self._entries.items() for frame in frames]
        bare = [frame for frames in self._entries.values() for frame in frames]
        raise CatalogError(f"Unknown dataframe {name!r}.{_did_you_mean(name, bare)} Available: {', '.join(every)}.")

    def docs(self, pipeline: str, dataframe: str) -> str:
        """The dataframe's Markdown documentation, verbatim."""
        entry = self._entry(pipeline, dataframe)
        if entry.inline_docs is not None:
            return entry.inline_docs
        try:
            return entry.docs_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CatalogError(
                f"The docs for {entry.pipeline}/{entry.dataframe} are missing: {entry.docs_path} does not exist. "
                f"Regenerate the sample catalog with `python data/generate.py`."
            ) from None

    def column_docs(self, pipeline: str, dataframe: str) -> dict[str, ColumnDoc]:
        """The data dictionary in a dataframe's docs, by column name (empty if the docs have no column table)."""
        return parse_column_table(self.docs(pipeline, dataframe))

    def all_column_names(self) -> dict[str, list[tuple[str, str]]]:
        """Every column name in the catalog, with the dataframes that have it."""
        found: dict[str, list[tuple[str, str]]] = {}
        for info in self.dataframes():
            for column in info.columns:
                found.setdefault(column, []).append((info.pipeline, info.dataframe))
        return found

    # ------------------------------------------------------------ loading

    def load(
        self,
        pipeline: str,
        dataframe: str,
        columns: Iterable[str] | str | None = None,
        start: DateLike | None = None,
        end: DateLike | None = None,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Rows of one dataframe, sorted by date; the date column is always included.

        ``start`` and ``end`` are inclusive dates (``YYYY-MM-DD``); ``limit`` keeps the
        last N rows after the date filter.
        """
        info = self.info(pipeline, dataframe)
        wanted = self._check_columns(info, columns)
        first, last = _parse_date(start, "start"), _parse_date(end, "end")
        if first is not None and last is not None and first > last:
            raise CatalogError(
                f"The date range is inverted: start {first.date()} is after end {last.date()}. "
                f"Swap them; {info.ref} covers {info.start} to {info.end}."
            )
        limit = _check_limit(limit)
        import pandas as pd

        frame = pd.read_parquet(info.path, columns=wanted)
        frame = frame.sort_values(info.date_column, kind="stable").reset_index(drop=True)
        frame = _filter_dates(frame, info, first, last)
        if limit is not None:
            frame = frame.tail(limit).reset_index(drop=True)
        return frame

    def rows(self, pipeline: str, dataframe: str, columns: Iterable[str], start: str | None = None,
             end: str | None = None) -> list[dict]:
        """Rows as plain Python, sorted by date, ``start``/``end`` inclusive (ISO): {date column: 'YYYY-MM-DD', column: value}.

        ``load``'s pandas-free twin for short scripts (the offline model's statistics): pyarrow reads the
        parquet file and nothing imports pandas, so a script starts in about 0.25 s instead of 0.5 s.
        Values are floats, ints, bools or None (missing).
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        entry = self._entry(pipeline, dataframe)
        parquet = pq.ParquetFile(entry.path)
        wanted = list(dict.fromkeys([entry.date_column, *columns]))
        if any(column not in parquet.schema_arrow.names for column in wanted):
            # load's own check and message (did you mean, which dataframe has it). Only here: info() reads the
            # date span, which imports pandas, and the rows themselves must not.
            self._check_columns(self.info(pipeline, dataframe), wanted)
        table = parquet.read(columns=wanted)
        dates = table.column(entry.date_column)
        if pa.types.is_timestamp(dates.type) or pa.types.is_date(dates.type):  # as dates: to_pylist would need pandas
            days = [day.isoformat() if day is not None else "" for day in dates.cast(pa.date32()).to_pylist()]
        else:
            days = [str(day)[:10] for day in dates.to_pylist()]
        values = [table.column(column).to_pylist() for column in wanted[1:]]
        found = [dict(zip(wanted, row)) for row in zip(days, *values)
                 if (not start or row[0] >= str(start)) and (not end or row[0] <= str(end))]
        return sorted(found, key=lambda row: row[entry.date_column])

    # ------------------------------------------------------------ checks

    def _check_pipeline(self, pipeline: str) -> str:
        if pipeline in self._entries:
            return pipeline
        available = ", ".join(self._entries)
        raise CatalogError(f"Unknown pipeline {pipeline!r}.{_did_you_mean(pipeline, self._entries)} Available: {available}.")

    def _entry(self, pipeline: str, dataframe: str) -> _Entry:
        frames = self._entries[self._check_pipeline(pipeline)]
        if dataframe in frames:
            return frames[dataframe]
        elsewhere = [other for other, its in self._entries.items() if dataframe in its]
        hint = f" It is in pipeline {elsewhere[0]!r}: use {elsewhere[0]}/{dataframe}." if elsewhere else _did_you_mean(dataframe, frames)
        raise CatalogError(
            f"Unknown dataframe {dataframe!r} in pipeline {pipeline!r}.{hint} Available: {', '.join(frames)}."
        )

    def _check_columns(self, info: DataframeInfo, columns: Iterable[str] | str | None) -> list[str] | None:
        if columns is None:
            return None
        requested = [columns] if isinstance(columns, str) else list(columns)
        unknown = [column for column in requested if column not in info.columns]
        if unknown:
            raise CatalogError(self._unknown_columns_message(info, unknown))
        return list(dict.fromkeys([info.date_column, *requested]))

    def _unknown_columns_message(self, info: DataframeInfo, unknown: list[str]) -> str:
        parts = []
        everywhere = self.all_column_names()
        for column in unknown:
            hint = _did_you_mean(column, info.columns)
            owners = [f"{p}/{d}" for p, d in everywhere.get(column, [])]
            if owners:
                hint += f" ({column!r} is a column of {', '.join(owners)}.)"
            parts.append(f"Unknown column {column!r} in {info.ref}.{hint}")
        return " ".join(parts) + f" Valid columns: {', '.join(info.columns)}."


# ------------------------------------------------------------ reading the manifests


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise CatalogError(
            f"No ChartBook manifest at {path}. The catalog needs {MANIFEST_NAME} files; "
            f"regenerate the sample catalog with `python data/generate.py`, or point FLAWEDCODE_DATA_DIR at one."
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise CatalogError(f"{path} is not valid TOML: {error}.") from None


def _read_catalog(root: Path) -> dict[str, dict[str, _Entry]]:
    manifest = _read_toml(root / MANIFEST_NAME)
    registry = manifest.get("pipelines")
    if not isinstance(registry, dict) or not registry:
        raise CatalogError(f"{root / MANIFEST_NAME} is not a catalog: it has no [pipelines] table.")
    catalog: dict[str, dict[str, _Entry]] = {}
    for pipeline, entry in registry.items():
        if pipeline in RESERVED_PIPELINE_KEYS:
            continue
        entry = {"path": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or entry.get("disabled", False):
            continue
        if not isinstance(entry.get("path"), str):
            raise CatalogError(f"{root / MANIFEST_NAME}: pipeline {pipeline!r} has no folder path; write {{ path = \"pipelines/{pipeline}\" }}.")
        catalog[pipeline] = _read_pipeline(pipeline, (root / entry["path"]).resolve())
    return catalog


def _read_pipeline(pipeline: str, folder: Path) -> dict[str, _Entry]:
    manifest = _read_toml(folder / MANIFEST_NAME)
    entries: dict[str, _Entry] = {}
    for dataframe, table in (manifest.get("dataframes") or {}).items():
        if not isinstance(table, dict) or "path" not in table:
            continue  # a dataframe declared for documentation only, or in a database source
        docs_path = folder / table.get("docs_path", MANIFEST_NAME)
        entries[dataframe] = _Entry(
            pipeline=pipeline,
            dataframe=dataframe,
            title=str(table.get("name", dataframe)),
            description=str(table.get("description", "")),
            path=(folder / table["path"]).resolve(),
            docs_path=docs_path.resolve(),
            inline_docs=table.get("docs") if "docs_path" not in table else None,
            date_column=str(table.get("date_col", "date")),
        )
    return entries


def _describe(entry: _Entry) -> DataframeInfo:
    """Row count, columns and date span from the parquet footer: no rows are read."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(entry.path)
    except FileNotFoundError:
        raise CatalogError(
            f"The data for {entry.pipeline}/{entry.dataframe} is missing: {entry.path} does not exist. "
            f"Regenerate the sample catalog with `python data/generate.py`."
        ) from None
    columns = [name for name in parquet.schema_arrow.names if not name.startswith("__index_level_")]
    start, end = _date_span(parquet, entry)
    return DataframeInfo(
        pipeline=entry.pipeline,
        dataframe=entry.dataframe,
        title=entry.title,
        description=entry.description,
        path=entry.path,
        docs_path=entry.docs_path,
        rows=parquet.metadata.num_rows,
        columns=columns,
        date_column=entry.date_column,
        start=start,
        end=end,
    )


def _date_span(parquet: pq.ParquetFile, entry: _Entry) -> tuple[str, str]:
    """First and last date, from row-group statistics when they exist, else from the date column."""
    if entry.date_column not in parquet.schema_arrow.names:
        return "", ""
    index = parquet.schema_arrow.get_field_index(entry.date_column)
    lows, highs = [], []
    for group in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max:
            import pandas as pd

            dates = pd.to_datetime(parquet.read(columns=[entry.date_column]).column(0).to_pandas())
            return _day(dates.min()), _day(dates.max())
        lows.append(stats.min)
        highs.append(stats.max)
    if not lows:
        return "", ""
    return _day(min(lows)), _day(max(highs))


def _day(value) -> str:
    import pandas as pd

    return pd.Timestamp(value).strftime("%Y-%m-%d")


# ------------------------------------------------------------ small helpers


def parse_column_table(markdown: str) -> dict[str, ColumnDoc]:
    """Rows of the first Markdown table whose header starts with ``column`` (or ``name`` / ``field``)."""
    found: dict[str, ColumnDoc] = {}
    header: list[str] | None = None
    for line in markdown.splitlines():
        cells = [cell.strip().strip("`*").strip() for cell in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|"):
            if header is not None and found:
                break
            header = None
            continue
        if header is None:
            if cells and cells[0].lower() in ("column", "name", "field", "variable"):
                header = [cell.lower() for cell in cells]
            continue
        if not cells[0] or set(cells[0]) <= set("-: "):
            continue
        row = dict(zip(header, cells))
        found[cells[0]] = ColumnDoc(cells[0], row.get("type", ""), row.get("unit", ""), row.get("description", ""))
    return found



def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    candidates = list(candidates)
    by_case = [candidate for candidate in candidates if candidate.lower() == str(name).lower()]
    containing = [candidate for candidate in candidates if str(name).lower() in candidate.lower()] if len(str(name)) >= 3 else []
    close = by_case or difflib.get_close_matches(str(name), candidates, n=3, cutoff=0.6) or containing[:3]
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(match) for match in close) + "?"


def _parse_date(value: DateLike | None, which: str) -> pd.Timestamp | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    import pandas as pd

    if isinstance(value, (dt.date, pd.Timestamp)):
        return pd.Timestamp(value).normalize()
    text = str(value).strip()
    try:
        return pd.Timestamp(dt.date.fromisoformat(text))
    except ValueError:
        raise CatalogError(f"Cannot read {which} date {text!r}: expected {DATE_FORMAT_HINT}.") from None


def _check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise CatalogError(f"limit must be a positive whole number of rows (or None for all), not {limit!r}.")
    return limit


def _filter_dates(
    frame: pd.DataFrame, info: DataframeInfo, first: pd.Timestamp | None, last: pd.Timestamp | None
) -> pd.DataFrame:
    if first is None and last is None:
        return frame
    import pandas as pd

    dates = pd.to_datetime(frame[info.date_column])
    keep = pd.Series(True, index=frame.index)
    if first is not None:
        keep &= dates >= first
    if last is not None:
        keep &= dates <= last
    if not keep.any():
        asked = f"{first.date() if first is not None else 'the start'} to {last.date() if last is not None else 'the end'}"
        raise CatalogError(
            f"No rows in {info.ref} from {asked}: the data covers {info.start} to {info.end} (business days only). "
            f"Choose dates inside that range."
        )
    return frame[keep].reset_index(drop=True)
