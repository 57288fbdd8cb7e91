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
  the original is never modified. A copy made in a temporary folder is removed
  by ``Workspace.cleanup()`` (the CLI's ``chat`` calls it), a ``with`` block, or
  at exit; a folder the user gave (``--workspace``) is kept.
- ``scratch/...`` and ``archives/...`` name the offload and archive folders.
  Tools may **read** them (that is how an agent recovers an offloaded result)
  but never write them. Both are scoped to one conversation (``archive_scope``:
  agents set it to their conversation id; a workspace made without one gets a
  fresh session id of its own): only ``archives/<that id>/`` can be read, and
  ``scratch/`` means ``<scratch folder>/<that id>/``, where that conversation's
  offloads are saved. Another conversation's offloads and archive cannot be
  listed, searched or read. ``scoped(id)`` gives another conversation (a sub-agent) a
  workspace object of its own over the same folders: setting its scope never changes
  the scope of the workspace it came from.
- Paths never leave their folder, even while the code run_python started swaps
  folders and symlinks: files are opened relative to an open folder, in one step
  the kernel checks (``flawedcode.infra.safefs``: ``openat2`` with ``RESOLVE_BENEATH``,
  else an ``O_NOFOLLOW`` walk). ``..`` above the folder, absolute paths elsewhere
  and symlinks pointing out are refused; write_file follows no symlink at all.
- Only regular files and folders are opened: FIFOs, devices and sockets are
  refused without blocking, and so is a file with more than one hard link (one
  of its names may be outside). Files are streamed, never loaded whole
  (read_file up to 512 MB; search_files skips files over 20 MB).
- list_files and search_files never follow symlinks, stop descending 64 levels
  down and after 20,000 entries, and say what they skipped.
- File names that are not UTF-8 are shown with ``\\xNN`` escapes (and such an
  escaped name is accepted back as a path); every result is valid UTF-8, and
  errors never name the host's folders.
- In the workspace, a file with NUL bytes or invalid UTF-8 is refused as binary;
  under scratch/ and archives/ (what flawedcode wrote) every byte is shown.
- ``run_python`` runs in ``flawedcode.infra.sandbox`` (its docstring lists what each
  platform enforces; the tool's description states only that): an
  allow-listed environment, no access to this process, and on Linux no network,
  a read-only view of the system with only the workspace writable, and every
  process it started killed when it ends.
- Outputs are bounded: read_file pages (lines over 2,000 characters are cut),
  search_files stops after 100 matches or 2 seconds in all, listing and
  reading included (a pattern that backtracks without end is stopped, with a note), list_files after 500
  entries, run_python keeps the head and tail of about 10,000 bytes.
- A tool never raises: every bad input comes back as a message starting with
  ``Error: `` that says what went wrong and what to do instead.

``TOOL_SPECS`` is the registry of every tool an agent may be given (``ToolSpec``):
a tool made here, by ``context/`` (``search_archive``) or by a later version
registers there. ``read_only=True`` marks a tool that reads back the agent's own
files (the workspace, scratch/, archives/): the offload step leaves its results
alone (offloading a read would make the agent read the offloaded copy, forever).
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import os
import re
import shutil
import tempfile
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import regex
from langchain_core.tools import BaseTool, tool
from pydantic import StrictInt, ValidationError

from flawedcode import paths
from flawedcode.catalog import Catalog, CatalogError
from flawedcode.formats import load_header
from flawedcode.infra import safefs
from flawedcode.infra.safefs import (
    NotAllowedError,
    Opened,
    OutsideError,
    WalkReport,
    check_folder_name,
    open_beneath,
    open_folder,
    walk,
)
from flawedcode.infra.sandbox import Sandbox


@dataclass(frozen=True)
class ToolSpec:
    """What the context wrappers need to know about one tool."""

    name: str
    read_only: bool
    """True when the tool only reads back the agent's own files: its results are never offloaded."""


TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("chartbook_list", read_only=False),
    ToolSpec("chartbook_get_docs", read_only=False),
    ToolSpec("chartbook_load_data", read_only=False),
    ToolSpec("read_file", read_only=True),
    ToolSpec("write_file", read_only=False),
    ToolSpec("list_files", read_only=True),
    ToolSpec("search_files", read_only=True),
    ToolSpec("run_python", read_only=False),
    ToolSpec("search_archive", read_only=True),  # made by context/archive.py (v2's recovery tool)
    ToolSpec("write_todos", read_only=False),  # v3's tools (agents/v3.py and its context/ modules)
    ToolSpec("task", read_only=False),
    ToolSpec("save_memory", read_only=False),
    ToolSpec("load_tools", read_only=False),
)}
"""Every tool an agent may be given, by name (a test checks each tool has its entry)."""


