"""Opening files inside a folder without ever leaving it, even while someone swaps links underneath.

The file tools take paths from a model, and the code ``run_python`` runs can
change the workspace between a tool's check and its open (for example by
swapping a folder and a symlink with ``renameat2(RENAME_EXCHANGE)``). So a path
is never checked and then opened; it is opened *relative to an open folder*, one
step that cannot be raced:

- On Linux 5.6 and later, ``openat2(base_fd, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)``:
  the kernel refuses any resolution that leaves ``base_fd`` (``..`` above it,
  absolute symlinks, symlinks pointing out, ``/proc`` magic links). Symlinks that
  stay inside are followed.
- Elsewhere, each component is opened with ``O_NOFOLLOW`` relative to the folder
  opened before it (``dir_fd``): a symlink anywhere in the path is refused.

Then only regular files and folders are used: the last component is first opened
without reading it (``O_PATH``, or ``lstat`` through ``dir_fd``), its type is
checked, and it is opened for reading (``O_NONBLOCK``, so a FIFO cannot hang)
only if it is a regular file or a folder, and only if the file then opened is the
one checked (same device and inode). A regular file with more than one hard link
is refused: one of its names may be outside the folder.

Walking a tree (``walk``) never follows symlinks, stops descending at
``MAX_WALK_DEPTH`` levels and after ``MAX_WALK_ENTRIES`` entries, and reports what
it skipped as notes instead of failing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_WALK_DEPTH = 64
"""Folders deeper than this below the walked folder are skipped (with a note)."""
MAX_WALK_ENTRIES = 20_000
"""A walk stops after this many entries (with a note)."""

SYS_OPENAT2 = 437  # the same number on every architecture
RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x01, 0x02, 0x04, 0x08
O_PATH = getattr(os, "O_PATH", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

Kind = Literal["file", "folder"]


class OutsideError(OSError):
    """The path leaves the folder (``..`` above it, or a symlink pointing out)."""


class NotAllowedError(OSError):
    """The path names something other than a regular file or folder, or a hard-linked file."""


@dataclass(frozen=True)
class Opened:
    """An open file or folder: its descriptor (the caller closes it), its kind and its ``fstat``."""

    fd: int
    kind: Kind
    stat: os.stat_result


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_openat2_state: dict[str, Any] = {}


MAX_NAME_CHARS = 128
"""Longest folder name ``check_folder_name`` accepts (a conversation id, say)."""


def check_folder_name(name: str, what: str = "name") -> str:
    """``name`` if it is one plain folder name (never ``..``, a separator, NUL or a control character); else ValueError.

    Names that come from outside (a conversation id in a recording) become folders under
    archives/ and scratch/: one of them must never name a folder anywhere else.
    """
    text = str(name)
    if (not text or text in (".", "..") or len(text) > MAX_NAME_CHARS or text != text.strip()
            or any(character in text for character in "/\\\x00") or not text.isprintable()):
        shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
        raise ValueError(f"{what} {shown} cannot be a folder name (it must be one name of 1-{MAX_NAME_CHARS} "
                         "printable characters, without '/', '\\' or '..')")
    return text


def openat2_available() -> bool:
    """True on Linux kernels with openat2 (5.6+); found once by trying it."""
    if "available" not in _openat2_state:
        available = False
        if sys.platform.startswith("linux"):
            try:
                os.close(_openat2(os.open("/", os.O_RDONLY | O_DIRECTORY | O_CLOEXEC), ".", O_PATH, close_dir=True))
                available = True
            except OSError as error:
                available = error.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL)
        _openat2_state["available"] = available
    return _openat2_state["available"] and not _openat2_state.get("disabled", False)


@contextmanager
def without_openat2() -> Iterator[None]:
    """Use the portable component-by-component walk (tests use it to check the fallback on Linux)."""
    _openat2_state["disabled"] = True
    try:
        yield
    finally:
        _openat2_state["disabled"] = False


def _openat2(dir_fd: int, path: str | bytes, flags: int, *, close_dir: bool = False) -> int:
    libc = _openat2_state.get("libc")
    if libc is None:
        libc = _openat2_state["libc"] = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.syscall.restype = ctypes.c_long
    how = _OpenHow(flags | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    encoded = os.fsencode(path)
    try:
        result = libc.syscall(SYS_OPENAT2, dir_fd, encoded, ctypes.byref(how), ctypes.sizeof(how))
        if result < 0:
            code = ctypes.get_errno()
            if code == errno.EXDEV:
                raise OutsideError(code, "the path leads outside the folder")
            raise OSError(code, os.strerror(code), os.fsdecode(encoded))
        return result
    finally:
        if close_dir:
            os.close(dir_fd)


def open_folder(path: str | os.PathLike[str], identity: tuple[int, int] | None = None) -> int:
    """Open a trusted base folder; with ``identity`` (st_dev, st_ino), refuse it if it was replaced since."""
    fd = os.open(path, os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if identity is not None:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != identity:
            os.close(fd)
            raise OutsideError(errno.EXDEV, "the folder was moved or replaced")
    return fd


def identity_of(path: str | os.PathLike[str]) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def open_beneath(base_fd: int, parts: Sequence[str | bytes]) -> Opened:
    """Open ``parts`` (already split, no ``..``) below ``base_fd``: a regular file or a folder, nothing else."""
    if not parts:
        fd = os.open(".", os.O_RDONLY | O_DIRECTORY | O_CLOEXEC, dir_fd=base_fd)
        return Opened(fd, "folder", os.fstat(fd))
    if openat2_available():
        relative = b"/".join(os.fsencode(part) for part in parts)
        probe = _openat2(base_fd, relative, O_PATH)
        try:
            checked = os.fstat(probe)
        finally:
            os.close(probe)
        _refuse_unusable(checked)
        fd = _openat2(base_fd, relative, _read_flags(checked) & ~O_NOFOLLOW)  # RESOLVE_BENEATH guards the links
    else:
        parent = walk_to_parent(base_fd, parts[:-1])
        try:
            checked = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            if stat.S_ISLNK(checked.st_mode):
                raise OutsideError(errno.ELOOP, "symlinks are not followed here")
            _refuse_unusable(checked)
            fd = _open_step(parent, parts[-1], _read_flags(checked))
        finally:
            os.close(parent)
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
        os.close(fd)
        raise OutsideError(errno.EAGAIN, "the file changed while it was being opened; try again")
    return Opened(fd, "folder" if stat.S_ISDIR(opened.st_mode) else "file", opened)


def _read_flags(info: os.stat_result) -> int:
    if stat.S_ISDIR(info.st_mode):
        return os.O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
    return os.O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC


def _refuse_unusable(info: os.stat_result) -> None:
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        return
    if not stat.S_ISREG(mode):
        raise NotAllowedError(errno.EPERM, f"it is a {file_type(mode)}, not a regular file")
    if info.st_nlink > 1:
        raise NotAllowedError(errno.EPERM, f"it has {info.st_nlink} hard links (one may be outside the workspace)")


def file_type(mode: int) -> str:
    """A word for a file's type, for messages."""
    for test, word in ((stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISDIR, "folder"), (stat.S_ISREG, "regular file")):
        if test(mode):
            return word
    return "special file"


