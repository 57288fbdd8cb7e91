"""How the suite runs: what `make test` (and so CI, through .ci/run) runs is every test, on every core.

- ``make test`` runs pytest-xdist (``-n``) with ``--dist loadfile`` (a notebook's cells stay in one
  worker, in order) and selects nothing out: the ``slow`` tests run too, so CI runs the same tests
  as a serial ``pytest`` would.
- The ``slow`` marker is declared and used, so ``pytest -m "not slow"`` is a real quick subset.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_test_command() -> str:
    result = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True)
    return next(line for line in result.stdout.splitlines() if "-m pytest" in line)


def test_make_test_runs_every_test_in_parallel_with_a_notebook_in_one_worker() -> None:
    command = make_test_command()
    assert re.search(r" -n \S+", command) and "--dist loadfile" in command, command
    assert " -m " not in command.split("-m pytest", 1)[1], "make test deselects nothing: the slow tests run in CI too"
    assert "tests notebooks --nbval" in command
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().endswith("make test")


def test_the_slow_marker_is_declared_and_used() -> None:
    assert '"slow:' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    marked = [path.name for path in sorted((ROOT / "tests").glob("test_*.py"))
              if re.search(r"pytest\.mark\.slow\b", path.read_text(encoding="utf-8"))]
    assert "test_install.py" in marked, marked