def read_only_tools() -> list[str]:
    """The tools whose results are never offloaded, in registry order."""
    return [spec.name for spec in TOOL_SPECS.values() if spec.read_only]


SCRATCH_PREFIX = "scratch"
ARCHIVES_PREFIX = "archives"
Area = Literal["workspace", "scratch", "archives"]
AREA_PREFIXES: dict[Area, str] = {"scratch": SCRATCH_PREFIX, "archives": ARCHIVES_PREFIX}
TEMPORARY_PREFIX = "flawedcode-workspace-"

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
MAX_READ_FILE_BYTES = 512 * 1024**2
"""read_file streams files up to this size (never loading them whole); bigger ones are refused."""
MAX_SEARCH_FILE_BYTES = 20 * 1024**2
"""search_files skips files bigger than this (with a note)."""
MAX_SEARCH_SECONDS = 2.0
"""search_files' time in all: listing, reading and matching (a catastrophic regex stops here, with a note)."""
READ_CHUNK_BYTES = 1024**2
MAX_LINE_BYTES_KEPT = MAX_LINE_CHARS * 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8

# Folders that are noise for an agent (caches and version control).
SKIPPED_FOLDERS = frozenset({"__pycache__", ".git", ".pytest_cache", ".ipynb_checkpoints", ".mypy_cache"})


class ToolInputError(ValueError):
    """A tool argument the tool cannot honour; the message tells the model what to do instead."""


# --------------------------------------------------------------------------------------
# The workspace: where file tools may read and write
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """Where a tool's path points: an area (workspace, scratch/ or archives/), its folder, and the parts below it."""

    area: Area
    base: Path
    parts: tuple[str, ...]

    @property
    def shown(self) -> str:
        """How tools name it: 'analyze.py', 'scratch/x.txt', 'archives/<conversation>/0001.md', or '.'."""
        names = [display_name(part) for part in self.parts]
        if self.area == "workspace":
            return "/".join(names) or "."
        return "/".join([AREA_PREFIXES[self.area], *names])

    def child(self, parts: tuple[str, ...]) -> Location:
        return Location(self.area, self.base, self.parts + parts)


