"""The offline model's vocabulary, read from the catalog and each dataframe's docs (no lists per dataframe).

``Vocabulary.find`` names the dataframes (by id, title, initials, a title pair or a word only they have),
pipelines and exact column names in a request; ``match_columns`` scores the columns a phrase describes
(tenor and percentile tags, name and docs words, the docs' aliases); ``main_column`` is what "the SOFR" means.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from flawedcode.catalog import Catalog
from flawedcode.models.offline_words import STAT_WORDS, STOP_WORDS, SYNONYMS, TOKEN, content_words, singular, tags_in, word_set

MAIN_COLUMN_NAMES = ("rate", "value", "price", "close", "level")
KIND_ORDER = {"id": 0, "alias": 0, "pipeline": 1, "column": 2}
"""Dataframe names are matched before pipeline names ('par yield curve' is the par yield dataframe)."""
COMBINED, GENERIC_WORDS, NOT_ACRONYMS = word_set("combined"), word_set("generic"), word_set("not_acronyms")


@dataclass(frozen=True)
class ColumnInfo:
    """What the docs say about one column, prepared for matching."""

    name: str
    unit: str = ""
    description: str = ""
    name_tags: tuple[str, ...] = ()
    doc_tags: tuple[str, ...] = ()
    name_words: frozenset[str] = frozenset()
    doc_words: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def tags(self) -> set[str]:
        return set(self.name_tags) | set(self.doc_tags) | {tag for alias in self.aliases for tag in tags_in(alias)}


@dataclass(frozen=True)
class DataframeRef:
    """One catalog dataframe as the offline model knows it."""

    pipeline: str
    dataframe: str
    title: str = ""
    columns: tuple[str, ...] = ()
    description: str = ""
    date_column: str = "date"
    start: str = ""
    end: str = ""
    rows: int = 0

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
    """Exact column names."""
    frame_words: set[str] = field(default_factory=set)
    """The words that named a dataframe (they say nothing more about the column)."""


@dataclass
class ColumnMatch:
    """The columns a phrase describes, best first; ``missing`` names tags no column has."""

    columns: list[tuple[DataframeRef, str]] = field(default_factory=list)
    score: float = 0.0
    missing: list[str] = field(default_factory=list)


@dataclass
class Vocabulary:
    """Every name the offline model recognises, built from a catalog and its docs."""

    frames: list[DataframeRef] = field(default_factory=list)
    column_info: dict[tuple[str, str], ColumnInfo] = field(default_factory=dict)
    _phrases: list[tuple[str, str, str]] = field(default_factory=list)  # (phrase, kind, value)
    known_words: set[str] = field(default_factory=set)
    catalog_root: Path | None = None
    docs_words: dict[str, frozenset[str]] = field(default_factory=dict)
    """The words of each dataframe's docs, by key (its notes say 'Treasury bill', 'reverse repo', 'account balance')."""

    @classmethod
    def from_catalog(cls, catalog_root: Path | None = None) -> Vocabulary:
        """Read the catalog and its docs; an unreadable catalog gives an empty vocabulary (file tools still work)."""
        frames: list[DataframeRef] = []
        infos: dict[tuple[str, str], ColumnInfo] = {}
        docs_words: dict[str, frozenset[str]] = {}
        known: set[str] = set()
        try:
            catalog = Catalog(catalog_root) if catalog_root is not None else Catalog()
            for info in catalog.dataframes():
                ref = DataframeRef(info.pipeline, info.dataframe, info.title, tuple(info.columns), info.description,
                                   info.date_column, info.start, info.end, info.rows)
                frames.append(ref)
                try:
                    docs = catalog.docs(info.pipeline, info.dataframe)
                    table = catalog.column_docs(info.pipeline, info.dataframe)
                except Exception:  # noqa: BLE001 - missing docs: names only
                    docs, table = "", {}
                aliases = docs_aliases(docs)
                docs_words[ref.key] = frozenset(TOKEN.findall(docs.lower())) | frozenset(content_words(docs))
                known |= set(re.findall(r"[a-z]+", docs.lower()))
                for column in info.columns:
                    doc = table.get(column)
                    infos[(ref.key, column)] = column_info(column, doc.unit if doc else "", doc.description if doc else "",
                                                           aliases.get(column, ()))
        except Exception:  # noqa: BLE001 - no catalog means no catalog names, not a crash
            frames = []
        vocabulary = cls(frames=frames, column_info=infos, catalog_root=catalog_root, docs_words=docs_words)
        vocabulary._phrases = vocabulary._build_phrases()
        vocabulary.known_words = vocabulary._words() | vocabulary.names() | known
        return vocabulary

    # ------------------------------------------------------------------ lookups

    def frame(self, key_or_id: str) -> DataframeRef | None:
        return next((ref for ref in self.frames if key_or_id in (ref.key, ref.dataframe)), None)

    def names(self) -> set[str]:
        """Every identifier the catalog has, lower case: keys, ids, pipelines, columns."""
        return {name.lower() for ref in self.frames for name in (ref.key, ref.dataframe, ref.pipeline, *ref.columns)}

    def frames_with_column(self, column: str) -> list[DataframeRef]:
        return [ref for ref in self.frames if column in ref.columns]

    def info(self, ref: DataframeRef, column: str) -> ColumnInfo:
        return self.column_info.get((ref.key, column)) or column_info(column, "", "", ())

    def unit(self, ref: DataframeRef, column: str) -> str:
        return self.info(ref, column).unit

    def main_column(self, ref: DataframeRef) -> str | None:
        """What 'the SOFR' means: a column named like a level, or described as the dataframe itself."""
        numeric = [column for column in ref.columns if column != ref.date_column]
        names = tuple(f"{name}:" for name in {ref.dataframe.lower(), _initials(ref.title).lower()} - {""})
        return next((column for column in numeric if column.lower() in MAIN_COLUMN_NAMES), None) or \
            next((column for column in numeric if self.info(ref, column).description.lower().startswith(names)), None)

    # ------------------------------------------------------------------ building

    def _build_phrases(self) -> list[tuple[str, str, str]]:
        """(phrase, kind, value) for every name: ids and titles of dataframes, pipelines, then the other column names."""
        phrases: list[tuple[str, str, str]] = [(word, "alias", key) for word, key in self._distinctive_words().items()]
        for ref in self.frames:
            initials = _initials(ref.title).lower()
            phrases += [(name, "id", ref.key) for name in (ref.key.lower(), ref.dataframe.lower(), ref.dataframe.replace("_", " ").lower())]
            phrases += [(name, "alias", ref.key) for name in (_plain_title(ref.title), initials if len(initials) >= 3 else "") if name]
        for pipeline in dict.fromkeys(ref.pipeline for ref in self.frames):
            spaced = pipeline.replace("_", " ").lower()
            phrases += [(name, "pipeline", pipeline) for name in (pipeline.lower(), spaced, singular(spaced))]
        known = {phrase for phrase, _, _ in phrases}
        phrases += [(column.lower(), "column", column) for ref in self.frames for column in ref.columns
                    if column != ref.date_column and column.lower() not in known]
        return sorted(set(phrases), key=lambda item: (KIND_ORDER[item[1]], -len(item[0]), item))  # the order find() tries them in

    def _distinctive_words(self) -> dict[str, str]:
        """Words and title pairs only one dataframe has (a word in another's columns counts only if it is an id word)."""
        words: dict[str, set[str]] = {}
        pairs: dict[str, set[str]] = {}
        for ref in self.frames:
            title = _plain_title(ref.title)
            found = set(ref.dataframe.lower().split("_")) | set(re.findall(r"[a-z][a-z-]+", title))
            found |= {word.lower() for word in re.findall(r"\b[A-Z][A-Za-z]{2,}\b", ref.description)}
            words[ref.key] = {word for word in found if word not in GENERIC_WORDS and word not in STOP_WORDS}
            title_words = title.split()
            pairs[ref.key] = {f"{first} {second}" for first, second in zip(title_words, title_words[1:])
                              if first not in STOP_WORDS and second not in STOP_WORDS}
        chosen = {word: key for word, key in _owned_by_one(words).items()
                  if word in self.frame(key).dataframe.lower().split("_") or not self._in_other_columns(word, key)}
        return chosen | _owned_by_one(pairs)

    def _in_other_columns(self, word: str, key: str) -> bool:
        return any(self._in_columns_of(word, ref.key) for ref in self.frames if ref.key != key)

    def _words(self) -> set[str]:
        words: set[str] = set()
        for ref in self.frames:
            words |= set(re.findall(r"[a-z]+", f"{ref.key} {ref.title} {ref.description}".lower()))
        for info in self.column_info.values():
            words |= set(info.name_words) | set(info.doc_words)
            words |= set(re.findall(r"[a-z]+", info.description.lower()))
        return words

    # ------------------------------------------------------------------ reading a request

    def find(self, text: str) -> Mentions:
        """The dataframes, pipelines and exact column names a request names."""
        lowered = text.lower()
        taken = [False] * len(lowered)
        found: list[tuple[int, str, str, str]] = []  # (position, kind, value, phrase)
        for phrase, kind, value in self._phrases:
            if phrase not in lowered:
                continue  # never found: no pattern to build (hundreds of names a call overflow re's cache of compiled patterns)
            pattern = r"(?<![\w/])" + re.escape(phrase) + r"(?![\w])"
            for match in re.finditer(pattern, lowered):
                span = range(match.start(), match.end())
                if any(taken[i] for i in span):
                    if kind == "column":  # a column name that is also an alias ('sofr' in repo_public)
                        found.append((match.start(), kind, value, phrase))
                    continue
                for i in span:
                    taken[i] = True
                found.append((match.start(), kind, value, phrase))
        found = [item for item in found if not self._describes_other_columns(item, found)]
        mentions = Mentions()
        for _, kind, value, phrase in sorted(found):
            ref = self.frame(value) if kind in ("id", "alias") else None
            if ref is not None and ref not in mentions.dataframes:
                mentions.dataframes.append(ref)
            if kind == "id" and ref is not None and ref not in mentions.explicit_dataframes:
                mentions.explicit_dataframes.append(ref)
            if kind in ("id", "alias"):
                mentions.frame_words |= set(re.findall(r"[a-z]+", phrase))
            elif kind == "pipeline" and value not in mentions.pipelines:
                mentions.pipelines.append(value)
            elif kind == "column" and value not in mentions.columns:
                mentions.columns.append(value)
        for explicit in mentions.explicit_dataframes:  # 'the sofr and effr columns of repo_public': columns, not dataframes
            for ref in [ref for ref in mentions.dataframes if ref not in mentions.explicit_dataframes and ref.dataframe in explicit.columns]:
                mentions.dataframes.remove(ref)
                if ref.dataframe not in mentions.columns:
                    mentions.columns.append(ref.dataframe)
        return mentions

    def _describes_other_columns(self, item: tuple[int, str, str, str], found: list[tuple[int, str, str, str]]) -> bool:
        """A title's word pair that describes the columns of another dataframe named too ('Svensson 10y par yield':
        the fitted curve's par yield, not the Treasury par yield curve), and the only words naming its own."""
        _, kind, key, phrase = item
        if kind != "alias" or " " not in phrase or any(one[2] == key and one[3] != phrase for one in found):
            return False
        others = {one[2] for one in found if one[1] in ("id", "alias") and one[2] != key}
        return any(all(self._in_columns_of(word, other) for word in phrase.split()) for other in others)

    def _in_columns_of(self, word: str, key: str) -> bool:
        return any(frame_key == key and {word, singular(word)} & (set(info.name_words) | set(info.doc_words))
                   for (frame_key, _column), info in self.column_info.items())

    def match_columns(self, phrase: str, frames: list[DataframeRef] | None = None,
                      only_tags: list[str] | None = None, ignore: set[str] = frozenset()) -> ColumnMatch:
        """The columns a phrase describes in words, tags or aliases (in ``frames`` first), best score first.

        Words in ``ignore`` (those that named the dataframe) count only to break a tie.
        """
        tags = tags_in(phrase) if only_tags is None else only_tags
        every_word = [word for word in content_words(phrase) if word not in STAT_WORDS]
        every_word += [synonym for word in every_word for synonym in SYNONYMS.get(word, ()) if synonym not in every_word]
        words = [word for word in every_word if word not in ignore]
        if not tags and not words:
            return ColumnMatch()
        scored = self._score(phrase, tags, words, frames or self.frames)
        if len(scored) > 1 and scored[0][0] == scored[1][0] and ignore:
            tied = [ref for score, ref, _ in scored if score == scored[0][0]]
            again = [item for item in self._score(phrase, tags, every_word, list(dict.fromkeys(tied)))
                     if any(item[1] == ref and item[2] == column for score, ref, column in scored if score == scored[0][0])]
            if again and (len(again) == 1 or again[0][0] > again[1][0]):
                scored = [again[0]]
        if frames and not scored:  # 'Treasury General Account': a column elsewhere described by these words
            outside = self._score(phrase, [], words, [ref for ref in self.frames if ref not in frames])
            if outside and outside[0][0] >= 3 and not tags:
                scored = outside
        if not scored:
            return ColumnMatch(missing=tags)
        best = scored[0][0]
        return ColumnMatch([(ref, column) for score, ref, column in scored if score == best], best)

    def _rare_name_word(self, word: str) -> bool:
        """A word in the names of fewer than three columns ('tga', 'iorb') says which column is meant."""
        return sum(word in info.name_words for info in self.column_info.values()) < 3

    def _score(self, phrase: str, tags: list[str], words: list[str], frames: list[DataframeRef]) -> list[tuple[float, DataframeRef, str]]:
        lowered = phrase.lower()
        pairs = set(zip(words, words[1:]))
        scored: list[tuple[float, DataframeRef, str]] = []
        for ref in frames:
            for column in ref.columns:
                if column == ref.date_column:
                    continue
                info = self.info(ref, column)
                if tags and not set(tags) <= info.tags:
                    continue
                score = 3.0 * len(set(tags) & set(info.name_tags)) + 1.0 * len(set(tags) & (info.tags - set(info.name_tags)))
                score -= 2.0 * len(set(info.name_tags) - set(tags)) if tags else 0.0
                score += sum((3.0 if self._rare_name_word(word) else 2.0) for word in set(words) if word in info.name_words)
                score += 1.0 * sum(word in info.doc_words for word in set(words))
                if COMBINED & info.name_words and not COMBINED & set(words) and not info.aliases:
                    score -= 4.0  # a 'x_minus_y' column answers only a request about a difference
                if not tags and "percentile" not in lowered and any(re.fullmatch(r"p\d+", tag) for tag in info.name_tags):
                    score -= 4.0  # ... and a percentile column ('repo_rate_p1') only a request that names its percentile
                score += 1.5 * _defining_prefix(info.doc_words, words)
                doc_pairs = set(zip(info.doc_words, info.doc_words[1:]))
                score += 2.0 * len(pairs & doc_pairs)
                score += 5.0 * sum(bool(re.search(r"(?<![\w])" + re.escape(alias) + r"(?![\w])", lowered)) for alias in info.aliases)
                if score > (1.0 if not tags else 0.0):
                    scored.append((score, ref, column))
        scored.sort(key=lambda item: (-item[0], self.frames.index(item[1]), item[2]))
        return scored


