"""The rebuilt teaching model (flawedcode/models/teaching/, issue 41): typed readings, complete or decline,
a conversation made of requests, and answers a user would check.

Readings are tested on the router directly (no tools, no agent); a few answers run end to end through the
model with the real tools (tests/teaching_harness.py, no agent). Expected days and figures come from the
parquet files with pandas, never typed in.
"""

from __future__ import annotations

from datetime import date
from functools import cache

import pandas as pd
import pytest

from flawedcode.models.teaching.conversation import read_turn
from flawedcode.models.teaching.request import Decline, Granularity, Request, Statistic, Transform, Unit
from flawedcode.models.teaching.router import read_message
from flawedcode.paths import data_dir


@cache
def frame(name: str) -> pd.DataFrame:
    path = {"sofr": "money_markets/_data/sofr.parquet", "effr": "money_markets/_data/effr.parquet",
            "ty": "yield_curve/_data/treasury_yields.parquet", "repo": "yield_curve/_data/repo_public.parquet"}[name]
    return pd.read_parquet(data_dir() / "pipelines" / path).set_index("date")


def trading_day_before(name: str, day: str) -> date:
    return frame(name).loc[:pd.Timestamp(day) - pd.Timedelta(days=1)].index[-1].date()


def only(text: str, earlier: Request | None = None) -> Request | Decline:
    readings = read_message(text, earlier)
    assert readings is not None and len(readings) == 1, f"{text!r}: {readings}"
    return readings[0]


# ----------------------------------------------------------------------------- readings


def test_filler_and_social_words_around_an_answerable_ask_are_ignored():
    for text in ("hey guys, quick one: what was the average sofr in 2023? thanks!",
                 "hmm ok so what's the max effr in 2024, class?",
                 "sorry to bother you, could you tell me the min 2y yield in 2024 please"):
        request = only(text) if "?" not in text[:-1] else read_message(text)[0]
        assert isinstance(request, Request), f"{text!r} was declined: {request}"
        assert request.period.granularity is Granularity.YEAR


def test_a_content_word_no_reader_uses_is_named_in_a_decline_that_says_what_was_understood():
    decline = only("mean sofr in 2024 for purple unicorns")
    assert isinstance(decline, Decline) and decline.unused == ("purple unicorns",)  # named as the phrase it stands in
    assert decline.understood.series[0].name == "money_markets/sofr.rate"


def test_qualifiers_made_of_known_words_change_the_reading():
    assert only("compounded average sofr in 2024").stat() is Statistic.COMPOUNDED_MEAN
    assert only("mean sofr in 2024 as a decimal").unit.value is Unit.DECIMAL
    assert only("average daily change of the 10y in 2024 in bp").transform.value is Transform.DAILY_CHANGE
    summer = only("average effr over the summer of 2024 (june to august)").period
    assert (summer.first, summer.last) == (date(2024, 6, 1), date(2024, 8, 31))


def test_relative_days_are_counted_on_the_datas_own_trading_days():
    after_holiday = read_message("sofr on 2024-07-05 and the day before")
    assert [r.period.first for r in after_holiday] == [date(2024, 7, 5), trading_day_before("sofr", "2024-07-05")]
    assert only("effr a month before the end of the data").period.first == trading_day_before("effr", "2024-12-01")
    thanksgiving = only("sofr on the day before thanksgiving 2023").period.first
    assert thanksgiving == trading_day_before("sofr", "2023-11-23")
    last_30 = only("mean sofr over the last 30 trading days").period
    assert (last_30.first, last_30.last) == (frame("sofr").index[-30].date(), frame("sofr").index[-1].date())


def test_two_asks_in_one_message_are_both_read():
    first, second = read_message("what was the mean sofr in 2024 and what was the max effr in 2023?")
    assert (first.series[0].frame, first.stat(), first.period.first.year) == ("money_markets/sofr", Statistic.MEAN, 2024)
    assert (second.series[0].frame, second.stat(), second.period.first.year) == ("money_markets/effr", Statistic.MAX, 2023)


def test_a_difference_column_is_never_read_the_other_way_round():
    readings = read_message("effr minus sofr in Q4 2024")
    assert not readings or all(r.series[0].column != "sofr_minus_effr_bp" for r in readings if isinstance(r, Request))


