"""run_python's sandbox: what the agent's Python code can and cannot do, per platform.

``Sandbox(workspace_root, hidden=[scratch, archives]).run(code, timeout)`` runs
``sys.executable -c code`` and returns its exit code and output. The code is the
model's, so it is treated as hostile. The strongest level the platform supports
is chosen at run time (``Sandbox.isolation``, found by one trial run, then cached)
and the tool's description tells the model only what that level enforces.

Levels, strongest first:

``namespaces-nobody``  Linux, running as root (CI runs as root).
``namespaces-user``    Linux, as an ordinary user with user namespaces enabled
                       (or as root where the workspace's filesystem has no idmapped mounts).
``process``            Linux without usable namespaces (containers with seccomp, Ubuntu's
                       AppArmor userns restriction), and macOS.
``basic``              Windows (not tested here: no Windows machine).

What each level enforces ("Landlock" = Linux 5.13+ with Landlock on; its ABI version in brackets):

=========================================  =========  =========  ==============  =======  =====
guarantee                                  ns-nobody  ns-user    process, Linux  macOS    basic
=========================================  =========  =========  ==============  =======  =====
environment built from an allow-list       yes        yes        yes             yes      yes
parent's environ/mem unreadable            yes (1)    yes (1)    yes (2)         no       no
other processes' environ/mem unreadable    yes (1)    yes (1)    Landlock [1]    no       no
cannot signal or kill other processes      yes (1)    yes (1)    Landlock [6]    no       no
no network                                 yes (3)    yes (3)    TCP only [4]    no       no
only the workspace and HOME writable       yes (4)    yes (4)    Landlock [1]    no       no
scratch/ and archives/ hidden              yes        yes        no (readable)   no       no
other processes invisible                  yes        yes        no              no       no
whole process tree killed                  yes (5)    yes (5)    yes (6)         no (6)   no (7)
no set-uid / set-gid file left (8)         yes        yes        yes             sweep    no
process count bounded (9)                  yes        yes        cgroup / user   user     no
memory bounded for the whole call (10)     cgroup     no         cgroup          no       no
memory bounded per process (RLIMIT_AS)     yes        yes        yes             yes      no
HOME bounded (a 256 MB tmpfs)              yes        yes        no              no       no
runs as another user                       nobody     no         no              no       no
=========================================  =========  =========  ==============  =======  =====

1. A new PID namespace with its own ``/proc``: no other process has a pid there, and
   the code has no capability left to unmount that ``/proc``. Under
   ``namespaces-nobody`` the code is also another user (uid 65534), which the
   kernel refuses anyway.
2. The parent makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, the first
   time it runs code at this level) and the code runs with every capability
   dropped (bounding set cleared, ``no_new_privs``), so even as uid 0 it lacks the
   ``CAP_SYS_PTRACE`` that reading a non-dumpable process needs. With Landlock the
   code is also in a Landlock domain, which may ptrace (and so read the ``environ`` or
   ``mem`` of) no process outside it: the user's shell or Jupyter holding
   ``OPENAI_API_KEY`` included. Landlock ABI 6 (Linux 6.12) adds: no signal to a
   process outside the domain, no abstract unix socket outside it; ABI 4 (Linux 6.7):
   no TCP connect or bind (UDP and unix sockets are not blocked). The domain allows
   reading and running anything, and writing only in the workspace, HOME, ``/dev/shm``
   and ``/dev/null``-like devices. Without Landlock (an older kernel, or it is off),
   the process level on Linux protects only the parent: the code can read the
   environment of the user's other dumpable processes and signal any of them. On macOS
   a process can read a same-user process's environment (``sysctl KERN_PROCARGS2``).
3. A new network namespace whose only interface, ``lo``, is down: connecting to
   127.0.0.1 fails with "Network is unreachable".
4. The code sees a new root filesystem: a read-only skeleton with read-only
   binds of ``/usr``, ``/etc``, the Python installation and its site-packages,
   the flawedcode package and the ChartBook catalog (``FLAWEDCODE_DATA_DIR`` is set to it),
   the workspace read-write, a private temporary folder (``HOME`` and ``TMPDIR``, a
   ``HOME_BYTES`` tmpfs) read-write, a private ``/proc``, a minimal ``/dev`` and ``/dev/shm``.
   Nothing else of the host is visible; scratch/ and archives/ are covered by empty
   read-only folders. The bound folders keep their host paths, so ``/proc/self/mountinfo``
   (and ``os.getcwd()``) show where the workspace, the Python installation and the package
   are on the host: those names are visible, nothing under them beyond what is listed.
   As root the code runs as ``nobody`` and the workspace is
   bound through an idmapped mount, so its files look like nobody's (and what nobody writes
   is root's on the host: see note 8). Under
   ``namespaces-user`` as root (no idmapped mounts) the code is uid 0 with no
   capability: it can read root-only files among the folders it sees (``/etc``).
5. The supervisor is the PID namespace's init: when the script exits (or times
   out) it exits and the kernel kills every process left in the namespace,
   ``setsid`` children included, so a background child holding stdout cannot
   delay the result.
6. The supervisor is a child subreaper: orphans, ``setsid`` ones included,
   re-parent to it, and it kills them until none is left. On macOS only the
   script's process group is killed, so a ``setsid`` child can outlive the call.
7. The process is killed; its children are not.
8. A file the code makes set-uid as root would be a root shell for any local user who
   can reach it. On Linux (x86_64, aarch64) a seccomp filter refuses every mode with the
   set-uid or set-gid bit (``chmod``, ``fchmod(at)``, ``open``/``creat``/``mkdir``/``mknod``
   with such a mode; ``openat2`` and ``io_uring``, which a filter cannot inspect, are
   refused with ENOSYS), and after every call, at every level but ``basic``, the
   workspace is swept and any such bit that is there anyway is cleared ("sweep": all that
   macOS gets). Workspaces are made 0700, so no other user can reach a file in one.
9. ``RLIMIT_NPROC`` counts processes per user: under ``namespaces-user`` it counts
   only the namespace's own processes; under ``namespaces-nobody`` nobody's. uid 0 is
   exempt from it, so as root the bound is the call's cgroup (note 10) when one can be
   made, and none otherwise; an ordinary user at the process level has the limit
   counted over all of their processes ("user").
10. As root, each call runs in a cgroup of its own (cgroup v2 where the root cgroup
   delegates ``pids`` and ``memory``, else cgroup v1's ``pids`` and ``memory``
   hierarchies): ``pids.max`` and one memory limit (``MAX_MEMORY_BYTES``) for every
   process the call starts together, tmpfs pages included; what is left is killed and the
   cgroup removed after the call. An ordinary user (and a container that delegates no
   controller) gets no cgroup: memory is then bounded per process only, so N processes
   can hold N times ``MAX_MEMORY_BYTES``. Disk is bounded per file (``RLIMIT_FSIZE``) and per
   call: the supervisor watches the free space of the workspace's filesystem and stops the call
   (``Error: run_python stopped: ...``) once it has taken ``MAX_CALL_DISK_BYTES``, or would leave
   less than ``MIN_FREE_DISK_BYTES`` free. Free space is the filesystem's, so another program's
   writes in the same moment count too; what the call wrote before it was stopped stays.

The limits are the constants below (``MAX_PROCESSES``, ``MAX_MEMORY_BYTES``,
``MAX_FILE_BYTES``, ``MAX_OPEN_FILES``). The environment is the variables named
in ``ALLOWED_ENVIRONMENT`` (locale, time zone, thread counts) plus ``PATH``,
``HOME``, ``TMPDIR`` and the fixed values in ``FIXED_ENVIRONMENT``.

This file is also the supervisor: the parent starts ``python -I -S sandbox.py
STATUS_FD`` and writes the run's settings (JSON) to its stdin. It uses the
standard library only, and reports ``ok``, ``timeout`` or ``error: ...`` on the
status pipe, so the script's own exit code is never mistaken for the sandbox's.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import errno
import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

IsolationLevel = Literal["namespaces-nobody", "namespaces-user", "process", "basic"]

MAX_PROCESSES = 64
"""Processes and threads the code may have at once (``RLIMIT_NPROC``); bounds a fork bomb."""
MAX_MEMORY_BYTES = 4 * 1024**3
"""Address space of each process (``RLIMIT_AS``); pandas and numpy fit comfortably."""
MAX_FILE_BYTES = 512 * 1024**2
"""Largest file the code may write (``RLIMIT_FSIZE``)."""
MAX_CALL_DISK_BYTES = 1024**3
"""Most free space one call may take from the workspace's filesystem, every file together."""
MIN_FREE_DISK_BYTES = 64 * 1024**2
"""A call that would leave less free space than this on the workspace's filesystem is stopped."""
DISK_CHECK_SECONDS = 0.05
"""How often the supervisor reads the free space while the code runs."""
MAX_OPEN_FILES = 1024
"""Open files per process (``RLIMIT_NOFILE``)."""
HOME_BYTES = 256 * 1024**2
"""Size of the private HOME/TMPDIR at the namespace levels (a tmpfs: it counts in the call's memory)."""
SHM_BYTES = 64 * 1024**2
"""Size of the private ``/dev/shm`` (multiprocessing needs one)."""
EXTRA_CPU_SECONDS = 5
"""``RLIMIT_CPU`` is the timeout plus this, a backstop for a supervisor that dies."""
SUPERVISOR_GRACE_SECONDS = 5
"""How long the parent waits past the timeout before killing the supervisor itself."""
NOBODY_UID = NOBODY_GID = 65534

