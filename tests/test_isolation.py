"""run_python's sandbox under attack: each guarantee of ``flawedcode.infra.sandbox`` checked by an adversarial script.

Each test runs at every isolation level this platform supports (a level that cannot
start here is skipped with the reason) and asserts what the module docstring's table
promises for that level. The same attacks run once more as an ordinary user
(``nobody``) when the tests run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from flawedcode.infra import sandbox
from flawedcode.infra.sandbox import MAX_PROCESSES, Sandbox, levels_to_try
from flawedcode.tools import Workspace, make_tools

LINUX = sys.platform.startswith("linux")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NAMESPACE_LEVELS = {"namespaces-nobody", "namespaces-user"}
ALL_LEVELS = ["namespaces-nobody", "namespaces-user", "process", "basic"]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "workspace", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")


@pytest.fixture(params=ALL_LEVELS)
def level(request: pytest.FixtureRequest, workspace: Workspace) -> str:
    if request.param not in levels_to_try():
        pytest.skip(f"{request.param} is not a level of this platform ({sys.platform}, root={ROOT})")
    if not Sandbox(workspace.root).starts(request.param):
        pytest.skip(f"{request.param} cannot start here (namespaces or idmapped mounts unavailable)")
    return request.param


def run_at(workspace: Workspace, level: str, code: str, timeout: int = 20) -> sandbox.RunResult:
    box = Sandbox(workspace.root, hidden=(workspace.scratch_dir, workspace.archive_dir), forced_level=level)
    result = box.run(code, timeout, 200_000)
    assert not result.sandbox_error, result.sandbox_error
    return result


def call_cgroups_here() -> list[str]:
    """The cgroups a call gets on this machine (made and removed again): [] when not root or none is delegated."""
    made = sandbox.make_call_cgroups(f"flawedcode-test-probe-{os.getpid()}")
    sandbox.remove_call_cgroups(made)
    return made


def processes_with(marker: str) -> list[int]:
    """Live processes on the host whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] not in {"Z", "X"}:
                    found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


# The attack on the parent: read its environ and scan its writable memory for a marker. The markers
# arrive reversed, so the script's own text (which its supervisor holds) never contains them.
READ_PARENT = textwrap.dedent("""
    import os, re, sys
    env_marker, mem_marker = sys.argv[1][::-1].encode(), sys.argv[2][::-1].encode()
    for pid in {int(sys.argv[3]), os.getppid()}:
        try:
            if env_marker in open(f'/proc/{pid}/environ', 'rb').read():
                print('LEAKED-ENVIRON', pid)
        except OSError as error:
            print('environ', pid, type(error).__name__)
        try:
            regions = open(f'/proc/{pid}/maps').read().splitlines()
            with open(f'/proc/{pid}/mem', 'rb', buffering=0) as memory:
                for region in regions:
                    start, end = (int(value, 16) for value in region.split()[0].split('-'))
                    if region.split()[1].startswith('rw') and end - start < 256 * 2**20:
                        try:
                            memory.seek(start)
                            if mem_marker in memory.read(end - start):
                                print('LEAKED-MEMORY', pid)
                                break
                        except OSError:
                            continue
        except OSError as error:
            print('mem', pid, type(error).__name__)
""")


@pytest.mark.skipif(not LINUX, reason="reads /proc, which only Linux has")
def test_the_code_cannot_read_the_parents_environment_or_memory(workspace, level, monkeypatch):
    env_marker = f"sk-env-{uuid.uuid4().hex}"
    mem_marker = f"secret-in-memory-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", env_marker)
    in_memory = mem_marker.encode() * 2  # held only in this process's memory  # noqa: F841
    script = f"import sys; sys.argv = ['x', {env_marker[::-1]!r}, {mem_marker[::-1]!r}, '{os.getpid()}']\n" + READ_PARENT
    output = run_at(workspace, level, script).output
    if level == "basic":
        pytest.skip("the basic level does not protect the parent (documented)")
    assert "LEAKED" not in output, output
    assert env_marker not in output


