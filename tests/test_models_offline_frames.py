"""The offline model reads the whole request: days, corrections, negations, transforms, moves and new operations.

Each request is sent to the 8,192-token offline model directly, with the real tools and no agent
(tests/teaching_harness.py: one message list, a reply out); every expected figure is computed here
from the catalog with pandas, never copied from the model.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from teaching_harness import Chat, fast_workspace, offline_model

from flawedcode.catalog import Catalog

FIGURE = re.compile(r"\d+\.\d{4}")
"""A figure as the model states one (four decimals)."""


@cache
def column(key: str, name: str, start: str | None = None, end: str | None = None) -> pd.Series:
    frame = Catalog().load(*key.split("/"), start=start, end=end)
    return frame.set_index(pd.to_datetime(frame["date"]))[name]


MODEL = offline_model()
"""One model for every test: it keeps nothing between calls but its caches (the catalog's words, a token counter)."""


@pytest.fixture
def ask(tmp_path: Path):
    return Chat(MODEL, fast_workspace(tmp_path)).send


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
    reply = ask("was the average 2y yield higher in H1 2024 than in H2 2024, and by how much?")
    assert f"mean {gap:+.4f}" in reply or f"to 2024-07-01 - 2024-12-31 the mean changed by {-gap:+.4f}" in reply  # H1 to H2


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


# --- written in new registers: comparisons, follow-ups, periods at one end, shorthand years ---------------


@pytest.mark.parametrize(("request_text", "side", "test"), [
    ("how many days was effr at or above 5.33 in 2024", "at or above", lambda values: values >= 5.33),
    ("# days effr >= 5.33 in 2024", "at or above", lambda values: values >= 5.33),
    ("how many days was effr 5.33 or more in 2024", "at or above", lambda values: values >= 5.33),
    ("how often was effr at most 5.33 in 2024", "at or below", lambda values: values <= 5.33),
    ("count days effr < 5.33 in 2024", "below", lambda values: values < 5.33),
])
def test_a_comparison_counts_the_side_it_names_inclusive_or_not(ask, request_text, side, test):
    values = column("money_markets/effr", "rate", "2024-01-01", "2024-12-31")
    assert f"{int(test(values).sum())} of {len(values)} days {side} 5.33" in ask(request_text)


@pytest.mark.parametrize("follow_up", ["now do sofr", "and sofr?", "sofr"])
def test_a_follow_up_naming_only_a_series_keeps_the_statistic_and_the_period(ask, follow_up):
    ask("median effr in march 2024")
    expected = column("money_markets/sofr", "rate", "2024-03-01", "2024-03-31").median()
    reply = ask(follow_up)
    assert reply.startswith("money_markets/sofr rate") and f"median {expected:.4f}" in reply and "2024-03-01" in reply


def test_a_follow_up_keeps_the_transform_and_the_column_it_asked(ask):
    ask("std of daily changes in the 10y in 2024")
    expected = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31").diff().std()
    assert f"standard deviation {expected:.4f}" in ask("and the 2y?")
    ask("top 3 days for sofr volume in 2024")
    assert ask("and effr").startswith("money_markets/effr volume_bn")


@pytest.mark.parametrize(("request_text", "day"), [
    ("sofr on the last day of 2024", "2024-12-31"), ("SOFR on the last day of Q3 2024", "2024-09-30"),
    ("sofr on the first trading day of 2024", "2024-01-02"), ("sofr print on 15 march 2024?", "2024-03-15"),
    ("sofr on 2024/03/15", "2024-03-15"), ("sofr 20240315", "2024-03-15"),
])
def test_a_day_at_one_end_of_a_period_is_that_one_day(ask, request_text, day):
    assert ask(request_text) == f"money_markets/sofr rate (percent) on {day}: {column('money_markets/sofr', 'rate')[day]:.4f}."


def test_from_the_first_to_the_last_trading_day_is_the_whole_period(ask):
    assert "2024-01-02 to 2024-12-31, 251 values" in ask("percent change in the 2y from the first to last trading day of 2024")


@pytest.mark.parametrize(("request_text", "start", "end"), [
    ("average effr the week of 2024-06-10", "2024-06-10", "2024-06-16"), ("avg effr sep thru nov 2023", "2023-09-01", "2023-11-30"),
    ("avg effr Mar\u2013May 2024", "2024-03-01", "2024-05-31"), ("effr avg 1H24", "2024-01-01", "2024-06-30"),
    ("effr mean Q4'23", "2023-10-01", "2023-12-31"), ("gimme the mean effr for Q2 '24", "2024-04-01", "2024-06-30"),
])
def test_periods_written_as_ranges_weeks_and_short_years(ask, request_text, start, end):
    assert f"mean {column('money_markets/effr', 'rate', start, end).mean():.4f}" in ask(request_text)


def test_an_impossible_iso_day_is_named_and_nothing_is_computed(ask):
    reply = ask("sofr on 2024-02-30")
    assert "there is no February 30, 2024 (February 2024 has 29 days)" in reply and "I computed nothing" in reply


def test_a_word_for_a_volume_finds_the_volume_column_and_a_missing_column_gets_the_nearest(ask):
    expected = column("yield_curve/repo_public", "srf_volume_bn", "2024-01-01", "2024-12-31").max()
    assert f"max {expected:.4f}" in ask("What's the SRF usage peak in 2024?")
    assert "The nearest it has: volume_bn." in ask("mean of sofr's notional_bn in 2024")


def test_a_percentile_no_column_holds_is_computed_as_a_statistic(ask):
    expected = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31").quantile(0.9)
    assert f"90th percentile {expected:.4f}" in ask("90th percentile of sofr in 2024")


def test_the_previous_request_is_quoted_from_what_it_sees(ask):
    assert "this is the first request I can see" in ask("what was my last question?")
    ask("mean effr in 2023")
    assert 'Your last request before this one was: "mean effr in 2023"' in ask("repeat my last question")


def test_one_place_in_the_ranking_is_that_value(ask):
    values = column("yield_curve/treasury_yields", "yield_10y", "2023-01-01", "2023-12-31")
    second = values.sort_values(ascending=False, kind="stable").iloc[1]
    assert f"the 2nd highest: {values.sort_values(ascending=False, kind='stable').index[1]:%Y-%m-%d} {second:.4f}" in ask(
        "second highest 10y yield in 2023")


@pytest.mark.parametrize(("request_text", "expected"), [
    ("total SOFR volume in June 2024, summed over days",
     lambda: f"sum {column('money_markets/sofr', 'volume_bn', '2024-06-01', '2024-06-30').sum():.4f}"),
    ("what was the range (max minus min) of sofr in 2024?",
     lambda: f"range (max minus min) {(lambda v: v.max() - v.min())(column('money_markets/sofr', 'rate', '2024-01-01', '2024-12-31')):.4f}"),
    ("interquartile range of the 10y in 2024",
     lambda: "interquartile range (75th minus 25th percentile) " + "{:.4f}".format(
         (lambda v: v.quantile(0.75) - v.quantile(0.25))(column('yield_curve/treasury_yields', 'yield_10y', '2024-01-01', '2024-12-31')))),
])
def test_sum_range_and_interquartile_range(ask, request_text, expected):
    assert expected() in ask(request_text)


def test_a_fiscal_year_is_asked_back_and_a_class_aside_is_filler(ask):
    reply = ask("median 2y yield FY2024")
    assert "could be calendar 2024 or the US federal fiscal year 2024 (2023-10-01 to 2024-09-30)" in reply
    assert "I computed nothing" in reply and not re.search(r"\d\.\d{4}", reply)
    expected = column("yield_curve/treasury_yields", "yield_10y", "2023-01-01", "2023-12-31").median()
    assert f"median {expected:.4f}" in ask("for my students: what was the median 10-year Treasury yield in 2023?")


def test_the_final_weeks_of_the_data_are_its_last_business_days(ask):
    expected = column("yield_curve/repo_public", "iorb").iloc[-10:].mean()
    assert f"2024-12-17 to 2024-12-31, 10 values: mean {expected:.4f}" in ask("avg iorb over the final 2 weeks of the data")


def test_a_follow_up_can_move_the_period_and_before_a_year_ends_before_it(ask):
    ask("average SOFR in Q1 2023")
    assert f"mean {column('money_markets/sofr', 'rate', '2024-01-01', '2024-03-31').mean():.4f}" in ask("a year later?")
    assert "2023-01-03 to 2023-12-29" in ask("sofr before 2024")


def test_named_days_and_an_ambiguous_shorthand(ask):
    assert ask("the 10y yield on Christmas Eve 2024") == (
        f"yield_curve/treasury_yields yield_10y (percent) on 2024-12-24: {column('yield_curve/treasury_yields', 'yield_10y')['2024-12-24']:.4f}.")
    assert "Thanksgiving Day, a US federal holiday" in ask("effr on thanksgiving 2023")
    # A holiday's own name wins over a longer one that contains it (Juneteenth National Independence Day).
    independence = ask("effr on independence day 2024")
    assert "2024-07-04 (Independence Day, a US federal holiday)" in independence and "Juneteenth" not in independence
    reply = ask("sofr vol 2024")
    assert "'vol' could mean volume" in reply and "volatility" in reply and not re.search(r"\d\.\d{4}", reply)


def test_days_a_flag_marks_are_left_out_or_kept_from_its_own_table(ask):
    sofr = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    flags = column("yield_curve/repo_public", "is_quarter_end", "2024-01-01", "2024-12-31").astype(bool)
    kept = sofr[~flags.reindex(sofr.index, fill_value=False)]
    reply = ask("average SOFR in 2024 excluding quarter-ends")
    assert "without the days yield_curve/repo_public is_quarter_end marks" in reply and f"{len(kept)} values: mean {kept.mean():.4f}" in reply
    effr = column("money_markets/effr", "rate", "2024-01-01", "2024-12-31")
    month_ends = column("yield_curve/repo_public", "is_month_end", "2024-01-01", "2024-12-31").astype(bool)
    only = effr[month_ends.reindex(effr.index, fill_value=False)]
    assert f"{len(only)} values: median {only.median():.4f}" in ask("median effr only on month-ends in 2024")


def test_the_end_of_a_month_is_one_day_and_ranking_words_name_no_column(ask):
    assert ask("sofr at the end of march 2024") == (
        "money_markets/sofr rate (percent) on 2024-03-29, the last day with a row on or before 2024-03-31: "
        f"{column('money_markets/sofr', 'rate')['2024-03-29']:.4f}.")
    assert ask("top 3 effr days in q2'24").startswith("money_markets/effr rate (percent), 2024-04-01 to 2024-06-28")


# Two series, daily moves, range bounds: the question asked, or asked back.


def spread_mean(year: str) -> float:
    sofr = column("money_markets/sofr", "rate", f"{year}-01-01", f"{year}-12-31")
    effr = column("money_markets/effr", "rate", f"{year}-01-01", f"{year}-12-31")
    return (sofr - effr).dropna().mean()


@pytest.mark.parametrize("request_text", [
    "was SOFR higher on average than EFFR in 2024? by how many bp?",
    "was SOFR above EFFR on average in 2024, and by how many bp?",
    "is sofr higher than effr on average in 2024",
    "how much higher was sofr than effr on average in 2024, in bp?",
    "how many bp higher was SOFR than EFFR in 2024",
])
def test_was_a_above_b_is_answered_with_the_signed_difference(ask, request_text):
    reply = ask(request_text)
    expected = spread_mean("2024")
    assert "sofr rate minus money_markets/effr rate" in reply and f"mean {expected:.4f} ({expected * 100:.4f} bp)" in reply
    assert "514.7" not in reply  # never one side's own mean in bp, as if it were the gap


def test_a_follow_up_after_a_spread_keeps_the_spread(ask):
    ask("what's the average spread between SOFR and EFFR in 2024?")
    reply = ask("and in 2023?")
    assert "minus" in reply and f"mean {spread_mean('2023'):.4f}" in reply


@pytest.mark.parametrize(("request_text", "statistic"), [
    ("what was the biggest single-day jump in SOFR in 2024?", "max"),
    ("what was the largest daily drop in SOFR in 2024?", "min"),
    ("the largest one-day fall in sofr in 2024", "min"),
    ("which day had the biggest increase in effr in 2024", "max"),
    ("when did sofr jump the most in 2024", "max"),
    ("when did sofr fall the most in 2024", "min"),
    ("the steepest daily fall of sofr in 2024", "min"),
    ("largest one-session rise in sofr during 2024", "max"),
    ("biggest single-session drop in sofr in 2024", "min"),
    ("biggest drop in effr in a single session in 2024", "min"),
    ("largest day-over-day move in effr in 2024", "min max"),
    ("the biggest one-day swing in sofr in 2024", "min max"),
])
def test_the_largest_move_in_a_day_is_a_statistic_of_daily_changes(ask, request_text, statistic):
    key = "money_markets/effr" if "effr" in request_text else "money_markets/sofr"
    changes = column(key, "rate", "2024-01-01", "2024-12-31").diff().dropna()
    reply = ask(request_text)
    assert reply.startswith(f"daily changes of {key} rate") and "mean" not in reply
    for one in statistic.split():  # a move with no sign ('move', 'swing') gives the largest fall and the largest rise
        value = changes.max() if one == "max" else changes.min()
        day = (changes.idxmax() if one == "max" else changes.idxmin()).date().isoformat()
        assert f"{one} {value:.4f} on {day}" in reply


def test_a_bound_of_the_target_range_names_the_target_columns(ask):
    expected = column("money_markets/effr", "target_high", "2024-01-01", "2024-12-31").mean()
    assert f"mean {expected:.4f}" in ask("what was the upper bound of the effr target range on average in 2024?")
    expected = column("money_markets/effr", "target_low", "2023-01-01", "2023-12-31").mean()
    assert f"effr target_low (percent), 2023-01-03 to 2023-12-29, 249 values: mean {expected:.4f}" in ask("what about the lower bound in 2023?")


@pytest.mark.parametrize("request_text", ["average of the target range lower bound in 2023", "average upper bound of SOFR in 2024"])
def test_a_bound_two_tables_have_is_asked_back(ask, request_text):
    reply = ask(request_text)
    assert "Which one do you mean" in reply and "effr target_" in reply and "fed_funds_target_" in reply
    assert "money_markets/sofr rate (percent)" not in reply  # never SOFR's own level for its 'upper bound'


def test_rounding_asked_is_how_to_show_the_figure_not_an_unknown_number(ask):
    expected = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31").mean()
    assert f"mean {expected:.4f}" in ask("what was the mean SOFR in 2024, rounded to 2 decimals?")


def test_the_daily_percent_change_is_the_transform_not_also_a_statistic(ask):
    changes = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31").pct_change().dropna() * 100
    reply = ask("median daily percent change of the 10y in 2024")
    assert reply.startswith("daily percent changes of") and f"median {changes.median():.4f}" in reply and "percent change -" not in reply


def test_the_tens_and_the_twos_are_the_tenors_they_name(ask):
    tens = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    twos = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    reply = ask("whats the typical gap between the 10s and the 2s in 2024")
    assert "yield_10y minus yield_curve/treasury_yields yield_2y" in reply and f"mean {(tens - twos).mean():.4f}" in reply



@pytest.mark.parametrize("request_text", ["how much did reserves fall over 2024?", "did reserves decline in 2024?"])
def test_a_fall_or_a_decline_over_a_period_is_its_change(ask, request_text):
    reserves = column("yield_curve/repo_public", "reserves_bn", "2024-01-01", "2024-12-31")
    assert f"change {reserves.iloc[-1] - reserves.iloc[0]:.4f}" in ask(request_text)


@pytest.mark.parametrize(("request_text", "said"), [
    ("the 10y on Saturday 2024-06-15", ["15 June 2024 is a Saturday", "2024-06-14 and 2024-06-17"]),
    ("the 10y on Friday 2024-06-15", ["15 June 2024 is a Saturday, not a Friday", "I computed nothing"])])
def test_a_weekday_before_an_iso_day_is_checked_against_it(ask, request_text, said):
    reply = ask(request_text)
    assert all(words in reply for words in said) and "could not use 'saturday'" not in reply


def test_a_statistic_asked_after_a_data_request_is_of_the_same_series_and_period(ask):
    expected = column("money_markets/sofr", "rate", "2024-07-01", "2024-12-31").std()
    reply = ask("How volatile was SOFR in H2 2024? give me the standard deviation")
    assert f"standard deviation {expected:.4f}" in reply and "stopped after" not in reply


def test_a_statistic_with_its_own_period_after_a_data_request_keeps_the_series(ask):
    ask("mean sofr in 2024")
    reply = ask("give me the std for 2023")
    assert f"standard deviation {column('money_markets/sofr', 'rate', '2023-01-01', '2023-12-31').std():.4f}" in reply


def test_a_statistic_after_a_docs_request_is_of_its_main_column(ask):
    reply = ask("get docs for money_markets/sofr, then give me the mean")
    assert f"mean {column('money_markets/sofr', 'rate').mean():.4f}" in reply and "stopped after" not in reply


def test_the_sides_of_a_spread_come_from_the_dataframe_it_names(ask):
    reply = ask("spread between the 10y and 2y in fed_yield_curve in 2024")
    assert "Which one do you mean" in reply and "fed_yield_curve SVENY10" in reply and "SVENPY10" in reply
    assert "treasury_yields" not in reply and not re.search(r"\d\.\d{4}", reply)  # never the Treasury curve's 10y for the fitted one
    sofr = column("yield_curve/repo_public", "sofr", "2024-01-01", "2024-12-31")
    effr = column("yield_curve/repo_public", "effr", "2024-01-01", "2024-12-31")
    reply = ask("spread between sofr and effr in repo_public in 2024")
    assert "yield_curve/repo_public sofr minus yield_curve/repo_public effr" in reply and f"mean {(sofr - effr).mean():.4f}" in reply


def test_a_word_naming_another_column_of_the_table_is_never_dropped(ask):
    reply = ask("the dvp and tri-party overnight rates in 2024, averages")  # 'dvp' names repo_public, and its dvp_* columns
    assert "could not use 'dvp'" in reply and "I computed nothing" in reply and not re.search(r"\d\.\d{4}", reply)
    expected = column("yield_curve/repo_public", "dvp_on_rate", "2024-01-01", "2024-12-31").mean()
    assert f"mean {expected:.4f}" in ask("average dvp overnight rate in 2024")


def test_a_curve_spread_no_column_holds_is_the_longer_tenor_minus_the_shorter(ask):
    thirty = column("yield_curve/treasury_yields", "yield_30y", "2024-01-01", "2024-12-31")
    five = column("yield_curve/treasury_yields", "yield_5y", "2024-01-01", "2024-12-31")
    reply = ask("average 5s30s in 2024")  # a spread, never the two levels side by side
    assert "yield_30y minus yield_curve/treasury_yields yield_5y" in reply and f"mean {(thirty - five).mean():.4f}" in reply
    assert "spread_10y_2y_bp (bp)" in ask("mean 2s10s in 2024")  # a spread the data has is its own column


@pytest.mark.parametrize("request_text", ["average sofr in 2024 in trillions", "mean reserves in 2024 in bp"])
def test_a_unit_the_values_cannot_be_written_in_is_said_not_dropped(ask, request_text):
    reply = ask(request_text)
    assert "I can't give" in reply and "I computed nothing" in reply and not re.search(r"\d\.\d{4}", reply)


def test_a_month_past_twelve_is_said_and_never_read_as_no_period(ask):
    reply = ask("effr 2024-13")
    assert "'2024-13' is not a month" in reply and "I computed nothing" in reply and "all of its data" not in reply


def test_a_period_word_never_picks_a_flag_column(ask):
    expected = column("money_markets/sofr", "rate", "2024-03-01", "2024-03-31").min()
    reply = ask("Could you tell me the lowest SOFR print in the month of March 2024?")  # not is_month_end's minimum
    assert reply.startswith("money_markets/sofr rate") and f"min {expected:.4f}" in reply


@pytest.mark.parametrize("request_text", ["average sofr in 2024 on days when effr was above 5.3", "the mean sofr in 2024 when it was above 5.3%",
                                          "median effr whenever sofr closed above 5.33 in 2024"])
def test_a_condition_on_the_rows_it_cannot_apply_is_named_never_answered_as_a_count(ask, request_text):
    reply = ask(request_text)
    assert "could not use '" in reply and "a condition on the values" in reply and "days above" not in reply
    assert not re.search(r"\d\.\d{4}", reply)


def test_a_count_or_first_date_on_its_own_series_keeps_its_condition(ask):
    values = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    assert f"{int((values > 5.3).sum())} of 251 days above 5.3%" in ask("how many days in 2024 when sofr was above 5.3")
    assert f"first on {values[values < 5].index[0]:%Y-%m-%d}" in ask("when did sofr first drop below 5% in 2024")


def test_the_one_table_holding_both_sides_of_a_spread_is_used(ask):
    sofr = column("yield_curve/repo_public", "sofr", "2024-01-01", "2024-12-31")
    iorb = column("yield_curve/repo_public", "iorb", "2024-01-01", "2024-12-31")
    reply = ask("average spread sofr minus iorb in 2024")  # its own column, in bp (the difference of the two, x 100)
    assert "yield_curve/repo_public sofr_minus_iorb_bp (bp)" in reply and f"mean {(sofr - iorb).mean() * 100:.4f}" in reply, reply


@pytest.mark.parametrize(("request_text", "expected"), [
    ("latest reading of the TGA", lambda: f"latest {column('yield_curve/repo_public', 'tga_bn').iloc[-1]:.4f}"),
    ("how many sessions saw the 10y above 4.5 in 2024",
     lambda: f"{int((column('yield_curve/treasury_yields', 'yield_10y', '2024-01-01', '2024-12-31') > 4.5).sum())} of 251 days above 4.5"),
    ("10y hi/lo in 2024", lambda: f"max {column('yield_curve/treasury_yields', 'yield_10y', '2024-01-01', '2024-12-31').max():.4f}"),
    ("the biggest drop in reserves in a single day in 2024",
     lambda: f"min {column('yield_curve/repo_public', 'reserves_bn', '2024-01-01', '2024-12-31').diff().min():.4f}"),
])
def test_everyday_words_for_a_reading_a_day_and_the_range_are_understood(ask, request_text, expected):
    assert expected() in ask(request_text)


def test_reverse_repo_usage_is_the_facility_volume(ask):
    expected = column("yield_curve/repo_public", "on_rrp_volume_bn")["2024-12-31"]
    assert f"on_rrp_volume_bn ($bn) on 2024-12-31: {expected:.4f}" in ask("reverse repo usage: what was it at the end of 2024?")


def test_the_previous_year_after_a_year_is_that_year_moved_back(ask):
    ask("median sofr in 2024")
    expected = column("money_markets/sofr", "rate", "2023-01-01", "2023-12-31").median()
    reply = ask("and the previous year")  # never 2024 again, read as the data's previous year
    assert "2023-01-03 to 2023-12-29" in reply and f"median {expected:.4f}" in reply


def test_two_sides_that_read_alike_stay_two_series(ask):
    tens = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    fitted = column("yield_curve/fed_yield_curve", "SVENY10", "2024-01-01", "2024-12-31")
    reply = ask("mean 10y minus the fitted 10y zero-coupon in 2024")  # never one side's own mean
    assert "treasury_yields yield_10y minus yield_curve/fed_yield_curve SVENY10" in reply and f"mean {(tens - fitted).mean():.4f}" in reply


def test_a_tenor_after_a_comparison_is_no_threshold(ask):
    ten, two = (column("yield_curve/treasury_yields", name, "2024-01-01", "2024-12-31") for name in ("yield_10y", "yield_2y"))
    reply = ask("on how many days was the 10y below the 2y in 2024")  # not 'days below 2 bp' of the 2s10s spread
    assert "below 2 bp" not in reply and f"{int((ten < two).sum())} of {len(ten)} days with" in reply


# ----------------------------------------------------------------------------- moves between days, ratios of means, series against series


def test_a_change_between_two_days_is_from_the_earlier_to_the_later(ask):
    effr = column("money_markets/effr", "rate")
    reply = ask("effr on march 15th, 2024 and on march 15th, 2023: what changed?")
    assert f"change {effr['2024-03-15'] - effr['2023-03-15']:+.4f}" in reply and "2023-03-15 to 2024-03-15" in reply
    assert "change +0.0000" not in reply


@pytest.mark.parametrize("request_text", ["percent change in the 10y from the start to the end of 2024",
                                          "percent change in the 10y between the beginning and the end of 2024"])
def test_from_the_start_to_the_end_of_a_year_is_the_whole_year(ask, request_text):
    ten = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    assert f"percent change {(ten.iloc[-1] / ten.iloc[0] - 1) * 100:+.4f}%" in ask(request_text)


def test_a_move_on_one_day_is_that_days_change_and_never_zero_by_construction(ask):
    ten = column("yield_curve/treasury_yields", "yield_10y")
    expected = ten["2024-06-28"] - ten[:"2024-06-27"].iloc[-1]
    reply = ask("how much did the 10y move on 2024-06-28?")
    assert f"{expected:.4f}" in reply and "2024-06-28" in reply


def test_a_move_on_a_holiday_names_the_holiday_and_states_no_figure(ask):
    reply = ask("how much did sofr move on July 4th 2024?")
    assert "Independence Day" in reply and not re.search(r"-?\d+\.\d{4}", reply)


def test_a_change_at_one_point_is_declined(ask):
    reply = ask("how much did sofr change at the end of 2024?")
    assert "a change needs two" in reply and not re.search(r"-?\d+\.\d{4}", reply)


def test_the_ratio_of_two_averages_is_the_ratio_of_the_means_not_the_mean_ratio(ask):
    sofr = column("money_markets/sofr", "volume_bn", "2024-01-01", "2024-12-31")
    effr = column("money_markets/effr", "volume_bn", "2024-01-01", "2024-12-31")
    both = pd.concat([sofr, effr], axis=1, join="inner")
    of_means = both.iloc[:, 0].mean() / both.iloc[:, 1].mean()
    mean_ratio = (both.iloc[:, 0] / both.iloc[:, 1]).mean()
    assert f"= {of_means:.4f}" in ask("ratio of average sofr volume to average effr volume in 2024")
    assert f"mean {mean_ratio:.4f}" in ask("average ratio of sofr volume to effr volume in 2024")


@pytest.mark.parametrize(("request_text", "first", "second", "how"), [
    ("on how many days was sofr above iorb in 2024?", "sofr", "iorb", "above"),
    ("how many days did tgcr trade above the on rrp rate in 2024", "tgcr", "on_rrp_rate", "above"),
    ("on how many days was sofr not above iorb in 2024?", "sofr", "iorb", "at or below"),
])
def test_a_count_of_days_one_series_was_past_another(ask, request_text, first, second, how):
    a, b = (column("yield_curve/repo_public", name, "2024-01-01", "2024-12-31") for name in (first, second))
    expected = int((a > b).sum() if how == "above" else (a <= b).sum())
    reply = ask(request_text)
    assert f": {expected} of {len(a)} days with yield_curve/repo_public {first} {how} yield_curve/repo_public {second}" in reply


def test_the_curve_inverted_in_brackets_counts_the_days_the_10y_was_below_the_2y(ask):
    ten, two = (column("yield_curve/treasury_yields", name, "2024-01-01", "2024-12-31") for name in ("yield_10y", "yield_2y"))
    assert f"{int((ten < two).sum())} of {len(ten)} days" in ask("on how many days was the curve inverted (10y below 2y) in 2024?")


def test_a_percentile_column_answers_only_a_request_naming_its_percentile(ask):
    reply = ask("how volatile were repo rates in december 2023 compared with november 2023?")
    assert "repo_rate_p1" not in reply and "Which one do you mean" in reply


def test_a_statistic_of_a_column_named_in_words_alone_is_answered(ask):
    reserves = column("yield_curve/repo_public", "reserves_bn")
    reply = ask("peak reserves and the date")
    assert f"max {reserves.max():.4f} on {reserves.idxmax():%Y-%m-%d}" in reply and "no period was given" in reply


def test_a_trend_over_a_period_is_its_change_from_start_to_end(ask):
    reserves = column("yield_curve/repo_public", "reserves_bn", "2024-01-01", "2024-12-31")
    assert f"change {reserves.iloc[-1] - reserves.iloc[0]:+.4f}" in ask("how did reserves trend over 2024: start vs end?")


@pytest.mark.parametrize("request_text", ["df['rate'].mean() for sofr over 2024 please", "avg sofr 2024 rly quick",
                                          "SELECT avg(rate) FROM sofr WHERE year = 2024"])
def test_sql_pandas_and_texting_registers_are_understood(ask, request_text):
    expected = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31").mean()
    assert f"mean {expected:.4f}" in ask(request_text)


@pytest.mark.parametrize(("request_text", "first", "last"), [
    ("average 10y over the last four months of 2024", "2024-09-01", "2024-12-31"),
    ("mean 10y in the first 3 months of 2023", "2023-01-01", "2023-03-31"),
    ("mean 10y during the final 2 months of 2024", "2024-11-01", "2024-12-31"),
])
def test_the_first_or_last_months_of_a_year_are_those_months(ask, request_text, first, last):
    ten = column("yield_curve/treasury_yields", "yield_10y", first, last)
    reply = ask(request_text)
    assert f"{ten.index[0]:%Y-%m-%d} to {ten.index[-1]:%Y-%m-%d}, {len(ten)} values: mean " in reply
    assert float(reply.split(": mean ")[1].rstrip(".")) == pytest.approx(ten.mean(), abs=1e-4)


def test_more_months_of_a_year_than_it_has_is_all_of_it_said(ask):
    assert "2024-01-02 to 2024-12-31 (2024 has 12 months, so all of 2024)" in ask("sofr in the last 13 months of 2024")


@pytest.mark.parametrize(("request_text", "how", "stat", "start", "end"), [
    ("which month of 2024 had the highest average sofr?", "M", "mean", "2024-01-01", "2024-12-31"),
    ("which quarter had the lowest mean 10y in 2023", "Q", "mean", "2023-01-01", "2023-12-31"),
    ("which month in 2024 had the highest standard deviation of sofr", "M", "std", "2024-01-01", "2024-12-31"),
])
def test_the_period_with_the_highest_or_lowest_figure_is_named_with_each_ones_figure(ask, request_text, how, stat, start, end):
    key, name = ("money_markets/sofr", "rate") if "sofr" in request_text else ("yield_curve/treasury_yields", "yield_10y")
    values = column(key, name, start, end)
    each = getattr(values.groupby(values.index.to_period(how)), stat)()
    best = each.idxmin() if "lowest" in request_text else each.idxmax()
    label = str(best).replace("Q", "-Q")
    reply = ask(request_text)
    assert f"is {label}: {each[best]:.4f} over {int((values.index.to_period(how) == best).sum())} values" in reply
    assert reply.count(";") == len(each) - 1


@pytest.mark.parametrize("request_text", ["how much did the 10y change between year end 2023 and year end 2024",
                                          "10y change from the end of 2023 to the end of 2024"])
def test_a_change_between_two_year_ends_is_from_the_first_to_the_second(ask, request_text):
    ten = column("yield_curve/treasury_yields", "yield_10y")
    first, last = ten[:"2023-12-31"].iloc[-1], ten[:"2024-12-31"].iloc[-1]
    assert f"change {last - first:+.4f}" in ask(request_text)


def test_the_first_trading_day_and_the_last_one_are_two_days(ask):
    two = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    assert f"change {two.iloc[-1] - two.iloc[0]:+.4f}" in ask("the 2-year on the first trading day of 2024 and on the last one: what changed?")
    reply = ask("average 2y on the first trading day of 2024 vs the last")
    assert f"mean {two.iloc[0]:.4f}" in reply and f"mean {two.iloc[-1]:.4f}" in reply and "251 values" not in reply


def test_a_change_on_the_first_trading_day_alone_is_declined(ask):
    assert "a change needs two" in ask("what changed in sofr on the first trading day of 2024?")


def test_the_first_half_versus_the_second_half_is_two_periods(ask):
    ten = column("yield_curve/treasury_yields", "yield_10y", "2023-01-01", "2023-12-31")
    reply = ask("first half versus second half of 2023: average 10y")
    assert f"mean {ten[:'2023-06-30'].mean():.4f}" in reply and f"mean {ten['2023-07-01':].mean():.4f}" in reply


@pytest.mark.parametrize(("first", "follow_up", "start", "end"), [
    ("mean sofr in the 2nd quarter of 2024", "and in the third quarter?", "2024-07-01", "2024-09-30"),
    ("mean sofr in the first half of 2024", "and the second half?", "2024-07-01", "2024-12-31"),
])
def test_a_follow_up_naming_a_quarter_or_half_alone_takes_the_previous_year(ask, first, follow_up, start, end):
    ask(first)
    assert f"mean {column('money_markets/sofr', 'rate', start, end).mean():.4f}" in ask(follow_up)


@pytest.mark.parametrize("follow_up", ["and in the 3rd?", "and the second?"])
def test_a_place_no_ranking_reads_is_named_not_dropped(ask, follow_up):
    first = ask("mean sofr in the 2nd quarter of 2024")
    reply = ask(follow_up)
    assert "could not use" in reply and first.split("mean ")[-1] not in reply


@pytest.mark.parametrize(("request_text", "extreme"), [("how far did the 2y fall from its 2024 high to year end?", "max"),
                                                       ("how much has the 2y risen from its 2024 low?", "min")])
def test_a_move_from_the_high_or_low_is_the_latest_minus_it(ask, request_text, extreme):
    two = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    moved = two.iloc[-1] - getattr(two, extreme)()
    reply = ask(request_text)
    assert f"latest minus {extreme} {moved:+.4f} ({moved * 100:.4f} bp)" in reply
    assert f"on {getattr(two, f'idx{extreme}')():%Y-%m-%d}" in reply and "change " not in reply


@pytest.mark.parametrize(("request_text", "year", "negated"), [("number of days effr was at 5.33 in 2024", "2024", False),
                                                               ("on how many days was effr exactly 5.33% in 2023", "2023", False),
                                                               ("how many days did effr not equal 5.33 in 2023", "2023", True)])
def test_a_count_of_days_at_a_value(ask, request_text, year, negated):
    effr = column("money_markets/effr", "rate", f"{year}-01-01", f"{year}-12-31")
    at = int((effr == 5.33).sum())
    expected = f"{len(effr) - at} of {len(effr)} days not equal to 5.33%" if negated else f"{at} of {len(effr)} days equal to 5.33%"
    assert expected in ask(request_text)


def test_the_share_of_days_past_a_threshold_is_given_with_the_count(ask):
    sofr = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    above = int((sofr > 5.3).sum())
    assert f"{above} of {len(sofr)} days above 5.3% ({100 * above / len(sofr):.2f}% of the days)" in ask(
        "what share of 2024 trading days had sofr above 5.3%?")


def test_how_many_on_average_is_a_mean_not_a_row_count(ask):
    used = column("yield_curve/repo_public", "on_rrp_counterparties", "2023-01-01", "2023-12-31")
    reply = ask("how many counterparties used the on rrp on average in 2023?")
    assert f"mean {used.mean():.4f}" in reply and ", count " not in reply


def test_bp_please_is_a_unit(ask):
    reply = ask("median daily change in the 30y during 2024, bp please")
    assert "bp)" in reply or re.search(r"median -?\d+\.\d+ bp \(", reply), reply  # in bp, the percent figure beside it


def test_a_year_earlier_than_a_month_end_is_that_month_end_a_year_before(ask):
    ask("the 10y at the end of june 2024")
    assert f"on 2023-06-30: {column('yield_curve/treasury_yields', 'yield_10y')[:'2023-06-30'].iloc[-1]:.4f}" in ask("and a year earlier?")


def test_a_one_word_side_of_a_difference_borrows_the_other_sides_noun(ask):
    repo = [column("yield_curve/repo_public", name, "2024-01-01", "2024-12-31") for name in ("tri_party_on_rate", "gcf_on_rate")]
    reply = ask("tri-party vs gcf overnight rate in 2024, by how much on average?")
    assert "tri_party_on_rate minus yield_curve/repo_public gcf_on_rate" in reply and f"mean {(repo[0] - repo[1]).mean():.4f}" in reply


@pytest.mark.parametrize("request_text", ["how many times larger was sofr volume than effr volume on average in 2024?",
                                          "how many times bigger is sofr volume than effr volume in 2024"])
def test_how_many_times_larger_is_the_ratio_of_the_means(ask, request_text):
    sofr, effr = (column(f"money_markets/{name}", "volume_bn", "2024-01-01", "2024-12-31") for name in ("sofr", "effr"))
    assert f"= {sofr.mean() / effr.mean():.4f}" in ask(request_text)


def test_a_moving_average_is_the_column_that_holds_it(ask):
    assert f"average_30d (percent) on 2024-12-31: {column('money_markets/sofr', 'average_30d')['2024-12-31']:.4f}" in ask(
        "30-day moving average of sofr at the end of 2024")


def test_new_years_day_is_that_holiday_not_the_year(ask):
    assert "New Year's Day, a US federal holiday: there is no row that day" in ask("effr on new year's day 2024")


def test_the_biggest_daily_falls_are_the_most_negative_changes(ask):
    moves = column("yield_curve/treasury_yields", "yield_10y", "2023-12-01", "2024-12-31").diff()["2024-01-01":]
    reply = ask("show the 10 biggest daily falls in the 10y during 2024")
    assert "the 10 lowest: " in reply and f"{moves.idxmin():%Y-%m-%d} {moves.min():.4f}" in reply


def test_how_many_flagged_days_had_a_value_past_a_threshold(ask):
    sofr = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    ends = column("yield_curve/repo_public", "is_quarter_end", "2024-01-01", "2024-12-31")
    on_ends = sofr[ends[ends.astype(bool)].index]
    assert f"{int((on_ends > 5.35).sum())} of {len(on_ends)} days above 5.35%" in ask("how many quarter-end days had sofr above 5.35 in 2024?")


def test_a_number_with_a_unit_is_never_a_year(ask):
    volume = column("yield_curve/repo_public", "dvp_on_volume_bn", "2024-01-01", "2024-12-31")
    assert f"{int((volume > 2000).sum())} of {len(volume)} days above 2000" in ask(
        "on how many days was dvp overnight volume over 2000 bn in 2024")


def test_compare_one_period_with_another_is_two_periods_and_their_gap(ask):
    two = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    gap = two[:"2024-03-31"].mean() - two["2024-10-01":].mean()
    assert f"mean {gap:+.4f}" in ask("compare the mean 2y in Q1 2024 with Q4 2024, by how much did it change")


@pytest.mark.parametrize("request_text", ["how often did the 2s10s spread exceed zero in 2024?",
                                          "how many days was the 2s10s spread above zero in 2024"])
def test_zero_after_a_comparison_is_the_number_0(ask, request_text):
    spread = column("yield_curve/treasury_yields", "spread_10y_2y_bp", "2024-01-01", "2024-12-31")
    assert f"{int((spread > 0).sum())} of {len(spread)} days above 0 bp" in ask(request_text)


@pytest.mark.parametrize(("request_text", "other"), [("what was the average effr minus target_low during 2024?", "target_low"),
                                                     ("what was the average effr minus the target_high during 2024?", "target_high")])
def test_a_spread_after_what_was_the_average_is_the_spread(ask, request_text, other):
    spread = column("money_markets/effr", "rate", "2024-01-01", "2024-12-31") - column("money_markets/effr", other, "2024-01-01", "2024-12-31")
    reply = ask(request_text)
    assert f"minus money_markets/effr {other} (percentage points), 2024-01-02 to 2024-12-31, 251 values: mean {spread.mean():.4f}" in reply


def test_a_difference_it_could_not_form_is_never_one_side_alone(ask):
    reply = ask("average effr, minus target_low, in 2024")
    assert "could not use 'minus'" in reply and not re.search(r"mean \d", reply)


@pytest.mark.parametrize(("request_text", "flag", "start", "end", "limit"), [
    ("How many month-end days in 2024 did sofr sit above 5.3?", "is_month_end", "2024-01-01", "2024-12-31", 5.3),
    ("the number of quarter-end days with sofr above 5.3 in 2023", "is_quarter_end", "2023-01-01", "2023-12-31", 5.3),
    ("on how many quarter-end days in 2024 was sofr above 5.0?", "is_quarter_end", "2024-01-01", "2024-12-31", 5.0),
])
def test_flagged_days_counted_with_the_period_between_are_those_days_only(ask, request_text, flag, start, end, limit):
    sofr, marks = column("money_markets/sofr", "rate", start, end), column("yield_curve/repo_public", flag, start, end)
    kept = sofr[marks[marks.astype(bool)].index]
    assert f"{int((kept > limit).sum())} of {len(kept)} days above {limit:g}%" in ask(request_text)


def test_a_flag_written_before_the_series_keeps_those_days(ask):
    marks = column("yield_curve/repo_public", "is_month_end", "2024-01-01", "2024-12-31")
    kept = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")[marks[marks.astype(bool)].index]
    assert f"{len(kept)} values: mean {kept.mean():.4f}" in ask("average month-end sofr in 2024")


@pytest.mark.parametrize(("request_text", "side", "limit"), [("did the 2y ever go below 4% in 2024?", "below", 4.0),
                                                             ("was the 2y ever below 4.5% in 2024", "below", 4.5),
                                                             ("has the 2y been above 4.9 in 2024?", "above", 4.9)])
def test_a_yes_or_no_about_a_threshold_is_the_count_of_those_days(ask, request_text, side, limit):
    two = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    past = (two < limit) if side == "below" else (two > limit)
    assert f"{int(past.sum())} of {len(two)} days {side} {limit:g}%" in ask(request_text)


@pytest.mark.parametrize(("request_text", "count", "lowest"), [("which 3 days had the lowest sofr in 2024?", 3, True),
                                                               ("what five days saw the highest sofr in 2024", 5, False)])
def test_which_n_days_had_the_highest_is_a_ranking_not_a_tenor(ask, request_text, count, lowest):
    sofr = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    ranked = sofr.nsmallest(count) if lowest else sofr.nlargest(count)
    reply = ask(request_text)
    assert f"the {count} {'lowest' if lowest else 'highest'}: " in reply and f"{ranked.iloc[0]:.4f}" in reply


@pytest.mark.parametrize(("request_text", "name", "stat"), [
    ("Please tell me the lowest EFFR recorded during the first quarter of 2023.", "min", "min"),
    ("list the five highest effr values in 2023", "the 5 highest", "max"),
    ("when did on rrp usage hit its minimum in 2024", "min", "min"),
])
def test_verbs_of_a_value_being_there_are_understood(ask, request_text, name, stat):
    reply = ask(request_text)
    key, col = ("yield_curve/repo_public", "on_rrp_volume_bn") if "rrp" in request_text else ("money_markets/effr", "rate")
    year = "2024" if "2024" in request_text else "2023"
    values = column(key, col, f"{year}-01-01", f"{year}-03-31" if "quarter" in request_text else f"{year}-12-31")
    assert name in reply and f"{getattr(values, stat)():.4f}" in reply


@pytest.mark.parametrize(("request_text", "tenor"), [("what's the 4-week bill yield's std in 2024?", "yield_1m"),
                                                     ("std of the 26 week bill yield in 2024", "yield_6m")])
def test_a_bill_named_in_weeks_is_its_tenor_in_months(ask, request_text, tenor):
    assert f"{tenor} (percent), 2024-01-02 to 2024-12-31, 251 values: standard deviation " \
           f"{column('yield_curve/treasury_yields', tenor, '2024-01-01', '2024-12-31').std():.4f}" in ask(request_text)


@pytest.mark.parametrize("request_text", ["ratio of sofr volume to tri_party_total_volume_bn in 2024",
                                          "correlation of sofr volume and tri_party_total_volume_bn in 2024"])
def test_a_side_that_names_a_dataframe_and_a_column_word_is_that_column(ask, request_text):
    reply = ask(request_text)
    assert "sofr volume_bn" in reply and "repo_public sofr " not in reply


@pytest.mark.parametrize("request_text", ["sofr minus tri_party_total_volume_bn in 2024", "average sofr minus reserves in 2024",
                                          "effr minus the count of on rrp counterparties in 2023"])
def test_a_difference_of_two_units_is_declined(ask, request_text):
    reply = ask(request_text)
    assert "their units differ" in reply and not FIGURE.search(reply)


def test_a_total_in_a_column_name_is_not_a_sum(ask):
    assert "sum" not in ask("average sofr volume minus tri-party total volume in 2024")


@pytest.mark.parametrize(("request_text", "a", "b", "start"), [("sofr - effr average, 2023, in bp", "sofr", "effr", "2023"),
                                                              ("2y - 10y in 2024", "yield_2y", "yield_10y", "2024")])
def test_a_spaced_hyphen_between_two_series_is_a_minus(ask, request_text, a, b, start):
    keys = {"sofr": ("money_markets/sofr", "rate"), "effr": ("money_markets/effr", "rate")}
    first, second = (column(*keys.get(name, ("yield_curve/treasury_yields", name)), f"{start}-01-01", f"{start}-12-31") for name in (a, b))
    spread, reply = first - second, ask(request_text)
    in_bp = "in bp" in request_text  # asked in bp: the same mean, in bp (or the percent figure with its bp beside it)
    assert f"mean {spread.mean():.4f}" in reply or (in_bp and f"mean {spread.mean() * 100:.4f}" in reply)


def test_how_wide_is_the_size_asked(ask):
    spread = column("yield_curve/treasury_yields", "spread_10y_2y_bp", "2024-01-01", "2024-03-31")
    assert f"mean {spread.mean():.4f}" in ask("how wide was the 10s2s spread on average in q1 2024?")


def test_the_share_of_days_when_one_series_was_above_another(ask):
    sofr, tgcr = (column("yield_curve/repo_public", name, "2024-01-01", "2024-12-31") for name in ("sofr", "tgcr"))
    above = int((sofr > tgcr).sum())
    reply = ask("percentage of days in 2024 when sofr was above tgcr")
    assert f"{above} of {len(sofr)} days with yield_curve/repo_public sofr above" in reply
    assert f"({100 * above / len(sofr):.2f}% of the days)" in reply


@pytest.mark.parametrize("request_text", ["what's the range of the 10y in 2024 (max minus min)?", "10y max minus min 2024"])
def test_max_minus_min_is_the_range_not_two_series(ask, request_text):
    ten = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    assert f"range (max minus min) {ten.max() - ten.min():.4f}" in ask(request_text)


def test_high_and_low_are_the_max_and_min_unless_they_are_the_target(ask):
    effr = column("money_markets/effr", "rate", "2024-06-01", "2024-06-30")
    reply = ask("what was effr's high and low in june 2024")
    assert f"min {effr.min():.4f}" in reply and f"max {effr.max():.4f}" in reply
    assert "target_high" in ask("the fed funds target high and low in 2024")


@pytest.mark.parametrize(("request_text", "day"), [("10y at the end of the first half of 2024", "2024-06-28"),
                                                   ("the 10y at the close of 2023", "2023-12-29"),
                                                   ("10y on the last quarter-end of 2024", "2024-12-31"),
                                                   ("what was the 10y at the end of the second quarter of 2023?", "2023-06-30")])
def test_the_end_of_a_period_is_its_last_row_not_the_period(ask, request_text, day):
    reply = ask(request_text)
    assert f"yield_10y (percent) on {day}" in reply and f"{column('yield_curve/treasury_yields', 'yield_10y')[day]:.4f}" in reply
    assert "values:" not in reply


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end"), [
    ("median dvp overnight rate, Q3-2024", "yield_curve/repo_public", "dvp_on_rate", "2024-07-01", "2024-09-30"),
    ("mean sofr 2024-Q2", "money_markets/sofr", "rate", "2024-04-01", "2024-06-30"),
    ("sofr average H2-2023", "money_markets/sofr", "rate", "2023-07-01", "2023-12-31"),
    ("10y median q1/2024", "yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-03-31"),
    ("average effr in march, 2024", "money_markets/effr", "rate", "2024-03-01", "2024-03-31"),
    ("in 2024, what was the mean sofr in q3", "money_markets/sofr", "rate", "2024-07-01", "2024-09-30")])
