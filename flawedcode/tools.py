"""The agent's tools: ChartBook data tools and FlawedCode's file and Python tools.

``make_tools(workspace, catalog)`` returns eight LangChain tools, in this order:

=====================  ==================================================================
chartbook_list         one line per dataframe: ``pipeline/dataframe: title (N rows, K columns, start to end)``
chartbook_get_docs     a dataframe's Markdown documentation, verbatim (can be long)
chartbook_load_data    ``# pipeline/dataframe: n rows x k columns, first to last`` then CSV
read_file              ``# path (lines a-b of n)`` then the raw lines; pages with offset/limit
write_file             ``Wrote n characters to path`` (atomic: temporary file + os.replace)
list_files             the files and folders under a folder, one per line
search_files           ``path:lineno: text`` for each matching line (regex, else literal)
run_python             ``# exit code N`` then the script's stdout and stderr
=====================  ==================================================================

Each tool is a thin adapter over a plain function in this module
(``list_catalog``, ``read_workspace_file``, ``run_python_code``, ...) that a
notebook can call directly.

Safety rules (the whole point of a workspace):

- The agent works on a **copy** of ``data/demo_project`` (``Workspace.create``);
  the original is never modified.
- Every path is resolved inside the workspace. ``../`` escapes, absolute paths
  outside the workspace and symlinks that point outside are refused.
- ``scratch/...`` and ``archives/...`` name the offload and archive folders.
  Tools may **read** them (that is how an agent recovers an offloaded result)
  but never write them.
- ``run_python`` runs ``sys.executable`` with the workspace as its current
  folder, stdin closed, an environment without secrets (no variable whose name
  contains KEY, TOKEN, SECRET or PASSWORD, nothing starting with OPENAI_), a
  timeout that kills the whole process group, and bounded output.
- Outputs are bounded: read_file pages (lines over 2,000 characters are cut),
  search_files stops after 100 matches, list_files after 500 entries,
  run_python keeps the head and tail of about 10,000 characters.
- A tool never raises: every bad input comes back as a message starting with
  ``Error: `` that says what went wrong and what to do instead.

``READ_TOOLS`` names the tools whose results the offload wrapper leaves alone
(offloading a read would make the agent read the offloaded copy, forever).
"""

from __future__ import annotations

import collections
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from langchain_core.tools import BaseTool, tool
from pydantic import ValidationError

from flawedcode import paths
from flawedcode.catalog import Catalog, CatalogError
from flawedcode.paths import write_atomically

READ_TOOLS = frozenset({"read_file", "list_files", "search_files", "search_archive"})

SCRATCH_PREFIX = "scratch"
ARCHIVES_PREFIX = "archives"

MAX_LOAD_ROWS = 500
DEFAULT_READ_LINES = 200
MAX_READ_LINES = 2_000
MAX_LINE_CHARS = 2_000
MAX_LIST_ENTRIES = 500
MAX_SEARCH_MATCHES = 100
MAX_SEARCH_LINE_CHARS = 300
MAX_RUN_OUTPUT_CHARS = 10_000
DEFAULT_RUN_TIMEOUT_SECONDS = 10
MAX_RUN_TIMEOUT_SECONDS = 120
MAX_CODE_CHARS = 100_000

