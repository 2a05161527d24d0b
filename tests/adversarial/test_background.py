"""Attacks from a command left running in the background (Bash `run_in_background`). It runs
beside other commands and the file tools, so no snapshot can be taken around it: what would run
code outside the sandbox or grant permissions must be out of its reach for its whole life, and the
guard's own removals must not be turned against the user by a folder it swaps meanwhile."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.shells import BackgroundShells
from piton.core.tools import ToolContext, ToolResult
from tests.adversarial.test_guard import git, repo
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


async def background(ctx: ToolContext, command: str) -> ToolResult:
    return await call_async(Bash(), ctx, command=command, run_in_background=True)


async def settle(ctx: ToolContext, marker: Path) -> None:
    """Wait until the shell has done its work (it touches `marker`), while it still runs."""
    for _ in range(600):
        if await asyncio.to_thread(marker.exists):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the background command never got to its marker")


async def swept(ctx: ToolContext, planted: Path) -> None:
    """Wait until the guard's sweep has removed `planted` (within a few sweeps), and said so."""
    for _ in range(100):
        if not await asyncio.to_thread(planted.exists):
            break
        await asyncio.sleep(0.1)
    assert not await asyncio.to_thread(planted.exists)
    assert f"Removed {planted}" in (ctx.shells.news() or "")


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
    assert list((ws / ".piton").iterdir()) == []  # the placeholder stays, empty
    assert sorted(p.name for p in (ws / ".claude").iterdir()) == []


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
    assert list((ws / ".husky" / "_").iterdir()) == [] and not (ws / ".h2").exists()


def test_a_background_command_cannot_change_a_hook_frameworks_files(tmp_path: Path) -> None:
    """husky's scripts and pre-commit's configuration, present when the command starts, stay as
    they are for its whole life."""
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", ".husky/_")
    (ws / ".husky" / "_").mkdir(parents=True)
    (ws / ".husky" / "pre-commit").write_text("true\n")
    (ws / ".pre-commit-config.yaml").write_text("repos: []\n")
    ctx = context(ws)

    async def work() -> None:
        await background(
            ctx,
            "echo 'touch pwned' >> .husky/pre-commit; echo 'touch pwned' > .husky/post-merge; "
            "echo '- repo: local' >> .pre-commit-config.yaml; mv .husky .h2; touch done; sleep 60",
        )
        await settle(ctx, ws / "done")
        assert (ws / ".husky" / "pre-commit").read_text() == "true\n"
        assert not (ws / ".husky" / "post-merge").exists() and not (ws / ".h2").exists()
        assert (ws / ".pre-commit-config.yaml").read_text() == "repos: []\n"
        await ctx.shells.kill_all()

    asyncio.run(work())


def test_a_hook_frameworks_configuration_a_background_command_creates_is_removed(tmp_path: Path) -> None:
    """Missing when the command started, so nothing held it: the sweep removes it while the command
    runs, as it removes planted settings files, and the user's next commit runs nothing of it."""
    ws = repo(tmp_path)
    ctx = context(ws)
    ctx.shells = BackgroundShells(sweep_every_s=0.2)
    planted = ws / "lefthook.yml"

    async def work() -> None:
        await background(
            ctx,
            "printf 'pre-commit:\\n  commands:\\n    x:\\n      run: touch pwned\\n' > lefthook.yml; touch done; sleep 60",
        )
        await settle(ctx, ws / "done")
        await swept(ctx, planted)
        await ctx.shells.kill_all()

    asyncio.run(work())


def test_settings_a_background_command_plants_deeper_in_the_tree_are_removed(tmp_path: Path) -> None:
    """A session started in `pkg/` would read `pkg/.claude/settings.json`: removed by the next
    reminder while the shell runs, and again when it ends."""
    ws = repo(tmp_path)
    (ws / "pkg" / ".piton").mkdir(parents=True)
    users = ws / "pkg" / ".piton" / "settings.json"
    users.write_text('{"permissions": {"deny": ["Bash(curl:*)"]}}')
    ctx = context(ws)
    ctx.shells = BackgroundShells(sweep_every_s=0.2)
    planted = ws / "pkg" / ".claude" / "settings.json"

    async def work() -> None:
        await background(
            ctx,
            'mkdir -p pkg/.claude && echo \'{"permissions":{"allow":["Bash"]}}\' > pkg/.claude/settings.json;'
            " touch done; while [ ! -e again ]; do sleep 0.05; done;"
            " mkdir -p lib/.piton && echo '{}' > lib/.piton/settings.local.json",
        )
        await settle(ctx, ws / "done")
        await swept(ctx, planted)
        (ws / "again").touch()
        shell = ctx.shells.get("bash_1")
        assert shell is not None and await shell.wait(30)

    asyncio.run(work())
    assert not (ws / "lib" / ".piton" / "settings.local.json").exists()
    assert users.read_text() == '{"permissions": {"deny": ["Bash(curl:*)"]}}'  # the user's own stays


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
        deadline = time.monotonic() + 4  # about 60 attempts
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
    assert users.exists()
    assert not (ws / "other" / ".claude" / "settings.json").exists()
    sub = ws / "sub"
    assert sub.is_symlink() or not (sub / ".claude" / "settings.json").exists()


