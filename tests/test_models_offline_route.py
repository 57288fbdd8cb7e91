"""The offline model routes each request by one scorer over the rows of offline_intents.toml.

Each request is sent to the offline model directly, with the real tools and no agent
(tests/teaching_harness.py); expected figures are computed here
from the catalog with pandas, and the rows are checked as data (every guard and planner they name exists).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from teaching_harness import Chat, fast_workspace, offline_model

from flawedcode.catalog import Catalog
from flawedcode.models.offline_cues import CUE_FILE, planner_for, ranked, read_cue_file
from flawedcode.models.offline_intents import GUARDS


def mean(key: str, name: str, start: str, end: str) -> float:
    frame = Catalog().load(*key.split("/"), start=start, end=end)
    return float(pd.to_numeric(frame[name]).mean())


MODEL = offline_model()
"""One model for every test: it keeps nothing between calls but its caches."""


@pytest.fixture
def ask(tmp_path: Path):
    return Chat(MODEL, fast_workspace(tmp_path)).send


def test_every_row_names_guards_and_a_planner_that_exist():
    for intent in read_cue_file(CUE_FILE):
        assert set(intent.guard) <= set(GUARDS), intent.name
        assert planner_for(intent) is not None or intent.task or intent.reply, f"{intent.name} has no planner, task or reply"


def test_rows_are_tried_by_rank_then_by_the_number_of_cues_found():
    found = ranked("what was my original goal? how full is your context window, how many tokens are you using?", set())
    assert [intent.rank for intent in found] == sorted(intent.rank for intent in found)
    assert found[0].name == "context_window"  # rank 0, three cues found
    assert "goal_question" in [intent.name for intent in found]


@pytest.mark.parametrize("month", ["april", "may"])
def test_a_month_alone_after_a_data_request_changes_only_the_period(ask, month):
    ask("average EFFR in March 2024")
    number = {"april": 4, "may": 5}[month]
    start, end = pd.Period(f"2024-{number:02d}").start_time.date(), pd.Period(f"2024-{number:02d}").end_time.date()
    expected = mean("money_markets/effr", "rate", str(start), str(end))
    reply = ask("and april?" if month == "april" else "what about may?")
    assert f"mean {expected:.4f}" in reply and f"2024-{number:02d}-01" in reply


def test_a_day_range_written_with_month_names_is_that_range(ask):
    expected = mean("money_markets/sofr", "rate", "2024-03-04", "2024-03-08")
    reply = ask("mean sofr between March 4th and March 8th, 2024")
    assert f"mean {expected:.4f}" in reply and "2024-03-04 to 2024-03-08" in reply


def test_a_day_range_across_two_months_is_that_range(ask):
    expected = mean("money_markets/sofr", "rate", "2024-03-28", "2024-04-03")
    assert f"mean {expected:.4f}" in ask("mean sofr from 28 march to 3 april 2024")


def test_asking_what_datasets_there_are_lists_the_catalog_not_a_figure(ask):
    reply = ask("what datasets have you got")
    assert "ChartBook catalog has" in reply and "figure" not in reply


def test_which_dataframe_has_a_column_names_each_dataframe_that_has_it(ask):
    reply = ask("which dataframe has the volume_bn column?")
    assert "money_markets/sofr" in reply and "money_markets/effr" in reply and "mean" not in reply


def test_what_i_asked_first_is_the_first_request(ask):
    ask("Get docs for money_markets/sofr")
    assert "Get docs for money_markets/sofr" in ask("what did I ask you first?")


def test_the_first_n_trading_days_of_a_year_are_those_rows_only(ask):
    frame = Catalog().load("money_markets", "sofr", start="2024-01-01", end="2024-12-31").head(10)
    reply = ask("the average SOFR over the first 10 trading days of 2024")
    assert f"mean {pd.to_numeric(frame['rate']).mean():.4f}" in reply and "10 values" in reply
    assert f"{frame['date'].iloc[-1]:%Y-%m-%d}" in reply and reply.count("mean") == 1


def test_the_last_n_days_of_a_month_are_its_last_rows(ask):
    frame = Catalog().load("money_markets", "sofr", start="2024-03-01", end="2024-03-31").tail(5)
    reply = ask("mean sofr over the last 5 days of march 2024")
    assert f"mean {pd.to_numeric(frame['rate']).mean():.4f}" in reply and f"{frame['date'].iloc[0]:%Y-%m-%d} to 2024-03-29" in reply


def test_higher_in_one_year_than_another_compares_the_two_years(ask):
    reply = ask("is sofr higher in 2024 than in 2023?")
    for year in ("2023", "2024"):
        assert f"mean {mean('money_markets/sofr', 'rate', f'{year}-01-01', f'{year}-12-31'):.4f}" in reply
    assert "2023-01-03 to 2024-12-31" not in reply  # never the two years merged into one summary


@pytest.mark.parametrize(("follow_up", "start", "end"), [("a year earlier?", "2023-03-01", "2023-03-31"),
                                                          ("the month after", "2024-04-01", "2024-04-30")])
def test_a_period_moved_in_a_follow_up_is_the_previous_period_moved(ask, follow_up, start, end):
    ask("average EFFR in March 2024")
    reply = ask(follow_up)
    assert f"mean {mean('money_markets/effr', 'rate', start, end):.4f}" in reply and "money_markets/effr" in reply


def test_a_bound_inside_a_period_narrows_it(ask):
    reply = ask("mean effr up to 2024-02-15 in 2024")
    assert f"mean {mean('money_markets/effr', 'rate', '2024-01-01', '2024-02-15'):.4f}" in reply and "to 2024-02-15" in reply


@pytest.mark.parametrize(("request_text", "home"), [("what table holds the 10y yield?", "yield_curve/treasury_yields"),
                                                     ("which table is the bgcr column in?", "yield_curve/repo_public")])
def test_a_column_named_in_words_or_asked_where_it_lives_names_its_dataframe(ask, request_text, home):
    reply = ask(request_text)
    assert home in reply and "mean" not in reply and "could not use" not in reply


def test_asking_which_dataframes_a_pipeline_has_lists_them_not_columns(ask):
    """The pipeline's count is said as its own: 'The ChartBook catalog has 2 dataframes' was false of a catalog of 5 (fresh_sessions18
    db-01, where 'I'm doing the yield curve' listed the yield_curve pipeline as 'the catalog has 3 dataframes')."""
    reply = ask("Which dataframes does the money_markets pipeline have?")
    assert "catalog has 5 dataframes; 2 in money_markets" in reply and "money_markets/effr" in reply and "the column" not in reply


