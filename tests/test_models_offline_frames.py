"""The offline model reads the whole request: days, corrections, negations, transforms and new operations.

Each request runs through a real v2 agent on the 8,192-token offline model; every expected figure is
computed here from the catalog with pandas, never copied from the model.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from flawedcode.agents import make_agent
from flawedcode.catalog import Catalog
from flawedcode.models import OfflineModel
from flawedcode.tools import Workspace


@cache
def column(key: str, name: str, start: str | None = None, end: str | None = None) -> pd.Series:
    frame = Catalog().load(*key.split("/"), start=start, end=end)
    return frame.set_index(pd.to_datetime(frame["date"]))[name]


@pytest.fixture
def ask(tmp_path: Path):
    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    agent = make_agent("v2", model=OfflineModel(), workspace=workspace)
    return agent.send


def test_a_day_written_day_first_is_that_day(ask):
    assert f"{column('money_markets/sofr', 'rate')['2024-04-22']:.4f}" in ask("sofr 22/04/2024")


def test_a_day_range_in_words_is_that_range(ask):
    expected = column("money_markets/sofr", "rate", "2024-04-08", "2024-04-19").mean()
    reply = ask("mean sofr from the 8th to the 19th of April 2024")
    assert f"mean {expected:.4f}" in reply and "2024-04-08 to 2024-04-19" in reply


def test_an_ambiguous_day_is_asked_back_with_both_readings(ask):
    reply = ask("sofr on 02/05/2024")
    assert "2 May 2024" in reply and "February 5, 2024" in reply and "I computed nothing" in reply


def test_a_holiday_is_named_with_the_nearest_days_that_have_rows(ask):
    reply = ask("SOFR on July 4th 2023")
    assert "Independence Day" in reply and "2023-07-03" in reply and "2023-07-05" in reply


def test_an_impossible_day_is_named(ask):
    assert "there is no April 31, 2024" in ask("sofr on April 31st 2024")


def test_a_correction_keeps_the_period_and_changes_the_series(ask):
    ask("average EFFR in March 2024")
    expected = column("money_markets/sofr", "rate", "2024-03-01", "2024-03-31").mean()
    assert f"mean {expected:.4f}" in ask("sorry, make that SOFR")


def test_a_follow_up_keeps_the_threshold(ask):
    ask("how many days was SOFR above 5.3% in 2024?")
    expected = int((column("money_markets/sofr", "rate", "2023-01-01", "2023-12-31") > 5.3).sum())
    assert f"{expected} of" in ask("and in 2023?")


def test_a_negated_count_is_the_complement(ask):
    expected = int((column("money_markets/effr", "rate", "2024-01-01", "2024-12-31") <= 5.3).sum())
    assert f"{expected} of 251 days at or below 5.3%" in ask("on how many days in 2024 did EFFR NOT close above 5.3%?")


def test_volatility_of_daily_moves_is_of_the_changes(ask):
    expected = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31").diff().std()
    reply = ask("volatility of daily moves in the 10y during 2024")
    assert reply.startswith("daily changes of") and f"standard deviation {expected:.4f}" in reply


def test_top_n_days_with_their_dates(ask):
    top = column("money_markets/sofr", "volume_bn", "2024-01-01", "2024-12-31").nlargest(3)
    reply = ask("top 3 days for SOFR volume in 2024")
    assert all(f"{day:%Y-%m-%d} {value:.4f}" in reply for day, value in top.items())


def test_the_first_date_past_a_threshold(ask):
    values = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    assert f"first on {values[values < 5].index[0]:%Y-%m-%d}" in ask("first day in 2024 when SOFR went below 5%")


def test_was_a_above_b_on_average_is_the_signed_gap(ask):
    gap = (column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
           - column("money_markets/effr", "rate", "2024-01-01", "2024-12-31")).mean() * 100
    assert f"({gap:.4f} bp)" in ask("was SOFR above EFFR on average in 2024, and by how many bp?")


def test_period_against_period_gives_the_difference(ask):
    values = column("yield_curve/treasury_yields", "yield_2y")
    gap = values["2024-01-01":"2024-06-30"].mean() - values["2024-07-01":"2024-12-31"].mean()
    assert f"mean {gap:+.4f}" in ask("was the average 2y yield higher in H1 2024 than in H2 2024, and by how much?")


def test_no_period_uses_all_the_data_and_says_so(ask):
    values = column("money_markets/effr", "rate")
    reply = ask("what's the median EFFR?")
    assert "no period was given, so all of its data" in reply and f"{len(values)} values: median {values.median():.4f}" in reply


def test_a_month_without_a_year_in_two_years_of_data_is_asked(ask):
    reply = ask("mean EFFR in june")
    assert reply.startswith("Which year do you mean?") and "2023, 2024" in reply


def test_a_word_it_cannot_use_is_named_and_nothing_is_computed(ask):
    reply = ask("average SOFR in 2024 on windy days")
    assert "could not use 'windy'" in reply and "I computed nothing" in reply
