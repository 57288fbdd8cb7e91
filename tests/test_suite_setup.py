"""How the suite runs: what `make test` (and so CI, through .ci/run) runs is every test, on every core.

- ``make test`` runs pytest-xdist (``-n``) with ``--dist loadfile`` (a notebook's cells stay in one
  worker, in order) and selects nothing out: the ``slow`` tests run too, so CI runs the same tests
  as a serial ``pytest`` would.
- The ``slow`` marker is declared and used, so ``pytest -m "not slow"`` is a real quick subset.
- The longest files are handed out first (``tests/durations.json``, see ``conftest.py``): a file never
  starts last and finishes alone.
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


def test_the_longest_files_are_handed_out_first_and_each_keeps_its_order() -> None:
    from conftest import longest_first

    nodeids = ["tests/a.py::t1", "tests/a.py::t2", "nb.ipynb::Cell 0", "nb.ipynb::Cell 1", "tests/new.py::x", "tests/new.py::y"]
    assert longest_first(nodeids, {"tests/a.py": 1.0, "nb.ipynb": 5.0}) == ["nb.ipynb", "tests/a.py", "tests/new.py"]
    assert longest_first(nodeids, {}) == ["tests/a.py", "nb.ipynb", "tests/new.py"], "unknown files: ties keep their order"


def test_the_stored_durations_name_files_that_exist() -> None:
    import json

    stored = json.loads((ROOT / "tests" / "durations.json").read_text(encoding="utf-8"))
    assert len(stored) > 40 and all((ROOT / path).is_file() for path in stored), "run pytest --store-durations over the suite"
