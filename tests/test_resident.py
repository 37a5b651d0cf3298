"""The hook scripts' resident server (codemods/cli/resident/).

Every answer the server gives must be the one the command gives in the caller's own
process: each case runs the client against a running server and ``python -m
codemods.lint`` (or ``migrate``) in a fresh process, with the same folder, environment,
arguments and standard input, and compares exit status, stdout and stderr. The client
here is the hook script's two lines plus a note of whether the lint's modules were
loaded in its own process (they are where it ran the command itself, not where the
server answered). Then the server's life: started by a first call, stopped when idle
or when a file of the package changes, not used where it is switched off or where its
folder is open to others.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from codemods.cli.resident import server

ROOT = Path(__file__).resolve().parents[1]
LEGACY = (ROOT / "examples" / "legacy" / "fairscale_script.py").read_text(encoding="utf-8")
PLAIN = "def add(a, b):\n    return a + b\n"
#: The hook script's body, and where the command ran: ``here`` or ``server``.
CLIENT = """\
import sys
from codemods.cli.resident.client import run
tool, mark = sys.argv.pop(1), sys.argv.pop(1)
status = run(tool)
ran_here = any(name in sys.modules for name in ("codemods.lint", "codemods.migrate"))
with open(mark, "w") as file:
    file.write("here" if ran_here else "server")
sys.exit(status)
"""

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not hasattr(os, "fork"), reason="the server needs fork and Unix sockets"
)


class Runtime:
    """A socket folder of its own (short: a socket's path is limited to ~100 bytes)."""

    def __init__(self, idle: float = 60.0, package: Path = ROOT) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="fcr-", dir="/tmp"))
        os.chmod(self.folder, 0o700)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(package),
            "FSDP_COMPAT_RUNTIME_DIR": str(self.folder),
            "FSDP_COMPAT_RESIDENT_IDLE": str(idle),
        }
        self.env.pop("FSDP_COMPAT_RESIDENT", None)

    def sockets(self) -> list[Path]:
        return sorted(self.folder.glob("*.sock"))

    def servers(self) -> list[int]:
        """The pids of the servers still running, from their lock files."""
        return [pid for pid in server.pids(str(self.folder)) if _alive(pid)]

    def wait_for(self, condition, seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)

    def close(self) -> None:
        for pid in self.servers():
            os.kill(pid, 15)
        shutil.rmtree(self.folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie (ended, not yet collected) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def client(runtime: Runtime, tool: str, args: list[str], cwd: Path, **kw) -> tuple:
    """The client's (status, stdout, stderr) and where the command ran."""
    mark = runtime.folder / "mark"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, tool, str(mark), *args],
        cwd=cwd,
        env={**runtime.env, **kw.pop("env", {})},
        capture_output=True,
        text=True,
        **kw,
    )
    return (result.returncode, result.stdout, result.stderr), mark.read_text()


def direct(runtime: Runtime, tool: str, args: list[str], cwd: Path, **kw) -> tuple:
    """The same command in a fresh process of its own."""
    result = subprocess.run(
        [sys.executable, "-m", f"codemods.{tool}", *args],
        cwd=cwd,
        env={**runtime.env, "FSDP_COMPAT_RESIDENT": "0", **kw.pop("env", {})},
        capture_output=True,
        text=True,
        **kw,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.fixture(scope="module")
def served():
    """A running server, started by a first call as a hook's first call starts it."""
    runtime = Runtime()
    folder = runtime.folder / "warm"
    folder.mkdir()
    (folder / "x.py").write_text(PLAIN)
    _, where = client(runtime, "lint", ["x.py"], folder)
    assert where == "here"  # nothing answered the first call: it started the server
    runtime.wait_for(runtime.sockets)
    yield runtime
    runtime.close()


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "legacy.py").write_text(LEGACY)
    (tmp_path / "pkg" / "plain.py").write_text(PLAIN)
    return tmp_path