def test_the_environment_is_built_from_an_allow_list(workspace, level, monkeypatch):
    for name in ("DATABASE_URL", "GH_PAT", "HF_AUTH", "MYSQL_PWD", "OPENAI_API_KEY", "MY_SERVICE_CONFIG"):
        monkeypatch.setenv(name, f"leak-{name.lower()}")
    monkeypatch.setenv("LANG", "C.UTF-8")
    output = run_at(workspace, level, "import json, os; print(json.dumps(dict(os.environ)))").output
    environment = json.loads(output)
    assert "leak-" not in output
    allowed = set(sandbox.ALLOWED_ENVIRONMENT) | set(sandbox.FIXED_ENVIRONMENT) | {
        "PATH", "HOME", "TMPDIR", "TEMP", "TMP", "MPLCONFIGDIR", "USERPROFILE"}
    assert set(environment) <= allowed | {"LC_CTYPE"}  # Python may set LC_CTYPE itself (PEP 538)
    assert environment["LANG"] == "C.UTF-8"


@pytest.fixture
def loopback_server():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    accepted: list[bool] = []

    def accept() -> None:
        try:
            connection, _ = server.accept()
            accepted.append(True)
            connection.close()
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()


def test_namespace_levels_have_no_network_not_even_loopback(workspace, level, loopback_server):
    port, accepted = loopback_server
    code = textwrap.dedent(f"""
        import socket
        try:
            socket.create_connection(('127.0.0.1', {port}), timeout=3)
            print('CONNECTED')
        except OSError as error:
            print('refused', error)
    """)
    output = run_at(workspace, level, code).output
    if level not in NAMESPACE_LEVELS and not (level == "process" and sandbox.landlock_abi() >= 4):
        assert "CONNECTED" in output  # documented: this level does not block the network
        return
    assert "CONNECTED" not in output and not accepted, output


def test_namespace_levels_write_only_the_workspace(workspace, level, tmp_path):
    outside = tmp_path / "outside.txt"
    (workspace.archive_dir / "conv-1").mkdir(parents=True)
    (workspace.archive_dir / "conv-1" / "0001.md").write_text("archived\n")
    targets = [workspace.scratch_dir / "planted.txt", workspace.archive_dir / "conv-1" / "0001.md",
               workspace.archive_dir / "planted.txt", outside, workspace.root / "inside.txt"]
    code = textwrap.dedent(f"""
        import os, tempfile
        for path in {[str(target) for target in targets]!r}:
            try:
                with open(path, 'w') as stream:
                    stream.write('planted')
                print('wrote', path)
            except OSError as error:
                print('refused', path, error.strerror)
        with open(os.path.join(tempfile.gettempdir(), 'scratch-space.txt'), 'w') as stream:
            stream.write('the private temporary folder works')
        print('archive readable:', os.path.exists({str(workspace.archive_dir / "conv-1" / "0001.md")!r}))
    """)
    output = run_at(workspace, level, code).output
    assert (workspace.root / "inside.txt").read_text() == "planted"
    if level not in NAMESPACE_LEVELS:
        return  # documented: the process and basic levels do not protect the rest of the disk
    assert not (workspace.scratch_dir / "planted.txt").exists()
    assert not (workspace.archive_dir / "planted.txt").exists()
    assert (workspace.archive_dir / "conv-1" / "0001.md").read_text() == "archived\n"
    assert not outside.exists()
    assert "archive readable: False" in output, output


