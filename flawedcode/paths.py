"""Where flawedcode finds its data and writes its outputs.

The repository's fixed top level holds ``data/`` (the ChartBook catalog and the
demo project), ``scratch/`` (offloaded tool results), ``archives/``
(conversation archives) and ``results/`` (benchmark output). Each can be moved
with an environment variable, which tests and notebooks use to write into
temporary folders instead of the repository.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _dir_from_env(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser().resolve() if value else default


def data_dir() -> Path:
    """The ChartBook catalog folder (``FLAWEDCODE_DATA_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_DATA_DIR", PROJECT_ROOT / "data")


def demo_project_dir() -> Path:
    """The original stock-analysis project; sessions work on copies of it."""
    return data_dir() / "demo_project"


def scratch_dir() -> Path:
    """Where offloaded tool results land (``FLAWEDCODE_SCRATCH_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_SCRATCH_DIR", PROJECT_ROOT / "scratch")


def archive_dir() -> Path:
    """Where conversation archives land (``FLAWEDCODE_ARCHIVE_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_ARCHIVE_DIR", PROJECT_ROOT / "archives")


def results_dir() -> Path:
    """Where benchmark results and saved charts land (``FLAWEDCODE_RESULTS_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_RESULTS_DIR", PROJECT_ROOT / "results")


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and one rename.

    Readers see the old file or the new one, never half of one; a crash leaves no
    partial file. Text is written as UTF-8 exactly as given (no newline translation);
    an existing file's permissions are kept.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data.encode("utf-8") if isinstance(data, str) else data)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