def test_a_period_written_with_a_separator_or_inside_its_year_is_that_period(ask, request_text, key, name, start, end):
    values = column(key, name, start, end)
    reply = ask(request_text)
    stat = "median" if "median" in request_text else "mean"
    assert f"{values.index[0].date()} to {values.index[-1].date()}" in reply
    assert f"{stat} {getattr(values, stat)():.4f}" in reply


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end"), [
    ("ytd change in the 10y as of 2024-06-28", "yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-06-28"),
    ("the 2y's change in 2024 as of 2024-09-30", "yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-09-30"),
    ("what has sofr done since the beginning of 2024", "money_markets/sofr", "rate", "2024-01-01", None),
    ("change in the 10y since the start of 2024", "yield_curve/treasury_yields", "yield_10y", "2024-01-01", None),
    ("how much has the 5y changed since q3 2024?", "yield_curve/treasury_yields", "yield_5y", "2024-07-01", None)])
def test_a_change_as_of_a_day_or_since_a_start_spans_those_days(ask, request_text, key, name, start, end):
    values = column(key, name, start, end)
    change = values.iloc[-1] - values.iloc[0]
    reply = ask(request_text)
    assert f"change {change:+.4f}" in reply and f"on {values.index[0].date()} to" in reply and f"on {values.index[-1].date()})" in reply