def test_a_setsid_child_holding_stdout_neither_outlives_the_call_nor_delays_it(workspace, level):
    marker = f"flawedcode-setsid-{uuid.uuid4().hex}"
    code = textwrap.dedent(f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)  # {marker}'], start_new_session=True)
        print('parent done', flush=True)
    """)
    began = time.monotonic()
    result = run_at(workspace, level, code)
    elapsed = time.monotonic() - began
    assert result.exit_code == 0 and "parent done" in result.output
    if level == "basic" or (level == "process" and not LINUX):
        pytest.skip(f"{level} on {sys.platform} cannot kill a setsid child (documented)")
    time.sleep(0.3)
    assert not processes_with(marker)
    assert elapsed < 20  # the child sleeps 30 s: the result did not wait for it


def test_a_timeout_kills_the_whole_tree(workspace, level):
    marker = f"flawedcode-timeout-{uuid.uuid4().hex}"
    code = textwrap.dedent(f"""
        import os, subprocess, sys, time
        subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # {marker}'], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        time.sleep(60)
    """)
    box = Sandbox(workspace.root, forced_level=level)
    result = box.run(code, 1, 10_000)
    assert result.timed_out and result.exit_code is None
    if level == "basic" or (level == "process" and not LINUX):
        pytest.skip(f"{level} on {sys.platform} cannot kill a setsid child (documented)")
    time.sleep(0.3)
    assert not processes_with(marker)


FORK_BOMB = textwrap.dedent("""
    import os, time
    children = 0
    for _ in range(300):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
    print('forked', children, flush=True)
""")


def test_a_fork_bomb_is_bounded_by_rlimit_nproc(workspace, level):
    if level == "basic" or (ROOT and not call_cgroups_here() and level != "namespaces-nobody"):
        pytest.skip(f"RLIMIT_NPROC does not bind uid 0 at the {level} level and no cgroup can be made here (documented)")
    output = run_at(workspace, level, FORK_BOMB, timeout=30).output
    forked = int(output.split("forked", 1)[1].split()[0])
    assert forked < MAX_PROCESSES + 5, output  # + 5: processes nobody already had when the limit was set


def test_the_code_sees_no_other_process_at_namespace_levels(workspace, level):
    if level not in NAMESPACE_LEVELS:
        pytest.skip(f"{level} shares the host's process table (documented)")
    output = run_at(workspace, level, "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))").output
    assert len(json.loads(output)) <= 3  # the supervisor (pid 1) and the script


def test_the_tool_description_states_only_what_this_platform_enforces(workspace):
    run_python = {each.name: each for each in make_tools(workspace)}["run_python"]
    level = workspace.sandbox.level
    assert run_python.description.endswith(workspace.sandbox.description())
    if level in NAMESPACE_LEVELS:
        assert "no network" in run_python.description
    elif level == "process" and sandbox.landlock_abi() >= 6:
        assert "no TCP connections" in run_python.description and "readable" in run_python.description
    else:
        assert "no network" not in run_python.description and "not blocked" in run_python.description


def test_on_this_linux_machine_the_strongest_level_starts(workspace):
    if not LINUX or shutil.which("unshare") is None:
        pytest.skip("namespaces are Linux-only")
    if subprocess.run(["unshare", "-U", "-r", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces are disabled here")
    assert workspace.sandbox.level == ("namespaces-nobody" if ROOT else "namespaces-user")


# ----------------------------------------------------------------------------- the same attacks as an ordinary user

AS_USER_SCRIPT = textwrap.dedent("""
    import json, os, sys, tempfile, uuid
    from pathlib import Path
    from flawedcode.infra.sandbox import Sandbox
    secret = 'sk-user-' + uuid.uuid4().hex
    os.environ['OPENAI_API_KEY'] = secret
    memory_marker = 'memory-' + uuid.uuid4().hex
    held = memory_marker.encode() * 2
    base = Path(tempfile.mkdtemp())
    (base / 'ws').mkdir(); (base / 'scratch').mkdir()
    results = {'uid': os.getuid()}
    read_parent = open(sys.argv[1]).read()
    for level in ('namespaces-user', 'process'):
        box = Sandbox(base / 'ws', hidden=(base / 'scratch',), forced_level=level)
        code = f"import sys; sys.argv = ['x', {secret[::-1]!r}, {memory_marker[::-1]!r}, '{os.getpid()}']\\n" + read_parent
        code += f"\\ntry:\\n    open({str(base / 'scratch' / 'x')!r}, 'w'); print('WROTE-SCRATCH')\\nexcept OSError: pass"
        result = box.run(code, 20, 100_000)
        results[level] = {'error': result.sandbox_error, 'output': result.output}
    print(json.dumps(results))
