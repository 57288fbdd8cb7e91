"""The offline model answers the question asked about two series, daily moves and range bounds, or asks back.

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


def spread_mean(year: str) -> float:
    sofr = column("money_markets/sofr", "rate", f"{year}-01-01", f"{year}-12-31")
    effr = column("money_markets/effr", "rate", f"{year}-01-01", f"{year}-12-31")
    return (sofr - effr).dropna().mean()


@pytest.mark.parametrize("request_text", [
    "was SOFR higher on average than EFFR in 2024? by how many bp?",
    "was SOFR above EFFR on average in 2024, and by how many bp?",
    "is sofr higher than effr on average in 2024",
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
])
def test_the_largest_move_in_a_day_is_a_statistic_of_daily_changes(ask, request_text, statistic):
    changes = column("money_markets/sofr", "rate", "2024-01-01", "2024-12-31").diff().dropna()
    value = changes.max() if statistic == "max" else changes.min()
    day = (changes.idxmax() if statistic == "max" else changes.idxmin()).date().isoformat()
    reply = ask(request_text)
    assert reply.startswith("daily changes of money_markets/sofr rate") and f"{statistic} {value:.4f} on {day}" in reply


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