def walk_to_parent(base_fd: int, folders: Sequence[str | bytes], *, create: bool = False) -> int:
    """Open each folder in turn below ``base_fd`` (``O_NOFOLLOW``); with ``create``, make missing ones."""
    if openat2_available() and not create:
        if not folders:
            return os.open(".", os.O_RDONLY | O_DIRECTORY | O_CLOEXEC, dir_fd=base_fd)
        relative = b"/".join(os.fsencode(part) for part in folders)
        return _openat2(base_fd, relative, os.O_RDONLY | O_DIRECTORY)
    current = os.open(".", os.O_RDONLY | O_DIRECTORY | O_CLOEXEC, dir_fd=base_fd)
    try:
        for name in folders:
            if create:
                try:
                    os.mkdir(name, 0o777, dir_fd=current)
                except FileExistsError:
                    pass
            following = _open_step(current, name, os.O_RDONLY | O_DIRECTORY)
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def _open_step(dir_fd: int, name: str | bytes, flags: int) -> int:
    try:
        return os.open(name, flags | O_NOFOLLOW | O_CLOEXEC, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK) or (error.errno == errno.ENOTDIR and _is_symlink(dir_fd, name)):
            raise OutsideError(errno.ELOOP, "symlinks are not followed here") from None
        raise


def _is_symlink(dir_fd: int, name: str | bytes) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def write_beneath(base_fd: int, parts: Sequence[str], data: bytes) -> None:
    """Write ``data`` to ``parts`` below ``base_fd`` atomically (temporary file, fsync, rename, all through dir fds).

    Missing folders are made; no symlink is followed on the way; a symlink or a folder
    at the last component is refused. Readers see the old file or the new one. An
    existing file's permissions are kept; the rename replaces the name only, so a
    hard link elsewhere keeps the old content.
    """
    parent = walk_to_parent(base_fd, parts[:-1], create=True)
    name = parts[-1]
    temporary = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        mode = 0o644
        try:
            existing = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if not stat.S_ISREG(existing.st_mode):
                raise NotAllowedError(errno.EPERM, f"it is a {file_type(existing.st_mode)}, not a regular file")
            mode = stat.S_IMODE(existing.st_mode)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb", closefd=False) as stream:
                stream.write(data)
                stream.flush()
                os.fsync(fd)
            if existing is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=parent)
        except OSError:
            pass
        raise
    finally:
        os.close(parent)