@pytest.mark.parametrize(("request_text", "start", "end"), [
    ("the 20 year yield prior to 2024-03-01, average", None, "2024-02-29"),
    ("average 20y before 2024-03-01", None, "2024-02-29"),
    ("average 20y after 2024-12-20", "2024-12-21", None),
    ("mean 20y yield since the start of q3 2024", "2024-07-01", None),
    ("average 20y before march 2024", None, "2024-02-29"),
    ("average 20y after the second quarter of 2024", "2024-07-01", None)])
def test_before_and_after_leave_out_the_day_or_period_they_name(ask, request_text, start, end):
    values = column("yield_curve/treasury_yields", "yield_20y", start, end)
    reply = ask(request_text)
    assert f"{values.index[0].date()} to {values.index[-1].date()}, {len(values)} values: mean {values.mean():.4f}" in reply


@pytest.mark.parametrize(("follow_up", "side", "limit"), [("what about below?", "below", 4.5), ("and at or below?", "at or below", 4.5),
                                                          ("and below 4?", "below", 4.0), ("what about under 4.2", "below", 4.2),
                                                          ("and above 4.6?", "above", 4.6), ("what about at or above?", "at or above", 4.5)])
def test_a_follow_up_that_names_a_side_or_a_limit_changes_only_that(ask, follow_up, side, limit):
    ask("how many days was the 10y above 4.5 in 2024")
    values = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    counted = {"above": values > limit, "below": values < limit, "at or below": values <= limit, "at or above": values >= limit}[side]
    assert f": {int(counted.sum())} of 251 days {side} {limit:g}%" in ask(follow_up)


