"""Checks for analyze.py. Run with `python -m pytest test_analyze.py` (or `python test_analyze.py`)."""

import math

import analyze


def test_daily_returns_are_fractions_of_the_previous_price():
    assert analyze.daily_returns([100.0, 110.0, 99.0]) == [0.10000000000000009, -0.09999999999999998]


def test_moving_average_of_a_rising_series():
    assert analyze.moving_average([1.0, 2.0, 3.0, 4.0], window=2) == [1.5, 2.5, 3.5]


def test_volatility_of_prices_that_alternate_up_and_down_by_one_percent():
    prices = [100.0]
    for day in range(60):
        prices.append(prices[-1] * (1.01 if day % 2 == 0 else 0.99))
    # Returns alternate +1% / -1%: their standard deviation is about 1% a day,
    # which is about 16% a year (times the square root of 252 trading days).
    assert math.isclose(analyze.annualized_volatility(prices), 0.01 * math.sqrt(252), rel_tol=0.02)


def test_volatility_of_the_sample_data_is_plausible_for_a_stock():
    prices = analyze.closing_prices(analyze.load_rows())
    assert 0.05 < analyze.annualized_volatility(prices) < 1.0


if __name__ == "__main__":
    for name, check in list(globals().items()):
        if name.startswith("test_"):
            check()
            print(f"ok  {name}")
