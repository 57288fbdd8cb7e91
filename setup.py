"""Packaging hook: the wheel carries the ChartBook sample catalog and the demo project.

``data/`` at the top of the repository stays the one source (``data/generate.py``
writes it). When a wheel is built (``pip install .``, ``python -m build``), this
copies it into the package as ``flawedcode/data/`` so an installed flawedcode finds
its catalog without a checkout (``flawedcode.paths.data_dir``). Editable installs
and clones read ``data/`` directly and never need the copy.

Everything else about the package is declared in ``pyproject.toml``; setuptools
has no declarative way to put a top-level folder inside a package that is found
with ``packages.find`` (a ``package-dir`` mapping needs an explicit package list).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_SOURCE = Path(__file__).resolve().parent / "data"
NOT_SHIPPED = ("generate.py", "__pycache__", "*.pyc", ".pytest_cache")  # generate.py rebuilds data/ from a checkout


class BuildPyWithData(build_py):
    """``build_py``, then a copy of ``data/`` into ``<build>/flawedcode/data``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode or not DATA_SOURCE.is_dir():
            return  # editable installs read data/ in place
        target = Path(self.build_lib) / "flawedcode" / "data"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(DATA_SOURCE, target, ignore=shutil.ignore_patterns(*NOT_SHIPPED))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        target = Path(self.build_lib) / "flawedcode" / "data"
        return outputs + [str(path) for path in target.rglob("*") if path.is_file()] if target.is_dir() else outputs


setup(cmdclass={"build_py": BuildPyWithData})
