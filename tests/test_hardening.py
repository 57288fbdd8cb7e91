"""The file tools and run_python under attack, through the tools a model calls (issue 13's findings).

Races (a folder and a symlink swapped with ``renameat2(RENAME_EXCHANGE)`` while a
tool resolves a path), hard links, FIFOs and devices, huge files, symlink loops
and depth bombs, file names that are not UTF-8, offloaded results with NUL bytes,
archives of other conversations, and temporary workspaces left behind.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import io
import os
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest

from flawedcode import cli, paths
from flawedcode.agents import make_agent
from flawedcode.infra import safefs
from flawedcode.tools import Workspace, make_tools

LINUX = sys.platform.startswith("linux")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "workspace", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")


@pytest.fixture
def call(workspace: Workspace):
    tools = {each.name: each for each in make_tools(workspace)}

    def invoke(name: str, **arguments) -> str:
        result = tools[name].invoke(arguments)
        assert isinstance(result, str)
        result.encode("utf-8")  # every result is valid UTF-8, whatever the file names
        return result

    return invoke


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("OUTSIDE SECRET\n")
    return folder


@pytest.fixture(params=["openat2", "walk"])
def resolution(request: pytest.FixtureRequest):
    """Run a test with the kernel's RESOLVE_BENEATH and with the portable O_NOFOLLOW walk."""
    if request.param == "openat2":
        if not safefs.openat2_available():
            pytest.skip("openat2 is not available on this kernel")
        yield request.param
    else:
        with safefs.without_openat2():
            yield request.param


# ----------------------------------------------------------------------------- races


RENAME_EXCHANGE = 2


