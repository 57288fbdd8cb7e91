"""Complete or decline: a data request is answered only when every word of it was used.

After a clause is read into a ``DataAsk`` (offline_data.py), ``unused_words`` accounts for each
word of what is left once its periods were taken out (``Clause.rest``):

- grammar and everyday words (offline_words ``STOP_WORDS`` / ``COMMON_WORDS``) and the filler
  list in ``offline_intents.toml`` (``[words] filler``: "pls", "lol", "if possible", ...);
- the words of the statistics, units and operations it applies (``[words] understood``);
- the words that name the series it chose: the dataframe's id, title and description, the
  column's name, its docs description and aliases, and the tenors / percentiles they carry;
- numbers it used: a threshold, a row count, a tenor or percentile of the chosen column.

Anything else (an unknown word, a date it could not parse such as ``22/04/2024`` read as
``22/04/``, a negation such as "not" or "excluding", a transform such as "daily changes" when
it was not applied) is *unused*, and ``decline_unused`` replies with what it understood and
what it could not use, instead of answering the wider question those words would narrow.
"""

from __future__ import annotations

import calendar
import re
import tomllib
from functools import cache

from flawedcode.catalog import Catalog
from flawedcode.models.offline_answers import STAT_NAMES
from flawedcode.models.offline_cues import CUE_FILE
from flawedcode.models.offline_data import FRAME_ONLY_WORDS, DataAsk, Series
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_plan import Clause, Task, reply
from flawedcode.models.offline_words import (
    COMMON_WORDS,
    NUMBER_WORDS,
    PERCENTILE,
    STOP_WORDS,
    SYNONYMS,
    TENOR,
    content_words,
    singular,
    tags_in,
)

TOKEN = re.compile(r"[a-z0-9][a-z0-9'/.:_-]*[a-z0-9']|[a-z0-9]")
NEGATIONS = frozenset({"not", "no", "never", "except", "excluding", "exclude", "without", "nor", "neither", "non",
                       "isn't", "wasn't", "weren't", "aren't", "didn't", "doesn't", "don't", "won't"})


@cache
def word_lists() -> dict[str, frozenset[str]]:
    """The ``[words]`` lists of the cue file (filler, and the words of what the model understands), single words."""
    words = tomllib.loads(CUE_FILE.read_text(encoding="utf-8")).get("words", {})
    return {name: frozenset(value.lower() for value in values if " " not in value) for name, values in words.items()}


@cache
def filler_phrases() -> re.Pattern[str]:
    """The filler of more than one word ('if possible', 'by the way'), taken out before words are counted."""
    words = tomllib.loads(CUE_FILE.read_text(encoding="utf-8")).get("words", {})
    phrases = sorted((value.lower() for value in words.get("filler", ()) if " " in value), key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, phrases)) + r")(?![\w])" if phrases else r"(?!)")


def series_words(series: Series, vocabulary: Vocabulary) -> set[str]:
    """Every word that can name this series: its dataframe's id, title and description; its column's name and docs."""
    ref = series.ref
    text = " ".join([ref.pipeline, ref.dataframe, ref.title, ref.description])
    words = set(content_words(text)) | set(re.findall(r"[a-z]+", text.lower()))
    if series.column:
        info = vocabulary.info(ref, series.column)
        words |= set(info.name_words) | set(info.doc_words) | set(re.split(r"[\W_]+", series.column.lower()))
        words.add(series.column.lower())
        words |= {word for alias in info.aliases for word in TOKEN.findall(alias.lower()) + content_words(alias)}
        words |= set(content_words(info.description)) | set(re.findall(r"[a-z]+", info.description.lower()))
        words |= {word for word, meant in SYNONYMS.items() if set(meant) <= set(info.name_words)}  # 'usage' of a volume
    other_columns = {word for column in ref.columns if column != series.column
                     for word in vocabulary.info(ref, column).name_words}
    return (words | (docs_words(vocabulary, ref.pipeline, ref.dataframe) - other_columns)) - CONDITION_WORDS


CONDITION_WORDS = frozenset({day.lower() for day in calendar.day_name} | {day.lower() + "s" for day in calendar.day_name}
                            | {"weekend", "weekends", "weekday", "weekdays", "holiday", "holidays"})
"""Words that would select rows ('on Wednesdays'): never taken as naming a series, so a request with one is declined."""


@cache
def _docs_text(root: object, pipeline: str, dataframe: str) -> str:
    try:
        return (Catalog(root) if root is not None else Catalog()).docs(pipeline, dataframe)
    except Exception:  # noqa: BLE001 - no docs: only the names count
        return ""


def docs_words(vocabulary: Vocabulary, pipeline: str, dataframe: str) -> set[str]:
    """The words of a dataframe's docs (its notes say 'Treasury bill', 'reverse repo', 'account balance')."""
    text = _docs_text(vocabulary.catalog_root, pipeline, dataframe).lower()
    return set(TOKEN.findall(text)) | set(content_words(text))