@dataclass
class Workspace:
    """A folder the agent may read and write, plus the read-only scratch/ and archives/ folders.

    ``archive_scope`` is the conversation the tools serve (agents set it to their conversation id;
    without one, a fresh ``session-<hex>`` id): archives/ reads only that conversation's folder, and
    scratch/ is ``scratch_dir / archive_scope`` (``conversation_scratch_dir``), where that conversation's
    offloads are saved. A workspace made by ``create()`` without a root
    is temporary: ``cleanup()``, leaving a ``with`` block, garbage collection or the end of the
    program removes it.
    """

    root: Path
    scratch_dir: Path
    archive_dir: Path
    archive_scope: str | None = None
    temporary: bool = False
    _identities: dict[Path, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)
    _sandbox: Sandbox | None = field(default=None, init=False, repr=False)
    _finalizer: Any = field(default=None, init=False, repr=False)
    _origin: Workspace | None = field(default=None, init=False, repr=False)  # a scoped view keeps its origin alive

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.scratch_dir = Path(self.scratch_dir).resolve()
        self.archive_dir = Path(self.archive_dir).resolve()
        if not self.archive_scope:
            self.archive_scope = f"session-{uuid.uuid4().hex[:10]}"  # tools without an agent see no one else's files
        if self.temporary:
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.root), True)

    @classmethod
    def create(
        cls,
        root: Path | None = None,
        scratch_dir: Path | None = None,
        archive_dir: Path | None = None,
        source: Path | None = None,
    ) -> Workspace:
        """Copy the demo project (or ``source``, a project of the user's) into a fresh folder (a new temporary one by default).

        The original ``data/demo_project`` (or ``source``) is only read; symbolic links are copied as links. ``root``,
        if given, must be missing or empty, and is kept; a temporary folder is removed by ``cleanup()``
        (or at exit). scratch/ and archives/ default to ``paths.scratch_dir()`` and
        ``paths.archive_dir()`` and are created if missing.
        """
        temporary = root is None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX))
        root = Path(root)
        if root.exists() and any(root.iterdir()):
            raise FileExistsError(f"{root} is not empty; use Workspace(root, scratch_dir, archive_dir) to reuse it")
        shutil.copytree(
            Path(source) if source is not None else paths.demo_project_dir(),
            root,
            symlinks=True,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns(*SKIPPED_FOLDERS),
        )
        root.chmod(0o700)  # only its owner can reach it: nothing run_python leaves there is anyone else's to run
        workspace = cls(
            root=root,
            scratch_dir=Path(scratch_dir) if scratch_dir else paths.scratch_dir(),
            archive_dir=Path(archive_dir) if archive_dir else paths.archive_dir(),
            temporary=temporary,
        )
        workspace.scratch_dir.mkdir(parents=True, exist_ok=True)
        workspace.archive_dir.mkdir(parents=True, exist_ok=True)
        return workspace

    def scoped(self, conversation_id: str) -> Workspace:
        """The same folders for another conversation (a sub-agent's): its own scope object, the same sandbox.

        Whatever sets the new object's ``archive_scope`` (an agent built on it, its ``reset``) leaves this
        one's as it was, so this conversation still reads its own scratch/ and archive, and offloads there.
        """
        view = Workspace(self.root, self.scratch_dir, self.archive_dir, check_folder_name(conversation_id, "conversation id"))
        view._sandbox, view._identities = self.sandbox, self._identities
        view._origin = self._origin or self  # a temporary folder is removed only when no view needs it
        return view

    def cleanup(self) -> None:
        """Remove a temporary workspace's folder (nothing happens for a folder the user gave)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *_: object) -> None:
        self.cleanup()

    @property
    def sandbox(self) -> Sandbox:
        """run_python's sandbox for this workspace (scratch/ and archives/ hidden from it)."""
        if self._sandbox is None:
            # The code may read the ChartBook catalog and import flawedcode (read-only), as a script of the
            # agent's would need to, e.g. `from flawedcode.catalog import Catalog` for a statistic over many rows.
            package = Path(__file__).resolve().parent
            self._sandbox = Sandbox(self.root, hidden=(self.scratch_dir, self.archive_dir),
                                    readable=(package, paths.data_dir()),
                                    environment={"FLAWEDCODE_DATA_DIR": str(paths.data_dir()),
                                                 # the flawedcode the agent runs, not another install of it
                                                 "PYTHONPATH": str(package.parent)})
        return self._sandbox

    # --- paths -----------------------------------------------------------------------
    def locate(self, path: str, *, for_write: bool) -> Location:
        """Where a tool's ``path`` argument points, or ToolInputError saying why it may not be used.

        Purely lexical: nothing is resolved here (tools open through ``open_location``,
        which never leaves the area). ``..`` may not climb above the area's folder.
        """
        text = str(path).strip()
        if not text:
            raise ToolInputError("the path is empty; use '.' for the workspace folder")
        area, relative = self._area_and_relative(text)
        parts: list[str] = []
        for part in relative:
            if part == "..":
                if not parts:
                    where = "the workspace" if area == "workspace" else f"{AREA_PREFIXES[area]}/"
                    raise ToolInputError(f"'{display_text(text)}' is outside {where} ('..' may not climb above it); "
                                         "use a path inside it")
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        location = Location(area, self._base(area), tuple(parts))
        if for_write and area != "workspace":
            raise ToolInputError(
                f"{AREA_PREFIXES[area]}/ is read-only for tools (scratch/ holds offloaded results, archives/ "
                "holds conversation archives); write inside the workspace instead, e.g. 'notes/result.txt'"
            )
        if area == "archives" and location.parts[:1] not in ((), (self.archive_scope,)):
            raise ToolInputError(f"'{location.shown}' belongs to another conversation; this conversation's "
                                 f"archive is archives/{self.archive_scope}/")
        return location

    def resolve(self, path: str, *, for_write: bool) -> Path:
        """The host path a tool's ``path`` names (lexically; symlinks are not followed)."""
        location = self.locate(path, for_write=for_write)
        return location.base.joinpath(*location.parts)

    def display_path(self, real: Path) -> str:
        """How tools name a host path: 'scratch/x.txt', 'archives/<conversation>/0001.md' or 'analyze.py'."""
        real = Path(os.path.abspath(real))
        for area in ("scratch", "archives", "workspace"):
            base = self._base(area)
            if real == base or base in real.parents:
                return Location(area, base, real.relative_to(base).parts).shown
        return "(outside the workspace)"

    def scrub(self, text: str) -> str:
        """``text`` with the host's absolute folder names replaced by the names tools use."""
        for base, name in ((self.conversation_scratch_dir, "scratch"), (self.scratch_dir, "scratch"),
                           (self.archive_dir, "archives"), (self.root, ".")):
            text = text.replace(str(base), name)
        return text

    @contextlib.contextmanager
    def open_location(self, location: Location) -> Iterator[Opened]:
        """Open a file or folder below its area's folder, race-free (see ``flawedcode.infra.safefs``); closes it after."""
        opened = None
        with self._base_fd(location.area) as base_fd:
            for parts in name_candidates(location.parts):
                try:
                    opened = open_beneath(base_fd, parts)
                    break
                except FileNotFoundError:
                    continue
                except OutsideError:
                    raise ToolInputError(f"'{location.shown}' is a symlink (or goes through one) that points outside "
                                         f"{self._area_words(location.area)} or changed while being opened; "
                                         "it cannot be used") from None
                except NotAllowedError as error:
                    raise ToolInputError(f"'{location.shown}' cannot be read: {error.strerror}") from None
        if opened is None:
            raise ToolInputError(f"'{location.shown}' does not exist; use list_files to see which files exist")
        try:
            yield opened
        finally:
            os.close(opened.fd)

    @contextlib.contextmanager
    def _base_fd(self, area: Area) -> Iterator[int]:
        base = self._base(area)
        try:
            fd = open_folder(base, self._identities.get(base))
        except FileNotFoundError:
            if area == "scratch":
                raise ToolInputError("scratch/ is empty: nothing has been offloaded in this conversation yet") from None
            raise ToolInputError(f"{AREA_PREFIXES.get(area, 'the workspace')}/ does not exist yet") from None
        except OutsideError:
            raise ToolInputError(f"the {self._area_words(area)} folder was moved or replaced; tools stop here") from None
        if base not in self._identities:
            info = os.fstat(fd)
            self._identities[base] = (info.st_dev, info.st_ino)
        try:
            yield fd
        finally:
            os.close(fd)

    @property
    def conversation_scratch_dir(self) -> Path:
        """Where this conversation's offloads are saved, and what ``scratch/`` means to its tools."""
        return self.scratch_dir / check_folder_name(str(self.archive_scope), "conversation id")

    def _base(self, area: Area) -> Path:
        return {"workspace": self.root, "scratch": self.conversation_scratch_dir, "archives": self.archive_dir}[area]

    @staticmethod
    def _area_words(area: Area) -> str:
        return "the workspace" if area == "workspace" else f"{AREA_PREFIXES[area]}/"

    def _area_and_relative(self, text: str) -> tuple[Area, tuple[str, ...]]:
        given = Path(text).expanduser() if text.startswith("~") else Path(text)
        if given.is_absolute():
            normal = Path(os.path.normpath(given))
            for area in ("scratch", "archives", "workspace"):
                base = self._base(area)
                if normal == base or base in normal.parents:
                    return area, normal.relative_to(base).parts
            raise ToolInputError(
                f"'{display_text(text)}' is an absolute path outside the workspace; use a path relative to the "
                "workspace (e.g. 'analyze.py'), or 'scratch/...' / 'archives/...'"
            )
        separated = re.sub(r"\\(?!x[0-9a-fA-F]{2})", "/", text)  # Windows separators, but not \xNN name escapes
        parts = [part for part in PurePosixPath(separated).parts if part != "."]
        for area, prefix in AREA_PREFIXES.items():
            if parts and parts[0] == prefix:
                return area, tuple(parts[1:])
        return "workspace", tuple(parts)


