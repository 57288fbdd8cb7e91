"""Shadow run: the new teaching reader (flawedcode/models/teaching/) beside the old parser, over the corpora.

For every first turn of the phrase and trap corpora (tests/corpora/*.yaml) and of the fresh registers set,
both read the request without tools: the old one's first data ask (dataframe, column, statistics, first and
last day), the new one's complete ``Request``. Prints how often they agree, and each disagreement:

    python tests/benchmarks/bench_teaching_shadow.py [--verbose]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import yaml

from flawedcode.models import OfflineModel
from flawedcode.models.offline_intents import plan
from flawedcode.models.teaching.request import Decline, Request, Statistic
from flawedcode.models.teaching.router import read_message

CORPORA = Path(__file__).parents[1] / "corpora"
OLD_STATS = {"mean": Statistic.MEAN, "median": Statistic.MEDIAN, "min": Statistic.MIN, "max": Statistic.MAX,
             "std": Statistic.STD, "count": Statistic.COUNT, "latest": Statistic.LATEST, "change": Statistic.CHANGE,
             "sum": Statistic.SUM, "range": Statistic.RANGE}


def first_turns() -> list[tuple[str, str]]:
    said = []
    for path in sorted(CORPORA.glob("*.yaml")):
        for case in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("cases", []):
            if not case.get("turns"):
                continue  # another format (a corpus of workspace asks, say)
            turn = case["turns"][0]
            said.append((path.stem, turn["say"] if isinstance(turn, dict) else turn))
    return said


def old_reading(text: str, model: OfflineModel) -> tuple | None:
    context = model.context([], {"run_python": {}, "chartbook_load_data": {}}, False)
    ask = next((task.ask for task in plan(text, context) if task.ask is not None), None)
    if ask is None or not ask.series:
        return None
    stats = tuple(OLD_STATS.get(stat) for stat in ask.stats) or (None,)
    return (ask.series[0].ref.key, ask.series[0].column, stats[0], ask.period.start, ask.period.end)


def new_reading(text: str) -> tuple | str | None:
    readings = read_message(text)
    if not readings:
        return None
    first = readings[0]
    if isinstance(first, Decline):
        return "declined"
    assert isinstance(first, Request)
    series = first.series[0]
    stat = first.stat() if first.stat() not in (Statistic.VALUE,) and not first.statistics else None
    period = first.period
    all_data = period.granularity.value == "all" and not period.trading_days
    return (series.frame, series.column, stat, None if all_data else str(period.first), None if all_data else str(period.last))


def agree(old: tuple, new: tuple) -> bool:
    same_series = old[:2] == new[:2]
    same_stat = old[2] == new[2] or None in (old[2], new[2])
    days = [(o or n) == n or (o and n and o[:7] == n[:7]) for o, n in zip(old[3:], new[3:])]
    return same_series and same_stat and all(days)


def main(verbose: bool) -> None:
    model = OfflineModel()
    outcome: Counter[str] = Counter()
    for corpus, text in first_turns():
        old, new = old_reading(text, model), new_reading(text)
        if new is None:
            kind = "left to the old model"
        elif new == "declined":
            kind = "declined by the new reader"
        elif old is None:
            kind = "read by the new reader only"
        else:
            kind = "agree" if agree(old, new) else "disagree"
        outcome[kind] += 1
        if verbose and kind in ("disagree", "read by the new reader only"):
            print(f"{kind:<28} {corpus:<18} {text!r}\n    old {old}\n    new {new}")
    total = sum(outcome.values())
    print(f"\n{total} first turns:", ", ".join(f"{kind} {count}" for kind, count in outcome.most_common()))
    both = outcome["agree"] + outcome["disagree"]
    print(f"agreement where both read a data request: {outcome['agree']} of {both}")


if __name__ == "__main__":
    main("--verbose" in sys.argv)
