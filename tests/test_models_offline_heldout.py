"""The held-out parts of the offline model's corpora: their pass rate, over every case.

The cases, how they run (the model called directly, tests/teaching_harness.py) and the checks are those
of ``test_models_offline_corpus.py`` (``run_case``); this file only scores the held-out parts, which were set aside before any rule
changed and must pass at least ``HELDOUT_FLOOR`` as a whole. It is a file of its own so that under
pytest-xdist it runs beside the developed parts instead of after them. The cases are scored in this
process: each is a few direct model calls (about 0.1 s), so a pool of processes, each importing the package and
building the model's vocabulary again, cost more than it saved (45 s against 13 s on this machine).
Failures are never printed: the held-out parts are never tuned against.
"""

from __future__ import annotations

import pytest
from test_models_offline_corpus import HELDOUT_FLOOR, load_cases, run_case


@pytest.mark.slow
@pytest.mark.parametrize("name", ["phrases_heldout", "traps_heldout"])
def test_held_out_pass_rate(name):
    cases = load_cases(name)
    passed = sum(run_case(case).passed for case in cases)
    assert passed / len(cases) >= HELDOUT_FLOOR, f"{name}: {passed}/{len(cases)} passed"