def display_name(name: str) -> str:
    """A file name as tools show it: bytes that are not UTF-8 become ``\\xNN`` escapes."""
    try:
        raw = os.fsencode(name)
    except UnicodeError:
        return display_text(name)
    return raw.decode("utf-8", errors="backslashreplace")


def display_text(text: str) -> str:
    """``text`` made safe to put in a message: lone surrogates become ``\\udcNN`` escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def name_candidates(parts: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The names to try: as given, then with ``\\xNN`` escapes (as display_name shows them) turned back to bytes."""
    candidates = [parts]
    if any("\\x" in part for part in parts):
        decoded = tuple(_unescape(part) for part in parts)
        if decoded != parts:
            candidates.append(decoded)
    return candidates


def _unescape(part: str) -> str:
    raw = re.sub(rb"\\x([0-9a-fA-F]{2})", lambda match: bytes([int(match[1], 16)]), part.encode("utf-8", "surrogateescape"))
    return os.fsdecode(raw)



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
    header = load_header(f"{pipeline}/{dataframe}", len(frame), len(frame.columns),
                         _date_text(dates.iloc[0]), _date_text(dates.iloc[-1]))
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
    """``# <path> (lines a-b of n)``, the raw lines, and a pointer to the rest when more remain.

    The file is streamed, never loaded whole. In the workspace a file with NUL bytes or
    invalid UTF-8 is refused as binary; under scratch/ and archives/ (what flawedcode
    itself wrote) every byte is shown, NUL included, and invalid UTF-8 is replaced.
    """
    if offset < 0:
        raise ToolInputError(f"offset must be 0 or more, got {offset}")
    if not 1 <= limit <= MAX_READ_LINES:
        raise ToolInputError(f"limit must be between 1 and {MAX_READ_LINES}, got {limit}")
    location = workspace.locate(path, for_write=False)
    shown = location.shown
    with workspace.open_location(location) as opened:
        if opened.kind == "folder":
            raise ToolInputError(f"'{shown}' is a folder, not a file; use list_files(path='{shown}')")
        if opened.stat.st_size > MAX_READ_FILE_BYTES:
            raise ToolInputError(f"'{shown}' is {opened.stat.st_size:,} bytes; read_file reads files up to "
                                 f"{MAX_READ_FILE_BYTES:,} bytes (use search_files, or run_python to look inside)")
        page = read_page(opened.fd, opened.stat.st_size, offset, limit, strict=location.area == "workspace")
    if page.binary:
        raise ToolInputError(f"'{shown}' is {page.binary}; read_file only reads text")
    if offset and offset >= page.total:
        raise ToolInputError(f"offset {offset} is past the end: '{shown}' has {page.total} lines")
    last = offset + len(page.lines)
    first = offset + 1 if page.lines else 0
    parts = [f"# {shown} (lines {first}-{last} of {page.total})", *page.lines]
    if last < page.total:
        parts.append(f"# ... {page.total - last} more lines: read_file(path='{shown}', offset={last})")
    return "\n".join(parts)


