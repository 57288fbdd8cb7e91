"""Analyze one stock's daily prices: returns, a moving average and volatility.

Reads data.csv (date, open, high, low, close, volume) from this folder and
prints a short report. Run it with:

    python analyze.py
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

DATA_FILE = Path(__file__).with_name("data.csv")
TRADING_DAYS_PER_YEAR = 252
MOVING_AVERAGE_WINDOW = 20


def load_rows(path: Path = DATA_FILE) -> list[dict[str, str]]:
    """All rows of the CSV file, oldest first."""
    with open(path, newline="") as file:
        return sorted(csv.DictReader(file), key=lambda row: row["date"])


def closing_prices(rows: list[dict[str, str]]) -> list[float]:
    return [float(row["close"]) for row in rows]


def daily_returns(prices: list[float]) -> list[float]:
    """Simple returns: how much the price changed from one day to the next, as a fraction."""
    return [today / yesterday - 1 for yesterday, today in zip(prices, prices[1:])]


def moving_average(prices: list[float], window: int = MOVING_AVERAGE_WINDOW) -> list[float]:
    """The average of each run of `window` consecutive prices."""
    return [statistics.fmean(prices[end - window : end]) for end in range(window, len(prices) + 1)]


def annualized_volatility(prices: list[float]) -> float:
    """The standard deviation of daily returns, scaled to a year (0.25 means 25%)."""
    daily_volatility = statistics.stdev(prices)
    return daily_volatility * math.sqrt(TRADING_DAYS_PER_YEAR)


def report(rows: list[dict[str, str]]) -> str:
    prices = closing_prices(rows)
    total_return = prices[-1] / prices[0] - 1
    lines = [
        f"Days:                   {len(rows)} ({rows[0]['date']} to {rows[-1]['date']})",
        f"Last close:             {prices[-1]:.2f}",
        f"Total return:           {total_return:.1%}",
        f"{MOVING_AVERAGE_WINDOW}-day moving average:  {moving_average(prices)[-1]:.2f}",
        f"Annualized volatility:  {annualized_volatility(prices):.1%}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(load_rows()))