@pytest.mark.parametrize(
    ("tool", "args", "extra"),
    [
        ("lint", ["pkg/legacy.py"], {}),
        ("lint", ["--force-exclude", "pkg/plain.py"], {}),
        ("lint", ["--output-format", "json", "pkg/legacy.py"], {}),
        ("lint", ["--statistics", "--select", "FSDP2", "pkg"], {}),
        ("lint", ["pkg/missing.py"], {}),  # exit 2, the error on stderr
        ("lint", ["--no-such-option"], {}),  # argparse's usage and exit 2
        ("lint", ["--stdin-filename", "pkg/legacy.py", "-"], {"input": LEGACY}),
        ("lint", ["--help"], {"env": {"COLUMNS": "52"}}),  # the caller's environment
        ("lint", ["legacy.py"], {"cwd": "pkg"}),  # the caller's folder
        ("migrate", ["--diff", "pkg/legacy.py"], {}),
        ("migrate", ["pkg"], {}),  # writes the caller's files
    ],
)
def test_the_server_answers_as_the_command_does(served, project, tool, args, extra):
    cwd = project / extra.pop("cwd", ".")
    before = (project / "pkg" / "legacy.py").read_text()
    answer, where = client(served, tool, args, cwd, **dict(extra))
    written = (project / "pkg" / "legacy.py").read_text()
    (project / "pkg" / "legacy.py").write_text(before)
    assert where == "server"
    assert answer == direct(served, tool, args, cwd, **dict(extra))
    assert (project / "pkg" / "legacy.py").read_text() == written  # the same rewrite


def test_callers_at_once_are_each_answered(served, project):
    command = [sys.executable, "-c", CLIENT, "lint"]
    processes = [
        subprocess.Popen(
            [*command, str(project / f"mark{i}"), "pkg/legacy.py"],
            cwd=project,
            env=served.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    outputs = {p.communicate()[0] for p in processes}
    assert len(outputs) == 1 and [p.returncode for p in processes] == [1] * 4
    assert {(project / f"mark{i}").read_text() for i in range(4)} == {"server"}
    assert outputs == {direct(served, "lint", ["pkg/legacy.py"], project)[1]}


def test_switched_off_no_server_starts(project):
    runtime = Runtime()
    try:
        env = {"FSDP_COMPAT_RESIDENT": "0"}
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project, env=env)
        assert where == "here" and answer[0] == 1
        time.sleep(1.0)  # a server would have taken its lock by now
        assert list(runtime.folder.iterdir()) == [runtime.folder / "mark"]
    finally:
        runtime.close()


def test_a_folder_open_to_others_is_not_used(project):
    runtime = Runtime()
    try:
        os.chmod(runtime.folder, 0o755)
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project)
        assert where == "here" and answer == direct(runtime, "lint", ["pkg/legacy.py"], project)
        time.sleep(1.0)
        assert runtime.sockets() == [] and runtime.servers() == []
    finally:
        runtime.close()


def test_an_idle_server_stops(project):
    runtime = Runtime(idle=1.0)
    try:
        client(runtime, "lint", ["pkg/plain.py"], project)
        runtime.wait_for(runtime.sockets)
        (pid,) = runtime.servers()
        runtime.wait_for(lambda: not _alive(pid))
        assert runtime.sockets() == []  # removed on the way out
    finally:
        runtime.close()


def test_a_changed_package_is_not_served(tmp_path, project):
    """A file of the package changes under the server: the next caller runs the command
    itself (the new code), the server stops, and that call starts a fresh one."""
    copy = tmp_path / "copy"
    shutil.copytree(
        ROOT / "codemods", copy / "codemods", ignore=shutil.ignore_patterns("__pycache__")
    )
    runtime = Runtime(package=copy)
    try:
        client(runtime, "lint", ["pkg/legacy.py"], project)
        runtime.wait_for(runtime.sockets)
        (first,) = runtime.servers()
        assert client(runtime, "lint", ["pkg/legacy.py"], project)[1] == "server"
        changed = copy / "codemods" / "cli" / "output.py"
        changed.write_text(changed.read_text().replace("Found ", "Now found "))
        stamp = time.time() + 5
        os.utime(changed, (stamp, stamp))
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project)
        assert where == "here" and "Now found " in answer[1]
        runtime.wait_for(lambda: not _alive(first))
        runtime.wait_for(lambda: runtime.servers() not in ([], [first]))
        runtime.wait_for(runtime.sockets)
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project)
        assert where == "server" and "Now found " in answer[1]
    finally:
        runtime.close()


def test_a_socket_path_too_long_to_bind_starts_no_server(project):
    runtime = Runtime()
    try:
        deep = runtime.folder / ("d" * 90)
        env = {"FSDP_COMPAT_RUNTIME_DIR": str(deep)}
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project, env=env)
        assert where == "here" and answer == direct(runtime, "lint", ["pkg/legacy.py"], project)
        time.sleep(1.0)
        assert list(deep.iterdir()) == []  # no socket, no server's lock
    finally:
        runtime.close()