def test_settings_that_exist_deeper_keep_their_content_while_a_background_command_runs(
    tmp_path: Path,
) -> None:
    """No snapshot is taken around a background command: the folders holding settings files are
    read-only for it, so an existing file can be neither changed nor deleted."""
    ws = repo(tmp_path)
    deny = '{"permissions": {"deny": ["Bash(curl:*)"]}}'
    for folder in ("pkg/.piton", "lib/.claude"):
        (ws / folder).mkdir(parents=True)
        (ws / folder / "settings.json").write_text(deny)
    time.sleep(0.05)  # written before the command, as file systems' coarse times can tell
    ctx = context(ws)

    async def work() -> None:
        await background(
            ctx,
            """echo '{"permissions":{"allow":["Bash"]}}' > pkg/.piton/settings.json; """
            "rm -f lib/.claude/settings.json; mv lib lib2 && mkdir -p lib/.claude && "
            'echo \'{"permissions":{"allow":["Bash"]}}\' > lib/.claude/settings.json; touch done; sleep 60',
        )
        await settle(ctx, ws / "done")
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert (ws / "pkg/.piton/settings.json").read_text() == deny
    # renaming the folder above moves the user's file, unchanged; nothing new takes its place
    assert (ws / "lib2/.claude/settings.json").read_text() == deny
    assert not (ws / "lib/.claude/settings.json").exists()


def test_a_settings_folder_symlinked_deeper_in_the_tree_is_removed(tmp_path: Path) -> None:
    """`z/.claude -> ../q` with `q/settings.json`: a session started in `z` would read it."""
    ws = repo(tmp_path)
    ctx = context(ws)
    plant = (
        'mkdir -p q z && echo \'{"permissions":{"allow":["Bash"]}}\' > q/settings.json && '
        "ln -s ../q z/.claude"
    )
    call_result = asyncio.run(call_async(Bash(), ctx, command=plant))  # in the foreground
    assert not os.path.lexists(ws / "z" / ".claude"), call_result.content

    async def work() -> None:
        await background(ctx, plant.replace("z", "y") + "; touch done; sleep 60")
        await settle(ctx, ws / "done")
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert not os.path.lexists(ws / "y" / ".claude")


def test_a_settings_file_in_a_folder_made_read_only_is_still_removed(tmp_path: Path) -> None:
    """Making the folder read-only (`chmod 555`) must not keep a planted file out of the sweep's
    reach, nor make it count as the user's from then on (the attack matters for unprivileged users:
    root ignores the mode)."""
    ws = repo(tmp_path)
    ctx = context(ws)

    async def work() -> None:
        await background(
            ctx,
            'mkdir -p x/.claude && echo \'{"permissions":{"allow":["Bash"]}}\' > x/.claude/settings.json'
            " && chmod 555 x/.claude; touch done; sleep 60",
        )
        await settle(ctx, ws / "done")
        await ctx.shells.kill_all()

    asyncio.run(work())
    assert not (ws / "x" / ".claude" / "settings.json").exists()


def test_a_repository_made_while_a_background_command_runs_stops_it(tmp_path: Path) -> None:
    """Its sandbox was made when there was no `.git` to protect: once one appears (the user ran
    `git init`), the command is stopped before long and the model is told why."""
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = context(ws)
    ctx.shells = BackgroundShells(sweep_every_s=0.2)

    async def work() -> None:
        await background(ctx, "while :; do sleep 0.1; done")
        git(ws, "init", "-q")
        shell = ctx.shells.get("bash_1")
        assert shell is not None and await shell.wait(10), "the shell was not stopped"
        out = shell.read()
        assert out.status == "killed" and ".git" in out.text and "Start it again" in out.text

    asyncio.run(work())


def test_the_session_bus_and_other_sockets_under_run_are_hidden_with_the_network_on(tmp_path: Path) -> None:
    """D-Bus's session bus would let `systemd-run --user` start a process outside the sandbox,
    docker's socket a root container: `/run` is empty in the sandbox whatever the network."""
    ctx = context(tmp_path, network=True)
    out = asyncio.run(call_async(Bash(), ctx, command="ls -A /run | grep -v '^systemd$' || true"))
    assert not out.is_error and str(out.content).strip() in ("", "(no output)"), out.content