ALLOWED_ENVIRONMENT = (
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
    "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
)
"""The only variables copied from the parent's environment: none can hold a credential."""
FIXED_ENVIRONMENT = {"PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
                     "MPLBACKEND": "Agg",
                     # The workspace's tests run without the plugins of the environment flawedcode is installed in
                     # (nbval, pytest-socket, ...): they are not the project's, and loading them took 6 s a run.
                     "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
SYSTEM_FOLDERS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
"""Host folders the namespace levels show read-only (symlinks among them are copied as symlinks)."""
DEVICES = ("null", "zero", "full", "random", "urandom")

DESCRIPTIONS: dict[IsolationLevel, str] = {
    "namespaces-nobody": "It runs in a sandbox: no network, no other processes, no API keys; only the workspace "
                         "and a private temporary folder are writable.",
    "namespaces-user": "It runs in a sandbox: no network, no other processes, no API keys; only the workspace "
                       "and a private temporary folder are writable.",
    "process": "It gets no API keys in its environment; network access and files outside the workspace are not blocked.",
    "basic": "It gets no API keys in its environment; network access and files outside the workspace are not blocked.",
}
"""What the run_python tool tells the model, per level: only what the level enforces."""
LANDLOCK_DESCRIPTION = ("It gets no API keys in its environment, no TCP connections and no access to other processes; "
                        "it can write only in the workspace and a private temporary folder (other files are readable).")
"""The process level's description on a Linux kernel with Landlock ABI 6 or later."""


@dataclass(frozen=True)
class RunResult:
    """What one run produced: the exit code (None after a timeout), the raw output, and a setup error if any."""

    exit_code: int | None
    output: str
    timed_out: bool = False
    sandbox_error: str = ""
    stopped: str = ""
    """Why the call was stopped before it ended (the disk bound), or empty."""


class SandboxError(RuntimeError):
    """The sandbox could not be set up; the code did not run."""


# --------------------------------------------------------------------------------------
# The parent's side
# --------------------------------------------------------------------------------------


def sandbox_environment(home: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The code's whole environment: the allow-listed variables, a PATH, HOME/TMPDIR and the fixed values."""
    environ = os.environ if environ is None else environ
    kept = {name: environ[name] for name in ALLOWED_ENVIRONMENT if name in environ}
    python_folder = os.path.dirname(sys.executable)
    path = os.pathsep.join([python_folder, *SYSTEM_PATH]) if os.name == "posix" else environ.get("PATH", python_folder)
    folders = {"HOME": home, "TMPDIR": home, "TEMP": home, "TMP": home, "MPLCONFIGDIR": home, "USERPROFILE": home}
    return kept | {"PATH": path} | folders | FIXED_ENVIRONMENT


def levels_to_try() -> list[IsolationLevel]:
    """The levels this platform might support, strongest first; the first that starts is used."""
    if sys.platform.startswith("linux"):
        return (["namespaces-nobody"] if os.geteuid() == 0 else []) + ["namespaces-user", "process"]
    if os.name == "posix":
        return ["process"]
    return ["basic"]


@dataclass
class Sandbox:
    """Runs code for one workspace; ``hidden`` folders (scratch/, archives/) are invisible to it where possible."""

    workspace_root: Path
    hidden: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # more folders the code may read (the catalog, the flawedcode package)
    environment: dict[str, str] = field(default_factory=dict)  # more variables, set by us (never copied from ours)
    forced_level: IsolationLevel | None = None  # tests use it to check each level this platform has
    _level: IsolationLevel | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def level(self) -> IsolationLevel:
        """The strongest level that works here (found by a trial run the first time it is asked)."""
        with self._lock:
            if self._level is None:
                self._level = self.forced_level or self._first_working_level()
            return self._level

    def starts(self, level: IsolationLevel) -> bool:
        """True if ``level`` can be set up here (a trial run of ``pass``)."""
        if level not in levels_to_try():
            return False
        result = self._run_at(level, "pass", timeout=20, max_output_bytes=4_096)
        return not result.sandbox_error and result.exit_code == 0

    def description(self) -> str:
        """What the tool tells the model: only what this level enforces on this machine."""
        if self.level == "process" and landlock_abi() >= 6:
            return LANDLOCK_DESCRIPTION
        return DESCRIPTIONS[self.level]

    def run(self, code: str, timeout: float, max_output_bytes: int) -> RunResult:
        """Run ``code`` with the workspace as current folder; never raises for what the code does."""
        return self._run_at(self.level, code, timeout, max_output_bytes)

    def _first_working_level(self) -> IsolationLevel:
        candidates = levels_to_try()
        key = (os.stat(self.workspace_root).st_dev, os.geteuid() if hasattr(os, "geteuid") else 0)
        if key not in _levels_found:  # the level depends on the platform and the workspace's filesystem
            # A level is given up only after two failed trial runs: a busy machine can fail one trial run, and the
            # level decides what the tool's description says (and so the token counts a lesson prints).
            _levels_found[key] = next((level for level in candidates[:-1] if self.starts(level) or self.starts(level)),
                                      candidates[-1])
        return _levels_found[key]

    def _run_at(self, level: IsolationLevel, code: str, timeout: float, max_output_bytes: int) -> RunResult:
        if level == "basic":
            return _run_basic(self.workspace_root, code, timeout, max_output_bytes, self.environment)
        if level == "process" and sys.platform.startswith("linux"):
            make_parent_undumpable()
        run_dir = Path(tempfile.mkdtemp(prefix="flawedcode-run-"))
        try:
            home = run_dir / "home"
            home.mkdir()
            if level == "namespaces-nobody":
                os.chown(home, NOBODY_UID, NOBODY_GID)
            settings = self._settings(level, code, timeout, run_dir, home)
            settings["cgroups"] = cgroups = make_call_cgroups(f"flawedcode-{os.getpid()}-{next(_call_numbers)}")
            try:
                return _supervise(settings, timeout, max_output_bytes)
            finally:
                remove_call_cgroups(cgroups)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
            if os.name == "posix":
                strip_setid_bits(self.workspace_root)  # whatever got through: no set-uid file stays on the host

    def _settings(self, level: IsolationLevel, code: str, timeout: float, run_dir: Path, home: Path) -> dict[str, Any]:
        nobody = level == "namespaces-nobody"
        return {
            "level": level,
            "parent_pid": os.getpid(),
            "workspace": str(self.workspace_root),
            "home": str(home),
            "new_root": str(run_dir / "root"),
            "read_only": outermost([*python_folders(), *(os.path.realpath(folder) for folder in self.readable
                                                         if os.path.isdir(folder))]),
            "hidden": [str(folder) for folder in self.hidden],
            "uid": NOBODY_UID if nobody else os.geteuid(),
            "gid": NOBODY_GID if nobody else os.getegid(),
            "max_processes": MAX_PROCESSES + (processes_of(NOBODY_UID) if nobody else 0),
            "timeout": timeout,
            "max_disk_bytes": MAX_CALL_DISK_BYTES,
            "min_free_bytes": MIN_FREE_DISK_BYTES,
            "argv": [sys.executable, "-c", code],
            "env": sandbox_environment(str(home)) | self.environment,
        }


_levels_found: dict[tuple[int, int], IsolationLevel] = {}
_call_numbers = itertools.count(1)


def python_folders() -> list[str]:
    """Folders the code needs to run this Python: its installation, the virtualenv, and site-packages."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable))}
    folders.update(entry for entry in sys.path
                   if os.path.isabs(entry) and os.path.basename(entry) in {"site-packages", "dist-packages"})
    return outermost(os.path.realpath(folder) for folder in folders if os.path.isdir(folder))


def outermost(folders: Iterable[str]) -> list[str]:
    """The folders that are not inside another one of them (or inside a system folder), sorted."""
    kept: list[str] = []
    for folder in sorted(set(folders)):
        if not any(_inside(folder, other) for other in (*kept, *SYSTEM_FOLDERS)):
            kept.append(folder)
    return kept


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def processes_of(uid: int) -> int:
    """How many processes a user has now (RLIMIT_NPROC counts them all, not just the sandbox's)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


_undumpable = False


def make_parent_undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): same-user processes can no longer read this process's environ or memory."""
    global _undumpable
    if not _undumpable:
        _prctl(PR_SET_DUMPABLE, 0)
        _undumpable = True


def _supervise(settings: dict[str, Any], timeout: float, max_output_bytes: int) -> RunResult:
    """Start the supervisor (this file), hand it the settings, collect the output and the status."""
    status_read, status_write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(status_write)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(status_write,), env={}, cwd="/", start_new_session=True,
        )
    finally:
        os.close(status_write)
    capture = BoundedCapture(max_output_bytes)
    reader = threading.Thread(target=capture.read_all, args=(process.stdout,), daemon=True)
    reader.start()
    with os.fdopen(status_read, "rb") as status_stream:
        try:
            process.stdin.write(json.dumps(settings).encode("utf-8"))
            process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            exit_code = process.wait(timeout=timeout + SUPERVISOR_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            exit_code = None
        reader.join(timeout=SUPERVISOR_GRACE_SECONDS)
        status = status_stream.read().decode("utf-8", errors="replace").splitlines()
    if any(line.startswith("error: ") for line in status):
        error = next(line for line in status if line.startswith("error: "))[len("error: "):]
        return RunResult(None, capture.text(), sandbox_error=error)
    if "disk" in status:
        return RunResult(None, capture.text(), stopped=f"it took more than {MAX_CALL_DISK_BYTES / 1024**2:,.0f} MB of disk, "
                         f"or left less than {MIN_FREE_DISK_BYTES / 1024**2:,.0f} MB free; the files it wrote stay")
    timed_out = "timeout" in status or exit_code is None
    return RunResult(None if timed_out else exit_code, capture.text(), timed_out=timed_out)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _run_basic(workspace_root: Path, code: str, timeout: float, max_output_bytes: int,
               environment: dict[str, str]) -> RunResult:
    """Windows: an allow-listed environment and a timeout; nothing else is isolated."""
    home = tempfile.mkdtemp(prefix="flawedcode-run-")
    try:
        process = subprocess.Popen([sys.executable, "-c", code], cwd=workspace_root, env=sandbox_environment(home) | environment,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        capture = BoundedCapture(max_output_bytes)
        reader = threading.Thread(target=capture.read_all, args=(process.stdout,), daemon=True)
        reader.start()
        try:
            exit_code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            exit_code = None
        reader.join(timeout=SUPERVISOR_GRACE_SECONDS)
        return RunResult(exit_code, capture.text(), timed_out=exit_code is None)
    finally:
        shutil.rmtree(home, ignore_errors=True)


class BoundedCapture:
    """Keeps the first and last ``max_bytes // 2`` bytes of a stream and counts what it dropped."""

    def __init__(self, max_bytes: int) -> None:
        self.keep = max_bytes // 2
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
        """What was kept (decoded with replacement), with a marker saying how much was cut from the middle."""
        tail = b"".join(self.tail)
        extra = max(0, len(tail) - self.keep)
        tail, dropped = tail[extra:], self.dropped + extra
        head = self.head.decode("utf-8", errors="replace")
        rest = tail.decode("utf-8", errors="replace")
        if not dropped:
            return head + rest
        return f"{head}\n... [{dropped:,} bytes of output cut from the middle] ...\n{rest}"


# --------------------------------------------------------------------------------------
# Linux system calls (ctypes; the constants are from the kernel's uapi headers)
# --------------------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 38, 47, 4
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # the same number on every architecture
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 0x1, 0o2000000
AT_EMPTY_PATH, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = 0x1000, 0x8000, 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 0x1, 0x2, 0x4, 0x100000
AT_FDCWD = -100


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


_libc_handle: Any = None


def _libc() -> Any:
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _libc_handle.syscall.restype = ctypes.c_long
    return _libc_handle


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def _prctl(option: int, value: int, arg3: int = 0) -> None:
    _check(_libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(arg3), ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl({option})")


def _unshare(flags: int) -> None:
    _check(_libc().unshare(flags), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc().mount(_bytes_or_none(source), target.encode(), _bytes_or_none(fstype), ctypes.c_ulong(flags),
                         _bytes_or_none(data)), f"mount {target}")


def _bytes_or_none(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount_setattr(path: str, attr_set: int, *, recursive: bool, userns_fd: int = 0, fd: int = AT_FDCWD) -> None:
    attr = _MountAttr(attr_set, 0, 0, userns_fd)
    flags = (AT_RECURSIVE if recursive else 0) | (AT_EMPTY_PATH if not path else 0)
    _check(_libc().syscall(SYS_MOUNT_SETATTR, fd, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)),
           f"mount_setattr {path or fd}")


# --------------------------------------------------------------------------------------
# The supervisor's side (this file run as a script)
# --------------------------------------------------------------------------------------


def supervisor_main(status_fd: int) -> None:
    """Set up the level, run the code as a child, report on the status pipe, exit with the code's exit code."""
    status = os.fdopen(status_fd, "w", buffering=1)
    try:
        if sys.platform.startswith("linux"):
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        settings = json.loads(sys.stdin.buffer.read())
        if os.getppid() != settings["parent_pid"]:
            os._exit(1)  # the parent died before we could ask to die with it
        _join_cgroups(settings.get("cgroups", []))
        _stdin_from_devnull()
        if settings["level"].startswith("namespaces"):
            code = _run_in_namespaces(settings, status)
        else:
            code = _run_as_process(settings, status)
    except BaseException as error:  # report, never a traceback the model would read as the script's
        status.write(f"error: {type(error).__name__}: {error}\n")
        status.flush()
        os._exit(1)
    os._exit(code)


def _stdin_from_devnull() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def _run_in_namespaces(settings: dict[str, Any], status: Any) -> int:
    """New mount, PID, network, IPC and UTS namespaces (plus a user namespace for an ordinary user)."""
    idmap_fd = _idmap_userns(settings["uid"], settings["gid"]) if settings["level"] == "namespaces-nobody" else -1
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if settings["level"] == "namespaces-user":
        uid, gid = os.geteuid(), os.getegid()
        _unshare(flags | CLONE_NEWUSER)
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    else:
        _unshare(flags)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount is seen by the host
    init = os.fork()
    if init == 0:  # pid 1 of the new PID namespace: when it exits, every process left in it is killed
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            _build_root(settings, idmap_fd)
            _drop_privileges(settings)
            os._exit(_run_child(settings, status, sweep=None))
        except BaseException as error:
            status.write(f"error: {type(error).__name__}: {error}\n")
            status.flush()
            os._exit(1)
    status.close()
    return _exit_code(os.waitpid(init, 0)[1])


def _idmap_userns(uid: int, gid: int) -> int:
    """A user namespace mapping uid/gid 0 to ``uid``/``gid``: the idmap that shows root's files as nobody's."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            _unshare(CLONE_NEWUSER)
            os.write(ready_write, b"1")
            os.read(done_read, 1)
        finally:
            os._exit(0)
    try:
        if os.read(ready_read, 1) != b"1":
            raise OSError("could not create a user namespace for the idmapped mount")
        Path(f"/proc/{child}/uid_map").write_text(f"0 {uid} 1")
        Path(f"/proc/{child}/setgroups").write_text("deny")
        Path(f"/proc/{child}/gid_map").write_text(f"0 {gid} 1")
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(done_write, b"1")
        os.waitpid(child, 0)
        for fd in (ready_read, ready_write, done_read, done_write):
            os.close(fd)


def _build_root(settings: dict[str, Any], idmap_fd: int) -> None:
    """Assemble the new root (see the module docstring, note 4) under ``new_root`` and chroot into it."""
    root = settings["new_root"]
    os.makedirs(root, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            os.symlink(os.readlink(folder), root + folder)
        elif os.path.isdir(folder):
            _bind(folder, root, read_only=True)
    for folder in settings["read_only"]:
        _bind(folder, root, read_only=True)
    _bind(settings["workspace"], root, read_only=False, idmap_fd=idmap_fd)
    os.makedirs(root + settings["home"], exist_ok=True)  # HOME and TMPDIR: a bounded tmpfs, counted in the call's memory
    _mount("tmpfs", root + settings["home"], "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={HOME_BYTES},mode=0700,uid={settings['uid']},gid={settings['gid']}")
    _make_dev(root)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for folder in settings["hidden"]:
        if os.path.isdir(root + folder):
            _mount("tmpfs", root + folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0555")
    _mount_setattr(root, MOUNT_ATTR_RDONLY, recursive=False)
    os.chroot(root)
    os.chdir(settings["workspace"])


def _bind(source: str, root: str, *, read_only: bool, idmap_fd: int = -1) -> None:
    """Show host folder ``source`` at the same path inside ``root``."""
    target = root + source
    if not os.path.isdir(target):
        os.makedirs(target, exist_ok=True)
    if idmap_fd >= 0:
        tree = _check(_libc().syscall(SYS_OPEN_TREE, AT_FDCWD, source.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
                      f"open_tree {source}")
        try:
            _mount_setattr("", MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, recursive=False,
                           userns_fd=idmap_fd, fd=tree)
            _check(_libc().syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
                   f"move_mount {source}")
        finally:
            os.close(tree)
        return
    _mount(source, target, None, MS_BIND | MS_REC)
    attributes = MOUNT_ATTR_NOSUID | (MOUNT_ATTR_RDONLY if read_only else 0)
    _mount_setattr(target, attributes, recursive=True)


def _make_dev(root: str) -> None:
    """A minimal /dev: a few harmless devices, the standard stream links and a private /dev/shm."""
    dev = root + "/dev"
    os.makedirs(dev, exist_ok=True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=0755,size=64k")
    for name in DEVICES:
        Path(f"{dev}/{name}").touch()
        _mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    os.makedirs(f"{dev}/shm")
    _mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={SHM_BYTES}")


def _drop_privileges(settings: dict[str, Any]) -> None:
    """No capability survives: clear the bounding and ambient sets, set no_new_privs, and (as root) become nobody."""
    last_capability = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last_capability + 1):
        _prctl(PR_CAPBSET_DROP, capability)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if settings["level"] == "namespaces-nobody":
        os.setgroups([])
        os.setresgid(settings["gid"], settings["gid"], settings["gid"])
        os.setresuid(settings["uid"], settings["uid"], settings["uid"])
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _run_as_process(settings: dict[str, Any], status: Any) -> int:
    """No namespaces: capabilities dropped, and (Linux) a subreaper that kills every descendant at the end."""
    linux = sys.platform.startswith("linux")
    if linux:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if linux and os.geteuid() == 0:
        _drop_privileges(settings)
    os.chdir(settings["workspace"])
    return _run_child(settings, status, sweep=_kill_descendants if linux else _kill_child_group)


def _run_child(settings: dict[str, Any], status: Any, sweep: Any) -> int:
    """Fork the code's process, wait for it (at most the timeout), then clean up and return its exit code."""
    status.write("ok\n")
    status.flush()
    disk = DiskWatch(settings["workspace"], settings.get("max_disk_bytes"), settings.get("min_free_bytes"))
    child = os.fork()
    if child == 0:
        try:
            os.setpgid(0, 0)
            _set_limits(settings)
            if sys.platform.startswith("linux"):
                _prctl(PR_SET_NO_NEW_PRIVS, 1)
                if settings["level"] == "process":
                    _restrict_with_landlock(settings)
                _forbid_setid_modes()
        except BaseException as error:  # the code must not run without what was promised; say why
            os.write(status.fileno(), f"error: {type(error).__name__}: {error}\n".encode())
            os._exit(127)
        try:
            status.close()
            os.execve(settings["argv"][0], settings["argv"], settings["env"])
        finally:
            os._exit(127)
    code = _wait_with_deadline(child, time.monotonic() + settings["timeout"], disk)
    if code is None:
        status.write("disk\n" if disk.exceeded else "timeout\n")
        status.flush()
    if sweep is not None:
        sweep(child)
    status.close()
    return 0 if code is None else code


# --- the whole call in one cgroup (as root) -----------------------------------------------------------

CGROUP_EXTRA_PROCESSES = 4
"""The supervisor and the namespace's init count in the call's cgroup too."""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, type, super options) of each cgroup mount of this process."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under ``""`` its v2 path."""
    paths: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _number, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    except (OSError, ValueError):
        pass
    return paths


def make_call_cgroups(name: str) -> list[str]:
    """Folders of new cgroups bounding one call: ``pids.max`` and the memory limit for everything it starts.

    cgroup v2 where the mount's root delegates ``pids`` and ``memory``; else cgroup v1's ``pids`` and ``memory``
    hierarchies, under this process's own cgroup. Only root can make them (an ordinary user's level bounds
    processes with RLIMIT_NPROC instead). Any step that fails leaves that bound out: [] when none could be made.
    """
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return []
    made: list[str] = []
    own = _own_cgroups()
    limits = {"pids": {"pids.max": MAX_PROCESSES + CGROUP_EXTRA_PROCESSES},
              "memory": {"memory.max": MAX_MEMORY_BYTES, "memory.swap.max": 0, "memory.limit_in_bytes": MAX_MEMORY_BYTES}}
    for mount, kind, options in _mounts():
        if kind == "cgroup2":
            try:
                delegated = set(Path(mount, "cgroup.subtree_control").read_text().split())
            except OSError:
                continue
            wanted = [controller for controller in ("pids", "memory") if controller in delegated]
            folder = os.path.join(mount, name) if wanted else None
        else:
            wanted = [controller for controller in ("pids", "memory") if controller in options]
            folder = os.path.join(mount + own.get(wanted[0], "/"), name) if wanted else None
        if folder is None:
            continue
        try:
            os.mkdir(folder, 0o755)
        except OSError:
            continue
        made.append(folder)
        for controller in wanted:
            for setting, value in limits[controller].items():
                try:
                    Path(folder, setting).write_text(str(value))
                except OSError:
                    continue  # e.g. memory.swap.max without swap accounting
        if kind == "cgroup2":
            break  # one v2 cgroup holds both controllers
    return made


def remove_call_cgroups(folders: list[str]) -> None:
    """Kill whatever is left in the call's cgroups, then remove them."""
    for folder in folders:
        for _attempt in range(50):
            try:
                pids = [int(pid) for pid in Path(folder, "cgroup.procs").read_text().split()]
            except OSError:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(folder)
                break
            except OSError:
                time.sleep(0.02)


def _join_cgroups(folders: list[str]) -> None:
    """The supervisor moves itself into the call's cgroups: everything it starts is counted there."""
    for folder in folders:
        Path(folder, "cgroup.procs").write_text(str(os.getpid()))


# --- no set-uid or set-gid file can be made (seccomp) -------------------------------------------------

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
MODE_ARGUMENT = {  # system calls that set a file's mode, and which argument holds it
    "x86_64": {2: 2, 85: 1, 83: 1, 90: 1, 91: 1, 133: 1, 257: 3, 258: 2, 259: 2, 268: 2, 452: 2},
    "aarch64": {56: 3, 34: 2, 33: 2, 52: 1, 53: 2, 452: 2},
}
"""open, creat, mkdir, chmod, fchmod, mknod, openat, mkdirat, mknodat, fchmodat, fchmodat2 (aarch64 has only the *at ones)."""
REFUSED_CALLS = (437, 425, 426, 427)
"""openat2 (its mode is in a struct a filter cannot read) and io_uring (it would open files without a system call):
refused with ENOSYS, so Python and libc fall back to openat."""
SET_ID_BITS = 0o6000
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
X32_SYSCALL_BIT = 0x40000000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def setid_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The seccomp program (BPF) that refuses a mode with the set-uid or set-gid bit, and the calls listed above."""
    load, jump_equal, jump_set, ret = 0x20, 0x15, 0x45, 0x06
    program = [(load, 0, 0, 4), (jump_equal, 1, 0, AUDIT_ARCH[machine]), (ret, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
               (load, 0, 0, 0)]  # another ABI (32-bit compat) gets nothing; then the call's number
    if machine == "x86_64":
        program += [(jump_set, 0, 1, X32_SYSCALL_BIT), (ret, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    for number in REFUSED_CALLS:
        program += [(jump_equal, 0, 1, number), (ret, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    for number, argument in MODE_ARGUMENT[machine].items():
        program += [(jump_equal, 0, 4, number), (load, 0, 0, 16 + 8 * argument), (jump_set, 0, 1, SET_ID_BITS),
                    (ret, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM), (ret, 0, 0, SECCOMP_RET_ALLOW)]
    return [*program, (ret, 0, 0, SECCOMP_RET_ALLOW)]


def _forbid_setid_modes() -> None:
    """Install ``setid_filter`` (needs no_new_privs); on an architecture without a table, the sweep after the call remains."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCH:
        return
    program = setid_filter(machine)
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), filters)
    _check(_libc().prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ctypes.c_ulong(0),
                         ctypes.c_ulong(0)), "seccomp")


