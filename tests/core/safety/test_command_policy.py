"""Which confinement a command gets once it is allowed: the plan, read as a table (no process runs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from piton.core.safety.command_policy import plan_command
from piton.core.safety.policy import SandboxPolicy

if TYPE_CHECKING:
    from piton.core.safety.policy import SandboxMode


@pytest.mark.parametrize(
    ("mode", "command", "left_running", "expected"),
    [
        # a line that only looks runs where it can only look, beside others, with nothing to guard
        ("workspace-write", "ls -la", False, ("read-only", "looking", "shared", "none", False)),
        # any other line runs alone, its guarded places kept around it
        ("workspace-write", "touch x", False, ("workspace-write", "session", "exclusive", "snapshot", False)),
        ("workspace-write", "ls > x", False, ("workspace-write", "session", "exclusive", "snapshot", False)),
        ("workspace-write", "cd sub", False, ("read-only", "looking", "shared", "none", False)),
        # a read-only session cannot write: every line shares the lock
        ("read-only", "touch x", False, ("read-only", "session", "shared", "none", False)),
        ("read-only", "ls", False, ("read-only", "session", "shared", "none", False)),
        # without a sandbox there is nothing the guard could keep, but a line still runs alone
        ("danger-full-access", "ls", False, ("danger-full-access", "session", "exclusive", "none", False)),
        (
            "danger-full-access",
            "rm -rf x",
            False,
            ("danger-full-access", "session", "exclusive", "none", False),
        ),
        # left running: a lasting sandbox (or a read-only one for a looker), started alone
        (
            "workspace-write",
            "npm run dev",
            True,
            ("workspace-write", "lasting", "exclusive", "lasting", True),
        ),
        (
            "workspace-write",
            "tail -f log",
            True,
            ("read-only", "lasting-looking", "exclusive", "none", False),
        ),
        ("read-only", "npm run dev", True, ("read-only", "lasting-looking", "exclusive", "none", True)),
        ("danger-full-access", "sleep 9", True, ("danger-full-access", "lasting", "exclusive", "none", True)),
    ],
)
def test_each_command_gets_its_plan(
    tmp_path: Path, mode: SandboxMode, command: str, left_running: bool, expected: tuple[object, ...]
) -> None:
    policy = SandboxPolicy.create(mode, tmp_path)
    plan = plan_command(command, policy, left_running=left_running)
    assert (plan.policy.mode, plan.sandbox, plan.lock, plan.guard, plan.policy.lasting) == expected
    assert plan.policy.workspace == policy.workspace


def test_a_line_the_classification_cannot_read_is_never_a_looker(tmp_path: Path) -> None:
    policy = SandboxPolicy.create("workspace-write", tmp_path)
    for command in ("ls $(touch x)", "cat <<EOF\nx\nEOF", "./ls", "sort -o out in", "git diff --output=x"):
        assert plan_command(command, policy).lock == "exclusive", command
