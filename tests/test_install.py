"""Installed the way a course installs it: ``pip install .`` (not editable), then used from another folder.

One end-to-end run, offline:

1. build the wheel from a copy of this checkout (``pip wheel --no-deps
   --no-build-isolation --no-index``: no network, nothing written into the checkout);
2. a new virtual environment gets the wheel; it reuses this environment's installed
   dependencies through a ``.pth`` file instead of downloading them again;
3. from an empty folder: ``flawedcode catalog list``, ``flawedcode demo`` and lesson 01
   (executed in a kernel that runs the new environment's Python);
4. the catalog and the demo project came from inside the installed package, every
   output landed under that folder, and nothing was written into site-packages.

The wheel and the environment are built once for the module (``installed``); the test is marked
``slow``: ``make test`` (and CI) run it, ``-m "not slow"`` leaves it out while you work.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from flawedcode.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment (once, for the module): `make test` runs it

NOT_COPIED = (".venv", "venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
              ".ipynb_checkpoints", "results", ".tiktoken_cache")
OUR_VARIABLES = ("FLAWEDCODE_DATA_DIR", "FLAWEDCODE_SCRATCH_DIR", "FLAWEDCODE_ARCHIVE_DIR", "FLAWEDCODE_RESULTS_DIR",
                 "FLAWEDCODE_MODEL", "PYTHONPATH")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


def files_under(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file (bytecode caches aside) with its size and modification time."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    shutil.copytree(PROJECT_ROOT, source, ignore=shutil.ignore_patterns(*NOT_COPIED))
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(base / "wheels"), str(source)], cwd=base)
    (wheel,) = (base / "wheels").glob("flawedcode-*.whl")

    environment = base / "env"
    run([sys.executable, "-m", "venv", "--without-pip", str(environment)], cwd=base)
    python = environment / "bin" / "python"
    site_packages = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             cwd=base).stdout.strip())
    (site_packages / "_project_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
        cwd=base)
    work = base / "course"
    work.mkdir()
    return {"python": python, "bin": environment / "bin", "site_packages": site_packages, "work": work}


def clean_environment(installed: dict[str, Path]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in OUR_VARIABLES}
    env["PATH"] = f"{installed['bin']}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_installed_package_runs_the_demo_and_lesson_01_from_another_folder(installed, monkeypatch):
    python, work, site_packages = installed["python"], installed["work"], installed["site_packages"]
    env = clean_environment(installed)
    package = site_packages / "flawedcode"
    where = run([str(python), "-c", "import flawedcode, flawedcode.paths as p; print(flawedcode.__file__); "
                 "print(p.running_from_checkout()); print(p.data_dir())"], cwd=work, env=env).stdout.split()
    assert where == [str(package / "__init__.py"), "False", str(package / "data")], "the wheel's copy is the one imported"
    assert (package / "data" / "chartbook.toml").is_file() and (package / "data" / "demo_project" / "analyze.py").is_file()
    assert not (package / "data" / "generate.py").exists(), "the generator stays in the repository"
    before = files_under(site_packages)

    listing = run([str(installed["bin"] / "flawedcode"), "catalog", "list"], cwd=work, env=env).stdout
    assert "money_markets/sofr" in listing and len(listing.splitlines()) == 5

    demo = run([str(installed["bin"] / "flawedcode"), "demo"], cwd=work, env=env).stdout
    assert 'Answers to request 6, "What was my original goal?"' in demo
    assert (work / "results" / "demo" / "context_chart.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((work / "results" / "demo" / "demo_logs.json").read_text())["agents"]["v2"]["replies"]

    notebook = execute_lesson(PROJECT_ROOT / "notebooks" / "01_memory_and_context_rot_v1.ipynb", python, work, env, monkeypatch)
    errors = [output for cell in notebook.cells for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    assert errors == []
    assert files_under(site_packages) == before, "nothing was written into site-packages"
    assert sorted(path.name for path in work.iterdir()) == ["results"], "outputs went under the folder it ran in"


def execute_lesson(path: Path, python: Path, work: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    """Run a notebook in a kernel that is the installed environment's Python, in ``work``."""
    import nbformat
    from nbclient import NotebookClient

    kernels = work.parent / "kernels"
    spec = kernels / "kernels" / "flawedcode-installed"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "flawedcode (installed)", "language": "python", "env": {"PYTHONNOUSERSITE": "1"}}))
    monkeypatch.setenv("JUPYTER_PATH", str(kernels))
    for variable in OUR_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, kernel_name="flawedcode-installed", timeout=300,
                            resources={"metadata": {"path": str(work)}})
    client.execute(env={**env, "JUPYTER_PATH": str(kernels)})
    return notebook
