"""Benchmark: the offline model's planning time per request, as hostile requests double in length.

Run:  python tests/benchmarks/bench_offline_requests.py

For each shape (a long word, a repeated phrase, many requests), it plans requests of 500 to
32,000 characters and prints the seconds each took and the ratio to the previous length. Work
per request must stay linear (ratio about 2 or less per doubling) and bounded: past
``MAX_REQUEST_CHARS`` a request is declined by its length before any pattern runs.
"""

from __future__ import annotations

import time

from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_intents import plan
from flawedcode.models.offline_plan import Context

SHAPES = {
    "one word": "a",
    "year-dash word": "2024-",
    "repeated 'compare a with '": "compare a with ",
    "repeated 'in 2024 '": "in 2024 ",
    "repeated 'a minus '": "a minus ",
    "many requests 'a, load '": "a, load ",
    "NUL bytes": "a\x00",
}
LENGTHS = (500, 1000, 2000, 3900, 8000, 16000, 32000)


def main() -> None:
    vocabulary = Vocabulary.from_catalog(None)
    print(f"{'shape':28} " + " ".join(f"{length:>9,}" for length in LENGTHS))
    for name, unit in SHAPES.items():
        cells = []
        for length in LENGTHS:
            text = (unit * (length // len(unit) + 1))[:length]
            started = time.perf_counter()
            plan(text, Context(vocabulary))
            cells.append(time.perf_counter() - started)
        print(f"{name:28} " + " ".join(f"{seconds:8.3f}s" for seconds in cells))


if __name__ == "__main__":
    main()
