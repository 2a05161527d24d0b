"""How a command enters its cgroup: the argv does it before bwrap runs (no Python code between fork
and exec), every group is entered, a group that cannot be entered stops the command, and a real
command's processes are in its group while it runs."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import limits
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from piton.core.safety.sandbox.limits import CommandGroup, Limits
from piton.core.safety.shell import run_shell


def _groups(tmp_path: Path, count: int) -> list[Path]:
    """Stand-ins for cgroups (plain folders): entering one writes `0` to its cgroup.procs."""
    groups = [tmp_path / f"group{i}" for i in range(count)]
    for group in groups:
        group.mkdir()
        (group / "cgroup.procs").write_text("")
    return groups


def test_every_group_is_entered_before_the_command_runs(tmp_path: Path) -> None:
    groups = _groups(tmp_path, 2)
    seen = tmp_path / "seen"
    script = f"cat {groups[0]}/cgroup.procs {groups[1]}/cgroup.procs > {seen}; echo ran"
    argv = CommandGroup(groups, limits_memory=False).wrap(["/bin/sh", "-c", script])
    done = subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    assert seen.read_text() == "0\n0\n"  # both written before the command started


def test_a_group_that_cannot_be_entered_stops_the_command(tmp_path: Path) -> None:
    """Never a command without its limits: the launch fails with a readable line instead."""
    groups = _groups(tmp_path, 2)
    (groups[1] / "cgroup.procs").unlink()
    (groups[1] / "cgroup.procs").mkdir()  # cannot be written
    ran = tmp_path / "ran"
    argv = CommandGroup(groups, limits_memory=False).wrap(["/bin/sh", "-c", f"touch {ran}"])
    done = subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 125 and not ran.exists()
    assert f"piton: cannot enter the cgroup {groups[1]}/cgroup.procs" in done.stderr


def test_odd_group_paths_are_arguments_not_code(tmp_path: Path) -> None:
    group = tmp_path / "a b; touch pwned $(touch pwned2)"
    group.mkdir()
    (group / "cgroup.procs").write_text("")
    argv = CommandGroup([group], limits_memory=False).wrap(["/bin/true"])
    assert subprocess.run(argv, cwd=tmp_path, check=False).returncode == 0
    assert (group / "cgroup.procs").read_text() == "0\n"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


@pytest.fixture
def ws() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="piton-cgroup-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _members(parent: Path) -> list[str]:
    """The programs in this process's command groups under `parent`, by name."""
    names = []
    for group in parent.glob(f"piton-{os.getpid()}-*"):
        try:
            pids = (group / "cgroup.procs").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                names.append(Path(f"/proc/{pid}/comm").read_text().strip())
            except OSError:
                continue
    return names


@pytest.mark.sandbox
def test_a_real_command_runs_inside_its_group(ws: Path) -> None:
    """Where a cgroup can be made (as root), the command's own processes are in it: its process and
    memory limits apply to them, and what it leaves behind is killed with the group."""
    hierarchies = limits.hierarchies()
    if not hierarchies:
        pytest.skip("no cgroup can be made here (the process limit is RLIMIT_NPROC, tested apart)")
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", ws), limits=Limits(processes=500))
    assert sandbox.unavailable_reason() is None

    async def go() -> list[str]:
        task = asyncio.ensure_future(run_shell("sleep 5", cwd=ws, sandbox=sandbox, timeout_s=1.5))
        seen: list[str] = []
        deadline = time.monotonic() + 1.2
        while "sleep" not in seen and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            seen = _members(hierarchies[0].parent)
        await task
        return seen

    members = asyncio.run(go())
    assert "sleep" in members and "bwrap" in members, members
    assert not list(hierarchies[0].parent.glob(f"piton-{os.getpid()}-*"))  # removed after it