def strip_setid_bits(root: Path, max_entries: int = 200_000) -> int:
    """Clear the set-uid and set-gid bits of every file and folder under ``root`` (never following a symlink).

    Run after every call, behind the seccomp filter: what the code left can never run with another user's rights.
    Returns how many were cleared.
    """
    cleared = seen = 0
    for _folder, folders, files, folder_fd in os.fwalk(root, follow_symlinks=False):
        for name in (*folders, *files):
            seen += 1
            if seen > max_entries:
                return cleared
            try:
                info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                if info.st_mode & SET_ID_BITS and not stat.S_ISLNK(info.st_mode):
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
                    try:
                        os.fchmod(fd, os.fstat(fd).st_mode & 0o1777)
                        cleared += 1
                    finally:
                        os.close(fd)
            except OSError:
                continue
    return cleared


# --- the process level on Linux: Landlock ---------------------------------------------------------------

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_ABI1 = (1 << 13) - 1  # execute ... make_sym: every right of ABI 1
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
LANDLOCK_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                              ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _restrict_with_landlock(settings: dict[str, Any]) -> None:
    """Process level: a Landlock domain (needs no_new_privs). What it enforces depends on the ABI:

    1+: no ptrace of a process outside the domain, so no other process's environ or memory; writes only in the
    workspace and HOME (reads and execution anywhere). 4+: no TCP connect or bind. 6+: no signal to a process
    outside the domain, no abstract unix socket outside it.
    """
    abi = landlock_abi()
    if abi < 1:
        return  # no Landlock here: the module docstring says what is then not enforced
    every = FS_ABI1 | (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0) | (FS_IOCTL_DEV if abi >= 5 else 0)
    attr = _RulesetAttr(every, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(_libc().syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                     ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        device = FS_READ_FILE | FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0) | (FS_IOCTL_DEV if abi >= 5 else 0)
        rules = [("/", FS_EXECUTE | FS_READ_FILE | FS_READ_DIR), (settings["workspace"], every),
                 (settings["home"], every), ("/dev/shm", every), *((path, device) for path in LANDLOCK_DEVICES)]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # e.g. no /dev/shm here
            try:
                rule = _PathBeneathAttr(access, fd)
                _check(_libc().syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule),
                                       ctypes.c_uint32(0)), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        _check(_libc().syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _set_limits(settings: dict[str, Any]) -> None:
    import resource

    cpu = int(settings["timeout"]) + EXTRA_CPU_SECONDS
    for name, value in (("RLIMIT_NPROC", settings["max_processes"]), ("RLIMIT_AS", MAX_MEMORY_BYTES),
                        ("RLIMIT_FSIZE", MAX_FILE_BYTES), ("RLIMIT_NOFILE", MAX_OPEN_FILES),
                        ("RLIMIT_CORE", 0), ("RLIMIT_CPU", cpu)):
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        _soft, hard = resource.getrlimit(limit)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (value, value))