""")


@pytest.fixture
def open_folder():
    """A temporary folder nobody can read (pytest's own are closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix="flawedcode-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_as_an_ordinary_user_the_parent_stays_private(open_folder):
    if not LINUX or not ROOT or shutil.which("setpriv") is None or shutil.which("unshare") is None:
        pytest.skip("needs Linux, root (to become nobody) and util-linux's setpriv and unshare")
    (open_folder / "read_parent.py").write_text(READ_PARENT)
    (open_folder / "as_user.py").write_text(AS_USER_SCRIPT)
    for parent in open_folder.parents:
        if parent.stat().st_mode & 0o001 == 0:
            pytest.skip(f"nobody cannot reach the temporary folder ({parent} is closed)")
    script, reader = open_folder / "as_user.py", open_folder / "read_parent.py"
    command = reachable_python_as_nobody([sys.executable, str(script), str(reader)])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results["uid"] == 65534
    for level in ("namespaces-user", "process"):
        if results[level]["error"]:
            continue  # e.g. user namespaces disabled for ordinary users: that level does not start
        assert "LEAKED" not in results[level]["output"], (level, results[level]["output"])
    if not results["namespaces-user"]["error"]:
        assert "WROTE-SCRATCH" not in results["namespaces-user"]["output"]


def reachable_python_as_nobody(argv: list[str]) -> list[str]:
    """A command that runs ``argv`` as nobody, after making this Python's folders reachable for nobody.

    This machine's Python may live under a folder only root can enter (``/root``): in a
    private mount namespace, such a folder is covered by an empty tmpfs and the Python
    folders are bound back inside it.
    """
    needed = sandbox.python_folders() + [str(Path(__file__).resolve().parents[1])]
    closed = sorted({str(ancestor) for folder in needed for ancestor in Path(folder).parents
                     if ancestor != Path("/") and ancestor.stat().st_mode & 0o001 == 0})
    closed = [folder for folder in closed if not any(folder.startswith(other + "/") for other in closed)]
    steps = ["set -e", "stage=$(mktemp -d)"]
    for index, folder in enumerate(closed):
        inside = [path for path in needed if path.startswith(folder + "/")]
        for number, path in enumerate(inside):
            steps += [f"mkdir -p $stage/{index}_{number}", f"mount --bind '{path}' $stage/{index}_{number}"]
        steps.append(f"mount -t tmpfs -o mode=0755 tmpfs '{folder}'")
        for number, path in enumerate(inside):
            steps += [f"mkdir -p '{path}'", f"mount --move $stage/{index}_{number} '{path}'"]
    steps.append("exec setpriv --reuid=65534 --regid=65534 --clear-groups " + " ".join(f"'{arg}'" for arg in argv))
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(steps)]


# ----------------------------------------------------------------------------- round 3: set-uid files, the process level, whole-call bounds

SETID_ATTEMPTS = textwrap.dedent("""
    import os, shutil
    shutil.copy('/bin/true', 'rootshell')
    for mode in (0o4755, 0o2755, 0o6755):
        try:
            os.chmod('rootshell', mode)
            print('chmod', oct(mode), 'ALLOWED')
        except OSError as error:
            print('chmod', oct(mode), 'refused', error.errno)
    for flags in (os.O_CREAT | os.O_WRONLY,):
        try:
            os.close(os.open('created', flags, 0o4755))
            print('open', oct(os.stat('created').st_mode))
        except OSError as error:
            print('open refused', error.errno)
    os.mkdir('folder')
    try:
        os.chmod('folder', 0o2775)
        print('setgid folder ALLOWED')
    except OSError as error:
        print('setgid folder refused', error.errno)
""")