# Folders that are noise for an agent (caches and version control).
SKIPPED_FOLDERS = frozenset({"__pycache__", ".git", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache"})
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


class ToolInputError(ValueError):
    """A tool argument the tool cannot honour; the message tells the model what to do instead."""


# --------------------------------------------------------------------------------------
# The workspace: where file tools may read and write
# --------------------------------------------------------------------------------------


@dataclass
class Workspace:
    """A folder the agent may read and write, plus the read-only scratch/ and archives/ folders."""

    root: Path
    scratch_dir: Path
    archive_dir: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.scratch_dir = Path(self.scratch_dir).resolve()
        self.archive_dir = Path(self.archive_dir).resolve()

    @classmethod
    def create(
        cls,
        root: Path | None = None,
        scratch_dir: Path | None = None,
        archive_dir: Path | None = None,
    ) -> Workspace:
        """Copy the demo project into a fresh folder (a new temporary folder by default).

        The original ``data/demo_project`` is only read. ``root``, if given, must be
        missing or empty. scratch/ and archives/ default to ``paths.scratch_dir()``
        and ``paths.archive_dir()`` and are created if missing.
        """
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="flawedcode-workspace-"))
        root = Path(root)
        if root.exists() and any(root.iterdir()):
            raise FileExistsError(f"{root} is not empty; use Workspace(root, scratch_dir, archive_dir) to reuse it")
        shutil.copytree(
            paths.demo_project_dir(),
            root,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(*SKIPPED_FOLDERS),
        )
        workspace = cls(
            root=root,
            scratch_dir=Path(scratch_dir) if scratch_dir else paths.scratch_dir(),
            archive_dir=Path(archive_dir) if archive_dir else paths.archive_dir(),
        )
        workspace.scratch_dir.mkdir(parents=True, exist_ok=True)
        workspace.archive_dir.mkdir(parents=True, exist_ok=True)
        return workspace

    def resolve(self, path: str, *, for_write: bool) -> Path:
        """The real path behind a tool's ``path`` argument, or ToolInputError saying why not.

        ``scratch/...`` and ``archives/...`` map to the scratch and archive folders
        (reading only); anything else is relative to the workspace root. Absolute
        paths are accepted only when they point inside one of those folders.
        """
        text = str(path).strip()
        if not text:
            raise ToolInputError("the path is empty; use '.' for the workspace folder")
        base, relative = self._base_and_relative(text)
        real = (base / relative).resolve()
        if not _is_within(real, base):
            raise ToolInputError(self._escape_message(text, base, relative))
        if for_write and base != self.root:
            raise ToolInputError(
                f"{self.display_path(base)}/ is read-only for tools (scratch/ holds offloaded results, archives/ "
                "holds conversation archives); write inside the workspace instead, e.g. 'notes/result.txt'"
            )
        if for_write and (_is_within(real, self.scratch_dir) or _is_within(real, self.archive_dir)):
            raise ToolInputError("scratch/ and archives/ are read-only for tools; write inside the workspace instead")
        return real

    def display_path(self, real: Path) -> str:
        """How tools name a real path: 'scratch/x.txt', 'archives/<conversation>/0001.md' or 'analyze.py'."""
        real = Path(os.path.abspath(real))
        for folder, prefix in ((self.scratch_dir, SCRATCH_PREFIX), (self.archive_dir, ARCHIVES_PREFIX)):
            if _is_within(real, folder):
                relative = real.relative_to(folder).as_posix()
                return prefix if relative == "." else f"{prefix}/{relative}"
        if _is_within(real, self.root):
            return real.relative_to(self.root).as_posix()
        return str(real)

    def allows(self, real: Path) -> bool:
        """True if a resolved path lies inside the workspace, scratch/ or archives/."""
        return any(_is_within(real, folder) for folder in (self.root, self.scratch_dir, self.archive_dir))

    def _base_and_relative(self, text: str) -> tuple[Path, PurePosixPath]:
        given = Path(text).expanduser() if text.startswith("~") else Path(text)
        if given.is_absolute():
            for base in (self.scratch_dir, self.archive_dir, self.root):
                if _is_within(Path(os.path.normpath(given)), base):
                    return base, PurePosixPath(os.path.relpath(os.path.normpath(given), base))
            raise ToolInputError(
                f"'{text}' is an absolute path outside the workspace; use a path relative to the "
                "workspace (e.g. 'analyze.py'), or 'scratch/...' / 'archives/...'"
            )
        parts = [part for part in PurePosixPath(text.replace("\\", "/")).parts if part != "."]
        if parts and parts[0] == SCRATCH_PREFIX:
            return self.scratch_dir, PurePosixPath(*parts[1:]) if parts[1:] else PurePosixPath(".")
        if parts and parts[0] == ARCHIVES_PREFIX:
            return self.archive_dir, PurePosixPath(*parts[1:]) if parts[1:] else PurePosixPath(".")
        return self.root, PurePosixPath(*parts) if parts else PurePosixPath(".")

    def _escape_message(self, text: str, base: Path, relative: PurePosixPath) -> str:
        where = "the workspace" if base == self.root else f"{self.display_path(base)}/"
        if ".." in relative.parts:
            return f"'{text}' is outside {where} ('..' may not climb above it); use a path inside it"
        return f"'{text}' is a symlink (or goes through one) that points outside {where}; it cannot be used"


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