def swapper(first: Path, second: Path, stop: threading.Event) -> threading.Thread:
    """A thread that keeps swapping two names atomically (a folder and a symlink) until ``stop``."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("this C library has no renameat2")

    def run() -> None:
        while not stop.is_set():
            if libc.renameat2(-100, bytes(first), -100, bytes(second), RENAME_EXCHANGE) != 0:
                error = ctypes.get_errno()
                if error in (errno.ENOSYS, errno.EINVAL):
                    return
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def swapping(workspace: Workspace, outside: Path):
    """``swap`` alternates between a real folder (holding secret.txt) and a symlink to ``outside``."""
    if not LINUX:
        pytest.skip("renameat2 is Linux-only")
    real = workspace.root / "swap"
    real.mkdir()
    (real / "secret.txt").write_text("inside\n")
    link = workspace.root / "swap_link"
    link.symlink_to(outside, target_is_directory=True)
    stop = threading.Event()
    thread = swapper(real, link, stop)
    yield
    stop.set()
    thread.join()


def test_read_file_never_escapes_while_a_folder_and_a_symlink_are_swapped(call, swapping, resolution):
    results = [call("read_file", path="swap/secret.txt") for _ in range(1_500)]
    assert not [result for result in results if "OUTSIDE SECRET" in result]
    assert any(result.endswith("inside") for result in results)  # the race was really run


def test_write_file_never_escapes_while_a_folder_and_a_symlink_are_swapped(call, swapping, outside, resolution):
    for number in range(500):
        call("write_file", path=f"swap/new_{number}.txt", content="x")
    assert sorted(path.name for path in outside.iterdir()) == ["secret.txt"]


def test_list_and_search_never_escape_while_swapped(call, swapping):
    for _ in range(200):
        assert "OUTSIDE SECRET" not in call("search_files", pattern="SECRET", path="swap")
        assert "secret.txt (15 bytes)" not in call("list_files", path="swap")


# ----------------------------------------------------------------------------- hard links, FIFOs, devices


def test_a_hard_link_to_a_file_outside_is_refused(call, workspace, outside):
    os.link(outside / "secret.txt", workspace.root / "linked.txt")
    result = call("read_file", path="linked.txt")
    assert result.startswith("Error: ") and "hard link" in result
    assert "OUTSIDE SECRET" not in call("search_files", pattern="SECRET")


def test_a_fifo_is_refused_at_once(call, workspace):
    fifo = workspace.root / "pipe"
    os.mkfifo(fifo)
    answers: list[str] = []
    reader = threading.Thread(target=lambda: answers.append(call("read_file", path="pipe")), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # release the hung reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_file hung on a FIFO")
    assert answers[0].startswith("Error: ") and "FIFO" in answers[0]
    assert "pipe" in call("list_files")  # listing names it without opening it
    assert call("search_files", pattern="zebra_quagga").startswith("No matches")  # the FIFO is not opened


@pytest.mark.skipif(not ROOT, reason="making a device node needs root")
def test_a_device_is_refused(call, workspace):
    os.mknod(workspace.root / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = call("read_file", path="null")
    assert result.startswith("Error: ") and "character device" in result


def test_a_200_mb_file_is_paged_without_loading_it(call, workspace):
    line = "0123456789 " * 9 + "\n"  # 100 bytes
    block = line * 10_000  # 1 MB
    with open(workspace.root / "big.txt", "w") as stream:
        for _ in range(200):
            stream.write(block)
    tracemalloc.start()
    try:
        result = call("read_file", path="big.txt", offset=1_999_990, limit=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.splitlines() == ["# big.txt (lines 1999991-1999995 of 2000000)", *[line.rstrip("\n")] * 5,
                                   "# ... 5 more lines: read_file(path='big.txt', offset=1999995)"]
    assert peak < 20 * 1024**2, f"peak {peak:,} bytes"


# ----------------------------------------------------------------------------- loops and depth bombs


@pytest.fixture
def deep_tree(workspace: Workspace):
    """``deep/d/d/...``, 1,200 levels; removed afterwards one level at a time (rmtree would recurse too deep)."""
    deep = workspace.root / "deep"
    yield deep
    while (deep / "d").exists():
        os.rename(deep / "d", workspace.root / "next")
        os.rmdir(deep)
        os.rename(workspace.root / "next", deep)


def test_a_symlink_loop_and_a_1200_deep_tree_do_not_break_listing_or_search(call, workspace, deep_tree):
    (workspace.root / "loop").symlink_to(".", target_is_directory=True)
    (workspace.root / "a_loop").symlink_to("b_loop")
    (workspace.root / "b_loop").symlink_to("a_loop")
    fd = os.open(workspace.root, os.O_RDONLY)
    for _ in range(1_200):  # deeper than PATH_MAX allows by name, so walk by descriptor
        os.mkdir("d", dir_fd=fd)
        following = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = following
    os.close(fd)
    (workspace.root / "d").rename(deep_tree)
    listing = call("list_files")
    assert not listing.startswith("Error") and "analyze.py (" in listing
    assert "more than 64 levels deep" in listing
    assert str(workspace.root) not in listing
    found = call("search_files", pattern="def daily_returns")
    assert found.startswith("analyze.py:") and str(workspace.root) not in found
    assert "loop (symlink)" in listing
    for result in (call("read_file", path="a_loop"), call("list_files", path="loop/loop/loop")):
        assert str(workspace.root) not in result


# ----------------------------------------------------------------------------- bad names and bad bytes


def test_file_names_that_are_not_utf8_are_shown_escaped_everywhere(call, workspace):
    if sys.platform == "darwin":
        pytest.skip("macOS file systems refuse names that are not UTF-8")
    name = b"caf\xe9 report.txt"
    with open(os.path.join(os.fsencode(workspace.root), name), "wb") as stream:
        stream.write(b"needle in a latin-1 named file\n")
    listing = call("list_files")
    assert "caf\\xe9 report.txt (31 bytes)" in listing.splitlines()
    assert "caf\\xe9 report.txt:1: needle in a latin-1 named file" in call("search_files", pattern="needle")
    assert call("read_file", path="caf\\xe9 report.txt").splitlines()[1] == "needle in a latin-1 named file"
    missing = call("read_file", path="caf\udce9 missing.txt")  # a surrogate in the model's own path
    assert missing.startswith("Error: ") and "caf\\xe9 missing.txt" in missing


def test_an_offloaded_result_with_nul_bytes_reads_back_byte_for_byte(call, workspace):
    content = "header\nvalue\x00with a NUL\nlast line"
    workspace.conversation_scratch_dir.mkdir(parents=True)
    (workspace.conversation_scratch_dir / "run_python_0123456789abcdef.txt").write_bytes(content.encode("utf-8"))
    result = call("read_file", path="scratch/run_python_0123456789abcdef.txt")
    assert result.split("\n", 1)[1] == content
    (workspace.root / "image.bin").write_bytes(b"\x89PNG\x00\x00")
    assert call("read_file", path="image.bin").startswith("Error: ")


# ----------------------------------------------------------------------------- run_python through the tool


PARENT = """
import os, sys
from pathlib import Path
from flawedcode.tools import Workspace, make_tools
held = sys.argv[3][::-1] * 2  # the memory marker exists only in this process's memory
base = Path(sys.argv[1])
workspace = Workspace.create(base / "w", scratch_dir=base / "s", archive_dir=base / "a")
attack = Path(sys.argv[2]).read_text().replace("@TARGET@", str(os.getpid()))
print({each.name: each for each in make_tools(workspace)}["run_python"].invoke({"code": attack}))
"""

ATTACK = """
import os
env_marker, mem_marker = @ENV@[::-1].encode(), @MEM@[::-1].encode()
for pid in {@TARGET@, os.getppid()}:
    try:
        print('LEAKED-ENVIRON' if env_marker in open(f'/proc/{pid}/environ', 'rb').read() else 'environ clean')
    except OSError as error:
        print('environ refused', error.errno)
    try:
        regions = [line.split() for line in open(f'/proc/{pid}/maps')]
        with open(f'/proc/{pid}/mem', 'rb', buffering=0) as memory:
            for region in regions:
                start, end = (int(value, 16) for value in region[0].split('-'))
                if region[1].startswith('rw') and end - start < 2**28:
                    try:
                        memory.seek(start)
                        if mem_marker in memory.read(end - start):
                            print('LEAKED-MEMORY')
                            break
                    except OSError:
                        continue
    except OSError as error:
        print('mem refused', error.errno)