def unused_words(clause: Clause, ask: DataAsk, vocabulary: Vocabulary, notes: list[str] = ()) -> list[str]:
    """The words of a data clause that nothing in the ask (or a visible note: 'our limit') accounts for, in order."""
    text = filler_phrases().sub(" ", clause.rest)
    for used in (ask.shift, ask.flag_words):  # 'a year later', 'excluding quarter-ends': words a slot used
        text = text.replace(used, " ") if used else text
    tags = {tag for series in ask.series if series.column for tag in vocabulary.info(series.ref, series.column).tags}
    tags |= {f"p{q}" for q in ask.percentiles}
    text = re.sub(r"\b\d{1,2}s\d{1,2}s\b", lambda match: " " if set(tags_in(match.group(0))) <= tags else match.group(0), text)  # 2s10s
    text = TENOR.sub(lambda match: " " if tags_in(match.group(0))[:1] and tags_in(match.group(0))[0] in tags else match.group(0), text)
    text = PERCENTILE.sub(lambda match: " " if set(tags_in(match.group(0))) & tags else match.group(0), text)
    numbers = set()
    if ask.threshold:
        numbers.add(ask.threshold[1])
    for count in (ask.limit, ask.period.last_rows, ask.period.first_rows):
        if count:
            numbers.add(float(count))
    ranked = [int(stat.lstrip("topbm")) for stat in ask.stats if re.fullmatch(r"(?:top|bottom)\d+", stat)]
    numbers |= {float(count) for count in ranked}
    number_words = {word for word, value in NUMBER_WORDS.items() if value in ranked}
    known = STOP_WORDS | COMMON_WORDS | FRAME_ONLY_WORDS | number_words | word_lists().get("filler", frozenset()) \
        | word_lists().get("understood", frozenset())
    named: set[str] = set(clause.mentions.frame_words) | {word for note in notes for word in content_words(note)}
    for series in ask.series:
        named |= series_words(series, vocabulary)
    unused: list[str] = []
    for token in TOKEN.findall(text.lower()):
        word = token.strip("'.:/-")
        if not word:
            continue
        if re.fullmatch(r"-?\d+(?:\.\d+)?%?", word):
            if float(word.rstrip("%")) not in numbers:
                unused.append(token)
            continue
        parts = [part for part in re.split(r"[-_/]", word) if part]
        negation_used = ask.threshold is not None and ask.threshold[0].startswith("at or")
        if all(part in known or singular(part) in known or part in named or singular(part) in named
               or part.rstrip("'s") in named for part in parts) and (word not in NEGATIONS or negation_used):
            continue
        if negation_used and (word in NEGATIONS or word.endswith("n't")):
            continue
        unused.append(token)
    lowered = clause.rest.lower()
    unused += [phrase for phrase in word_lists_phrases("unsupported") if re.search(rf"(?<![\w]){re.escape(phrase)}(?![\w])", lowered)]
    comparison = COMPARISON.search(lowered)
    if comparison and ask.threshold is None and ask.combine is None:
        unused.append(comparison.group(0))  # 'above the top of the target range': a comparison it did not apply
    return list(dict.fromkeys(unused))


COMPARISON = re.compile(r"\b(?:above|below|exceed\w*|higher than|lower than|greater than|less than|more than)\b")


@cache
def word_lists_phrases(name: str) -> tuple[str, ...]:
    """A ``[words]`` list of the cue file as written (phrases kept whole)."""
    words = tomllib.loads(CUE_FILE.read_text(encoding="utf-8")).get("words", {})
    return tuple(value.lower() for value in words.get(name, ()))


def understood(ask: DataAsk, with_period: bool = True) -> str:
    """What a data ask means, in words: series, statistic, condition, period (no figure)."""
    series = " minus ".join(s.label for s in ask.series) if ask.combine == "difference" else \
        " and ".join(s.label for s in ask.series)
    if ask.wants_rows:
        what = f"the rows of {series}"
    else:
        stats = ", ".join(STAT_NAMES.get(stat, stat) for stat in ask.stats) or "a summary"
        what = f"the {stats} of {series}"
    if ask.threshold:
        what += f" (days {ask.threshold[0]} {ask.threshold[1]:g})"
    if ask.flag:
        what += f" ({ask.flag_words})"
    return f"{what} over {ask.period.label or ask.period.describe()}" if with_period else what


AMBIGUOUS_WORDS = {"vol": "volume (a *_volume_bn column) or volatility (the standard deviation)",
                   "vols": "volumes or volatilities", "px": "a price or a level", "chg": "a change or a percent change"}
"""Shorthand with two meanings: asked back, never guessed."""


def decline_unused(ask: DataAsk, unused: list[str]) -> Task:
    """The reply to a clause with words the model could not use: what it understood, what it could not use."""
    ambiguous = [word for word in unused if word in AMBIGUOUS_WORDS]
    if ambiguous:
        word = ambiguous[0]
        return reply(f"I read this as {understood(ask)}, but '{word}' could mean {AMBIGUOUS_WORDS[word]}: which one? "
                     "I computed nothing; say it in full and I'll answer.")
    words = ", ".join(f"'{word}'" for word in unused[:4])
    negated = [word for word in unused if word in NEGATIONS]
    why = ("I can't apply a negation or an exclusion" if negated else
           f"{'they name' if len(unused) > 1 else 'it names'} no column, date, statistic or condition I know")
    return reply(f"I read this as {understood(ask)}, but I could not use {words}: {why}, and without "
                 f"{'them' if len(unused) > 1 else 'it'} I would be answering a different question, so I computed nothing. "
                 f"Rephrase without {'them' if len(unused) > 1 else 'it'}, or ask me for the docs to see the columns, "
                 "dates and statistics I can use.")