def test_an_interrupt_reaches_the_run(served, tmp_path):
    """SIGINT to the caller stops the server's run as it stops the command's own: the
    files done are listed, and the exit status is 128 + SIGINT."""
    for i in range(300):
        (tmp_path / f"m{i:03}.py").write_text(LEGACY)
    mark = served.folder / "interrupted"
    process = subprocess.Popen(
        [sys.executable, "-c", CLIENT, "lint", str(mark), "--jobs", "1", "."],
        cwd=tmp_path,
        env=served.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The first progress line (a tenth of the run, on a pipe): the served run is under way.
    first = process.stderr.readline()
    process.send_signal(2)
    _, rest = process.communicate(timeout=60)
    stderr = first + rest
    assert process.returncode == 130, stderr
    assert "stopped by SIGINT" in stderr and mark.read_text() == "server"


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    fields = file.read().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc for the server's children")
def test_sigterm_ends_the_server_with_its_spare_and_socket(project):
    runtime = Runtime()
    try:
        client(runtime, "lint", ["pkg/plain.py"], project)
        runtime.wait_for(runtime.sockets)
        (pid,) = runtime.servers()
        runtime.wait_for(lambda: _children(pid))  # the spare, waiting for a call
        (spare,) = _children(pid)
        os.kill(pid, 15)
        runtime.wait_for(lambda: not _alive(pid) and not _alive(spare))
        assert runtime.sockets() == []
        assert list(runtime.folder.glob("*.warm-up")) == []  # the spares' file goes too
        answer, where = client(runtime, "lint", ["pkg/legacy.py"], project)
        assert where == "here" and answer == direct(runtime, "lint", ["pkg/legacy.py"], project)
    finally:
        runtime.close()


def test_the_server_warms_every_rule_before_it_forks():
    """Each rule's example screened in memory (a child then finds the rules' filters
    made): none fails, so none is left cold."""
    from codemods.registry import REGISTRY

    assert server._warm() == len(REGISTRY)


def test_a_spare_lints_a_file_of_its_own_before_its_request(tmp_path, capsys):
    """The warm-up run takes a legacy file's whole path (it has findings), prints nothing
    and leaves the process's streams and arguments as it found them."""
    from codemods.batch import gitignore
    from codemods.cli.resident import child

    file = server._warm_up_file(str(tmp_path / "s.sock"))
    assert file is not None and (tmp_path / "s.sock.warm-up" / "pyproject.toml").is_file()
    streams = sys.stdout, sys.stderr, sys.argv
    assert child.warm_up(file) == 1
    assert (sys.stdout, sys.stderr, sys.argv) == streams
    assert capsys.readouterr() == ("", "")
    assert gitignore._rules_of.cache_info().currsize == 0  # nothing of the folders kept
    server._remove(file)
    assert list(tmp_path.iterdir()) == []


def test_a_request_waiting_already_is_taken_before_any_warm_up():
    """Callers at once: the spare forked after one call takes the next call at once."""
    import _socket

    runtime = Runtime()
    path = str(runtime.folder / "s.sock")
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    caller = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(4)
        assert server._waiting(listener) is None  # no call: the spare warms up
        caller.connect(path)
        fd = server._waiting(listener)
        assert fd is not None
        os.close(fd)
    finally:
        caller.close()
        listener.close()
        runtime.close()


#: Loads what the server loads, then runs one request's command in a forked child, as
#: the server's spare does, and prints the modules the child had to import itself.
_CHILD_IMPORTS = """\
import os, sys
from codemods.cli.resident import server
from codemods.cli.resident.client import tool_main
server._load()
read, write = os.pipe()
if os.fork() == 0:
    before = set(sys.modules)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.argv = ["fsdp-lint", *sys.argv[1:]]
    try:
        tool_main("lint")()
    except SystemExit:
        pass
    os.write(write, " ".join(sorted(set(sys.modules) - before)).encode())
    os._exit(0)
os.close(write)
print(os.read(read, 65536).decode())
"""


def test_a_request_in_a_project_imports_nothing_the_server_has_not(project):
    """The modules a run imports only when it needs them (the TOML reader of the
    project's ``pyproject.toml``, the tokenizer of noqa comments) are loaded by the
    server: each request would import them anew."""
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["torch>=2.1"]\n'
        '[tool.fsdp-compat]\ntarget-lightning = "2.1"\n'
    )
    (project / "pkg" / "noqa.py").write_text(LEGACY.replace("\n", "  # noqa: FSDP301\n", 1))
    result = subprocess.run(
        [sys.executable, "-c", _CHILD_IMPORTS, "pkg/legacy.py", "pkg/noqa.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []
