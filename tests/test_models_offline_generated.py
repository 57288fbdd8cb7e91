"""Never confidently wrong, generated: answerable requests with one qualifier the model cannot use.

Each case starts from a request the offline model answers, built from the catalog's own vocabulary
(every dataframe, its main column or a column named by its docs, a statistic, a year inside the
data), and inserts ONE qualifier it cannot use: an unknown word, a day that does not exist or is
ambiguous, a negation or exclusion, a transform it does not apply, a unit its values cannot be written
in, or a condition on the rows. The reply must name what it
could not use and state no figure: answering the request without the qualifier would be answering
a wider question. The model is called directly with the real tools bound: a tool call means it set
out to answer.
"""

from __future__ import annotations

import itertools
import re

import pytest
from langchain_core.messages import HumanMessage

from flawedcode.models import OfflineModel
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
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")


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


def _cases(qualifiers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    cases = []
    for (subject, year), stat, (template, named) in itertools.product(_subjects(), STATISTICS, qualifiers):
        request = f"{stat} {subject} in {year}"
        cases.append((template.format(request=request, stat=stat, subject=subject, year=year), named.format(year=year)))
    return cases


CASES = _cases(QUALIFIERS) + _cases(MORE_QUALIFIERS)


@pytest.fixture(scope="module")
def bound_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("generated")
    workspace = Workspace.create(root / "ws", scratch_dir=root / "scratch", archive_dir=root / "archives")
    return OfflineModel().bind_tools(make_tools(workspace))


def test_the_generated_set_is_large_and_covers_every_kind_of_qualifier():
    assert len(CASES) >= 500
    assert len({named for _, named in CASES}) >= len(QUALIFIERS) + len(MORE_QUALIFIERS)


@pytest.mark.parametrize(("text", "named"), CASES, ids=[f"{index:03d}" for index in range(len(CASES))])
def test_a_qualifier_it_cannot_use_is_named_and_no_figure_is_stated(bound_model, text, named):
    reply = bound_model.invoke([HumanMessage(text)])
    assert not reply.tool_calls, f"{text!r}: set out to answer with {reply.tool_calls[:1]}"
    assert named.lower() in reply.text.lower(), f"{text!r}: the reply does not name {named!r}: {reply.text}"
    assert not FIGURE.findall(reply.text), f"{text!r}: states a figure: {reply.text}"
