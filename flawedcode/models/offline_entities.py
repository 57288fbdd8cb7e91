"""The offline model's vocabulary: the catalog's names and their everyday aliases.

The offline teaching model recognises a dataframe when a request names it by:

- ``pipeline/dataframe`` (``yield_curve/repo_public``) or the dataframe id
  alone (``repo_public``, also written with spaces: ``repo public``);
- an everyday alias, if that dataframe exists in the catalog: ``SOFR`` /
  ``secured overnight``; ``EFFR`` / ``fed funds``; ``treasury`` /
  ``treasuries`` / ``par yields``; ``repo``; ``yield curve`` / ``svensson``;
- an acronym that appears in exactly one dataframe's title;
- one of its column names (``total_amt_accepted``) when that column belongs to
  exactly one dataframe.

A pipeline id alone (``money_markets``) is recognised as a pipeline.
Matching is case-insensitive on whole words; longer names win over shorter
ones (``repo_public`` is never read as the alias ``repo``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ALIASES_BY_DATAFRAME: dict[str, tuple[str, ...]] = {
    "sofr": ("sofr", "secured overnight financing rate", "secured overnight"),
    "effr": ("effr", "effective federal funds rate", "federal funds", "fed funds"),
    "treasury_yields": ("treasury yields", "treasury", "treasuries", "par yields", "par yield", "par curve"),
    "repo_public": ("repo market", "repo rates", "repo"),
    "fed_yield_curve": ("fed yield curve", "yield curve", "svensson", "zero curve"),
}
"""Everyday names for the course's dataframes (used only for dataframes the catalog has)."""

NOT_ACRONYMS = frozenset({"US", "USD", "NY", "FED", "THE", "AND", "FOR", "DATA", "SAMPLE", "NOT", "OFR"})


@dataclass(frozen=True)
class DataframeRef:
    """One catalog dataframe as the offline model knows it."""

    pipeline: str
    dataframe: str
    title: str = ""
    columns: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.pipeline}/{self.dataframe}"


@dataclass
class Mentions:
    """What one request names, in order of appearance."""

    dataframes: list[DataframeRef] = field(default_factory=list)
    explicit_dataframes: list[DataframeRef] = field(default_factory=list)
    """Dataframes named by id (not by alias): these decide what an ambiguous word means."""
    pipelines: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)


