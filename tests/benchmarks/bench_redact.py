"""Benchmark flawedcode.infra.redact: time per megabyte on ordinary text and on hostile text.

Run:  python tests/benchmarks/bench_redact.py

Everything flawedcode writes passes through ``redact`` first, so its cost must grow
linearly with the text, whatever the text is. This prints the seconds per MB for text
like a tool's output (CSV, prose, code) and for inputs built to make regular expressions
backtrack (long runs of key characters, ``eyJ-`` and ``sk-`` over and over, dense
``password=``), each at 1 MB and 4 MB: a ratio near 4 between the two is linear.
"""

from __future__ import annotations

import random
import string
import time

from flawedcode.infra.redact import redact

MB = 1024**2


def inputs(size: int) -> dict[str, str]:
    rng = random.Random(7)
    return {
        "csv": ("2024-01-02,5.33,5.31,5.30,5.29\n" * (size // 31 + 1))[:size],
        "prose": ("The effective federal funds rate stayed near the top of its range. " * (size // 68 + 1))[:size],
        "code": ("def spread(a, b):\n    return (a - b) * 100  # in basis points\n" * (size // 60 + 1))[:size],
        "random base62": "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(size)),
        "a-a-a-": ("a-" * (size // 2 + 1))[:size],
        "eyJ-eyJ-": ("eyJ-" * (size // 4 + 1))[:size],
        "sk-sk-": ("sk-" * (size // 3 + 1))[:size],
        "password=": ("password=" * (size // 9 + 1))[:size],
        "Bearer ": ("Bearer " * (size // 7 + 1))[:size],
    }


def main() -> None:
    print(f"{'input':<16}{'1 MB (s)':>10}{'4 MB (s)':>10}{'ratio':>8}")
    small, large = inputs(MB), inputs(4 * MB)
    for name in small:
        timings = []
        for text in (small[name], large[name]):
            started = time.perf_counter()
            redact(text, environ={})
            timings.append(time.perf_counter() - started)
        print(f"{name:<16}{timings[0]:>10.3f}{timings[1]:>10.3f}{timings[1] / timings[0]:>8.1f}")


if __name__ == "__main__":
    main()