def test_a_word_pair_another_table_describes_its_columns_with_names_no_table(ask):
    reply = ask("Svensson 10y par yield mean 2024")
    expected = column("yield_curve/fed_yield_curve", "SVENPY10", "2024-01-01", "2024-12-31").mean()
    assert f"SVENPY10 (percent), 2024-01-02 to 2024-12-31, 251 values: mean {expected:.4f}." in reply and "treasury_yields" not in reply


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end", "stat"), [
    ("mean sofr in 2024 excluding december", "money_markets/sofr", "rate", "2024-01-01", "2024-11-30", "mean"),
    ("mean sofr in 2024 except q4", "money_markets/sofr", "rate", "2024-01-01", "2024-09-30", "mean"),
    ("min 2y in 2024 apart from january", "yield_curve/treasury_yields", "yield_2y", "2024-02-01", "2024-12-31", "min"),
    ("the 10y's low in 2024, not counting q1", "yield_curve/treasury_yields", "yield_10y", "2024-04-01", "2024-12-31", "min"),
    ("average tgcr in 2023 without the first half", "yield_curve/repo_public", "tgcr", "2023-07-01", "2023-12-31", "mean")])
def test_a_period_without_a_span_at_one_end_is_the_rest_of_it(ask, request_text, key, name, start, end, stat):
    values = column(key, name, start, end)
    reply = ask(request_text)
    assert f"{values.index[0].date()} to {values.index[-1].date()}, {len(values)} values: " in reply
    assert f"{stat} {getattr(values, stat)():.4f}" in reply