def test_at_the_start_of_a_period_is_its_first_row_not_the_start_of_the_conversation(ask):
    frame = Catalog().load("yield_curve", "repo_public", start="2024-01-01", end="2024-12-31")
    reply = ask("What's the IORB rate at the start of 2024?")
    assert f"{pd.to_numeric(frame['iorb']).iloc[0]:.4f}" in reply and f"{frame['date'].iloc[0]:%Y-%m-%d}" in reply
    assert "earlier request" not in reply


@pytest.mark.parametrize("request_text", ["When does the treasury yields data start and end?", "how far back does the treasury yields data go?"])
def test_when_a_dataframe_starts_and_ends_is_its_first_and_last_dates(ask, request_text):
    frame = Catalog().load("yield_curve", "treasury_yields")
    reply = ask(request_text)
    assert f"{frame['date'].iloc[0]:%Y-%m-%d} to {frame['date'].iloc[-1]:%Y-%m-%d}" in reply and "Which one" not in reply


def test_which_tests_are_broken_is_the_failing_tests_question(ask):
    reply = ask("which of the tests in here are broken, and what's wrong with them?")
    assert "2 tests failed" in reply and "analyze.annualized_volatility" in reply


def test_where_can_i_find_a_column_in_words_names_its_dataframe(ask):
    reply = ask("where can I find the TGA balance?")
    assert "tga_bn" in reply and "yield_curve/repo_public" in reply and "I'm the offline teaching model" not in reply


@pytest.mark.parametrize("joiner", ["and also the max", "as well as the max", "and the max"])
def test_two_requests_in_one_sentence_are_answered_each_alone(ask, joiner):
    reply = ask(f"whats the mean sofr in jan 2024 {joiner} effr in feb 2024")
    sofr_jan = mean("money_markets/sofr", "rate", "2024-01-01", "2024-01-31")
    effr_feb = pd.to_numeric(Catalog().load("money_markets", "effr", start="2024-02-01", end="2024-02-29")["rate"]).max()
    assert f"mean {sofr_jan:.4f}" in reply and f"max {effr_feb:.4f}" in reply and reply.count("values:") == 2


def test_a_second_request_that_only_names_a_series_and_a_period_keeps_the_statistic(ask):
    reply = ask("mean sofr in jan 2024 and effr in feb 2024")
    assert f"mean {mean('money_markets/effr', 'rate', '2024-02-01', '2024-02-29'):.4f}" in reply and reply.count("values:") == 2


@pytest.mark.parametrize(("request_text", "periods"), [
    ("was the 10y higher in H1 or H2 of 2024?", [("2024-01-01", "2024-06-30"), ("2024-07-01", "2024-12-31")]),
    ("was sofr higher in March or April 2024?", [("2024-03-01", "2024-03-31"), ("2024-04-01", "2024-04-30")])])
def test_two_periods_sharing_one_year_are_both_of_that_year(ask, request_text, periods):
    key, column = ("yield_curve/treasury_yields", "yield_10y") if "10y" in request_text else ("money_markets/sofr", "rate")
    reply = ask(request_text)
    assert all(f"mean {mean(key, column, start, end):.4f}" in reply for start, end in periods) and "could not use" not in reply


def test_the_purpose_of_a_file_is_a_question_about_the_file_not_the_goal(ask):
    reply = ask("what is the purpose of analyze.py")
    assert "earlier request" not in reply and "analyze.py" in reply
