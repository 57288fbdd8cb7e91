"""What a benchmark result needs to be reproduced: the ``metadata`` block of summary.json.

- ``flawedcode``: the installed version, and the git commit of the checkout when
  there is one (``git_dirty``: uncommitted changes were present);
- ``models`` and ``budget_tokens``: as the run records state them;
- ``agents``: each agent's effective settings (``BaseAgent.settings()``, stored in every run record);
- ``packages``: versions of langchain, langchain-core, langgraph, deepagents, tiktoken (None: not installed);
- ``date``: when the table was scored (UTC).
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from flawedcode.bench.records import RunRecord

PACKAGES = ("flawedcode", "langchain", "langchain-core", "langgraph", "deepagents", "tiktoken", "langchain-openai")
GIT_TIMEOUT_SECONDS = 5


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state(folder: Path | None = None) -> dict[str, Any]:
    """The commit of the checkout that holds flawedcode, or Nones when it is not a git checkout."""
    folder = folder or Path(__file__).resolve().parent
    try:
        commit = _git(folder, "rev-parse", "HEAD")
        dirty = bool(_git(folder, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}
    return {"git_commit": commit or None, "git_dirty": dirty if commit else None}


def _git(folder: Path, *arguments: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *arguments], capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_SECONDS, check=True)
    return done.stdout.strip()


def build_metadata(records: list[RunRecord], agents: list[str]) -> dict[str, Any]:
    """The metadata block for a summary of ``records``."""
    ordered = sorted(records, key=lambda record: (record.agent, record.task, record.run))
    settings = {}
    for agent in agents:
        first = next((record for record in ordered if record.agent == agent and record.settings), None)
        settings[agent] = first.settings if first else None
    versions = package_versions()
    return {
        "flawedcode_version": versions.pop("flawedcode"),
        **git_state(),
        "models": sorted({record.model for record in records if record.model}),
        "budget_tokens": sorted({record.budget_tokens for record in records if record.budget_tokens is not None}),
        "agents": settings,
        "packages": versions,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