@pytest.mark.parametrize(("request_text", "word"), [("max 10y in 2024 other than may", "other"), ("mean sofr in 2024 except q2", "except"),
                                                    ("sofr in early 2024", "early"), ("average 10y in late 2023", "late")])
def test_a_span_left_out_of_the_middle_or_a_vague_part_is_named_not_dropped(ask, request_text, word):
    reply = ask(request_text)
    assert f"'{word}'" in reply and "I computed nothing" in reply and not FIGURE.search(reply)


@pytest.mark.parametrize(("request_text", "day"), [("sofr on 1/16/24", "2024-01-16"), ("sofr 17-Jan-2024", "2024-01-17"),
                                                   ("effr on 3-june-2024", "2024-06-03")])
def test_a_day_with_a_short_year_or_hyphens_around_its_month_is_that_day(ask, request_text, day):
    key = "money_markets/effr" if "effr" in request_text else "money_markets/sofr"
    assert f"on {day}: {column(key, 'rate')[day]:.4f}" in ask(request_text)


def test_bp_between_two_series_is_their_spread(ask):
    repo = Catalog().load("yield_curve", "repo_public", start="2024-01-01", end="2024-12-31")
    expected = (repo["sofr"] - repo["iorb"]).mean()
    assert f"mean {expected:.4f} ({expected * 100:.4f} bp)" in ask("bp between sofr and iorb on average in 2024")


@pytest.mark.parametrize(("request_text", "name"), [("total srf usage in 2024", "srf_volume_bn"), ("total on rrp usage in 2024", "on_rrp_volume_bn")])
def test_total_before_a_series_is_its_sum_not_a_total_volume_column(ask, request_text, name):
    expected = column("yield_curve/repo_public", name, "2024-01-01", "2024-12-31").sum()
    assert f"{name} ($bn), 2024-01-02 to 2024-12-31, 251 values: sum {expected:.4f}" in ask(request_text)


def test_a_follow_up_naming_a_column_of_another_table_is_that_column(ask):
    ask("mean sofr in 2024")
    expected = column("yield_curve/repo_public", "on_rrp_volume_bn", "2024-01-01", "2024-12-31").max()
    reply = ask("max on rrp usage in 2024")
    assert f"on_rrp_volume_bn ($bn), 2024-01-02 to 2024-12-31, 251 values: max {expected:.4f}" in reply and "money_markets/sofr" not in reply


def test_a_chain_of_follow_ups_keeps_what_the_first_asked(ask):
    ask("average sofr in 2023")
    ask("and 2024?")
    ask("what about the median?")
    expected = column("money_markets/effr", "rate", "2024-01-01", "2024-12-31").median()
    assert f"effr rate (percent), 2024-01-02 to 2024-12-31, 251 values: median {expected:.4f}." in ask("and effr?")


@pytest.mark.parametrize("request_text", ["count the days in 2024 where the srf was used at all", "how many days was the srf tapped in 2024"])
def test_days_a_usage_was_used_are_its_days_past_zero(ask, request_text):
    used = int((column("yield_curve/repo_public", "srf_volume_bn", "2024-01-01", "2024-12-31") > 0).sum())
    assert f": {used} of 251 days above 0 $bn." in ask(request_text)


@pytest.mark.parametrize(("request_text", "word"), [("number of days with non-zero srf usage in 2024", "non-zero"),
                                                    ("count the days in 2023 when effr was unchanged", "when effr was unchanged"),
                                                    ("how many days in 2024 was sofr above or below 5.3", "5.3")])
def test_a_condition_on_counted_days_it_cannot_apply_is_named_not_dropped(ask, request_text, word):
    reply = ask(request_text)
    assert f"'{word}'" in reply and "I computed nothing" in reply and " of 25" not in reply and "count 2" not in reply


@pytest.mark.parametrize(("request_text", "start", "end"), [("number of days in 2024 when sofr exceeded iorb", "2024-01-02", None),
                                                            ("number of month ends in 2024 when sofr exceeded iorb", "2024-01-31", "month")])
def test_days_when_one_series_exceeded_another_are_counted(ask, request_text, start, end):
    repo = Catalog().load("yield_curve", "repo_public", start="2024-01-01", end="2024-12-31")
    repo = repo[repo["is_month_end"].astype(bool)] if end else repo
    assert f"{start} to 2024-12-31: {int((repo['sofr'] > repo['iorb']).sum())} of {len(repo)} days with" in ask(request_text)


@pytest.mark.parametrize("request_text", ["What was the SOFR index value at the start of 2024 and at its end?",
                                          "sofr index at the start and end of 2024"])
def test_the_start_and_the_end_of_a_year_are_two_values(ask, request_text):
    index = column("money_markets/sofr", "index_value", "2024-01-01", "2024-12-31")
    reply = ask(request_text)
    assert f"on 2024-01-02: {index.iloc[0]:.4f}" in reply and f"on 2024-12-31: {index.iloc[-1]:.4f}" in reply and "mean" not in reply


@pytest.mark.parametrize(("request_text", "start"), [("mean sofr this month", "2024-12-01"), ("mean sofr this year", "2024-01-01")])
def test_this_month_or_year_is_the_datas_latest_one(ask, request_text, start):
    values, unit = column("money_markets/sofr", "rate", start, "2024-12-31"), request_text.split()[-1]
    said = f" (read as the data's latest {unit}: the data ends on 2024-12-31, and today's date is not used)"  # never silently today's
    assert f"{values.index[0].date()} to 2024-12-31{said}, {len(values)} values: mean {values.mean():.4f}." in ask(request_text)


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end", "stat"), [
    ("Could you tell me what the 3-month bill yielded on average across 2023?", "yield_curve/treasury_yields", "yield_3m", "2023", "2023", "mean"),
    ("Give me the single highest reading of TGCR in the data.", "yield_curve/repo_public", "tgcr", "2023", "2024", "max"),
    ("How did the 30 year bond yield change over the course of 2023?", "yield_curve/treasury_yields", "yield_30y", "2023", "2023", "change"),
    ("how did the 3m10y spread behave in 2024: min and max", "yield_curve/treasury_yields", "spread_10y_3m_bp", "2024", "2024", "min")])
def test_words_around_a_statistic_are_understood(ask, request_text, key, name, start, end, stat):
    values = column(key, name, f"{start}-01-01", f"{end}-12-31")
    expected = values.iloc[-1] - values.iloc[0] if stat == "change" else getattr(values, stat)()
    reply = ask(request_text)
    figure = f"{stat} {expected:+.4f}" if stat == "change" else f"{stat} {expected:.4f}"
    assert f"{name} (" in reply and f"{len(values)} values: " in reply and figure in reply


def test_strictly_below_is_below(ask):
    below = int((column("money_markets/sofr", "rate", "2023-01-01", "2023-12-31") < 5).sum())
    assert f": {below} of 249 days below 5%." in ask("How many trading days in 2023 had SOFR strictly below 5%?")


@pytest.mark.parametrize("request_text", ["Is BGCR generally above or below TGCR, and by how many basis points, in 2024?",
                                          "Is BGCR above or below TGCR on average, and by how many basis points, in 2024?"])
def test_above_or_below_on_average_is_the_signed_difference(ask, request_text):
    repo = Catalog().load("yield_curve", "repo_public", start="2024-01-01", end="2024-12-31")
    expected = (repo["bgcr"] - repo["tgcr"]).mean()
    assert f"mean {expected:.4f} ({expected * 100:.4f} bp)" in ask(request_text)


def test_what_is_in_the_demo_project_lists_its_files(ask):
    reply = ask("what's in the demo project?")
    assert "test_analyze.py" in reply and "don't understand" not in reply


def test_a_number_compared_with_is_no_year(ask):
    volume = column("money_markets/sofr", "volume_bn", "2024-01-01", "2024-12-31")
    assert f"2024-01-02 to 2024-12-31: {int((volume > 2000).sum())} of 251 days above 2000 $bn." in ask("days in 2024 with sofr volume above 2000")


def test_this_quarter_is_the_datas_latest_quarter(ask):
    values = column("money_markets/effr", "rate", "2024-10-01", "2024-12-31")
    said = " (read as the data's latest quarter: the data ends on 2024-12-31, and today's date is not used)"  # the reading is said
    assert f"2024-10-01 to 2024-12-31{said}, {len(values)} values: mean {values.mean():.4f}." in ask("mean effr this quarter")