# --------------------------------------------------------------------------------------
# ChartBook tools (plain functions)
# --------------------------------------------------------------------------------------


def list_catalog(catalog: Catalog) -> str:
    """One line per dataframe: ``pipeline/dataframe: title (N rows, K columns, start to end)``."""
    lines = [info.summary_line() for info in catalog.dataframes()]
    if not lines:
        raise ToolInputError("the catalog has no dataframes")
    return "\n".join(lines)


def catalog_docs(catalog: Catalog, pipeline: str, dataframe: str) -> str:
    """A dataframe's Markdown documentation, verbatim."""
    pipeline, dataframe = _resolve_dataframe(catalog, pipeline, dataframe)
    return catalog.docs(pipeline, dataframe)


def load_catalog_data(
    catalog: Catalog,
    pipeline: str,
    dataframe: str,
    columns: list[str] | None = None,
    limit: int = 20,
    start: str | None = None,
    end: str | None = None,
) -> str:
    """``# pipeline/dataframe: n rows x k columns, first to last`` then the rows as CSV."""
    if not 1 <= limit <= MAX_LOAD_ROWS:
        raise ToolInputError(f"limit must be between 1 and {MAX_LOAD_ROWS}, got {limit}")
    pipeline, dataframe = _resolve_dataframe(catalog, pipeline, dataframe)
    info = catalog.info(pipeline, dataframe)
    if columns:
        columns = [info.date_column] + [name for name in columns if name != info.date_column]
    frame = catalog.load(pipeline, dataframe, columns=columns or None, start=start, end=end, limit=limit)
    if frame.empty:
        raise ToolInputError(
            f"no rows in {pipeline}/{dataframe} between {start or info.start} and {end or info.end}; "
            f"the data covers {info.start} to {info.end}"
        )
    dates = frame[info.date_column]
    header = (
        f"# {pipeline}/{dataframe}: {len(frame)} rows x {len(frame.columns)} columns, "
        f"{_date_text(dates.iloc[0])} to {_date_text(dates.iloc[-1])}"
    )
    return header + "\n" + frame.to_csv(index=False).rstrip("\n")


def _resolve_dataframe(catalog: Catalog, pipeline: str, dataframe: str) -> tuple[str, str]:
    """Accept ('yield_curve', 'sofr'), ('', 'sofr') or ('', 'money_markets/sofr'); validate both names."""
    pipeline, dataframe = (pipeline or "").strip(), (dataframe or "").strip()
    if "/" in dataframe or not pipeline:
        pipeline, dataframe = catalog.resolve(dataframe)
    catalog.info(pipeline, dataframe)
    return pipeline, dataframe


def _date_text(value: Any) -> str:
    text = str(value)
    return text[:10] if len(text) >= 10 and text[4:5] == "-" else text


# --------------------------------------------------------------------------------------
# File tools (plain functions)
# --------------------------------------------------------------------------------------


def read_workspace_file(workspace: Workspace, path: str, offset: int = 0, limit: int = DEFAULT_READ_LINES) -> str:
    """``# <path> (lines a-b of n)``, the raw lines, and a pointer to the rest when more remain."""
    if offset < 0:
        raise ToolInputError(f"offset must be 0 or more, got {offset}")
    if not 1 <= limit <= MAX_READ_LINES:
        raise ToolInputError(f"limit must be between 1 and {MAX_READ_LINES}, got {limit}")
    real = _existing_path(workspace, path)
    shown = workspace.display_path(real)
    if real.is_dir():
        raise ToolInputError(f"'{shown}' is a folder, not a file; use list_files(path='{shown}')")
    lines = _decode_text(real.read_bytes(), shown).splitlines()
    if offset and offset >= len(lines):
        raise ToolInputError(f"offset {offset} is past the end: '{shown}' has {len(lines)} lines")
    page = [_cut_long_line(line) for line in lines[offset : offset + limit]]
    last = offset + len(page)
    first = offset + 1 if page else 0
    parts = [f"# {shown} (lines {first}-{last} of {len(lines)})", *page]
    if last < len(lines):
        parts.append(f"# ... {len(lines) - last} more lines: read_file(path='{shown}', offset={last})")
    return "\n".join(parts)