def test_two_columns_that_fit_equally_are_never_guessed():
    readings = read_message("average of percentile_75 in 2024")
    assert readings is None or all(isinstance(r, Decline) for r in readings)


# ----------------------------------------------------------------------------- the conversation


def test_a_declined_turn_never_becomes_the_state():
    turn = read_turn("and in 2023?", ["mean effr in 2024", "and the mean libor in 2023?"])
    (request,) = turn.readings
    assert turn.builds_on.period.first.year == 2024 and turn.builds_on.series[0].frame == "money_markets/effr"
    assert (request.series[0].frame, request.stat(), request.period.first.year) == ("money_markets/effr", Statistic.MEAN, 2023)


@pytest.mark.parametrize(("follow_up", "check"), [
    ("now change just the year, 2023", lambda r: r.stat() is Statistic.MEAN and r.period.first.year == 2023),
    ("same thing for EFFR", lambda r: r.series[0].frame == "money_markets/effr" and r.period.first.year == 2024),
    ("in percent please?", lambda r: r.unit.value is Unit.PERCENT and r.series[0].frame == "money_markets/sofr"),
    ("sorry, I meant the 20-year", lambda r: r.series[0].column == "yield_20y" and r.stat() is Statistic.MEAN),
])
def test_a_follow_up_changes_only_the_slots_it_names(follow_up, check):
    first = "average 10y in 2024" if "20-year" in follow_up else "average sofr in 2024"
    turn = read_turn(follow_up, [first])
    (request,) = turn.readings
    assert turn.builds_on is not None and check(request), f"{follow_up!r}: {request}"


def test_the_day_before_follows_the_last_answered_day():
    turn = read_turn("and the day before?", ["sofr on 2024-03-15"])
    assert turn.readings[0].period.first == trading_day_before("sofr", "2024-03-15")


@pytest.mark.parametrize(("text", "threshold"), [
    ("on how many days in 2024 was sofr_minus_iorb_bp below -0.05%?", -0.05),
    ("how many days in 2024 was spread_10y_2y_bp under - 25 bp", -25),
    ("number of days spread_10y_2y_bp was above −10 in 2023", -10),
])
def test_a_negative_threshold_keeps_its_sign(text, threshold):
    request = only(text)
    assert request.condition is not None and request.condition.threshold == threshold, request


def test_a_range_written_with_a_dash_is_no_negative_number():
    from flawedcode.models.teaching.readers import tokens

    assert tokens("mean sofr 2023-2024 and 2023 - 2024").words == ["mean", "sofr", "2023", "2024", "and", "2023", "to", "2024"]


def test_a_summary_names_the_requests_a_follow_up_builds_on():
    from flawedcode.formats import GOAL_LINE, SUMMARY_PREFIX, requests_named

    summary = (f"{SUMMARY_PREFIX} 1 | archive: archives/a.jsonl]\n{GOAL_LINE}mean effr in 2023\n\n## SUMMARY\n"
               "Requests: max 10y in q3 2024 | a request clipped at its end...\nLast request: x (answered).")
    assert requests_named(summary) == ["mean effr in 2023", "max 10y in q3 2024"]
    digest = f"{SUMMARY_PREFIX} 2 | turn digest]\nTools: run_python\nLast request: sofr on 2024-03-15 (answered)."
    assert requests_named(digest) == ["sofr on 2024-03-15"]


@pytest.mark.parametrize(("text", "statistics"), [
    ("mean, min and max of effr in 2024", [Statistic.MEAN, Statistic.MIN, Statistic.MAX]),
    ("what were the min and max of the 2y yield in 2023?", [Statistic.MIN, Statistic.MAX]),
])
def test_every_statistic_asked_is_read(text, statistics):
    request = only(text)
    assert isinstance(request, Request) and [slot.value for slot in request.statistics] == statistics, request


def test_a_follow_up_statistic_replaces_the_earlier_list():
    turn = read_turn("and the max?", ["mean, min and max of effr in 2024"])
    (request,) = turn.readings
    assert request.stat() is Statistic.MAX and request.statistics == (), request


def test_a_period_an_event_bounds_is_declined_naming_the_event():
    """'after the September 2024 cut': no column dates the cut, so no period after it is guessed (was from October)."""
    decline = only("When did SOFR first print below 5% after the September 2024 cut?")
    assert isinstance(decline, Decline) and "'cut'" in decline.reason and "no column gives the date" in decline.reason