@dataclass
class WalkEntry:
    """One entry met by ``walk``: its path parts below the walked folder, its kind and its size."""

    parts: tuple[str, ...]
    kind: Literal["file", "folder", "symlink", "other"]
    size: int


@dataclass
class WalkReport:
    """What ``walk`` skipped instead of failing."""

    too_deep: int = 0
    unreadable: int = 0
    stopped_early: bool = False
    timed_out: bool = False  # the caller stopped reading the walk at its deadline (it says so itself)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = []
        if self.too_deep:
            lines.append(f"# skipped {self.too_deep:,} folder(s) more than {MAX_WALK_DEPTH} levels deep")
        if self.unreadable:
            lines.append(f"# skipped {self.unreadable:,} folder(s) that could not be opened")
        if self.stopped_early:
            lines.append(f"# stopped after {MAX_WALK_ENTRIES:,} entries; use a subfolder")
        return lines


def walk(folder_fd: int, skip_names: frozenset[str], report: WalkReport,
         prefix: tuple[str, ...] = (), depth: int = 0, counter: list[int] | None = None) -> Iterator[WalkEntry]:
    """Entries below an open folder, sorted by name, depth first; symlinks are listed, never followed."""
    counter = counter if counter is not None else [0]
    with os.scandir(folder_fd) as listing:
        entries = sorted(listing, key=lambda entry: os.fsencode(entry.name))
    for entry in entries:
        if entry.name in skip_names:
            continue
        if counter[0] >= MAX_WALK_ENTRIES:
            report.stopped_early = True
            return
        counter[0] += 1
        parts = (*prefix, entry.name)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            yield WalkEntry(parts, "symlink", 0)
        elif stat.S_ISREG(info.st_mode):
            yield WalkEntry(parts, "file", info.st_size)
        elif not stat.S_ISDIR(info.st_mode):
            yield WalkEntry(parts, "other", 0)
        else:
            yield WalkEntry(parts, "folder", 0)
            if depth + 1 >= MAX_WALK_DEPTH:
                report.too_deep += 1
                continue
            try:
                child = _open_step(folder_fd, entry.name, os.O_RDONLY | O_DIRECTORY)
            except OSError:
                report.unreadable += 1
                continue
            try:
                yield from walk(child, skip_names, report, parts, depth + 1, counter)
            finally:
                os.close(child)
