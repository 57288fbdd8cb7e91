"""CONTRIBUTING.md walks the package as it is: its layout lists every module, and every name it cites exists.

- The layout block names each top-level module of ``flawedcode/`` and each module of its
  subpackages (``offline_*.py`` stands for the offline model's parts), and nothing that is not there.
- Every name in backticks that looks like code (``TOOL_SPECS``, ``make_tools``, ``Workspace.open_location``,
  ``flawedcode/tools.py``, ``tests/test_tools.py``) exists: a file or folder of the repository, or a
  module, class, function or constant the package defines.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flawedcode"
GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def layout_block() -> str:
    section = GUIDE[GUIDE.index("## Layout"):]
    return section.split("```", 2)[1]


def layout_entries() -> dict[str, list[str]]:
    """'agents/' -> the .py names its lines list; '' -> the top-level modules listed."""
    entries: dict[str, list[str]] = {"": []}
    current = None
    for line in layout_block().splitlines():
        match = re.match(r"^  (\S+)", line)
        if match and not line.startswith("    "):
            current = match.group(1)
            if current.endswith(".py"):
                entries[""].append(current)
                current = None
            else:
                entries.setdefault(current, [])
        if current:
            entries[current] += re.findall(r"\b([A-Za-z0-9_*]+\.py)\b", line)
    return entries


def test_the_layout_lists_every_module_of_the_package_and_only_those() -> None:
    entries = layout_entries()
    top_level = sorted(path.name for path in PACKAGE.glob("*.py") if path.name not in ("__init__.py", "__main__.py"))
    assert sorted(entries[""]) == top_level, "the layout's top-level modules differ from flawedcode/*.py"
    packages = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))
    assert sorted(name.rstrip("/") for name in entries if name.endswith("/") and (PACKAGE / name / "__init__.py").is_file()) == packages
    for package in packages:
        listed = entries[f"{package}/"]
        modules = sorted(path.name for path in (PACKAGE / package).glob("*.py") if path.name != "__init__.py")
        unlisted = [module for module in modules if not any(fnmatch.fnmatch(module, pattern) for pattern in listed)]
        missing = [pattern for pattern in listed if not any(fnmatch.fnmatch(module, pattern) for module in modules)]
        assert not unlisted, f"CONTRIBUTING.md's layout does not list flawedcode/{package}/{unlisted}"
        assert not missing, f"CONTRIBUTING.md's layout lists what flawedcode/{package}/ does not have: {missing}"


def defined_names() -> set[str]:
    """Every module, class, function and module- or class-level name the package defines."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        names.add(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def cited_code() -> list[str]:
    return re.findall(r"`([^`\n]+)`", GUIDE.split("```", 2)[0] + GUIDE.split("```", 2)[2])


def known_words() -> set[str]:
    """Every word of the package's source, the Makefile and the test setup (settings, variables, fixtures)."""
    texts = [path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")]
    texts += [(ROOT / name).read_text(encoding="utf-8") for name in ("Makefile", "pyproject.toml", "tests/conftest.py")]
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(texts))) | {"tmp_path", "Literal"}


def exists_as_path(text: str) -> bool:
    text = text.rstrip("/")
    if f"{text}/" in (ROOT / ".gitignore").read_text(encoding="utf-8"):
        return True  # an output folder a clean clone does not have yet (results/)
    return any(base.joinpath(text).exists() for base in (ROOT, PACKAGE)) or any(PACKAGE.rglob(text))


def test_every_name_the_guide_cites_exists() -> None:
    names, words = defined_names(), known_words()
    missing = []
    for cited in cited_code():
        text = re.sub(r"\(.*\)$", "", cited.strip())  # `lesson_agent(...)` names lesson_agent
        if " " in text or "=" in text or text.startswith(("-", "@", "<")):
            continue  # a command, an argument or a decorator with its arguments
        if "/" in text or re.search(r"\.(py|yaml|ipynb|md|json|toml)$", text) or text == "Makefile":
            if "NN_" in text or "*" in text or "lessonN" in text or text.endswith("summary.json"):
                continue  # a pattern for a file you add, or an output the benchmark writes
            if not exists_as_path(text):
                missing.append(text)
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", text):
            continue
        last = text.rsplit(".", 1)[-1]
        defined = last in names if "." in text else (last in names or last in words)
        if not defined:
            missing.append(text)
    assert not missing, f"CONTRIBUTING.md cites names the code does not have: {missing}"


def test_the_walker_catches_a_dead_name() -> None:
    assert "READ_TOOLS" not in known_words(), "the dead constant the old guide named is gone from the code"


def test_the_guide_states_how_many_files_each_addition_takes() -> None:
    for heading in ("### A tool: 2 files", "### A peer (the benchmark): 2 files", "### An intent (the offline model): 1 file",
                    "### A lesson: 4 files"):
        assert heading in GUIDE