@dataclass
class Page:
    """Lines ``offset`` to ``offset + limit`` of a file, its total line count, and why it is binary (if it is)."""

    lines: list[str]
    total: int
    binary: str = ""


CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def read_page(fd: int, size: int, offset: int, limit: int, *, strict: bool) -> Page:
    """Stream ``size`` bytes from ``fd`` in chunks: count every line, keep only the page's (cut when too long)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    page: list[str] = []
    line_number = 0  # index of the line being read
    current = bytearray()  # the page line being read, at most MAX_LINE_BYTES_KEPT bytes
    current_chars = 0
    remaining = size
    ends_with_newline = True
    while remaining > 0:
        chunk = os.read(fd, min(READ_CHUNK_BYTES, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        ends_with_newline = chunk.endswith(b"\n")
        if strict:
            if b"\x00" in chunk:
                return Page([], 0, "a binary file (it contains NUL bytes)")
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                return Page([], 0, "not UTF-8 text (probably binary)")
        newlines = chunk.count(b"\n")
        if line_number + newlines < offset or line_number >= offset + limit:
            line_number += newlines  # nothing of the page in this chunk
            continue
        pieces = chunk.split(b"\n")
        for index, piece in enumerate(pieces):
            if offset <= line_number < offset + limit:
                room = MAX_LINE_BYTES_KEPT - len(current)
                if room > 0:
                    current += piece[:room]
                current_chars += len(piece.translate(None, CONTINUATION_BYTES))  # bytes that start a character
            if index < len(pieces) - 1:  # a newline ends this line
                if offset <= line_number < offset + limit:
                    page.append(_page_line(current, current_chars))
                current, current_chars = bytearray(), 0
                line_number += 1
    if strict:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return Page([], 0, "not UTF-8 text (probably binary)")
    partial_last_line = size > 0 and not ends_with_newline
    if partial_last_line and offset <= line_number < offset + limit:
        page.append(_page_line(current, current_chars))
    return Page(page, line_number + partial_last_line)


def _page_line(kept: bytearray, chars: int) -> str:
    if kept.endswith(b"\r"):
        kept, chars = kept[:-1], chars - 1
    text = bytes(kept).decode("utf-8", errors="replace")
    if chars <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}... [line cut: {chars - MAX_LINE_CHARS:,} more characters]"


def write_workspace_file(workspace: Workspace, path: str, content: str) -> str:
    """Write ``content`` to a workspace file atomically; ``Wrote <n> characters to <path>``.

    The write goes through folder descriptors (``safefs.write_beneath``): no symlink is
    followed on the way, so the file always lands inside the workspace.
    """
    location = workspace.locate(path, for_write=True)
    shown = location.shown
    if not location.parts:
        raise ToolInputError("'.' is the workspace folder; give a file path such as 'notes.txt'")
    data = content.encode("utf-8")
    with workspace._base_fd("workspace") as base_fd:
        try:
            safefs.write_beneath(base_fd, location.parts, data)
        except OutsideError:
            raise ToolInputError(f"'{shown}' goes through a symlink; write_file does not follow symlinks") from None
        except (NotAllowedError, IsADirectoryError) as error:
            what = error.strerror if isinstance(error, NotAllowedError) else "it is a folder"
            raise ToolInputError(f"cannot write '{shown}': {what}; give a file path such as 'notes/findings.md'") from None
        except (NotADirectoryError, FileExistsError):
            raise ToolInputError(f"cannot write '{shown}': a part of the path is a file, not a folder") from None
    return f"Wrote {len(content)} characters to {shown}"


def list_workspace_files(workspace: Workspace, path: str = ".") -> str:
    """The files (with sizes) and folders under ``path``, recursively, one per line."""
    location = _scoped(workspace, workspace.locate(path, for_write=False))
    shown = location.shown
    with workspace.open_location(location) as opened:
        if opened.kind == "file":
            return f"{shown} ({opened.stat.st_size:,} bytes)"
        report = WalkReport()
        entries = list(walk(opened.fd, SKIPPED_FOLDERS, report))
    lines = [f"# {shown}: {len(entries)} entries"]
    for entry in entries[:MAX_LIST_ENTRIES]:
        entry_shown = location.child(entry.parts).shown
        lines.append(entry_shown + {"folder": "/", "file": f" ({entry.size:,} bytes)", "symlink": " (symlink)",
                                    "other": " (special file)"}[entry.kind])
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"# ... {len(entries) - MAX_LIST_ENTRIES} more entries not shown; list a subfolder")
    lines += report.lines()
    if location.area == "workspace" and not location.parts:
        lines.append("# also readable: scratch/ (offloaded tool results) and archives/ (conversation archives)")
    return "\n".join(lines)


def search_workspace_files(workspace: Workspace, pattern: str, path: str = ".") -> str:
    """``path:lineno: text`` for each line that matches ``pattern`` (at most 100 lines, at most 2 s in all)."""
    if not pattern:
        raise ToolInputError("the pattern is empty; give a word or a regular expression")
    location = _scoped(workspace, workspace.locate(path, for_write=False))
    notes: list[str] = []
    # The `regex` package (not `re`): same syntax for what a model writes, and a timeout, so a pattern
    # such as '(a|aa)+$' that backtracks for minutes is stopped instead of hanging the turn.
    try:
        compiled = regex.compile(pattern)
    except (regex.error, ValueError) as error:
        compiled = regex.compile(regex.escape(pattern))
        notes.append(f"# '{display_text(pattern)}' is not a valid regular expression ({error}); searched for it literally")
    matches: list[str] = []
    report = WalkReport()
    skipped_large = 0
    deadline = time.monotonic() + MAX_SEARCH_SECONDS  # the whole search: listing, reading and matching
    with workspace.open_location(location) as opened:
        files = [(location, opened.stat.st_size)] if opened.kind == "file" else _files_until(
            walk(opened.fd, SKIPPED_FOLDERS, report), location, report, deadline)
    for searched, (file, size) in enumerate(files):
        if size > MAX_SEARCH_FILE_BYTES:
            skipped_large += 1
            continue
        for number, line in _search_lines(workspace, file):
            try:
                if time.monotonic() > deadline:
                    raise TimeoutError
                found = compiled.search(line, timeout=max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                stopped = (f"# stopped after {MAX_SEARCH_SECONDS:g} s, at {file.shown}:{number} ({searched:,} of "
                           f"{len(files):,} files searched"
                           + (", the listing cut short" if report.timed_out else "")
                           + "): use a narrower path, a simpler pattern or a plain word")
                return "\n".join(notes + matches + [stopped])
                stopped = (f"# stopped after {MAX_SEARCH_SECONDS:g} s of matching, at {file.shown}:{number}: "
                           "the pattern backtracks too much; use a simpler pattern or a plain word")
                return "\n".join(notes + matches + [stopped])
            if found:
                matches.append(f"{file.shown}:{number}: {_cut(line, MAX_SEARCH_LINE_CHARS)}")
                if len(matches) >= MAX_SEARCH_MATCHES:
                    stopped = f"# stopped after {MAX_SEARCH_MATCHES} matches; use a narrower pattern or path"
                    return "\n".join(notes + matches + [stopped])
    if skipped_large:
        notes.append(f"# skipped {skipped_large} file(s) over {MAX_SEARCH_FILE_BYTES:,} bytes")
    if report.timed_out:
        notes.append(f"# stopped after {MAX_SEARCH_SECONDS:g} s while listing the files ({len(files):,} searched): "
                     "use a narrower path")
    notes += report.lines()
    if not matches:
        return "\n".join([f"No matches for '{display_text(pattern)}' in {location.shown}", *notes])
    return "\n".join(matches + notes)


def _files_until(entries: Iterator[Any], location: Location, report: WalkReport,
                 deadline: float) -> list[tuple[Location, int]]:
    """The files of a walk, listed until ``deadline`` (then ``report.timed_out`` is set)."""
    files = []
    try:
        for entry in entries:
            if entry.kind == "file":
                files.append((location.child(entry.parts), entry.size))
            if time.monotonic() > deadline:
                report.timed_out = True
                break
    finally:
        entries.close()  # closes the folders the walk still holds open
    return files


def _scoped(workspace: Workspace, location: Location) -> Location:
    """archives/ itself, for a workspace limited to one conversation, means that conversation's folder."""
    if location.area == "archives" and not location.parts:
        return location.child((workspace.archive_scope,))
    return location