def setid_files(root: Path) -> list[str]:
    return [str(path) for path in root.rglob("*") if not path.is_symlink() and path.stat().st_mode & 0o6000]


@pytest.mark.skipif(not LINUX, reason="set-uid files and seccomp are Linux's here")
def test_no_set_uid_or_set_gid_file_made_by_the_code_reaches_the_host(workspace, level):
    if level == "basic":
        pytest.skip("the basic level has no filter (documented)")
    output = run_at(workspace, level, SETID_ATTEMPTS).output
    assert "ALLOWED" not in output, output
    assert not setid_files(workspace.root), output
    assert (workspace.root / "rootshell").exists(), "the copy itself is allowed"


@pytest.mark.skipif(not LINUX, reason="Linux")
def test_a_set_uid_file_already_in_the_workspace_is_stripped_by_the_next_call(workspace, level):
    if level == "basic":
        pytest.skip("the basic level has no sweep (documented)")
    planted = workspace.root / "planted"
    shutil.copy("/bin/true", planted)
    planted.chmod(0o4755)  # as if it got there some other way
    run_at(workspace, level, "print('hello')")
    assert planted.stat().st_mode & 0o7777 == 0o755


def test_workspaces_are_reachable_by_their_owner_only(tmp_path):
    made = Workspace.create(tmp_path / "given", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    assert made.root.stat().st_mode & 0o777 == 0o700
    with Workspace.create() as temporary:
        assert temporary.root.stat().st_mode & 0o777 == 0o700


OTHER_PROCESS_ATTACK = textwrap.dedent("""
    import os, signal, socket, sys
    victim, port, outside = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    try:
        print('environ', b'victim-marker' in open(f'/proc/{victim}/environ', 'rb').read() and 'LEAKED')
    except OSError as error:
        print('environ refused', error.errno)
    try:
        os.kill(victim, signal.SIGTERM)
        print('KILLED')
    except OSError as error:
        print('kill refused', error.errno)
    try:
        socket.create_connection(('127.0.0.1', port), timeout=2)
        print('CONNECTED')
    except OSError as error:
        print('connect refused', error.errno)
    try:
        open(outside, 'w').write('x')
        print('WROTE-OUTSIDE')
    except OSError as error:
        print('write outside refused', error.errno)
""")


@pytest.mark.skipif(not LINUX, reason="Landlock is Linux's")
def test_at_the_process_level_other_processes_of_the_user_are_private(workspace, tmp_path):
    if "process" not in levels_to_try() or sandbox.landlock_abi() < 1:
        pytest.skip("no Landlock on this kernel: the process level cannot protect other processes (documented)")
    victim = subprocess.Popen(["sleep", "60"], env={"PATH": os.environ["PATH"], "OPENAI_API_KEY": "victim-marker-1"})
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    outside = tmp_path / "outside" / "planted.txt"
    outside.parent.mkdir()
    try:
        script = (f"import sys; sys.argv = ['x', '{victim.pid}', '{server.getsockname()[1]}', '{outside}']\n"
                  + OTHER_PROCESS_ATTACK)
        output = run_at(workspace, "process", script).output
        assert "environ refused" in output and "LEAKED" not in output, output
        assert "WROTE-OUTSIDE" not in output and not outside.exists(), output
        if sandbox.landlock_abi() >= 4:
            assert "CONNECTED" not in output, output
        if sandbox.landlock_abi() >= 6:
            assert "KILLED" not in output and victim.poll() is None, output
    finally:
        victim.kill()
        victim.wait()
        server.close()


CALL_MEMORY_BYTES = 1024**3
"""The call's memory limit in the test below: a quarter of ``MAX_MEMORY_BYTES``, the same bound on a quarter of the pages."""
MEMORY_HOGS = textwrap.dedent("""
    import multiprocessing, time
    def hog(_):
        held = bytearray(400 * 1024**2)
        time.sleep(2)
    workers = [multiprocessing.Process(target=hog, args=(n,)) for n in range(3)]
    [worker.start() for worker in workers]
    [worker.join() for worker in workers]
    print('exit codes', [worker.exitcode for worker in workers])
""")


def test_memory_is_bounded_for_the_whole_call_not_per_process(workspace, level, monkeypatch):
    if level == "basic" or not call_cgroups_here():
        pytest.skip("no cgroup can be made here (not root, or none delegated): memory is bounded per process (documented)")
    monkeypatch.setattr(sandbox, "MAX_MEMORY_BYTES", CALL_MEMORY_BYTES)
    output = run_at(workspace, level, MEMORY_HOGS, timeout=60).output
    codes = json.loads(output.split("exit codes", 1)[1].strip()) if "exit codes" in output else None
    assert codes is None or any(code != 0 for code in codes), output  # 3 x 400 MiB never fit the 1 GiB of one call


def test_one_memory_hog_fits_so_only_the_calls_total_stops_three(workspace, monkeypatch):
    level = Sandbox(workspace.root).level  # the level every call runs at here
    if level == "basic" or not call_cgroups_here():
        pytest.skip("no cgroup can be made here (not root, or none delegated)")
    monkeypatch.setattr(sandbox, "MAX_MEMORY_BYTES", CALL_MEMORY_BYTES)
    one_hog = MEMORY_HOGS.replace("range(3)", "range(1)").replace("time.sleep(2)", "pass")
    output = run_at(workspace, level, one_hog, timeout=60).output
    assert "exit codes [0]" in output, output


def test_home_is_bounded_at_the_namespace_levels(workspace, level):
    if level not in NAMESPACE_LEVELS:
        pytest.skip(f"{level}: HOME is a temporary folder on the host's disk (documented)")
    code = ("import os\npath = os.path.join(os.environ['HOME'], 'big')\ntry:\n    with open(path, 'wb') as f:\n"
            "        for _ in range(320): f.write(b'x' * 2**20)\n    print('WROTE-ALL')\n"
            "except OSError as error:\n    print('full at', os.path.getsize(path) // 2**20, error.errno)\n")
    output = run_at(workspace, level, code).output
    assert "WROTE-ALL" not in output and f"full at {sandbox.HOME_BYTES // 2**20}" in output, output


def test_a_call_that_fills_the_disk_file_after_file_is_stopped_at_its_bound(workspace, level, monkeypatch):
    if level == "basic":
        pytest.skip("the basic level (Windows) has no supervisor to watch the disk")
    monkeypatch.setattr(sandbox, "MAX_CALL_DISK_BYTES", 24 * 1024**2)
    code = textwrap.dedent("""
        import os, time
        for number in range(40):  # 40 files of 4 MB, each under the per-file limit: 160 MB in all
            with open(f"fill{number}.bin", "wb") as stream:
                stream.write(os.urandom(4 * 1024**2))
                stream.flush()
                os.fsync(stream.fileno())
            time.sleep(0.02)
        print("wrote everything")
    """)
    result = run_at(workspace, level, code, timeout=60)
    written = sum(path.stat().st_size for path in workspace.root.glob("fill*.bin"))
    assert "wrote everything" not in result.output and result.stopped.startswith("it took more than 24 MB of disk")
    assert written < 80 * 1024**2  # stopped within a few files of its bound (other writers on the machine count too)
    tool = next(tool for tool in make_tools(workspace) if tool.name == "run_python")
    assert tool.invoke({"code": "print('small')"}).startswith("# exit code 0")
