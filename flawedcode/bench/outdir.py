"""The benchmark's output folder: used only when it is ours, and by one run at a time.

``claim(out_dir)`` (a context manager ``run_benchmark`` and ``run_suite`` hold while they work):

- **The marker rule** (the demo's): ``out_dir`` gets a ``.flawedcode-bench`` marker. A folder
  holding any of the names the benchmark writes (``runs.jsonl``, ``summary.json``,
  ``results.md``, ``comparison.png``, ``suite.json``, ``transcripts/``, ``workspaces/``,
  ``cost-preview/``) without that marker, and without the ``suite.json`` or ``runs.jsonl`` of an
  earlier benchmark, was not written by the benchmark: it is refused (``BenchOutputError``, one line)
  and nothing in it is replaced or deleted. Other files in the folder are never touched.
- **One run per folder**: an exclusive lock on ``out_dir/.flawedcode-bench.lock`` (``flock``;
  the kernel drops it when the process ends, even on a crash). A second ``flawedcode bench``
  on the same ``--out`` stops at once with one line naming the first one's process id, so
  two runs never interleave their records in one ``runs.jsonl``.
- A disk that fills up while the benchmark writes (``ENOSPC``, ``EDQUOT``) ends the command
  with one line (``BenchOutputError``); what was written before stays valid, and the same
  command resumes (a cut-off last line of ``runs.jsonl`` is dropped and that run redone).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

MARKER_NAME = ".flawedcode-bench"
LOCK_NAME = ".flawedcode-bench.lock"
MARKER_TEXT = ("This folder holds the output of `flawedcode bench`. A rerun here resumes it, and replaces only "
               "summary.json, results.md, comparison.png and the workspaces of runs it makes again.\n")
WRITTEN_NAMES = ("runs.jsonl", "summary.json", "results.md", "comparison.png", "suite.json", "transcripts",
                 "workspaces", "cost-preview")
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class BenchOutputError(ValueError):
    """``--out`` cannot take the benchmark's results (not ours, in use, or the disk is full); one line says why."""


_held: dict[Path, int] = {}  # folders this process has claimed, and how many times (run_benchmark, then run_suite)
_held_lock = threading.Lock()


def written_by_bench(out_dir: Path) -> bool:
    """True when ``out_dir`` holds the marker, or the ``suite.json`` of a benchmark run before the marker existed."""
    if (out_dir / MARKER_NAME).is_file():
        return True
    return _json_with(out_dir / "suite.json", {"model", "settings", "code", "tasks"}, whole=True) or _json_with(
        out_dir / "runs.jsonl", {"agent", "task", "run"}, whole=False)


def _json_with(path: Path, keys: set[str], whole: bool) -> bool:
    """True when ``path`` (or its first line) is a JSON object holding ``keys``: a file an earlier benchmark wrote."""
    try:
        with path.open(encoding="utf-8") as stream:
            found = json.loads((stream.read(1024**2) if whole else stream.readline(1024**2)) or "null")
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and keys <= found.keys()


@contextlib.contextmanager
def claim(out_dir: str | Path) -> Iterator[Path]:
    """Hold ``out_dir`` for this benchmark (rules in the module docstring); re-entrant within one process."""
    out_dir = Path(out_dir)
    key = out_dir.resolve()
    with _held_lock:
        if key in _held:
            _held[key] += 1
            lock = None
        else:
            lock = _take(out_dir)
            _held[key] = 1
    try:
        yield out_dir
    finally:
        with _held_lock:
            _held[key] -= 1
            if _held[key] == 0:
                del _held[key]
                if lock is not None:
                    lock.close()  # closing the file releases the lock


def _take(out_dir: Path) -> object:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BenchOutputError(f"--out {out_dir}: cannot create the folder ({error.strerror or error})") from None
    if not written_by_bench(out_dir):
        found = [name for name in WRITTEN_NAMES if (out_dir / name).exists() or (out_dir / name).is_symlink()]
        if found:
            raise BenchOutputError(f"--out {out_dir}: it already holds {', '.join(found)}, which flawedcode bench did "
                                   "not write; choose a new or empty folder")
    try:
        lock = open(out_dir / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 (held until the claim ends)
    except OSError as error:
        raise BenchOutputError(f"--out {out_dir}: cannot write there ({error.strerror or error})") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        raise BenchOutputError(f"--out {out_dir}: another flawedcode bench is writing there (process {holder}); "
                               "wait for it to finish, or choose another folder") from None
    try:
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        if not (out_dir / MARKER_NAME).exists():
            (out_dir / MARKER_NAME).write_text(MARKER_TEXT, encoding="utf-8")
    except OSError as error:
        lock.close()
        raise disk_error(out_dir, error) from None
    return lock


def disk_error(out_dir: Path, error: OSError) -> BenchOutputError:
    """One line for a write that failed: a full disk says how to resume."""
    where = f" writing {error.filename}" if getattr(error, "filename", None) else ""
    if error.errno in DISK_FULL:
        return BenchOutputError(f"--out {out_dir}: the disk is full ({error.strerror}){where}; the runs finished so far "
                                "are kept in runs.jsonl: free some space and run the same command again to resume")
    return BenchOutputError(f"--out {out_dir}: cannot write there ({error.strerror or error}){where}")