class DiskWatch:
    """The free space of the workspace's filesystem, read at the start of a call and every ``DISK_CHECK_SECONDS``."""

    def __init__(self, workspace: str, max_bytes: int | None, min_free_bytes: int | None) -> None:
        self.workspace, self.max_bytes, self.min_free = workspace, max_bytes, min_free_bytes or 0
        self.start, self.next_check, self.exceeded = self.free(), 0.0, False

    def free(self) -> int | None:
        try:
            stats = os.statvfs(self.workspace)
        except OSError:
            return None
        return stats.f_bavail * stats.f_frsize

    def over(self) -> bool:
        """Whether the call has taken more than its share (read at most once per ``DISK_CHECK_SECONDS``)."""
        now = time.monotonic()
        if self.max_bytes is None or self.start is None or now < self.next_check:
            return False
        self.next_check = now + DISK_CHECK_SECONDS
        free = self.free()
        taken = 0 if free is None else self.start - free
        self.exceeded = free is not None and taken > 0 and (taken > self.max_bytes or free < self.min_free)
        return self.exceeded


def _wait_with_deadline(child: int, deadline: float, disk: DiskWatch | None = None) -> int | None:
    """The child's exit code, or None if it is still running at the deadline or past the disk bound (then it is killed)."""
    while True:
        pid, wait_status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            return _exit_code(wait_status)
        if time.monotonic() >= deadline or (disk is not None and disk.over()):
            try:
                os.killpg(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(child, 0)
            return None
        time.sleep(0.01)


def _exit_code(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def _kill_descendants(_child: int) -> None:
    """As a child subreaper, every orphan re-parents to us: kill our children until none is left."""
    me = os.getpid()
    while children := _children_of(me):
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:  # reap whatever died
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _children_of(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                children.append(int(entry))
    return children


def _kill_child_group(child: int) -> None:
    try:
        os.killpg(child, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    supervisor_main(int(sys.argv[1]))
