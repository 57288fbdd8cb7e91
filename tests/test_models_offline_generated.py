"""Never confidently wrong, generated: answerable requests with one qualifier the model cannot use.

Each case starts from a request the offline model answers, built from the catalog's own vocabulary
(every dataframe, its main column or a column named by its docs, a statistic, a year inside the
data), and inserts ONE qualifier it cannot use: an unknown word, a day that does not exist or is
ambiguous, a negation or exclusion, a transform it does not apply, a unit its values cannot be written
in, or a condition on the rows. The reply must name what it
could not use and state no figure: answering the request without the qualifier would be answering
a wider question. The model is called directly with the real tools bound: a tool call means it set
out to answer.

Three more kinds (issue 41), each a short conversation with the model and the real tools, no agent: filler
and social words around an answerable ask, qualifiers made of known words ('as a decimal', 'in basis
points', 'the summer of 2024 (june to august)', 'daily change'), and a follow-up after a declined turn.
Each reply is the figure of the question asked (computed here with pandas), or states no figure at all.
"""

from __future__ import annotations

import itertools
import re
from functools import cache

import pandas as pd
import pytest
from langchain_core.messages import HumanMessage
from teaching_harness import Chat, fast_workspace, offline_model

from flawedcode.catalog import Catalog
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.tools import Workspace, make_tools

STATISTICS = ["average", "median", "highest", "lowest"]
QUALIFIERS = [
    # (how it is inserted, what the reply must name)
    ("{request} on purple days", "purple"),
    ("{request} at the cheapest", "cheapest"),
    ("{request} if feasible", "feasible"),
    ("{request}, not counting FOMC days", "not"),
    ("{request} excluding Mondays", "excluding"),
    ("{request} on 31/31/{year}", "31/31"),
    ("{request} on the 45th of May {year}", "45th"),
    ("{stat} {subject} on 03/04/{year}", "03/04/{year}"),
    ("{stat} {subject} on April 31st {year}", "no April 31"),
    ("{stat} of the log returns of {subject} in {year}", "log"),
    ("{stat} {subject} in {year} without the outliers", "without"),
    ("{request}, year over year", "year over year"),
    ("fortnightly {request}", "fortnightly"),  # stop 36: was 'weekly', now read as a figure for each week
    ("{request} before the summer", "summer"),
    ("{stat} {subject} in FY{year}", "fiscal year"),
    ("{stat} {subject} on {year}-02-30", "no February 30"),
    ("{stat} real {subject} in {year}", "real"),
    ("{request}, for each weekday", "weekday"),  # stop 36: was 'for each month', now read as a figure for each month
]
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d+(?!\w|\.\d)")
"""A decimal figure, also one that ends a sentence ('mean 4.9458.')."""


@cache
def _subjects() -> list[tuple[str, str]]:
    """(words naming a series, a year inside its data) for each dataframe: its id, and its main column's name."""
    vocabulary = Vocabulary.from_catalog()
    subjects = []
    for ref in vocabulary.frames:
        year = ref.end[:4] if ref.end else "2024"
        column = vocabulary.main_column(ref) or next(c for c in ref.columns if c != ref.date_column)
        subjects += [(f"{ref.key} {column}", year), (f"the {column} column of {ref.key}", year)]
    return subjects


MORE_QUALIFIERS = [
    # added at stop 28 (after the others, so the earlier cases keep their numbers)
    ("{request} in trillions", "trillion"),
    # issue 41: 'volume-weighted' left the list: the teaching model now computes a volume-weighted mean
    ("{request} on days when effr was above 5", "on days when effr was above 5"),
    ("{request} when inverted", "inverted"),  # stop 34: a yield is never inverted (a spread below zero is)
    ("{stat} {subject} correlation in {year}", "correlation is between two series"),  # stop 35: one series has none
    ("{request} after the fomc meeting", "no column gives the date of that event"),  # stop 36: a period an event bounds
]


def _cases(qualifiers: list[tuple[str, str]], first: int = 0) -> list[tuple[str, str]]:
    """Every subject with every qualifier, and one statistic each, in turn: each qualifier meets every statistic.

    Until issue 41 each pair was asked with all four statistics (920 cases). The four replies were the same reply with
    the statistic's name changed, in 230 of 230 pairs (checked by calling the model on all 920), so the other three
    added no rule, only 7 s of serial time.
    """
    cases = []
    for (number, (subject, year)), (index, (template, named)) in itertools.product(enumerate(_subjects()),
                                                                                    enumerate(qualifiers, first)):
        stat = STATISTICS[(number + index) % len(STATISTICS)]
        request = f"{stat} {subject} in {year}"
        cases.append((template.format(request=request, stat=stat, subject=subject, year=year), named.format(year=year)))
    return cases


