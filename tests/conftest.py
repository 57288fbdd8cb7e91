"""Shared test setup: no network but loopback, outputs in temporary folders, the longest files first.

Every test runs with sockets disabled except to 127.0.0.1/localhost
(pytest-socket), so nothing here can reach the internet. scratch/, archives/
and results/ are redirected to a per-test temporary folder so tests never
write into the repository.

Under pytest-xdist (`make test`, ``--dist loadfile``) a file is one unit of work, handed out in
collection order; a long file handed out last would finish alone while the other workers idle. So
the files are collected longest first, by the seconds each took in a full run, stored in
``tests/durations.json`` (a file missing from it counts a tenth of a second a test). The order is
only a matter of speed: a file's own tests (a notebook's cells) keep their order, and a stale
figure only makes the run a little longer. ``pytest --store-durations ...`` stores the figures of
the files it ran (run it over the whole suite, as `make test` does: ``make test PYTEST_ARGS=--store-durations``).
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds per test file (setup, call and teardown of all its tests) in the last stored full run."""
SECONDS_PER_UNKNOWN_TEST = 0.1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test file's seconds to {DURATIONS.name} (run over the whole suite)")


def pytest_configure(config: pytest.Config) -> None:
    # Equivalent to `--disable-socket --allow-hosts=127.0.0.1,localhost,::1` on the command line.
    config.option.disable_socket = True
    config.option.allow_hosts = "127.0.0.1,localhost,::1"
    # xdist would otherwise reorder the files by their number of tests, which says little about their length.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(nodeids: list[str], seconds: dict[str, float]) -> list[str]:
    """The files of ``nodeids`` ordered by their stored seconds, longest first (ties keep their order)."""
    tests = Counter(_file_of(nodeid) for nodeid in nodeids)
    return sorted(tests, key=lambda path: -seconds.get(path, SECONDS_PER_UNKNOWN_TEST * tests[path]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.exists() else {}
    rank = {path: number for number, path in enumerate(longest_first([item.nodeid for item in items], seconds))}
    items.sort(key=lambda item: rank[_file_of(item.nodeid)])  # a stable sort: each file's tests keep their order


_seconds_by_file: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds_by_file[_file_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("--store-durations") and not hasattr(session.config, "workerinput"):
        stored = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.exists() else {}
        root = DURATIONS.parent.parent
        figures = {path: seconds for path, seconds in stored.items() if (root / path).is_file()}  # the files not run keep theirs
        figures.update({path: round(seconds, 1) for path, seconds in _seconds_by_file.items()})
        DURATIONS.write_text(json.dumps(dict(sorted(figures.items())), indent=0) + "\n", encoding="utf-8")


@pytest.fixture(autouse=True)
def _isolated_output_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # A new folder in basetemp/outputs/, not mktemp's numbered one: mktemp scans every folder already in basetemp to
    # number the next, so over a run of n tests it read n*n/2 names (4.5 s for 2,500 tests) and slowed each tmp_path.
    outputs = tmp_path_factory.getbasetemp() / "outputs"
    outputs.mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(dir=outputs))
    monkeypatch.setenv("FLAWEDCODE_SCRATCH_DIR", str(base / "scratch"))
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(base / "archives"))
    monkeypatch.setenv("FLAWEDCODE_RESULTS_DIR", str(base / "results"))
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FLAWEDCODE_MODEL"):
        monkeypatch.delenv(variable, raising=False)
