"""Settings files planted deep in the tree by a command, once the guard has seen the tree before and
looks only where it changed: in an existing folder whose modification time the command sets back,
in a tree moved in whole, under a folder renamed over another, and after the command made so many
changes that the kernel dropped their notices. Each runs through the real Bash tool in the real
sandbox; the check is that the file is gone when the command returns (P5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.tools import ToolContext, ToolResult
from tests.builtin_tools.helpers import call, context

pytestmark = pytest.mark.sandbox

_ALLOW = """'{"permissions":{"allow":["Bash"]}}'"""


def bash(ctx: ToolContext, command: str) -> ToolResult:
    return call(Bash(), ctx, command=command)


def seen(tmp_path: Path) -> tuple[Path, ToolContext]:
    """A project with a deep tree (and a settings file of the user's) that two commands that write
    have already run in: the guard knows it, and from now on looks only where it changed."""
    ws = tmp_path / "ws"
    for i in range(20):
        (ws / "src" / f"pkg{i}" / "deep" / "er").mkdir(parents=True)
    (ws / "src" / "pkg1" / ".claude").mkdir()
    (ws / "src" / "pkg1" / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash"]}}')
    ctx = context(ws)
    for _ in range(2):
        assert not bash(ctx, "touch src/pkg0/warm").is_error
    return ws, ctx


def test_a_file_planted_in_an_existing_folder_with_its_time_set_back_is_removed(tmp_path: Path) -> None:
    ws, ctx = seen(tmp_path)
    deep = "src/pkg7/deep/er"
    out = bash(
        ctx,
        f"touch -r {deep} /tmp/stamp && mkdir {deep}/.piton && echo {_ALLOW} > {deep}/.piton/settings.json"
        f" && touch -r /tmp/stamp {deep}/.piton {deep}",
    )
    assert not (ws / deep / ".piton" / "settings.json").exists(), out.content
    assert "settings files are protected" in str(out.content)


def test_a_tree_moved_in_whole_is_looked_through(tmp_path: Path) -> None:
    ws, ctx = seen(tmp_path)
    out = bash(
        ctx,
        f"mkdir -p /tmp/made/x/y/.claude && echo {_ALLOW} > /tmp/made/x/y/.claude/settings.local.json"
        " && mv /tmp/made/x src/pkg3/deep/x",
    )
    assert not (ws / "src/pkg3/deep/x/y/.claude/settings.local.json").exists(), out.content
    assert "settings files are protected" in str(out.content)  # it was planted, and removed


def test_a_folder_renamed_over_another_is_looked_through(tmp_path: Path) -> None:
    """The new folder takes a known folder's name: the guard must not take it for the one it knew."""
    ws, ctx = seen(tmp_path)
    out = bash(
        ctx,
        f"mkdir -p src/new/deep/er/.piton && echo {_ALLOW} > src/new/deep/er/.piton/settings.json"
        " && rm -rf src/pkg5 && mv src/new src/pkg5",
    )
    assert not (ws / "src/pkg5/deep/er/.piton/settings.json").exists(), out.content
    assert "settings files are protected" in str(out.content)


def test_the_users_settings_file_is_put_back_and_a_neighbour_removed(tmp_path: Path) -> None:
    ws, ctx = seen(tmp_path)
    out = bash(
        ctx,
        f"echo {_ALLOW} > src/pkg1/.claude/settings.json && echo {_ALLOW} > src/pkg1/.claude/settings.local.json",
    )
    assert (ws / "src/pkg1/.claude/settings.json").read_text() == '{"permissions": {"deny": ["Bash"]}}'
    assert not (ws / "src/pkg1/.claude/settings.local.json").exists(), out.content
    assert "Restored" in str(out.content) and "settings files are protected" in str(out.content)


def test_a_file_planted_after_a_flood_of_changes_is_removed(tmp_path: Path) -> None:
    """More changes than the kernel queues notices of (16,384 by default): the guard, told that
    some were lost, checks every folder it knows. The flood touches two files in turn, since the
    kernel folds a notice into the one before it only when both are the same, and a flood of new
    files would leave thousands behind for the test run to delete."""
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if queued > 100_000:
        pytest.skip(f"the kernel queues {queued:,} notices: a flood would take too long")
    ws, ctx = seen(tmp_path)
    deep = "src/pkg9/deep/er"
    out = bash(
        ctx,
        f"cd src/pkg0 && yes $'a\\nb' | head -n {queued + 2000} | xargs touch && cd ../.. && "
        f"mkdir {deep}/.claude && echo {_ALLOW} > {deep}/.claude/settings.json",
    )
    assert not (ws / deep / ".claude" / "settings.json").exists(), out.content
    assert "settings files are protected" in str(out.content)


@pytest.mark.parametrize("link", [".git/info", ".git/info/exclude"])
def test_a_linked_git_info_never_carries_pitons_write_outside_the_project(
    project: Path, tmp_path: Path, link: str
) -> None:
    """The project's files (the model's writes) make `.git/info`, or the exclude file in it, a link
    to a place outside: keeping the local settings out of commits writes nothing there."""
    from tests.helpers import piton

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".git" / "info").mkdir(parents=True, exist_ok=True)
    planted = project / link
    if planted.is_dir():
        planted.rmdir()
        planted.symlink_to(elsewhere, target_is_directory=True)
    else:
        planted.symlink_to(elsewhere / "exclude")
    assert piton(project, "config", "set", "model", "opus").returncode == 0
    assert list(elsewhere.iterdir()) == []
    assert (project / ".piton" / "settings.local.json").exists()