CASES = _cases(QUALIFIERS) + _cases(MORE_QUALIFIERS, first=len(QUALIFIERS))


@pytest.fixture(scope="module")
def bound_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("generated")
    workspace = Workspace.create(root / "ws", scratch_dir=root / "scratch", archive_dir=root / "archives")
    return offline_model().bind_tools(make_tools(workspace))


def test_the_generated_set_is_large_and_covers_every_kind_of_qualifier():
    assert len(CASES) >= 200
    assert len({named for _, named in CASES}) >= len(QUALIFIERS) + len(MORE_QUALIFIERS)
    for index, qualifier in enumerate(QUALIFIERS + MORE_QUALIFIERS):  # each qualifier with every subject and statistic
        cases = _cases([qualifier], first=index)
        assert len(cases) == len(_subjects()) and set(cases) <= set(CASES)
        assert {stat for stat in STATISTICS for text, _ in cases if re.search(rf"(^| ){stat} ", text)} == set(STATISTICS)


@pytest.mark.parametrize(("text", "named"), CASES, ids=[f"{index:03d}" for index in range(len(CASES))])
def test_a_qualifier_it_cannot_use_is_named_and_no_figure_is_stated(bound_model, text, named):
    reply = bound_model.invoke([HumanMessage(text)])
    assert not reply.tool_calls, f"{text!r}: set out to answer with {reply.tool_calls[:1]}"
    assert named.lower() in reply.text.lower(), f"{text!r}: the reply does not name {named!r}: {reply.text}"
    assert not FIGURE.findall(reply.text), f"{text!r}: states a figure: {reply.text}"


# --- issue 41: follow-ups after a declined turn, filler around an answerable ask, qualifiers made of known words --
#
# Each case is a conversation with the model and the real tools (tests/teaching_harness.py, no agent); the
# figure it must give, if it gives one, is computed here with pandas. A reply is right (it states that figure),
# declined (it states no decimal figure), or confidently wrong (any other figure): never the last.

YEARS = ("2023", "2024")


def _percent_series() -> list[tuple[str, str]]:
    """(pipeline/dataframe, column): the first two percent columns of every dataframe, from the catalog's docs."""
    catalog = Catalog()
    found = []
    for info in catalog.dataframes():
        docs = catalog.column_docs(info.pipeline, info.dataframe)
        found += [(info.ref, name) for name, doc in docs.items() if doc.unit == "percent"][:2]
    return found


SERIES = _percent_series()
STATISTIC_OF = {"average": "mean", "median": "median", "highest": "max", "lowest": "min"}


@cache
def _values(key: str, column: str) -> pd.Series:
    frame = Catalog().load(*key.split("/"), columns=[column])
    return frame.set_index(pd.to_datetime(frame["date"]))[column].dropna()


def figure(key: str, column: str, stat: str, first: str, last: str, transform: str | None = None, before: bool = False) -> float:
    """The statistic over first..last; a daily change is from one day of the period to the next, or, ``before``, each
    day of the period from the day before it (its first change from the last day before the period)."""
    values = _values(key, column)
    values = values.diff()[first:last].dropna() if transform == "daily change" and before else values[first:last]
    if transform == "daily change" and not before:
        values = values.diff().dropna()
    return float(getattr(values, STATISTIC_OF[stat])())


def _subject(key: str, column: str) -> str:
    return f"{key} {column}"


def verdict(reply: str, truth: float | None, scale: float = 1.0) -> str:
    """'right' (the figure, to 4 decimals), 'declined' (no decimal figure) or 'wrong'."""
    figures = [float(found) for found in FIGURE.findall(reply)]
    if truth is not None and any(abs(found - truth * scale) <= 0.00006 * max(1.0, scale) for found in figures):
        return "right"
    return "declined" if not figures else "wrong"


def _chat(tmp_path):
    return Chat(MODEL, fast_workspace(tmp_path))


MODEL = offline_model()

FILLERS = [("hey guys, quick one: ", "?"), ("hmm ok so what's the ", ", class?"), ("sorry to bother you, could you tell me the ", " please"),
           ("ok so now let's do the ", ", thanks!"), ("right, ", " lol"), ("so um, ", ", if you don't mind")]
FILLER_CASES = [(f"{pre}{stat} {_subject(key, column)} in {year}{post}", key, column, stat, year)
                for number, ((key, column), stat, year) in enumerate(itertools.product(SERIES, STATISTIC_OF, YEARS))
                for pre, post in [FILLERS[number % len(FILLERS)]]]

