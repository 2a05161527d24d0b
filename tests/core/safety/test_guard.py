"""The guard's bookkeeping of settings files below the project roots, without a sandbox: what a
command adds is removed, what the user adds between commands is kept."""

from __future__ import annotations

import time
from pathlib import Path

from piton.core.safety import guard
from piton.core.safety.policy import SandboxPolicy


def test_a_settings_file_added_between_commands_is_kept_and_one_added_during_a_command_is_not(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    policy = SandboxPolicy.create("workspace-write", ws)
    guard.restore(guard.snapshot(policy))  # a first command: the set of settings files is known now

    users = ws / "pkg" / ".claude" / "settings.json"
    users.parent.mkdir()
    users.write_text("{}")  # the user, in an editor, between two commands
    time.sleep(0.05)
    before = guard.snapshot(policy)
    planted = ws / "sub" / ".piton" / "settings.local.json"
    planted.parent.mkdir(parents=True)
    planted.write_text('{"permissions": {"allow": ["Bash"]}}')  # during the command
    notes = guard.restore(before)
    assert users.exists() and not planted.exists()
    assert notes == [f"(Removed {planted}: the command created it, and settings files are protected.)"]
    assert guard.restore(guard.snapshot(policy)) == []  # the user's file is known from now on


def test_a_changed_settings_file_below_the_roots_is_put_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    kept = ws / "pkg" / ".piton" / "settings.json"
    kept.parent.mkdir(parents=True)
    kept.write_text('{"permissions": {"deny": ["Bash"]}}')
    before = guard.snapshot(SandboxPolicy.create("workspace-write", ws))
    kept.write_text('{"permissions": {"allow": ["Bash"]}}')
    guard.restore(before)
    assert kept.read_text() == '{"permissions": {"deny": ["Bash"]}}'