def write_workspace_file(workspace: Workspace, path: str, content: str) -> str:
    """Write ``content`` to a workspace file atomically; ``Wrote <n> characters to <path>``."""
    real = workspace.resolve(path, for_write=True)
    shown = workspace.display_path(real)
    if real.is_dir():
        raise ToolInputError(f"'{shown}' is a folder; give a file path such as '{shown}/notes.txt'")
    real.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(real, content)
    return f"Wrote {len(content)} characters to {shown}"


def list_workspace_files(workspace: Workspace, path: str = ".") -> str:
    """The files (with sizes) and folders under ``path``, recursively, one per line."""
    real = _existing_path(workspace, path)
    shown = workspace.display_path(real)
    if real.is_file():
        return f"{shown} ({real.stat().st_size:,} bytes)"
    entries = list(_walk(workspace, real))
    lines = [f"# {shown or '.'}: {len(entries)} entries"]
    for entry in entries[:MAX_LIST_ENTRIES]:
        entry_shown = workspace.display_path(entry)
        lines.append(f"{entry_shown}/" if entry.is_dir() else f"{entry_shown} ({entry.stat().st_size:,} bytes)")
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"# ... {len(entries) - MAX_LIST_ENTRIES} more entries not shown; list a subfolder")
    if real == workspace.root:
        lines.append("# also readable: scratch/ (offloaded tool results) and archives/ (conversation archives)")
    return "\n".join(lines)


def search_workspace_files(workspace: Workspace, pattern: str, path: str = ".") -> str:
    """``path:lineno: text`` for each line that matches ``pattern`` (at most 100 lines)."""
    if not pattern:
        raise ToolInputError("the pattern is empty; give a word or a regular expression")
    real = _existing_path(workspace, path)
    notes: list[str] = []
    try:
        regex = re.compile(pattern)
    except re.error as error:
        regex = re.compile(re.escape(pattern))
        notes.append(f"# '{pattern}' is not a valid regular expression ({error}); searched for it literally")
    matches: list[str] = []
    files = [real] if real.is_file() else [entry for entry in _walk(workspace, real) if entry.is_file()]
    for file in files:
        text = _text_or_none(file)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                matches.append(f"{workspace.display_path(file)}:{number}: {_cut(line, MAX_SEARCH_LINE_CHARS)}")
                if len(matches) >= MAX_SEARCH_MATCHES:
                    stopped = f"# stopped after {MAX_SEARCH_MATCHES} matches; use a narrower pattern or path"
                    return "\n".join(notes + matches + [stopped])
    if not matches:
        return "\n".join(notes + [f"No matches for '{pattern}' in {workspace.display_path(real) or '.'}"])
    return "\n".join(notes + matches)


def _existing_path(workspace: Workspace, path: str) -> Path:
    real = workspace.resolve(path, for_write=False)
    if not real.exists():
        raise ToolInputError(f"'{path}' does not exist; use list_files to see which files exist")
    return real


def _walk(workspace: Workspace, folder: Path) -> Iterator[Path]:
    """Files and folders under ``folder``, sorted; no caches, no symlinks pointing out, no descent into symlinks."""
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name in SKIPPED_FOLDERS or not workspace.allows(entry.resolve()):
            continue
        yield entry
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(workspace, entry)