KNOWN_WORD_QUALIFIERS = [
    # (template, first day, last day, transform, scale): the words change the question; the figure is of the changed one
    ("{stat} {subject} in {year} as a decimal", "{year}-01-01", "{year}-12-31", None, 0.01),
    ("{stat} {subject} in {year} in basis points", "{year}-01-01", "{year}-12-31", None, 100.0),
    ("{stat} {subject} in the first half of {year}", "{year}-01-01", "{year}-06-30", None, 1.0),
    ("{stat} {subject} over the summer of {year} (june to august)", "{year}-06-01", "{year}-08-31", None, 1.0),
    ("{stat} {subject} in Q4 {year}", "{year}-10-01", "{year}-12-31", None, 1.0),
    ("{stat} daily change of {subject} in {year}", "{year}-01-01", "{year}-12-31", "daily change", 1.0),
]
KNOWN_WORD_CASES = [(template.format(stat=stat, subject=_subject(key, column), year=year), key, column, stat, year,
                     first.format(year=year), last.format(year=year), transform, scale)
                    for number, ((key, column), stat, (template, first, last, transform, scale)) in
                    enumerate(itertools.product(SERIES, STATISTIC_OF, KNOWN_WORD_QUALIFIERS))
                    for year in [YEARS[number // len(KNOWN_WORD_QUALIFIERS) % 2]]]

FOLLOW_UPS = [
    # (follow-up, what it asks of the first request: (stat, year) moved, or a scale)
    ("and in {other}?", "year"),
    ("what about {other}", "year"),
    ("and the median?", "median"),
    ("same, but in bp please", "bp"),
]
AFTER_DECLINE_CASES = [(key, column, stat, year, (other_key, other_column), follow_up, moves)
                       for number, ((key, column), stat, (follow_up, moves)) in
                       enumerate(itertools.product(SERIES, ["average", "highest"], FOLLOW_UPS))
                       for year in [YEARS[number % 2]]
                       for other_key, other_column in [SERIES[(SERIES.index((key, column)) + 3) % len(SERIES)]]]


@pytest.mark.parametrize(("text", "key", "column", "stat", "year"), FILLER_CASES,
                         ids=[f"filler-{index:03d}" for index in range(len(FILLER_CASES))])
def test_filler_around_an_answerable_ask_is_never_answered_wrong(tmp_path, text, key, column, stat, year):
    reply = _chat(tmp_path).send(text)
    assert verdict(reply, figure(key, column, stat, f"{year}-01-01", f"{year}-12-31")) != "wrong", f"{text!r}: {reply}"


@pytest.mark.parametrize(("text", "key", "column", "stat", "year", "first", "last", "transform", "scale"),
                         KNOWN_WORD_CASES,
                         ids=[f"known-{index:03d}" for index in range(len(KNOWN_WORD_CASES))])
def test_a_qualifier_made_of_known_words_is_applied_or_declined_never_dropped(tmp_path, text, key, column, stat, year, first,
                                                                              last, transform, scale):
    reply = _chat(tmp_path).send(text)
    truth = figure(key, column, stat, first, last, transform)
    judged = verdict(reply, truth, scale)
    if judged == "wrong" and transform and "values" in reply:  # the reply says how many changes it took: either reading
        judged = verdict(reply, figure(key, column, stat, first, last, transform, before=True), scale)
    assert judged != "wrong", f"{text!r}: {reply}"
    if judged != "right":  # a figure of the question without its qualifier is never given alone
        dropped = figure(key, column, stat, f"{year}-01-01", f"{year}-12-31")
        assert f"{dropped:.4f}" not in reply, f"{text!r}: answered without the qualifier: {reply}"


@pytest.mark.parametrize(("key", "column", "stat", "year", "declined", "follow_up", "moves"), AFTER_DECLINE_CASES,
                         ids=[f"after-decline-{index:03d}" for index in range(len(AFTER_DECLINE_CASES))])
def test_a_follow_up_after_a_declined_turn_builds_on_the_last_answered_one(tmp_path, key, column, stat, year, declined,
                                                                           follow_up, moves):
    chat = _chat(tmp_path)
    first = chat.send(f"{stat} {_subject(key, column)} in {year}")
    assert verdict(first, figure(key, column, stat, f"{year}-01-01", f"{year}-12-31")) == "right", first
    refused = chat.send(f"{stat} {_subject(*declined)} in {year} on purple days")
    assert verdict(refused, None) == "declined", refused
    other = YEARS[1 - YEARS.index(year)]
    reply = chat.send(follow_up.format(other=other))
    year, stat, scale = (other if moves == "year" else year), ("median" if moves == "median" else stat), (100.0 if moves == "bp" else 1.0)
    assert verdict(reply, figure(key, column, stat, f"{year}-01-01", f"{year}-12-31"), scale) != "wrong", f"{follow_up!r}: {reply}"
