"""The read-only sandbox (commands that only look, and read-only sessions) binds the project once,
read-only, without binding its protected places again: still nothing there can be written, whether
it exists, is missing, or is reached through a symlink."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from piton.core.safety.shell import run_shell

pytestmark = pytest.mark.sandbox


@pytest.fixture
def ws() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="piton-looking-", dir="/var/tmp"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".piton").mkdir()
    (root / ".piton" / "settings.json").write_text("{}")
    (root / "conf").mkdir()
    (root / "pkg" / ".claude").mkdir(parents=True)
    (root / "pkg" / ".claude" / "settings.json").symlink_to("../../conf/claude.json")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(
    "target",
    [
        ".git/hooks/pre-commit",
        ".git/config",
        ".piton/settings.json",
        ".piton/settings.local.json",
        "pkg/.claude/settings.json",  # a dangling symlink: what it leads to
        "sub/.claude/settings.json",
    ],
)
def test_nothing_of_the_project_can_be_written(ws: Path, target: str) -> None:
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", ws).read_only())
    assert sandbox.unavailable_reason() is None
    command = f"mkdir -p $(dirname {target}); echo '{{}}' >> {target}"
    result = asyncio.run(run_shell(command, cwd=ws, sandbox=sandbox, timeout_s=20))
    assert "Read-only file system" in result.output, result.output
    assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()} == before
    assert not (ws / "conf" / "claude.json").exists() and not (ws / "sub").exists()