def _decode_text(data: bytes, shown: str) -> str:
    if b"\x00" in data:
        raise ToolInputError(f"'{shown}' is a binary file; read_file only reads text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"'{shown}' is not UTF-8 text (probably binary); read_file only reads text") from None


def _text_or_none(file: Path) -> str | None:
    try:
        return _decode_text(file.read_bytes(), file.name)
    except (ToolInputError, OSError):
        return None


def _cut_long_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [line cut: {len(line) - MAX_LINE_CHARS:,} more characters]"


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + "..."


# --------------------------------------------------------------------------------------
# run_python (plain function)
# --------------------------------------------------------------------------------------


def run_python_code(workspace: Workspace, code: str, timeout: int = DEFAULT_RUN_TIMEOUT_SECONDS) -> str:
    """Run ``code`` in a fresh Python in the workspace; ``# exit code N`` then stdout and stderr."""
    if not code.strip():
        raise ToolInputError("the code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise ToolInputError(f"the code is {len(code):,} characters; write it to a file and run that file instead")
    if not 1 <= timeout <= MAX_RUN_TIMEOUT_SECONDS:
        raise ToolInputError(f"timeout must be between 1 and {MAX_RUN_TIMEOUT_SECONDS} seconds, got {timeout}")
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=workspace.root,
        env=environment_without_secrets(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a timeout kills its children too
    )
    capture = BoundedCapture(MAX_RUN_OUTPUT_CHARS)
    reader = threading.Thread(target=capture.read_all, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        exit_code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_process_group(process)
        reader.join(timeout=5)
        return f"Error: run_python timed out after {timeout} s\n{capture.text()}".rstrip("\n")
    _kill_process_group(process)  # background children would otherwise hold the output pipe open
    reader.join(timeout=5)
    return f"# exit code {exit_code}\n{capture.text() or '(no output)'}".rstrip("\n")


def environment_without_secrets() -> dict[str, str]:
    """The current environment minus anything that looks like a credential."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith("OPENAI_") and not any(part in name.upper() for part in SECRET_NAME_PARTS)
    } | {"PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}


def _kill_process_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


class BoundedCapture:
    """Keeps the first and last ``max_chars // 2`` bytes of a stream and counts what it dropped."""

    def __init__(self, max_chars: int) -> None:
        self.keep = max_chars // 2
        self.head = bytearray()
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = 0
        self.dropped = 0

    def read_all(self, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(65_536), b""):
            self.add(chunk)
        stream.close()

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.keep:
            self.dropped += len(self.tail[0])
            self.tail_size -= len(self.tail.popleft())

    def text(self) -> str:
        """What was kept, with a marker saying how much was cut from the middle."""
        tail = b"".join(self.tail)
        extra = max(0, len(tail) - self.keep)
        tail, dropped = tail[extra:], self.dropped + extra
        head = self.head.decode("utf-8", errors="replace")
        rest = tail.decode("utf-8", errors="replace")
        if not dropped:
            return head + rest
        return f"{head}\n... [{dropped:,} bytes of output cut from the middle] ...\n{rest}"


# --------------------------------------------------------------------------------------
# The LangChain tools the agent sees
# --------------------------------------------------------------------------------------


def errors_as_text(function: Callable[..., str]) -> Callable[..., str]:
    """Turn any exception into an ``Error: ...`` result, so a tool never raises into the agent loop."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return function(*args, **kwargs)
        except (ToolInputError, CatalogError) as error:
            return f"Error: {error}"
        except FileNotFoundError as error:
            return f"Error: {error.filename or error} does not exist; use list_files to see which files exist"
        except OSError as error:
            return f"Error: {error.strerror or error}"
        except Exception as error:  # a tool must answer, not crash the conversation
            return f"Error: {type(error).__name__}: {error}"

    return wrapper


def invalid_arguments_text(error: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(map(str, item['loc'])) or 'arguments'}: {item['msg']}" for item in error.errors())
    return f"Error: invalid arguments: {problems}"


def make_tools(workspace: Workspace, catalog: Catalog | None = None) -> list[BaseTool]:
    """The eight tools, bound to one workspace and one catalog, in the order listed in the module docstring."""
    catalog = catalog if catalog is not None else Catalog()

    @tool(parse_docstring=True)
    @errors_as_text
    def chartbook_list() -> str:
        """List every dataframe in the ChartBook data catalog.

        Returns one line per dataframe: 'pipeline/dataframe: title (N rows, K columns, start to end)'.
        Use the pipeline and dataframe names with chartbook_get_docs and chartbook_load_data.
        """
        return list_catalog(catalog)

    @tool(parse_docstring=True)
    @errors_as_text
    def chartbook_get_docs(pipeline: str, dataframe: str) -> str:
        """Get the Markdown documentation of one dataframe: what it is, its columns, units and sources.

        Returns the documentation verbatim; it can be several thousand characters long.

        Args:
            pipeline: The pipeline name, e.g. 'yield_curve' (see chartbook_list).
            dataframe: The dataframe name, e.g. 'treasury_yields'; 'pipeline/dataframe' also works.
        """
        return catalog_docs(catalog, pipeline, dataframe)

    @tool(parse_docstring=True)
    @errors_as_text
    def chartbook_load_data(
        pipeline: str,
        dataframe: str,
        columns: list[str] | None = None,
        limit: int = 20,
        start: str | None = None,
        end: str | None = None,
    ) -> str:
        """Load rows of one dataframe as CSV, sorted by date, keeping the LAST `limit` rows of the date range.

        Returns a first line '# pipeline/dataframe: n rows x k columns, first date to last date',
        then a CSV header and the rows. The 'date' column is always included.

        Args:
            pipeline: The pipeline name, e.g. 'money_markets' (see chartbook_list).
            dataframe: The dataframe name, e.g. 'sofr'.
            columns: Columns to return (default: all). Unknown names are refused with the valid list.
            limit: How many of the most recent rows to return, 1 to 500 (default 20).
            start: First date to include, YYYY-MM-DD (optional).
            end: Last date to include, YYYY-MM-DD (optional).
        """
        return load_catalog_data(catalog, pipeline, dataframe, columns=columns, limit=limit, start=start, end=end)

    @tool(parse_docstring=True)
    @errors_as_text
    def read_file(path: str, offset: int = 0, limit: int = DEFAULT_READ_LINES) -> str:
        """Read a text file from the workspace, or an offloaded result in scratch/ or an archive in archives/.

        Returns a first line '# path (lines a-b of n)', then the file's lines exactly as they are
        (no line numbers). When more lines remain, the last line says how to read the next page.
        Lines longer than 2,000 characters are cut. Binary files are refused.

        Args:
            path: File path relative to the workspace, e.g. 'analyze.py', 'scratch/<tool>_<hash>.txt' or 'archives/<id>/0001.md'.
            offset: How many lines to skip from the start (0 = start of the file).
            limit: How many lines to return, 1 to 2,000 (default 200).
        """
        return read_workspace_file(workspace, path, offset=offset, limit=limit)

    @tool(parse_docstring=True)
    @errors_as_text
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace with exactly `content`. Missing folders are created.

        Returns 'Wrote <n> characters to <path>'. scratch/ and archives/ are read-only,
        and paths outside the workspace are refused.

        Args:
            path: File path relative to the workspace, e.g. 'analyze.py' or 'notes/findings.md'.
            content: The complete new content of the file (it replaces the old content).
        """
        return write_workspace_file(workspace, path, content)

    @tool(parse_docstring=True)
    @errors_as_text
    def list_files(path: str = ".") -> str:
        """List the files (with sizes in bytes) and folders under a folder of the workspace, recursively.

        Returns a first line '# folder: N entries', then one path per line (folders end with '/').
        Shows at most 500 entries. Use '.' for the workspace, 'scratch' or 'archives' for those folders.

        Args:
            path: Folder (or file) relative to the workspace; default '.'.
        """
        return list_workspace_files(workspace, path)

    @tool(parse_docstring=True)
    @errors_as_text
    def search_files(pattern: str, path: str = ".") -> str:
        """Search text files for lines matching a Python regular expression (an invalid regex is searched literally).

        Returns one line per match, 'path:line_number: line text', at most 100 matches
        (long lines are cut at 300 characters). Binary files are skipped.

        Args:
            pattern: A regular expression such as 'def \\w+' or a plain word such as 'volatility'.
            path: Folder or file to search, relative to the workspace; default '.'; 'scratch' or 'archives' also work.
        """
        return search_workspace_files(workspace, pattern, path)

    @tool(parse_docstring=True)
    @errors_as_text
    def run_python(code: str, timeout: int = DEFAULT_RUN_TIMEOUT_SECONDS) -> str:
        """Run Python code in a fresh process whose current folder is the workspace, e.g. to run analyze.py or tests.

        Returns a first line '# exit code N' then everything the code printed (stdout and stderr).
        Output over about 10,000 characters keeps its beginning and end. There is no network,
        no input, and no API keys in the environment. Nothing persists between calls except files.

        Args:
            code: Python source code to run, e.g. "import runpy; runpy.run_path('analyze.py', run_name='__main__')".
            timeout: Seconds before the process is killed, 1 to 120 (default 10).
        """
        return run_python_code(workspace, code, timeout=timeout)

    tools: list[BaseTool] = [
        chartbook_list,
        chartbook_get_docs,
        chartbook_load_data,
        read_file,
        write_file,
        list_files,
        search_files,
        run_python,
    ]
    for each in tools:
        each.handle_validation_error = invalid_arguments_text
    return tools
