"""How long importing the agents (and starting the CLI) takes, in fresh interpreters.

Run:  python tests/benchmarks/bench_import.py [runs]

Prints the median and range over ``runs`` (default 5) fresh interpreters of:
- ``import flawedcode.agents`` (``python -X importtime``'s cumulative figure for the package; the
  versions load on first use),
- ``import flawedcode.agents.common`` (the agent machinery the first ``make_agent`` imports: LangChain,
  LangGraph, the models, tools and wrappers),
- ``flawedcode --help`` (the CLI's start, wall clock),
and where the machinery's import time goes, per top-level package.
The machine's load matters: compare figures taken on the same machine, back to back.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path


def import_seconds(module: str) -> tuple[float, dict[str, float]]:
    """The module's cumulative import time, and the self time spent in each top-level package."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True,
                            check=True)
    total, by_package = 0.0, {}
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            own, cumulative, name = line.removeprefix("import time:").split("|")
            package = name.strip().split(".")[0]
            by_package[package] = by_package.get(package, 0.0) + int(own) / 1e6
            if name.strip() == module:
                total = int(cumulative) / 1e6
    return total, by_package


def cli_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("flawedcode")), "--help"], capture_output=True, check=True)
    return time.perf_counter() - started


def main(runs: int = 5) -> None:
    imports, machinery, clis, by_package = [], [], [], {}
    for _ in range(runs):
        imports.append(import_seconds("flawedcode.agents")[0])
        seconds, by_package = import_seconds("flawedcode.agents.common")
        machinery.append(seconds)
        clis.append(cli_seconds())
    for label, values in (("import flawedcode.agents", imports), ("import flawedcode.agents.common (first make_agent)", machinery),
                          ("flawedcode --help", clis)):
        print(f"{label}: median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f}, {runs} runs)")
    print("where the machinery's time goes (own import time per top-level package, last run):")
    for package, seconds in sorted(by_package.items(), key=lambda item: -item[1])[:8]:
        print(f"  {seconds:.3f} s  {package}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