"""


def test_run_python_cannot_read_the_parents_environment_or_memory(tmp_path):
    if not LINUX:
        pytest.skip("reads /proc")
    env_marker, mem_marker = f"sk-{uuid.uuid4().hex}", f"in-memory-{uuid.uuid4().hex}"
    attack = ATTACK.replace("@ENV@", repr(env_marker[::-1])).replace("@MEM@", repr(mem_marker[::-1]))
    (tmp_path / "attack.py").write_text(attack)
    done = subprocess.run([sys.executable, "-c", PARENT, str(tmp_path), str(tmp_path / "attack.py"), mem_marker[::-1]],
                          capture_output=True, text=True, timeout=120,
                          env=os.environ | {"OPENAI_API_KEY": env_marker})  # in the parent's environment from its start
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# exit code 0")
    assert "LEAKED" not in done.stdout and env_marker not in done.stdout, done.stdout


def test_run_python_gets_none_of_the_secret_variables_a_deny_list_missed(call, monkeypatch):
    for name in ("DATABASE_URL", "GH_PAT", "HF_AUTH", "MYSQL_PWD"):
        monkeypatch.setenv(name, f"value-of-{name}")
    assert "value-of-" not in call("run_python", code="import os; print(dict(os.environ))")


def test_run_python_with_a_setsid_child_returns_at_once_and_leaves_nothing(call, workspace):
    if workspace.sandbox.level in ("basic",) or (workspace.sandbox.level == "process" and not LINUX):
        pytest.skip("this platform's level cannot kill setsid children (documented)")
    marker = f"flawedcode-{uuid.uuid4().hex}"
    code = ("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
            f"'import time; time.sleep(20)  # {marker}'], start_new_session=True)\nprint('done')")
    began = time.monotonic()
    assert call("run_python", code=code) == "# exit code 0\ndone"
    assert time.monotonic() - began < 4  # it used to wait 5 s for the child's copy of stdout
    time.sleep(0.3)
    assert not [entry for entry in Path("/proc").iterdir()
                if entry.name.isdigit() and marker.encode() in _cmdline(entry)]


def _cmdline(entry: Path) -> bytes:
    try:
        return (entry / "cmdline").read_bytes()
    except OSError:
        return b""


def test_run_python_cannot_write_scratch_or_archives(call, workspace):
    if not workspace.sandbox.level.startswith("namespaces"):
        pytest.skip("only the namespace levels protect scratch/ and archives/ (documented)")
    code = "".join(f"\ntry:\n    open({str(folder / 'planted.txt')!r}, 'w').write('x')\nexcept OSError as e:\n    print(e)"
                   for folder in (workspace.scratch_dir, workspace.archive_dir))
    call("run_python", code=code)
    assert not (workspace.scratch_dir / "planted.txt").exists()
    assert not (workspace.archive_dir / "planted.txt").exists()


# ----------------------------------------------------------------------------- archives of other conversations


def test_a_session_cannot_read_another_sessions_archive():
    first = make_agent("v2")
    second = make_agent("v2")
    try:
        folder = paths.archive_dir() / first.conversation_id
        folder.mkdir(parents=True)
        (folder / "0001.md").write_text("the first session's secret plan\n")
        tools = {each.name: each for each in second.tools}
        result = tools["read_file"].invoke({"path": f"archives/{first.conversation_id}/0001.md"})
        assert result.startswith("Error: ") and "another conversation" in result
        assert "secret plan" not in tools["search_files"].invoke({"pattern": "secret", "path": "archives"})
        assert first.conversation_id not in tools["list_files"].invoke({"path": "archives"})
        own = {each.name: each for each in first.tools}
        assert "secret plan" in own["read_file"].invoke({"path": f"archives/{first.conversation_id}/0001.md"})
        first.reset()  # a new conversation: the old archive is another conversation's now
        assert own["read_file"].invoke({"path": f"archives/{folder.name}/0001.md"}).startswith("Error: ")
    finally:
        first.workspace.cleanup()
        second.workspace.cleanup()


# ----------------------------------------------------------------------------- temporary workspaces


def test_a_temporary_workspace_is_removed_after_its_with_block(tmp_path):
    with Workspace.create(scratch_dir=tmp_path / "s", archive_dir=tmp_path / "a") as workspace:
        root = workspace.root
        assert (root / "analyze.py").exists()
    assert not root.exists()


def test_a_given_workspace_folder_is_kept(tmp_path):
    with Workspace.create(tmp_path / "mine", scratch_dir=tmp_path / "s", archive_dir=tmp_path / "a"):
        pass
    assert (tmp_path / "mine" / "analyze.py").exists()


def test_chat_leaves_no_temporary_workspace_behind(tmp_path, monkeypatch, capsys):
    temp = tmp_path / "temp"
    temp.mkdir()
    environment = os.environ | {"TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    done = subprocess.run([sys.executable, "-m", "flawedcode", "chat", "--agent", "v1"], input="list the files\nquit\n",
                          capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "flawedcode-workspace-" in done.stdout  # it did make one ...
    assert not list(temp.glob("flawedcode-workspace-*"))  # ... and removed it
    kept = tmp_path / "kept"  # a workspace the user names is kept (in-process: the run above is the real command)
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    assert cli.main(["chat", "--workspace", str(kept)]) == 0 and (kept / "analyze.py").exists(), capsys.readouterr().err


def test_a_workspace_made_without_a_root_is_removed_at_exit(tmp_path):
    code = "from flawedcode.tools import Workspace; print(Workspace.create().root)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=os.environ | {"TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert not Path(done.stdout.strip()).exists()


def test_numbers_in_the_docstrings_come_from_the_constants():
    from flawedcode import tools
    from flawedcode.infra import sandbox

    assert f"read_file up to {tools.MAX_READ_FILE_BYTES // 1024**2} MB" in tools.__doc__
    assert f"search_files skips files over {tools.MAX_SEARCH_FILE_BYTES // 1024**2} MB" in tools.__doc__
    assert f"stop descending {safefs.MAX_WALK_DEPTH} levels" in tools.__doc__
    assert f"after {safefs.MAX_WALK_ENTRIES:,} entries" in tools.__doc__
    assert f"about {tools.MAX_RUN_OUTPUT_CHARS:,} bytes" in tools.__doc__
    assert sandbox.NOBODY_UID == 65534 and "(uid 65534)" in sandbox.__doc__


def test_run_python_can_read_the_catalog_and_import_flawedcode_but_not_change_them(call, workspace):
    # A statistic over more rows than fit in the context is computed by a script: it needs the catalog.
    code = (
        "import os\n"
        "from flawedcode.catalog import Catalog\n"
        "print(len(Catalog().load('money_markets', 'sofr', limit=500)))\n"
        "target = os.path.join(os.environ['FLAWEDCODE_DATA_DIR'], 'chartbook.toml')\n"
        "try:\n"
        "    open(target, 'a').close()\n"
        "    print('WROTE')\n"
        "except OSError as error:\n"
        "    print('refused', error.errno)\n"
    )
    output = call("run_python", code=code, timeout=60)
    assert output.startswith("# exit code 0") and "\n500\n" in output
    if workspace.sandbox.level.startswith("namespaces"):  # the catalog is bound read-only
        assert "refused" in output and "WROTE" not in output