@dataclass
class Vocabulary:
    """Every name the offline model recognises, built from a catalog."""

    frames: list[DataframeRef] = field(default_factory=list)
    _phrases: list[tuple[str, str, str]] = field(default_factory=list)  # (phrase, kind, value)

    @classmethod
    def from_catalog(cls, catalog_root: Path | None = None) -> Vocabulary:
        """Read the catalog; an unreadable catalog gives an empty vocabulary (file tools still work)."""
        try:
            from flawedcode.catalog import Catalog

            catalog = Catalog(catalog_root) if catalog_root is not None else Catalog()
            frames = [
                DataframeRef(info.pipeline, info.dataframe, info.title, tuple(info.columns))
                for info in catalog.dataframes()
            ]
        except Exception:  # noqa: BLE001 - no catalog means no catalog names, not a crash
            frames = []
        return cls.from_frames(frames)

    @classmethod
    def from_frames(cls, frames: list[DataframeRef]) -> Vocabulary:
        vocabulary = cls(frames=list(frames))
        vocabulary._phrases = vocabulary._build_phrases()
        return vocabulary

    def frame(self, key_or_id: str) -> DataframeRef | None:
        for ref in self.frames:
            if key_or_id in (ref.key, ref.dataframe):
                return ref
        return None

    def pipelines(self) -> list[str]:
        return list(dict.fromkeys(ref.pipeline for ref in self.frames))

    def frames_with_column(self, column: str) -> list[DataframeRef]:
        return [ref for ref in self.frames if column in ref.columns]

    def aliases_of(self, ref: DataframeRef) -> list[str]:
        """Every lower-case name that points at this dataframe (id, key, aliases)."""
        names = [ref.key, ref.dataframe, ref.dataframe.replace("_", " ")]
        names += [phrase for phrase, kind, value in self._phrases if kind == "alias" and value == ref.key]
        return list(dict.fromkeys(names))

    def _build_phrases(self) -> list[tuple[str, str, str]]:
        phrases: list[tuple[str, str, str]] = []
        for ref in self.frames:
            phrases.append((ref.key.lower(), "id", ref.key))
            phrases.append((ref.dataframe.lower(), "id", ref.key))
            if "_" in ref.dataframe:
                phrases.append((ref.dataframe.replace("_", " ").lower(), "id", ref.key))
            for alias in ALIASES_BY_DATAFRAME.get(ref.dataframe, ()):
                phrases.append((alias, "alias", ref.key))
        for acronym, ref in self._title_acronyms().items():
            phrases.append((acronym.lower(), "alias", ref.key))
        for pipeline in self.pipelines():
            phrases.append((pipeline.lower(), "pipeline", pipeline))
        known = {phrase for phrase, _, _ in phrases}
        columns = sorted({column for ref in self.frames for column in ref.columns if column != "date"})
        for column in columns:
            if column.lower() not in known:
                phrases.append((column.lower(), "column", column))
        # Longest first, so that 'repo_public' is matched before 'repo'.
        return sorted(set(phrases), key=lambda item: (-len(item[0]), item))

    def _title_acronyms(self) -> dict[str, DataframeRef]:
        owners: dict[str, list[DataframeRef]] = {}
        for ref in self.frames:
            for acronym in set(re.findall(r"\b[A-Z]{3,6}\b", ref.title)):
                if acronym not in NOT_ACRONYMS:
                    owners.setdefault(acronym, []).append(ref)
        return {acronym: refs[0] for acronym, refs in owners.items() if len(refs) == 1}

    def find(self, text: str) -> Mentions:
        """The dataframes, pipelines and columns a request names."""
        lowered = text.lower()
        taken = [False] * len(lowered)
        found: list[tuple[int, str, str]] = []  # (position, kind, value)
        for phrase, kind, value in self._phrases:
            pattern = r"(?<![\w/])" + re.escape(phrase) + r"(?![\w])"
            for match in re.finditer(pattern, lowered):
                span = range(match.start(), match.end())
                if kind != "column" and any(taken[i] for i in span):
                    continue
                if kind == "column" and any(taken[i] for i in span):
                    # A column name that is also an alias ('sofr' in repo_public) still counts as a column.
                    found.append((match.start(), kind, value))
                    continue
                for i in span:
                    taken[i] = True
                found.append((match.start(), kind, value))
        found.sort()
        return self._mentions_from(found)

    def _mentions_from(self, found: list[tuple[int, str, str]]) -> Mentions:
        mentions = Mentions()
        alias_keys: list[str] = []
        for _, kind, value in found:
            if kind in ("id", "alias"):
                ref = self.frame(value)
                if ref is not None and ref not in mentions.dataframes:
                    mentions.dataframes.append(ref)
                if kind == "id" and ref is not None and ref not in mentions.explicit_dataframes:
                    mentions.explicit_dataframes.append(ref)
                if kind == "alias":
                    alias_keys.append(value)
            elif kind == "pipeline" and value not in mentions.pipelines:
                mentions.pipelines.append(value)
            elif kind == "column" and value not in mentions.columns:
                mentions.columns.append(value)
        self._aliases_as_columns(mentions)
        return mentions

    def _aliases_as_columns(self, mentions: Mentions) -> None:
        """'the sofr and effr columns of repo_public': aliases that are columns of a named dataframe."""
        for explicit in mentions.explicit_dataframes:
            for ref in list(mentions.dataframes):
                if ref in mentions.explicit_dataframes:
                    continue
                if ref.dataframe in explicit.columns:
                    mentions.dataframes.remove(ref)
                    if ref.dataframe not in mentions.columns:
                        mentions.columns.append(ref.dataframe)