def _owned_by_one(candidates: dict[str, set[str]]) -> dict[str, str]:
    """The words of only one key, and that key."""
    counts = Counter(word for words in candidates.values() for word in words)
    return {word: key for key, words in candidates.items() for word in words if counts[word] == 1}


def column_info(name: str, unit: str, description: str, aliases: tuple[str, ...]) -> ColumnInfo:
    name_words = frozenset(singular(word) for word in re.findall(r"[a-z]+", name.lower().replace("_", " ")) if len(word) > 1)
    return ColumnInfo(name=name, unit=unit, description=description, name_tags=tuple(tags_in(name)),
                      doc_tags=tuple(tags_in(description)), name_words=name_words,
                      doc_words=tuple(word for word in content_words(description) if word not in STAT_WORDS),
                      aliases=tuple(aliases))


def _defining_prefix(doc_words: tuple[str, ...], words: list[str]) -> int:
    """How many of a description's first words the request has in a row ('Interest on reserve balances ...')."""
    for length in range(min(len(doc_words), len(words)), 1, -1):
        prefix = list(doc_words[:length])
        if any(words[i:i + length] == prefix for i in range(len(words) - length + 1)):
            return length
    return 0


def docs_aliases(docs: str) -> dict[str, tuple[str, ...]]:
    """Phrases the docs put right before a column in parentheses: 'The 2s10s spread (`spread_10y_2y_bp`)'."""
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"([A-Za-z0-9][\w -]{0,60}?)\s+\(`([\w]+)`\)", docs):
        words = [word for word in match.group(1).lower().split() if word not in STOP_WORDS][-3:]
        if words:
            found.setdefault(match.group(2), []).append(" ".join(words))
    return {column: tuple(dict.fromkeys(phrases)) for column, phrases in found.items()}


def _plain_title(title: str) -> str:
    return re.sub(r"\s*\([^)]*\)", "", title).strip().lower()


def _initials(title: str) -> str:
    words = [word for word in re.findall(r"[A-Za-z][\w-]*", re.sub(r"\([^)]*\)", "", title))]
    initials = "".join(word[0] for word in words if word[0].isupper())
    return initials if len(initials) == len(words) and initials.upper() not in NOT_ACRONYMS else ""


def trading_days(vocabulary: Vocabulary, ref: DataframeRef) -> list[str]:
    """The days a dataframe has rows for (ISO, sorted), read once from the catalog; [] if it cannot be read."""
    return list(_dates_of(vocabulary.catalog_root, ref.pipeline, ref.dataframe, ref.date_column))


@cache
def _dates_of(catalog_root: Path | None, pipeline: str, dataframe: str, date_column: str) -> tuple[str, ...]:
    try:
        column = (Catalog(catalog_root) if catalog_root is not None else Catalog()).load(pipeline, dataframe)[date_column]
    except Exception:  # noqa: BLE001 - no dates known: no day is declined for want of a row
        return ()
    return tuple(sorted(f"{day:%Y-%m-%d}" for day in column))
