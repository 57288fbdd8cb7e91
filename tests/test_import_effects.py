"""Importing flawedcode does nothing but define things: no environment variable set, no file written.

Every module below the drawing part of the teaching layer is imported in a fresh interpreter whose
HOME, working folder and output folders are empty temporary folders; afterwards the environment is
the same, those folders are still empty, and neither matplotlib nor pandas was imported (heavy
libraries load on first use). Caches are seeded, folders made and variables set on first use.
The charts, the lessons, the demo and the exercises import matplotlib only when they first draw; the
modules whose whole job is drawing widgets and bars (``lab.app``, ``lab.inputs``, ``lab.bar``) import
them with themselves (and matplotlib writes its font cache under HOME on import): only they are left out here.
How long ``import flawedcode.agents`` takes is measured, not asserted:
``tests/benchmarks/bench_import.py`` prints it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

IMPORT_EVERYTHING = """
import importlib, json, os, pkgutil, sys
before = dict(os.environ)
import flawedcode
DRAWING = ("flawedcode.lab.app", "flawedcode.lab.inputs", "flawedcode.lab.bar")
names = sorted(m.name for m in pkgutil.walk_packages(flawedcode.__path__, "flawedcode.")
               if m.name != "flawedcode.__main__" and not m.name.startswith(DRAWING))
for name in names:
    importlib.import_module(name)
after = dict(os.environ)
changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
heavy = sorted(name for name in ("matplotlib", "pandas", "ipywidgets") if name in sys.modules)
print(json.dumps({"modules": len(names), "changed": changed, "heavy": heavy}))
"""


def test_importing_every_module_sets_no_variable_and_writes_no_file(tmp_path: Path) -> None:
    home, work, outputs = tmp_path / "home", tmp_path / "work", tmp_path / "outputs"
    for folder in (home, work, outputs):
        folder.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("TIKTOKEN_CACHE_DIR", "MPLCONFIGDIR")}
    env.update(HOME=str(home), FLAWEDCODE_SCRATCH_DIR=str(outputs / "scratch"), FLAWEDCODE_ARCHIVE_DIR=str(outputs / "archives"),
               FLAWEDCODE_RESULTS_DIR=str(outputs / "results"))
    result = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], cwd=work, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["modules"] > 40, "every module was imported"
    assert report["heavy"] == [], f"imported at import time (import them on first use): {report['heavy']}"
    assert report["changed"] == [], f"importing flawedcode changed these environment variables: {report['changed']}"
    written = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.name not in ("home", "work", "outputs"))
    assert written == [], f"importing flawedcode wrote: {written}"


LIGHT_START = """
import contextlib, io, json, sys
import flawedcode.agents, flawedcode.bench
from flawedcode import cli
with contextlib.redirect_stdout(io.StringIO()) as help_text, contextlib.suppress(SystemExit):
    cli.main(["bench", "--help"])
heavy = sorted(name for name in ("langchain.agents", "langgraph", "flawedcode.agents.common", "flawedcode.context") if name in sys.modules)
print(json.dumps({"heavy": heavy, "help": "built-in tasks for --tasks" in help_text.getvalue()}))
"""


def test_the_agents_package_and_the_commands_help_load_no_agent_machinery() -> None:
    """``import flawedcode.agents`` and ``flawedcode bench --help`` start without LangChain's agents (loaded on first use)."""
    result = subprocess.run([sys.executable, "-c", LIGHT_START], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == {"heavy": [], "help": True}
    from flawedcode.agents import AGENTS, AgentV2, make_agent

    assert list(AGENTS) == ["v0", "v1", "v2", "v3"] and AGENTS["v2"] is AgentV2
    assert type(make_agent("v2", model="offline")) is AgentV2


def test_no_name_given_on_first_use_is_also_a_submodule_name() -> None:
    """Importing a submodule sets the package's attribute of that name: a lazily given name must not be one."""
    import flawedcode.agents
    import flawedcode.bench

    for package in (flawedcode.agents, flawedcode.bench):
        submodules = {path.stem for path in Path(package.__file__).parent.glob("*.py")}
        assert not submodules & set(package.__all__), package.__name__
