"""The package's layers, proved from its source: no import cycle, and no import upward.

Every ``import`` and ``from ... import`` in ``flawedcode/`` counts, the ones inside functions
too (an import moved into a function to dodge a cycle is still a cycle). The layers, lowest first
(CONTRIBUTING.md, "Which way the imports run"):

| level | modules |
| --- | --- |
| 0 | ``constants``, ``formats``, ``paths``, ``notices`` (single-home numbers, texts and folders) |
| 1 | ``infra`` (sandbox, safe files, redaction, writable text), ``catalog`` (the catalog reader), ``figures`` (a series' statistics) |
| 2 | ``tokens``, ``config`` |
| 3 | ``prompt_cache`` |
| 4 | ``models``, ``tools``, ``telemetry`` |
| 5 | ``context`` |
| 6 | ``agents`` |
| 7 | ``charts`` (drawn by the benchmark and by the lessons; it reads only session logs) |
| 8 | ``bench`` |
| 9 | the teaching layer and the command line: ``lab``, ``lessons``, ``exercises``, ``demo``, ``cli`` |

A module may import any lower level. Within a level it may import only its own package
(``context.resilience`` may import ``context.summarize``; ``tools`` may not import ``models``),
except at the top level, where the teaching modules build on each other. A new top-level module
must be given a level here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "flawedcode"
LEVELS: dict[str, int] = {
    "__init__": 0, "constants": 0, "formats": 0, "paths": 0, "notices": 0,
    "infra": 1, "catalog": 1, "figures": 1,
    "tokens": 2, "config": 2,
    "prompt_cache": 3,
    "models": 4, "tools": 4, "telemetry": 4,
    "context": 5,
    "agents": 6,
    "bench": 7,
    "charts": 8, "lab": 8, "lessons": 8, "exercises": 8, "demo": 8, "cli": 8, "__main__": 8,
}
TOP = max(LEVELS.values())


def module_names() -> dict[str, Path]:
    """``flawedcode.x.y`` -> its file, for every module of the package."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["flawedcode", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The flawedcode modules ``name`` imports, anywhere in its file (functions included)."""
    def known(target: str) -> str:
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        return target

    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {known(alias.name) for alias in node.names if alias.name.split(".")[0] == "flawedcode"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            if base.split(".")[0] != "flawedcode":
                continue
            for alias in node.names:  # `from flawedcode import tools` imports the module flawedcode.tools
                found.add(known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else known(base))
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def top_package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "flawedcode.infra.safe_text" in graph["flawedcode.cli"], "cli imports escape_surrogates inside a function"
    assert "flawedcode.tools" in graph["flawedcode.agents.common"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_top_level_module_has_a_level() -> None:
    missing = sorted({top_package(module) for module in import_graph()} - set(LEVELS))
    assert not missing, f"give these modules a level in tests/test_layers.py and CONTRIBUTING.md: {missing}"


def test_no_import_cycle_even_inside_functions() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (a piece both need belongs lower down): " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for module, targets in sorted(import_graph().items()):
        level = LEVELS[top_package(module)]
        for target in sorted(targets):
            target_level = LEVELS[top_package(target)]
            same_package = top_package(target) == top_package(module)
            if target_level > level or (target_level == level and not same_package and level != TOP):
                upward.append(f"{module} (level {level}) imports {target} (level {target_level})")
    assert not upward, "imports against the layers:\n" + "\n".join(upward)