def test_a_verb_and_it_far_apart_are_no_request_to_run_a_script(ask):
    values = column("yield_curve/treasury_yields", "yield_2y", "2023-01-01", "2023-12-31")
    reply = ask("the 2y: how much did it move from the start to the end of 2023?")
    assert f"change {values.iloc[-1] - values.iloc[0]:+.4f}" in reply and "exit code" not in reply


@pytest.mark.parametrize(("request_text", "name", "day"), [("sofr 25th pct on 2024-03-15", "percentile_25", "2024-03-15"),
                                                           ("effr 99th pctile on 2023-11-01", "percentile_99", "2023-11-01")])
def test_an_ordinal_before_pct_is_a_percentile(ask, request_text, name, day):
    key = "money_markets/effr" if "effr" in request_text else "money_markets/sofr"
    assert f"{key} {name} (percent) on {day}: {column(key, name)[day]:.4f}." in ask(request_text)


def test_an_inverted_spread_is_below_zero_and_an_inverted_yield_is_named(ask):
    spread = column("yield_curve/treasury_yields", "spread_10y_3m_bp", "2024-01-01", "2024-12-31")
    assert f": {int((spread < 0).sum())} of 251 days below 0 bp." in ask("on how many days in 2024 was the 3m10y inverted?")
    reply = ask("how many days in 2023 was the 5y yield inverted")
    assert "'inverted'" in reply and "I computed nothing" in reply and " of 249" not in reply


def test_a_move_in_total_is_the_change_not_a_sum_of_levels(ask):
    values = column("yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    reply = ask("by how much did the 2y move in total during 2024?")
    assert f"change {values.iloc[-1] - values.iloc[0]:+.4f}" in reply and "sum" not in reply


@pytest.mark.parametrize(("request_text", "name", "day"), [("where did the 5y end 2023?", "yield_5y", "2023-12-29"),
                                                           ("what level did the 30y finish q2 2024 at", "yield_30y", "2024-06-28")])
def test_where_a_series_finished_a_period_is_its_last_value(ask, request_text, name, day):
    values = column("yield_curve/treasury_yields", name)
    assert f"{name} (percent) on {day}" in (reply := ask(request_text)) and f"{values[day]:.4f}" in reply and "mean" not in reply


@pytest.mark.parametrize("request_text", ["average spread between gcf and tri-party in 2023", "mean gcf minus tri-party in 2023, in bp"])
def test_a_spread_the_catalog_holds_as_a_column_is_that_column(ask, request_text):
    expected = column("yield_curve/repo_public", "gcf_minus_tri_party_bp", "2023-01-01", "2023-12-31").mean()
    assert f"gcf_minus_tri_party_bp (bp), 2023-01-03 to 2023-12-29, 249 values: mean {expected:.4f}." in ask(request_text)


@pytest.mark.parametrize(("request_text", "side", "name"), [
    ("how many sessions in 2023 saw effr print above its target bottom?", "above", "target_low"),
    ("how many days in 2023 was effr below its upper target", "below", "target_high")])
def test_days_one_series_was_past_a_column_described_in_words_are_counted(ask, request_text, side, name):
    effr = Catalog().load("money_markets", "effr", start="2023-01-01", end="2023-12-31")
    count = int((effr["rate"] > effr[name]).sum() if side == "above" else (effr["rate"] < effr[name]).sum())
    assert f": {count} of 249 days with money_markets/effr rate {side} money_markets/effr {name}." in ask(request_text)


def test_a_request_naming_its_own_series_borrows_nothing_from_the_one_before(ask):
    ask("what was the 90th percentile of sofr over 2024?")
    day = column("yield_curve/treasury_yields", "yield_2y")["2024-03-15"]
    assert ask("What was the 2y yield on March 15th, 2024?") == f"yield_curve/treasury_yields yield_2y (percent) on 2024-03-15: {day:.4f}."
    repo = Catalog().load("yield_curve", "repo_public", start="2024-06-28", end="2024-06-28")
    ratio = (repo["tga_bn"] / repo["reserves_bn"]).iloc[0]
    assert f"on 2024-06-28: {ratio:.4f}" in ask("ratio of the tga to reserves on 2024-06-28")


def test_which_tools_it_called_is_read_from_its_context(ask):
    assert "no tool call of mine" in ask("which tools have you used so far?")
    ask("mean effr in may 2024")
    reply = ask("what tools did you call?")
    # issue 41: the figure is computed by the teaching model's run_python script (its code names the dataframe)
    assert "run_python x1" in reply and "money_markets/effr" in reply and "nothing has fallen out of my window" in reply


@pytest.mark.parametrize(("request_text", "key", "name", "limit"), [
    ("what date did sofr first exceed 5.35%?", "money_markets/sofr", "rate", 5.35),
    ("the 2y first topped 4.9% on which day?", "yield_curve/treasury_yields", "yield_2y", 4.9)])
def test_the_first_date_past_a_level_reads_exceed_and_topped(ask, request_text, key, name, limit):
    values = column(key, name)
    assert f"above {limit:g}% first on {values[values > limit].index[0].date()}." in ask(request_text)


@pytest.mark.parametrize(("request_text", "a", "b", "year"), [
    ("was the 6 month bill above the 5 year on average in 2024, and by how much?", "yield_6m", "yield_5y", "2024"),
    ("yield_1y vs yield_30y in 2023: which one was lower on average?", "yield_1y", "yield_30y", "2023")])
def test_which_was_higher_on_average_is_the_signed_mean_difference(ask, request_text, a, b, year):
    frame = Catalog().load("yield_curve", "treasury_yields", start=f"{year}-01-01", end=f"{year}-12-31")
    expected = (frame[a] - frame[b]).mean()
    assert f"{a} minus yield_curve/treasury_yields {b} (percentage points)" in (reply := ask(request_text))
    assert f"mean {expected:.4f}" in reply


def test_a_period_compared_against_another_gives_both_and_their_difference(ask):
    first, second = (column("money_markets/effr", "rate", f"{year}-07-01", f"{year}-12-31").mean() for year in (2024, 2023))
    reply = ask("how does the average effr in h2 2024 compare against h2 2023?")
    assert f"mean {first:.4f}." in reply and f"mean {second:.4f}." in reply and f"mean {first - second:+.4f}." in reply


@pytest.mark.parametrize(("request_text", "day"), [("how many counterparties used the on rrp on 2024-05-15?", "2024-05-15"),
                                                   ("how many on rrp counterparties were there at the end of q3 2024", "2024-09-30")])
def test_how_many_of_a_count_column_is_its_value_not_a_number_of_rows(ask, request_text, day):
    value = column("yield_curve/repo_public", "on_rrp_counterparties")[day]
    reply = ask(request_text)
    assert f"on_rrp_counterparties (count) on {day}" in reply and f": {value:.4f}." in reply and "count 1" not in reply


@pytest.mark.parametrize(("request_text", "long", "short"), [("mean 20s5s in 2024", "yield_20y", "yield_5y"),
                                                            ("the 2m7s spread on average in 2024", "yield_7y", "yield_2m")])
def test_a_curve_spread_is_the_longer_tenor_minus_the_shorter_however_written(ask, request_text, long, short):
    frame = Catalog().load("yield_curve", "treasury_yields", start="2024-01-01", end="2024-12-31")
    expected = (frame[long] - frame[short]).mean()
    assert f"{long} minus yield_curve/treasury_yields {short}" in (reply := ask(request_text)) and f"mean {expected:.4f}" in reply


def test_a_money_market_tenor_pair_names_the_catalogs_spread_column(ask):
    values = column("yield_curve/treasury_yields", "spread_10y_3m_bp", "2023-01-01", "2023-12-31")
    assert f"spread_10y_3m_bp (bp), 2023-01-03 to 2023-12-29, 249 values: max {values.max():.4f}" in ask("max of the 3m10s in 2023")
    assert f"max {values.max():.4f}" in ask("10s3m highest in 2023")


@pytest.mark.parametrize(("request_text", "name"), [("tgcr-rrp spread, mean over q1 2024", "tgcr_minus_rrp_bp"),
                                                    ("median sofr-rrp spread in q1 2024", "sofr_minus_rrp_bp")])
def test_a_hyphenated_pair_the_catalog_holds_as_a_spread_is_that_column(ask, request_text, name):
    values = column("yield_curve/repo_public", name, "2024-01-01", "2024-03-31")
    stat = "median" if "median" in request_text else "mean"
    expected = f"{name} (bp), 2024-01-02 to {values.index[-1].date()}, {len(values)} values: {stat} {getattr(values, stat)():.4f}."
    assert expected in ask(request_text)


@pytest.mark.parametrize(("request_text", "day"), [("effr on the 1st trading day of q2 2024", "2024-04-01"),
                                                   ("effr on the last session of may 2024", "2024-05-31")])
def test_a_first_or_last_session_is_one_day_not_the_period(ask, request_text, day):
    assert f"money_markets/effr rate (percent) on {day}" in (reply := ask(request_text)) and "mean" not in reply
    assert f"{column('money_markets/effr', 'rate')[day]:.4f}." in reply


def test_averaging_and_the_last_reading_are_a_mean_and_a_latest_value(ask):
    tga = column("yield_curve/repo_public", "tga_bn")
    assert ask("the tga's last reading") == f"yield_curve/repo_public tga_bn ($bn): latest {tga.iloc[-1]:.4f} on {tga.index[-1].date()}."
    values = column("yield_curve/repo_public", "bgcr", "2024-02-01", "2024-02-29")
    assert ask("what was bgcr averaging in feb 2024?").endswith(f"values: mean {values.mean():.4f}.")


def test_a_correlation_needs_two_series(ask):
    frame = Catalog().load("yield_curve", "treasury_yields", start="2023-01-01", end="2023-12-31")
    assert f"249 dates: {frame['yield_3y'].corr(frame['yield_30y']):.4f}." in ask("correlate the 3y and the 30y in 2023")
    reply = ask("the correlation of tgcr in 2023")
    assert "A correlation is between two series" in reply and "I computed nothing" in reply and not FIGURE.search(reply)


def test_a_unit_follow_up_after_the_history_was_summarized_keeps_the_chain(ask):
    ask("mean 3y yield in q1 2024")
    ask("and q3?")
    ask("the 7y")
    values = column("yield_curve/treasury_yields", "yield_7y", "2024-07-01", "2024-09-30")
    assert f"yield_7y (percent), 2024-07-01 to 2024-09-30, {len(values)} values: mean {values.mean() * 100:.4f} bp ({values.mean():.4f} percent)." \
        in ask("and now in basis points")


def test_the_first_trading_day_of_one_year_and_the_last_of_another_are_two_days(ask):
    values = column("yield_curve/repo_public", "tgcr")
    reply = ask("tgcr on the first trading day of 2023 and on the last trading day of 2024")
    assert f"on 2023-01-03: {values['2023-01-03']:.4f}." in reply and f"on 2024-12-31: {values['2024-12-31']:.4f}." in reply
    assert "mean" not in reply


def test_how_much_higher_one_column_was_than_its_sibling_is_their_mean_difference(ask):
    frame = Catalog().load("money_markets", "effr", start="2023-01-01", end="2023-12-31")
    expected = (frame["percentile_75"] - frame["percentile_25"]).mean()
    reply = ask("how much higher was the 75th percentile of effr than its 25th percentile in 2023, on average?")
    assert "percentile_75 minus money_markets/effr percentile_25" in reply and f"mean {expected:.4f}" in reply


def test_days_a_facility_had_any_usage_are_its_days_past_zero(ask):
    volume = column("yield_curve/repo_public", "srf_volume_bn", "2023-01-01", "2024-12-31")
    assert f": {int((volume > 0).sum())} of {len(volume)} days above 0 $bn." in ask("on how many days from 2023 to 2024 did the srf see usage?")


@pytest.mark.parametrize(("request_text", "limit"), [("count the days in 2023 with sofr volume above 1,500 billion", 1500),
                                                     ("how many days in 2023 was sofr volume over 1,250", 1250)])
def test_a_number_written_with_thousands_commas_is_one_number(ask, request_text, limit):
    volume = column("money_markets/sofr", "volume_bn", "2023-01-01", "2023-12-31")
    assert f": {int((volume > limit).sum())} of {len(volume)} days above {limit} $bn." in ask(request_text)


def test_the_difference_between_the_highest_and_lowest_is_the_range(ask):
    values = column("yield_curve/treasury_yields", "yield_5y", "2024-01-01", "2024-12-31")
    reply = ask("what was the gap between the 5y's lowest and highest in 2024?")
    assert f"range (max minus min) {values.max() - values.min():.4f}" in reply


@pytest.mark.parametrize(("request_text", "limit_bp"), [
    ("how many days in 2024 was the 10y minus the 2y below -25 bp?", -25),
    ("how many days in 2024 was spread_10y_2y_bp below -0.25%?", -25)])
def test_a_threshold_in_another_unit_is_converted_to_the_series_unit(ask, request_text, limit_bp):
    spread = column("yield_curve/treasury_yields", "spread_10y_2y_bp", "2024-01-01", "2024-12-31")
    assert f": {int((spread < limit_bp).sum())} of 251 days below" in ask(request_text)


def test_what_a_series_is_now_is_its_latest_value(ask):
    values = column("yield_curve/repo_public", "tgcr")
    assert ask("where is tgcr now?") == f"yield_curve/repo_public tgcr (percent): latest {values.iloc[-1]:.4f} on {values.index[-1].date()}."


def test_the_maximum_number_of_a_count_column_is_computed_not_recalled(ask):
    values = column("yield_curve/repo_public", "on_rrp_counterparties", "2024-01-01", "2024-12-31")
    reply = ask("what was the highest number of on rrp counterparties in 2024?")
    assert f"max {values.max():.4f} on {values.idxmax().date()}" in reply


def test_the_same_month_a_year_earlier_moves_the_period(ask):
    ask("mean tgcr in march 2024")
    values = column("yield_curve/repo_public", "tgcr", "2023-03-01", "2023-03-31")
    assert f"2023-03-01 to 2023-03-31, {len(values)} values: mean {values.mean():.4f}." in ask("and for the same month a year earlier?")


def test_a_change_asked_in_percent_of_a_dollar_series_is_its_percent_change(ask):
    values = column("yield_curve/repo_public", "tga_bn", "2023-01-01", "2023-12-31")
    reply = ask("how much did the tga grow over 2023, in percent?")
    assert f"percent change {(values.iloc[-1] / values.iloc[0] - 1) * 100:+.4f}%" in reply


def test_a_year_written_once_before_two_halves_is_both_halves(ask):
    first, second = (column("money_markets/effr", "rate", start, end).median() for start, end in
                     (("2023-01-01", "2023-06-30"), ("2023-07-01", "2023-12-31")))
    reply = ask("effr median 2023 h1 vs h2")  # each half's, then the change from the first to the second, said as such
    assert f"median {first:.4f}." in reply and f"median {second:.4f}." in reply and f"the median changed by {second - first:+.4f}" in reply


def test_a_summary_of_the_conversation_is_extracted_from_what_it_sees(ask):
    assert "nothing to summarize yet" in ask("can you recap our conversation so far?")
    ask("max effr in 2023")
    reply = ask("please summarize this session")
    assert "Original goal (verbatim): can you recap our conversation so far?" in reply and "Requests: max effr in 2023" in reply
    assert f"max {column('money_markets/effr', 'rate', '2023-01-01', '2023-12-31').max():.4f}" in reply and "Numbers reported:" in reply


def test_a_limit_written_with_its_unit_glued_on_is_used(ask):
    spread = column("yield_curve/treasury_yields", "spread_10y_3m_bp", "2023-01-01", "2023-12-31")
    assert f": {int((spread < -150).sum())} of 249 days below -150 bp" in ask("how many days in 2023 had the 3m10y below -150bp?")


def test_the_notes_it_was_given_are_listed_and_none_is_said(ask):
    assert "I don't know" in ask("show me my notes")
    ask("remember that the report is due friday")
    assert ask("list my notes") == 'You told me: "remember that the report is due friday".'


def test_its_main_column_after_the_docs_is_the_dataframes_main_column(ask):
    ask("docs for money_markets/effr")
    values = column("money_markets/effr", "rate", "2023-01-01", "2023-12-31")
    assert ask("what's the median of its main column in 2023?").endswith(f"values: median {values.median():.4f}.")


@pytest.mark.parametrize("request_text", ["the gap between the tgcr peak and the bgcr trough in 2023", "highest tgcr minus highest bgcr in 2023"])
def test_a_statistic_of_each_side_of_a_difference_is_declined_not_taken_of_the_difference(ask, request_text):
    reply = ask(request_text)
    assert "asks for a statistic of each side" in reply and "I computed nothing" in reply and not FIGURE.search(reply)


def test_a_statistic_before_a_difference_is_of_the_difference(ask):
    repo = Catalog().load("yield_curve", "repo_public", start="2023-01-01", end="2023-12-31")
    assert f"max {(repo['tgcr'] - repo['bgcr']).max():.4f}" in ask("the highest tgcr minus bgcr in 2023")


@pytest.mark.parametrize(("request_text", "columns"), [("do you have the on rrp volume?", ["on_rrp_volume_bn"]),
                                                       ("is there a gcf rate in the data?", ["gcf_on_rate", "gcf_term_rate"]),
                                                       ("does the catalog have the 25th percentile of effr?", ["percentile_25"])])
def test_whether_a_column_exists_is_answered_with_every_column_that_fits(ask, request_text, columns):
    reply = ask(request_text)
    assert reply.startswith("Yes: ") and all(f" has {name} (" in reply for name in columns) and reply.count(" has ") == len(columns)


@pytest.mark.parametrize(("request_text", "nearest"), [("is the tga rate in the data?", "tga_bn"), ("do you have a gold price?", "none")])
def test_a_column_that_does_not_exist_is_said_with_the_nearest_that_do(ask, request_text, nearest):
    reply = ask(request_text)
    assert reply.startswith("No column in the ChartBook catalog") and nearest in reply and not FIGURE.search(reply)


# ----------------------------------------------------------------------------- set 27 and 28 (2026-12-03)


@pytest.mark.parametrize(("request_text", "key", "high", "low", "year"), [
    ("average of sofr's 99th minus 1st percentile in 2024", "money_markets/sofr", "percentile_99", "percentile_1", "2024"),
    ("sofr 99th - 1st percentile average 2024", "money_markets/sofr", "percentile_99", "percentile_1", "2024"),
    ("average spread between effr's 75th and 25th percentiles in 2023", "money_markets/effr", "percentile_75", "percentile_25", "2023")])
def test_an_ordinal_before_a_shared_percentile_is_a_percentile_of_the_same_series(ask, request_text, key, high, low, year):
    spread = column(key, high, f"{year}-01-01", f"{year}-12-31") - column(key, low, f"{year}-01-01", f"{year}-12-31")
    reply = ask(request_text)
    assert f"{key} {high} minus {key} {low}" in reply and f"mean {spread.mean():.4f}" in reply


def test_a_day_compared_with_the_other_end_of_its_period_is_both_days_and_their_difference(ask):
    values = column("money_markets/sofr", "index_value", "2024-01-01", "2024-12-31")
    reply = ask("sofr index value at the end of 2024 vs the start")
    assert f"on 2024-01-02: {values.iloc[0]:.4f}" in reply and f"on 2024-12-31: {values.iloc[-1]:.4f}" in reply
    assert f"2024-12-31 minus 2024-01-02 (money_markets/sofr index_value): difference {values.iloc[-1] - values.iloc[0]:+.4f}." in reply


@pytest.mark.parametrize("request_text", ["for my thesis: what was the median SOFR in 2024?", "quick question - what was the median SOFR in 2024?"])
def test_a_scene_set_before_a_colon_or_a_dash_is_not_part_of_the_request(ask, request_text):
    figure, said = ask(request_text).split("\n", 1) if "set aside" in ask(request_text) else (ask(request_text), "")
    assert figure.endswith(f"values: median {column('money_markets/sofr', 'rate', '2024-01-01', '2024-12-31').median():.4f}.")
    assert said in ("", f"(I set aside '{request_text.split(':')[0]}': I read it as the setting, not the question.)")  # said, never read


def test_ever_asks_for_the_days_it_happened(ask):
    repo = Catalog().load("yield_curve", "repo_public", start="2024-01-01", end="2024-12-31")
    below = int((repo["sofr"] < repo["iorb"]).sum())
    assert f": {below} of 251 days with yield_curve/repo_public sofr below" in ask("was sofr ever below iorb in 2024?")
    used = int((column("yield_curve/repo_public", "srf_volume_bn") > 0).sum())
    assert f": {used} of 500 days above 0 $bn" in ask("has the srf ever been used?")


def test_a_tenor_after_a_comparison_is_a_series_not_a_number(ask):
    reply = ask("did the 10y trade below the 2y in 2024, and by how much at most?")
    spread = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31") - column(
        "yield_curve/treasury_yields", "yield_2y", "2024-01-01", "2024-12-31")
    assert "count 251" not in reply and f"min {spread.min():.4f}" in reply


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end"), [
    ("how many times did the fed funds target change in 2024?", "money_markets/effr", "target_low", "2024-01-01", "2024-12-31"),
    ("how many rate cuts were there in 2024 (effr target_low)?", "money_markets/effr", "target_low", "2024-01-01", "2024-12-31"),
    ("how often did iorb change in 2023?", "yield_curve/repo_public", "iorb", "2023-01-01", "2023-12-31")])
