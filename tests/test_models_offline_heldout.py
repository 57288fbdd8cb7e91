"""The held-out parts of the offline model's corpora: their pass rate, over every case, scored in parallel.

The cases, how they run (the model called directly, tests/teaching_harness.py) and the checks are those
of ``test_models_offline_corpus.py`` (``run_case``); this file only scores the held-out parts, which were set aside before any rule
changed and must pass at least ``HELDOUT_FLOOR`` as a whole. It is a file of its own so that under
pytest-xdist it runs beside the developed parts instead of after them, and it scores its cases in a
pool of processes, one per core this worker may use (under xdist, the cores divided by the workers;
with one core it scores them in this process). Failures are never printed: the held-out parts are
never tuned against.
"""

from __future__ import annotations

import copy
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import pytest
from test_models_offline_corpus import HELDOUT_FLOOR, load_cases, run_case


def cores_for_this_worker() -> int:
    """The cores this test may keep busy: all of them, or under xdist its share (at least one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def case_passes(case: dict[str, Any]) -> bool:
    return run_case(case).passed


def passes(cases: list[dict[str, Any]], processes: int) -> list[bool]:
    """Whether each case passes, in the cases' order, scored by ``processes`` processes."""
    if processes <= 1:
        return [case_passes(case) for case in cases]
    # spawn, not fork: this process may hold threads (xdist's) whose locks a forked child would inherit
    with ProcessPoolExecutor(max_workers=processes, mp_context=get_context("spawn")) as pool:
        return list(pool.map(case_passes, cases, chunksize=max(1, len(cases) // (4 * processes))))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["phrases_heldout", "traps_heldout"])
def test_held_out_pass_rate(name):
    cases = load_cases(name)
    passed = sum(passes(cases, cores_for_this_worker()))
    assert passed / len(cases) >= HELDOUT_FLOOR, f"{name}: {passed}/{len(cases)} passed"


def test_scoring_in_a_pool_gives_each_case_its_own_result_in_order():
    passing = load_cases("traps_dev")[:2]
    failing = copy.deepcopy(passing[0])
    failing["turns"][-1]["facts"] = ["a sentence no reply contains"]
    assert passes([passing[0], failing, passing[1]], 2) == [True, False, True]
