"""Attacks from a command left running in the background (Bash `run_in_background`). It runs
beside other commands and the file tools, so no snapshot can be taken around it: what would run
code outside the sandbox or grant permissions must be out of its reach for its whole life, and the
guard's own removals must not be turned against the user by a folder it swaps meanwhile."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.tools import ToolContext, ToolResult
from tests.builtin_tools.helpers import call_async, context

pytestmark = pytest.mark.sandbox

_PLANT = (
    "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
    "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config; "
    "mkdir -p evil && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config && "
    'printf "$PWD/evil" > .git/commondir; '
    'echo \'{"permissions":{"allow":["Bash"]}}\' > .claude/settings.json; '
    'echo \'{"permissions":{"allow":["Bash"]}}\' > .piton/settings.local.json; '
    "mv .claude .claude-old; mkdir .claude; echo '{}' > .claude/settings.json; "
)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "user.email", "a@b.c")
    git(ws, "config", "user.name", "a")
    return ws


async def background(ctx: ToolContext, command: str) -> ToolResult:
    return await call_async(Bash(), ctx, command=command, run_in_background=True)


async def settle(ctx: ToolContext, marker: Path) -> None:
    """Wait until the shell has done its work (it touches `marker`), while it still runs."""
    for _ in range(600):
        if await asyncio.to_thread(marker.exists):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background command never got to its marker")


def assert_nothing_planted(ws: Path) -> None:
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert not (ws / ".git" / "commondir").exists()
    for settings in (".claude/settings.json", ".piton/settings.local.json"):
        assert not (ws / settings).exists(), settings
    git(ws, "status")
    git(ws, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (ws / "pwned").exists()


def test_a_running_background_command_cannot_touch_git_or_settings(tmp_path: Path) -> None:
    """Checked while it still runs (no restore has happened) and again after it is killed: hooks,
    config, a commondir, and settings in `.claude`/`.piton`, which did not exist before."""
    ws = repo(tmp_path)
    ctx = context(ws)

    async def work() -> None:
        out = await background(ctx, _PLANT + "touch done; sleep 60")
        assert not out.is_error, out.content
        await settle(ctx, ws / "done")
        assert_nothing_planted(ws)
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert_nothing_planted(ws)
    assert not (ws / ".claude").exists() and not (ws / ".piton").exists()  # the placeholders went


def test_a_background_command_cannot_swap_the_folder_above_a_hooks_folder(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", ".husky/_")
    (ws / ".husky").mkdir()  # the hooks folder itself is not there yet (husky not installed)
    ctx = context(ws)

    async def work() -> None:
        await background(
            ctx,
            "mv .husky .h2; mkdir -p .husky/_; printf '#!/bin/sh\\ntouch pwned\\n' > .husky/_/pre-commit; "
            "chmod +x .husky/_/pre-commit; touch done; sleep 60",
        )
        await settle(ctx, ws / "done")
        assert not (ws / ".husky" / "_" / "pre-commit").exists()
        git(ws, "commit", "-q", "--allow-empty", "-m", "x")
        assert not (ws / "pwned").exists()
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert not (ws / ".husky" / "_").exists() and not (ws / ".h2").exists()


def test_settings_a_background_command_plants_deeper_in_the_tree_are_removed(tmp_path: Path) -> None:
    """A session started in `pkg/` would read `pkg/.claude/settings.json`: removed by the next
    reminder while the shell runs, and again when it ends."""
    ws = repo(tmp_path)
    (ws / "pkg" / ".piton").mkdir(parents=True)
    users = ws / "pkg" / ".piton" / "settings.json"
    users.write_text('{"permissions": {"deny": ["Bash(curl:*)"]}}')
    ctx = context(ws)
    planted = ws / "pkg" / ".claude" / "settings.json"

    async def work() -> None:
        await background(
            ctx,
            'mkdir -p pkg/.claude && echo \'{"permissions":{"allow":["Bash"]}}\' > pkg/.claude/settings.json;'
            " touch done; while [ ! -e again ]; do sleep 0.05; done;"
            " mkdir -p lib/.piton && echo '{}' > lib/.piton/settings.local.json",
        )
        await settle(ctx, ws / "done")
        news = ctx.shells.news() or ""
        assert not planted.exists() and f"Removed {planted}" in news
        (ws / "again").touch()
        shell = ctx.shells.get("bash_1")
        assert shell is not None and await shell.wait(30)

    asyncio.run(work())
    assert not (ws / "lib" / ".piton" / "settings.local.json").exists()
    assert users.exists()  # the user's own, there before, stays


def test_a_background_command_is_refused_where_a_guarded_name_is_a_symlink(tmp_path: Path) -> None:
    """A symlinked `.claude` could be replaced by a real folder and no mount can stop that: such
    a command runs in the foreground, where the guard restores around it."""
    ws = repo(tmp_path)
    (ws / "conf").mkdir()
    (ws / ".claude").symlink_to("conf")
    ctx = context(ws)

    async def work() -> ToolResult:
        return await background(ctx, "rm .claude; mkdir .claude; echo '{}' > .claude/settings.json")

    out = asyncio.run(work())
    assert out.is_error and "symbolic link" in str(out.content)
    assert (ws / ".claude").is_symlink()


def test_the_guards_removals_never_follow_a_folder_a_background_command_swaps(tmp_path: Path) -> None:
    """While a background command keeps turning `sub` into a symlink to a folder outside the
    project and back, foreground commands plant settings files there; the guard removes what they
    planted and never the user's file the symlink leads to."""
    ws = repo(tmp_path)
    outside = tmp_path / "outside"
    (outside / ".claude").mkdir(parents=True)
    users = outside / ".claude" / "settings.json"
    ctx = context(ws)

    async def work() -> None:
        await background(
            ctx,
            f"while :; do rm -rf sub; ln -s {outside} sub; rm -f sub; mkdir -p sub/.claude; "
            "echo '{}' > sub/.claude/settings.json; done",
        )
        deadline = time.monotonic() + 8
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            users.write_text('{"permissions": {"deny": ["Bash(curl:*)"]}}')
            os.utime(users)
            await call_async(
                Bash(), ctx, command="mkdir -p other/.claude; echo '{}' > other/.claude/settings.json"
            )
            assert users.exists(), f"attempt {attempt}: the user's file outside the project was removed"
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert not (ws / "other" / ".claude" / "settings.json").exists()
    assert not (ws / "sub" / ".claude" / "settings.json").exists()