def test_how_many_times_a_series_changed_is_the_number_of_changes_with_their_days(ask, request_text, key, name, start, end):
    steps = column(key, name, start, end).diff().dropna()
    steps = steps[steps.abs() > 1e-9]
    reply = ask(request_text)
    assert f"{len(steps)} changes from one row to the next ({int((steps > 0).sum())} up, {int((steps < 0).sum())} down): " in reply
    assert all(f"{day:%Y-%m-%d} {step:+.4f}" in reply for day, step in steps.items()) and "factor" not in reply


def test_a_range_named_alone_is_both_its_bounds(ask):
    reply = ask("what was the effr target range at the end of 2023?")
    low, high = (column("money_markets/effr", name, "2023-01-01", "2023-12-31").iloc[-1] for name in ("target_low", "target_high"))
    assert "target_low (percent) on 2023-12-29" in reply and f"{low:.4f}" in reply and f"{high:.4f}" in reply


@pytest.mark.parametrize(("request_text", "words", "why"), [
    ("average sofr after the cuts in 2024", "after the cuts", "no column gives the date of that event"),
    ("what was the 10y on the day the 2y hit its 2023 high?", "on the day the 2y hit its highest", "I can't pick a day by what a series did"),
    ("what was the 1 month bill yield when the 2y peaked in 2023?", "when the 2y peaked", "I can't pick a day by what a series did")])
def test_a_period_or_a_day_set_by_an_event_is_declined_by_name(ask, request_text, words, why):
    reply = ask(request_text)
    assert f"could not use '{words}'" in reply and why in reply and "I computed nothing" in reply and "spread" not in reply


@pytest.mark.parametrize(("request_text", "start", "end"), [
    ("effr mean after the end of june 2024", "2024-07-01", "2024-12-31"),
    ("effr mean until the end of march 2023", "2023-01-01", "2023-03-31"),
    ("effr mean since march 2024 until june 2024", "2024-03-01", "2024-06-30"),
    ("effr mean from 2023-06-01 until 2023", "2023-06-01", "2023-12-31")])
def test_a_bound_at_the_edge_of_a_period_is_a_range_not_a_day(ask, request_text, start, end):
    values = column("money_markets/effr", "rate", start, end)
    assert ask(request_text).endswith(f"{values.index[0]:%Y-%m-%d} to {values.index[-1]:%Y-%m-%d}, {len(values)} values: mean {values.mean():.4f}.")


def test_the_last_few_readings_are_those_rows_each_shown(ask):
    values = column("money_markets/sofr", "rate").iloc[-3:]
    reply = ask("last 3 readings of sofr")
    assert ", 3 values: " in reply and "Each value: " + "; ".join(f"{day:%Y-%m-%d} {value:.4f}" for day, value in values.items()) in reply


