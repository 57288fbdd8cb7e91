"""Shared test setup: no network but loopback, and outputs in temporary folders.

Every test runs with sockets disabled except to 127.0.0.1/localhost
(pytest-socket), so nothing here can reach the internet. scratch/, archives/
and results/ are redirected to a per-test temporary folder so tests never
write into the repository.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Equivalent to `--disable-socket --allow-hosts=127.0.0.1,localhost,::1` on the command line.
    config.option.disable_socket = True
    config.option.allow_hosts = "127.0.0.1,localhost,::1"


@pytest.fixture(autouse=True)
def _isolated_output_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("outputs")
    monkeypatch.setenv("FLAWEDCODE_SCRATCH_DIR", str(base / "scratch"))
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(base / "archives"))
    monkeypatch.setenv("FLAWEDCODE_RESULTS_DIR", str(base / "results"))
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FLAWEDCODE_MODEL"):
        monkeypatch.delenv(variable, raising=False)