def _search_lines(workspace: Workspace, file: Location) -> Iterator[tuple[int, str]]:
    """(line number, text) of a text file, streamed; nothing for binary files or files that cannot be opened."""
    try:
        with workspace.open_location(file) as opened, os.fdopen(os.dup(opened.fd), "rb") as stream:
            head = stream.read(READ_CHUNK_BYTES)
            if b"\x00" in head and file.area == "workspace":
                return
            stream.seek(0)
            for number, raw in enumerate(stream, start=1):
                yield number, raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
    except (ToolInputError, OSError):
        return


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit] + "..."


# run_python (plain function)
# --------------------------------------------------------------------------------------


def run_python_code(workspace: Workspace, code: str, timeout: int = DEFAULT_RUN_TIMEOUT_SECONDS) -> str:
    """Run ``code`` in a fresh Python in the workspace's sandbox; ``# exit code N`` then stdout and stderr."""
    if not code.strip():
        raise ToolInputError("the code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise ToolInputError(f"the code is {len(code):,} characters; write it to a file and run that file instead")
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ToolInputError(f"timeout must be a whole number of seconds, got {timeout!r}")
    if not 1 <= timeout <= MAX_RUN_TIMEOUT_SECONDS:
        raise ToolInputError(f"timeout must be between 1 and {MAX_RUN_TIMEOUT_SECONDS} seconds, got {timeout}")
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolInputError("the code contains characters that are not valid Unicode (lone surrogates)") from None
    if "\x00" in code:
        raise ToolInputError(f"the code contains a NUL character (at position {code.index(chr(0)):,}), which Python source "
                             "cannot hold; write it as '\\x00' inside a string instead")
    result = workspace.sandbox.run(code, timeout, MAX_RUN_OUTPUT_CHARS)
    if result.sandbox_error:
        raise ToolInputError(f"run_python's sandbox could not start, so the code did not run ({result.sandbox_error})")
    if result.stopped:
        return f"Error: run_python stopped: {result.stopped}\n{install_folders_hidden(result.output)}".rstrip("\n")
    if result.timed_out:
        return f"Error: run_python timed out after {timeout} s\n{install_folders_hidden(result.output)}".rstrip("\n")
    return f"# exit code {result.exit_code}\n{install_folders_hidden(result.output) or '(no output)'}".rstrip("\n")


@functools.cache
def _install_folders() -> tuple[tuple[str, str], ...]:
    """(host folder, shown name) for where Python and its packages are installed, longest first."""
    import site  # noqa: PLC0415 (only run_python's output needs it)
    import sysconfig  # noqa: PLC0415

    folders = {folder: "<site-packages>" for folder in (*site.getsitepackages(), site.getusersitepackages())}
    folders.update({sysconfig.get_path("stdlib"): "<python>", sysconfig.get_path("platstdlib"): "<python>"})
    folders[str(Path(__file__).resolve().parent)] = "<flawedcode>"
    return tuple(sorted(((folder, name) for folder, name in folders.items() if folder and len(folder) > 1),
                        key=lambda pair: -len(pair[0])))


def install_folders_hidden(text: str) -> str:
    """``text`` with the host's installation folders shown as '<site-packages>', '<python>', '<flawedcode>'.

    A traceback through pandas then reads the same on every machine (and a run's token counts do
    not depend on where the project was cloned), and names no host folder.
    """
    for folder, name in _install_folders():
        text = text.replace(folder, name)
    return text



# The LangChain tools the agent sees
# --------------------------------------------------------------------------------------


def errors_as_text(function: Callable[..., str] | None = None, *,
                   scrub: Callable[[str], str] | None = None) -> Any:
    """Turn any exception into an ``Error: ...`` result, so a tool never raises into the agent loop.

    Every result is made valid UTF-8 (``display_text``), and ``scrub``, if given, removes
    host folder names from error texts.
    """
    if function is None:
        return functools.partial(errors_as_text, scrub=scrub)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        try:
            return display_text(function(*args, **kwargs))
        except (ToolInputError, CatalogError) as error:
            text = f"Error: {error}"
        except FileNotFoundError as error:
            text = f"Error: {error.filename or error} does not exist; use list_files to see which files exist"
        except OSError as error:
            text = f"Error: {error.strerror or error}"
        except Exception as error:  # a tool must answer, not crash the conversation
            text = f"Error: {type(error).__name__}: {error}"
        return display_text(scrub(text) if scrub else text)

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
    @errors_as_text(scrub=workspace.scrub)
    def read_file(path: str, offset: int = 0, limit: int = DEFAULT_READ_LINES) -> str:
        """Read a text file from the workspace, or an offloaded result in scratch/ or an archive in archives/.

        Returns a first line '# path (lines a-b of n)', then the file's lines exactly as they are
        (no line numbers). When more lines remain, the last line says how to read the next page.
        Lines longer than 2,000 characters are cut. Binary workspace files are refused.

        Args:
            path: File path relative to the workspace, e.g. 'analyze.py', 'scratch/<tool>_<hash>.txt' or 'archives/<id>/0001.md'.
            offset: How many lines to skip from the start (0 = start of the file).
            limit: How many lines to return, 1 to 2,000 (default 200).
        """
        return read_workspace_file(workspace, path, offset=offset, limit=limit)

    @tool(parse_docstring=True)
    @errors_as_text(scrub=workspace.scrub)
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
    @errors_as_text(scrub=workspace.scrub)
    def list_files(path: str = ".") -> str:
        """List the files (with sizes in bytes) and folders under a folder of the workspace, recursively.

        Returns a first line '# folder: N entries', then one path per line (folders end with '/').
        Shows at most 500 entries. Use '.' for the workspace, 'scratch' or 'archives' for those folders.

        Args:
            path: Folder (or file) relative to the workspace; default '.'.
        """
        return list_workspace_files(workspace, path)

    @tool(parse_docstring=True)
    @errors_as_text(scrub=workspace.scrub)
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
    @errors_as_text(scrub=workspace.scrub)
    def run_python(code: str, timeout: StrictInt = DEFAULT_RUN_TIMEOUT_SECONDS) -> str:  # strict: `true` is not 1 s
        """Run Python code in a fresh process whose current folder is the workspace, e.g. to run analyze.py or tests.

        Returns a first line '# exit code N' then everything the code printed (stdout and stderr).
        Output over about 10,000 characters keeps its beginning and end. There is no input,
        and nothing persists between calls except files.

        Args:
            code: Python source code to run, e.g. "import runpy; runpy.run_path('analyze.py', run_name='__main__')".
            timeout: Seconds before the process is killed, 1 to 120 (default 10).
        """
        return run_python_code(workspace, code, timeout=timeout)

    run_python.description += " " + workspace.sandbox.description()  # only what this platform enforces
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