def test_how_long_a_spread_was_inverted_is_its_days_below_zero(ask):
    spread = column("yield_curve/treasury_yields", "spread_10y_2y_bp", "2024-01-01", "2024-12-31")
    assert f": {int((spread < 0).sum())} of 251 days with" in ask("how long was the 10y-2y spread inverted in 2024?")


def test_tri_party_written_as_two_words_is_the_tri_party_market(ask):
    values = column("yield_curve/repo_public", "tri_party_on_volume_bn", "2024-01-01", "2024-12-31")
    reply = ask("triparty overnight volume average 2024")
    assert f"tri_party_on_volume_bn ($bn), 2024-01-02 to 2024-12-31, 251 values: mean {values.mean():.4f}." in reply


def test_the_date_of_a_figure_just_given_is_that_figures_date(ask):
    ask("average 10y")
    ask("and its max?")
    values = column("yield_curve/treasury_yields", "yield_10y")
    assert f"max {values.max():.4f} on {values.idxmax():%Y-%m-%d}" in ask("and the date of it?")


@pytest.mark.parametrize("request_text", ["did the 10y end 2024 higher than it started?", "did the 10y change over 2024?"])
def test_ending_a_year_higher_is_its_change_and_over_a_year_is_no_threshold(ask, request_text):
    values = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    reply = ask(request_text)
    assert f"change {values.iloc[-1] - values.iloc[0]:+.4f}" in reply and "2024%" not in reply


@pytest.mark.parametrize(("request_text", "key", "name", "start", "end", "how", "shown"), [
    ("what was the average sofr in each quarter of 2024?", "money_markets/sofr", "rate", "2024-01-01", "2024-12-31", "QE", "mean"),
    ("annual average of the 10y yield by year", "yield_curve/treasury_yields", "yield_10y", None, None, "YE", "mean"),
    ("sofr max minus min by month in 2024", "money_markets/sofr", "rate", "2024-01-01", "2024-12-31", "ME", "range (max minus min)"),
    ("quarterly changes of the 10y in 2024", "yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31", "QE", "change")])
def test_a_figure_for_each_period_is_given_for_every_one(ask, request_text, key, name, start, end, how, shown):
    groups = column(key, name, start, end).resample(how)
    figures = {"mean": groups.mean(), "range (max minus min)": groups.max() - groups.min(), "change": groups.last() - groups.first()}[shown]
    reply = ask(request_text)
    assert f"{shown} of each " in reply and all(f" {value:.4f}" in reply for value in figures)


def test_two_figures_for_each_period_are_declined_not_one_dropped(ask):
    reply = ask("the min and max of each quarter of 2024 for effr")
    assert "one statistic for each quarter at a time" in reply and "I computed nothing" in reply and not FIGURE.search(reply)


def test_the_first_and_last_trading_days_of_a_year_are_two_days(ask):
    values = column("yield_curve/treasury_yields", "yield_10y", "2023-01-01", "2023-12-31")
    reply = ask("the 10y yield on the first and last trading days of 2023")
    assert f"on 2023-01-03: {values.iloc[0]:.4f}" in reply and "on 2023-12-29" in reply and f"{values.iloc[-1]:.4f}" in reply


@pytest.mark.parametrize(("request_text", "side", "shown"), [
    ("how often did sofr move by more than 5 bp in 2024?", "beyond", "beyond ±0.05%"),
    ("how many days did effr change by less than 1 bp in 2024?", "within", "within ±0.01%"),
    ("how many days did sofr fall by more than 0.02 in 2024?", "below", "below -0.02%")])
def test_a_move_by_more_than_a_limit_counts_the_daily_changes_past_it(ask, request_text, side, shown):
    key = "money_markets/effr" if "effr" in request_text else "money_markets/sofr"
    limit = float(re.search(r"(\d+(?:\.\d+)?) ?(bp)?", request_text.split("than ")[1]).group(1)) / (100 if " bp" in request_text else 1)
    changes = column(key, "rate", "2024-01-01", "2024-12-31").diff().dropna()
    count = {"beyond": (changes.abs() > limit + 1e-9), "within": (changes.abs() <= limit + 1e-9), "below": (changes < -limit - 1e-9)}[side].sum()
    assert f"daily changes of {key} rate (percent), 2024-01-03 to 2024-12-31: {count} of 250 days {shown}." in ask(request_text)


def test_how_long_a_facility_was_used_is_its_days_of_usage(ask):
    used = int((column("yield_curve/repo_public", "srf_volume_bn", "2024-01-01", "2024-12-31") > 0).sum())
    assert f": {used} of 251 days above 0 $bn." in ask("how long was the srf used in 2024?")


@pytest.mark.parametrize(("request_text", "start", "end"), [("sofr in the 1st half of 2024", "2024-01-01", "2024-06-30"),
                                                            ("sofr mean in the 2nd quarter of 2024", "2024-04-01", "2024-06-30")])
def test_an_ordinal_written_in_digits_before_half_or_quarter_is_that_part(ask, request_text, start, end):
    values = column("money_markets/sofr", "rate", start, end)
    assert f"{values.index[0]:%Y-%m-%d} to {values.index[-1]:%Y-%m-%d}, {len(values)} values: mean {values.mean():.4f}" in ask(request_text)


@pytest.mark.parametrize(("request_text", "name", "limit", "shown"), [
    ("how many days in 2023 was the on rrp usage below $1 trillion?", "on_rrp_volume_bn", 1000.0, "below 1000 $bn"),
    ("how many days in 2024 did the srf see more than 500 million?", "srf_volume_bn", 0.5, "above 0.5 $bn")])
def test_a_dollar_limit_in_trillions_or_millions_is_converted_to_billions(ask, request_text, name, limit, shown):
    year = re.search(r"20\d\d", request_text).group(0)
    values = column("yield_curve/repo_public", name, f"{year}-01-01", f"{year}-12-31")
    count = int((values < limit).sum() if "below" in shown else (values > limit).sum())
    assert f": {count} of {len(values)} days {shown}." in ask(request_text)


@pytest.mark.parametrize(("request_text", "stat"), [("sofr 2024 high", "max"), ("sofr ytd high", "max"), ("the 10y's 2023 low", "min"),
                                                    ("sofr volume on the busiest day of 2024", "max"),
                                                    ("the day with the least sofr volume in 2023", "min")])
def test_a_periods_high_or_low_and_the_busiest_day_are_its_max_or_min(ask, request_text, stat):
    key, name = (("yield_curve/treasury_yields", "yield_10y") if "10y" in request_text else
                 ("money_markets/sofr", "volume_bn" if "volume" in request_text else "rate"))
    year = "2023" if "2023" in request_text else "2024"
    values = column(key, name, f"{year}-01-01", f"{year}-12-31")
    figure, day = (values.max(), values.idxmax()) if stat == "max" else (values.min(), values.idxmin())
    assert ask(request_text).endswith(f"values: {stat} {figure:.4f} on {day:%Y-%m-%d}.")


def test_which_of_two_dataframes_has_more_rows_is_each_ones_count(ask):
    reply = ask("are there more rows in sofr or effr?")
    counts = [len(column(key, "rate")) for key in ("money_markets/sofr", "money_markets/effr")]
    assert reply.count("count ") == 2 and all(f"values: count {count}." in reply for count in counts) and "Loaded" not in reply


def test_a_statistic_and_a_count_joined_by_and_how_many_are_both_answered(ask):
    values = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    reply = ask("the average 10y in 2024 and how many days was it above 4.5?")
    assert f"values: mean {values.mean():.4f}." in reply and f": {int((values > 4.5).sum())} of 251 days above 4.5%." in reply


@pytest.mark.parametrize(("request_text", "later", "earlier"), [("the 2y on 2024-12-31 minus the 2y on 2023-12-29", "2024-12-31", "2023-12-29"),
                                                                ("the 2y on 2024-06-28, 2024-06-27", "2024-06-28", "2024-06-27")])
def test_two_days_of_one_series_are_each_day_never_the_range_between(ask, request_text, later, earlier):
    values = column("yield_curve/treasury_yields", "yield_2y")
    reply = ask(request_text)
    assert f"on {later}: {values[later]:.4f}." in reply and f"on {earlier}: {values[earlier]:.4f}." in reply and "values:" not in reply
    assert ("minus" not in request_text) or f"difference {values[later] - values[earlier]:+.4f}." in reply


def test_what_happened_to_a_series_is_its_change(ask):
    values = column("yield_curve/repo_public", "reserves_bn", "2024-01-01", "2024-12-31")
    assert f"change {values.iloc[-1] - values.iloc[0]:+.4f}" in ask("what happened to reserves in 2024?")


@pytest.mark.parametrize("request_text", ["how many days did sofr rise above 5.35% in 2024?", "how many times did sofr move above 5.35% in 2024?"])
def test_a_move_above_a_level_without_by_is_the_level_not_a_change(ask, request_text):
    values = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    assert ask(request_text).endswith(f"2024-01-02 to 2024-12-31: {int((values > 5.35).sum())} of 251 days above 5.35%.")


def test_an_event_after_next_is_still_an_event(ask):
    reply = ask("average sofr until the next cut")
    assert "could not use 'until the next cut'" in reply and not FIGURE.search(reply)


def test_a_dollar_limit_with_its_unit_glued_on_is_used(ask):
    values = column("yield_curve/repo_public", "tga_bn", "2024-01-01", "2024-12-31")
    assert f": {int((values > 900).sum())} of 251 days above 900 $bn." in ask("was the tga ever above $900bn in 2024?")


def test_when_a_series_was_first_past_a_limit_is_its_first_date(ask):
    values = column("yield_curve/repo_public", "tga_bn", "2024-01-01", "2024-12-31")
    assert ask("when was the tga first above 900 in 2024?").endswith(f"above 900 $bn first on {values[values > 900].index[0]:%Y-%m-%d}.")


def test_what_percent_of_the_days_is_the_share_of_the_days(ask):
    values = column("yield_curve/treasury_yields", "yield_10y", "2024-01-01", "2024-12-31")
    count = int((values > 4).sum())
    assert f": {count} of 251 days above 4% ({100 * count / 251:.2f}% of the days)." in ask("what % of 2024 days was the 10y above 4%?")


def test_the_last_day_of_each_month_is_each_months_last_row(ask):
    values = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31")
    month_ends = values.groupby(values.index.to_period("M")).last()
    reply = ask("average sofr on the last day of each month in 2024")
    assert f"12 values: mean {month_ends.mean():.4f}." in reply and "each month:" not in reply


def test_the_fed_curve_is_the_fitted_curve_not_the_treasury_par_curve(ask):
    values = column("yield_curve/fed_yield_curve", "SVENPY05", "2023-01-01", "2023-12-31")
    assert "yield_curve/fed_yield_curve SVENPY05 (percent) on 2023-12-29" in ask("what is the 5y par yield from the fed curve at the end of 2023?")
    assert f"{values.iloc[-1]:.4f}" in ask("the fed curve's 5y par yield at the end of 2023")


def test_a_count_of_days_higher_than_nothing_named_is_declined(ask):
    reply = ask("sofr vs iorb in repo_public 2024: how many days was sofr higher?")
    assert "could not use 'higher'" in reply and "count 251" not in reply and not FIGURE.search(reply)


def test_a_column_of_another_dataframe_is_said_to_be_there(ask):
    reply = ask("on average how far below iorb was effr in 2024, in bp?")
    assert "I can't find a column 'iorb' in money_markets/effr. yield_curve/repo_public has it" in reply and not FIGURE.search(reply)


def test_the_largest_gap_of_a_spread_below_zero_shows_both_extremes(ask):
    spread = column("yield_curve/treasury_yields", "yield_10y", "2023-01-01", "2023-12-31") - column(
        "yield_curve/treasury_yields", "yield_2y", "2023-01-01", "2023-12-31")
    reply = ask("what was the largest gap between the 10y and the 2y in 2023?")
    assert f"min {spread.min():.4f}" in reply and f"max {spread.max():.4f}" in reply


def test_a_difference_of_two_periods_asked_in_bp_is_in_bp(ask):
    q2, q3 = (column("yield_curve/treasury_yields", "yield_10y", start, end).mean() for start, end in
              (("2024-04-01", "2024-06-30"), ("2024-07-01", "2024-09-30")))
    assert f"mean {q2 - q3:+.4f} ({(q2 - q3) * 100:.4f} bp)." in ask("10y 2024 Q2 average vs Q3 average, difference in bp")
