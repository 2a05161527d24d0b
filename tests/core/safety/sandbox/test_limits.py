"""Resource limits: read from the user's settings, turned into rlimits and a cgroup, and handed to
the launcher with the sandbox's file descriptors (`Launch`)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from piton.core.project.settings import load_settings
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import BASH, Launch, limits, make_sandbox
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from piton.core.safety.sandbox.limits import GiB, Limits, parse, ulimit_prefix
from piton.core.safety.shell import run_shell

MiB = 1 << 20


def test_values_are_counts_sizes_or_unlimited() -> None:
    got, warnings = parse({"processes": 500, "memory": "1.5G", "fileSize": "512m", "tmpSize": "unlimited"})
    assert got == Limits(processes=500, memory=3 * GiB // 2, file_size=512 * MiB, tmp_size=None)
    assert warnings == []
    assert parse({"memory": "64MiB"})[0].memory == 64 * MiB


def test_bad_values_are_ignored_with_a_warning() -> None:
    got, warnings = parse({"processes": "lots", "memory": True, "fileSize": 10, "tmpSize": -1, "cpu": 2})
    assert got == Limits()
    assert len(warnings) == 5 and all(w.startswith("ignored sandbox.limits.") for w in warnings)
    assert "cpu" in warnings[-1]


def test_defaults_leave_room_for_parallel_builds() -> None:
    default = Limits()
    assert default.processes == 8192 and default.file_size == 4 * GiB and default.tmp_size == 2 * GiB
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert default.memory == ram // 2
    assert default.describe().startswith("8192 processes, ")


def test_only_the_users_own_settings_set_them(tmp_path: Path) -> None:
    home, project = Path(os.environ["HOME"]), tmp_path / "project"
    (home / ".piton").mkdir(parents=True)
    (home / ".piton" / "settings.json").write_text(json.dumps({"sandbox": {"limits": {"processes": 900}}}))
    (project / ".piton").mkdir(parents=True)
    (project / ".piton" / "settings.json").write_text(
        json.dumps({"sandbox": {"limits": {"processes": "unlimited", "memory": "unlimited"}}})
    )
    assert load_settings(project).sandbox_limits == {"processes": 900}
    (home / ".piton" / "settings.json").unlink()
    assert load_settings(project).sandbox_limits == {}  # a project's file alone sets nothing


def test_a_policys_limits_are_its_sandboxes_and_no_one_elses(tmp_path: Path) -> None:
    """The settings' limits travel with the session's policy: another session in the same process
    (the library opens several) keeps the defaults."""
    parsed, warnings = limits.parse({"fileSize": "1G", "bogus": 1})
    assert warnings == ["ignored sandbox.limits.bogus: one of processes, memory, fileSize, tmpSize"]
    policy = replace(SandboxPolicy.create("workspace-write", tmp_path), limits=parsed)
    sandbox = make_sandbox(policy, "linux")
    assert isinstance(sandbox, BwrapSandbox) and sandbox.limits.file_size == GiB
    narrower = make_sandbox(policy.read_only(), "linux")
    assert isinstance(narrower, BwrapSandbox) and narrower.limits == parsed  # kept by a narrower policy
    other = make_sandbox(SandboxPolicy.create("workspace-write", tmp_path), "linux")
    assert isinstance(other, BwrapSandbox) and other.limits == Limits()


def test_the_rlimits_never_rise_above_pitons_own() -> None:
    prefix = ulimit_prefix(Limits(processes=8192, memory=2 * GiB, file_size=GiB, tmp_size=None))
    assert "ulimit -f 1048576\n" in prefix and "ulimit -d 2097152\n" in prefix

    def low(_: int) -> tuple[int, int]:  # Piton itself runs under a soft limit of 100
        return (100, 200)

    assert (
        ulimit_prefix(Limits(processes=8192, memory=None, file_size=None), current=low) == "ulimit -u 100\n"
    )
    assert ulimit_prefix(Limits(None, None, None, None)) == ""
    assert "-d" not in ulimit_prefix(Limits(memory=GiB), memory=False)  # the cgroup has it


def test_a_launch_closes_its_descriptors_once_and_cleans_up_once() -> None:
    read_fd, write_fd = os.pipe()
    cleaned: list[int] = []
    launch = Launch(["true"], pass_fds=(read_fd, write_fd), cleanups=[lambda: cleaned.append(1)])
    launch.started()
    for fd in (read_fd, write_fd):
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(fd)
    launch.close()
    launch.close()
    assert cleaned == [1]


class _FdSandbox:
    """Hands the command a descriptor to read, as bwrap reads its seccomp filter."""

    name = "fake"

    def __init__(self) -> None:
        self.cleaned: list[bool] = []
        self.fd = -1

    def unavailable_reason(self) -> str | None:
        return None

    def describe(self) -> str:
        return "fake"

    def launch(self, script: str, cwd: Path) -> Launch:
        self.fd = os.memfd_create("test-filter", os.MFD_CLOEXEC)
        os.write(self.fd, b"from-the-sandbox")
        os.lseek(self.fd, 0, os.SEEK_SET)
        return Launch(
            [*BASH, f"cat <&{self.fd}; echo; {script}"],
            {"PATH": "/usr/bin:/bin"},
            pass_fds=(self.fd,),
            cleanups=[lambda: self.cleaned.append(True)],
        )


def _memfd_open(fd: int) -> bool:
    try:
        return "test-filter" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


def test_run_shell_passes_the_sandboxs_descriptors_and_undoes_its_setup(tmp_path: Path) -> None:
    sandbox = _FdSandbox()
    result = asyncio.run(run_shell("echo ran", cwd=tmp_path, sandbox=sandbox, timeout_s=10))
    assert result.output == "from-the-sandbox\nran\n" and result.exit_code == 0
    assert not _memfd_open(sandbox.fd) and sandbox.cleaned == [True]


def test_a_launch_that_cannot_start_is_undone_too(tmp_path: Path) -> None:
    sandbox = _FdSandbox()
    with pytest.raises(FileNotFoundError):
        asyncio.run(run_shell("true", cwd=tmp_path / "gone", sandbox=sandbox, timeout_s=10))
    assert not _memfd_open(sandbox.fd) and sandbox.cleaned == [True]


# ---- against the real bubblewrap --------------------------------------------------------------


@pytest.fixture
def ws() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="piton-limits-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _run(sandbox: BwrapSandbox, ws: Path, command: str) -> str:
    return asyncio.run(run_shell(command, cwd=ws, sandbox=sandbox, timeout_s=20)).output


@pytest.mark.sandbox
def test_commands_get_the_limits_and_sized_private_folders(ws: Path) -> None:
    chosen = Limits(processes=3000, memory=3 * GiB, file_size=GiB, tmp_size=256 * MiB)
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", ws), limits=chosen)
    assert sandbox.unavailable_reason() is None
    out = _run(
        sandbox, ws, "ulimit -u; ulimit -f; df -B1 --output=size /tmp /dev/shm | tail -2; touch /dev/x"
    )
    lines = out.splitlines()
    assert lines[:2] == ["3000", str(GiB // 1024)], out
    assert lines[2:4] == [str(256 * MiB)] * 2, out
    assert "Read-only file system" in out


@pytest.mark.sandbox
def test_a_cgroup_where_one_can_be_made_and_the_rlimit_otherwise(ws: Path) -> None:
    """As root (where cgroups are writable) the process limit is the command's cgroup; as anyone
    else it is RLIMIT_NPROC, which the kernel does not apply to root."""
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", ws), limits=Limits(processes=77))
    hierarchies = limits.hierarchies()
    if not hierarchies:
        assert os.geteuid() != 0 or not os.access("/sys/fs/cgroup", os.W_OK)
        assert _run(sandbox, ws, "ulimit -u") == "77\n"
        return
    parent, mine = hierarchies[0].parent, f"piton-{os.getpid()}-"
    script = f"cat {parent}/{mine}*/pids.max"
    out = _run(sandbox, ws, script)
    assert out.split() == ["77"], out  # seen from inside: its own group, with the limit
    assert not list(parent.glob(f"{mine}*"))  # and removed once the command ended


def test_a_cgroup_v2_group_holds_both_limits_and_the_memory_rlimit_is_left_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for a cgroup v2 hierarchy (a plain folder): what is written where."""
    hierarchy = limits._Hierarchy(tmp_path, ("pids.max", "memory.max"))
    monkeypatch.setattr(limits, "hierarchies", lambda: (hierarchy,))
    chosen = Limits(processes=300, memory=GiB, file_size=GiB)
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", tmp_path / "ws"), limits=chosen)
    launch = sandbox.launch("true", tmp_path)
    try:
        [group] = [p for p in tmp_path.iterdir() if p.name.startswith("piton-")]
        assert (group / "pids.max").read_text() == "300"
        assert (group / "memory.max").read_text() == str(GiB)
        assert (group / "memory.oom.group").read_text() == "1"
        script = launch.argv[-1]
        assert "ulimit -u 300\n" in script and "ulimit -d" not in script  # the group limits memory
        assert launch.preexec is None and launch.cleanups  # no Python between fork and exec
        (group / "cgroup.procs").write_text("")
        entry = launch.argv[: launch.argv.index("--") + 1]  # what runs before bwrap: enter the group
        assert subprocess.run([*entry, "true"], check=False).returncode == 0
        assert (group / "cgroup.procs").read_text() == "0\n"
    finally:
        launch.started()
        shutil.rmtree(group)
