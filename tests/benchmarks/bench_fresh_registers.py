"""The fresh registers set (tests/corpora/fresh_registers.yaml) through a teaching model: right / declined / wrong.

    python tests/benchmarks/bench_fresh_registers.py            # the model get_model('offline') builds
    python tests/benchmarks/bench_fresh_registers.py --verbose  # and each case's last reply
    python tests/benchmarks/bench_fresh_registers.py fresh_sessions   # another set in the same format
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from teaching_harness import converse, fresh_cases, judge, workspace_in  # noqa: E402

from flawedcode.models import get_model  # noqa: E402


def main(verbose: bool, name: str = "fresh_registers") -> None:
    outcomes: Counter[str] = Counter()
    for case in fresh_cases(name):
        with tempfile.TemporaryDirectory() as root:
            reply = converse(get_model("offline"), case["turns"], workspace_in(Path(root)))[-1]
        outcome = judge(case, reply)
        if case["expect"] == "decline":
            outcome = "right" if outcome in ("right", "declined") else "wrong"
        outcomes[outcome] += 1
        print(f"{case['id']:<18} {outcome:<9}" + (f" {reply[:300]!r}" if verbose else ""))
    print(f"\n{len(fresh_cases(name))} cases: right {outcomes['right']}, declined {outcomes['declined']}, "
          f"confidently wrong {outcomes['wrong']}")


if __name__ == "__main__":
    main("--verbose" in sys.argv, *[arg for arg in sys.argv[1:] if not arg.startswith("--")])
