"""Where flawedcode finds its data and writes its outputs.

Two ways to run, one rule each:

- **From a checkout** (this package's parent folder holds ``pyproject.toml`` and
  ``data/chartbook.toml``; editable installs run this way): the data is the
  repository's ``data/`` and outputs go to the repository's ``scratch/``,
  ``archives/`` and ``results/``.
- **Installed** (``pip install .``, a wheel, Colab): the ChartBook sample catalog
  and the demo project ship inside the package as ``flawedcode/data/`` (copied
  from the repository's ``data/`` when the wheel is built; see ``setup.py``), and
  outputs go under the **current working folder** (``./scratch``, ``./archives``,
  ``./results``), never into site-packages.

Each folder can be moved with an environment variable (``FLAWEDCODE_DATA_DIR``,
``FLAWEDCODE_SCRATCH_DIR``, ``FLAWEDCODE_ARCHIVE_DIR``, ``FLAWEDCODE_RESULTS_DIR``),
which tests and notebooks use to write into temporary folders instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent  # the repository, when the package runs from a checkout
PACKAGED_DATA_DIR = PACKAGE_DIR / "data"  # the copy of data/ inside an installed package


def running_from_checkout() -> bool:
    """True when the package sits in its repository (a clone, or an editable install of one)."""
    return (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "data" / "chartbook.toml").is_file()


def _dir_from_env(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser().resolve() if value else default


def output_root() -> Path:
    """The folder that holds scratch/, archives/ and results/: the checkout, else the current folder."""
    return PROJECT_ROOT if running_from_checkout() else Path.cwd()


def data_dir() -> Path:
    """The ChartBook catalog folder (``FLAWEDCODE_DATA_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_DATA_DIR", PROJECT_ROOT / "data" if running_from_checkout() else PACKAGED_DATA_DIR)


def demo_project_dir() -> Path:
    """The original stock-analysis project; sessions work on copies of it."""
    return data_dir() / "demo_project"


def scratch_dir() -> Path:
    """Where offloaded tool results land (``FLAWEDCODE_SCRATCH_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_SCRATCH_DIR", output_root() / "scratch")


def archive_dir() -> Path:
    """Where conversation archives land (``FLAWEDCODE_ARCHIVE_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_ARCHIVE_DIR", output_root() / "archives")


def results_dir() -> Path:
    """Where benchmark results and saved charts land (``FLAWEDCODE_RESULTS_DIR`` overrides)."""
    return _dir_from_env("FLAWEDCODE_RESULTS_DIR", output_root() / "results")


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
