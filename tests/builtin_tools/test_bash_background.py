"""Background shells through the real tools and the real sandbox: Bash `run_in_background`,
BashOutput and KillShell, in one event loop as a session has."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.builtin_tools.bash_background import BashOutput, KillShell
from piton.core.shells import MAX_UNREAD_BYTES
from piton.core.tools import ToolContext
from tests.builtin_tools.helpers import call_async, context, text

pytestmark = pytest.mark.sandbox


def scenario(work: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(work(), 60))


async def start(ctx: ToolContext, command: str, **more: object) -> str:
    out = await call_async(Bash(), ctx, command=command, run_in_background=True, **more)
    assert not out.is_error, out.content
    return text(out)


async def output(ctx: ToolContext, bash_id: str = "bash_1", **more: object) -> str:
    return text(await call_async(BashOutput(), ctx, bash_id=bash_id, **more))


async def until_ended(ctx: ToolContext, shell_id: str = "bash_1") -> None:
    shell = ctx.shells.get(shell_id)
    assert shell is not None
    assert await shell.wait(30), f"{shell_id} did not end"


async def heartbeat_stops(beat: Path) -> bool:
    """Whether a file a loop rewrites every 0.1 s has stopped changing (its writer is dead)."""
    await asyncio.sleep(0.3)
    before = await asyncio.to_thread(beat.read_text)
    await asyncio.sleep(0.6)
    return await asyncio.to_thread(beat.read_text) == before


async def until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} never happened")


def test_a_command_in_the_background_returns_at_once_and_its_output_is_read_in_parts(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        said = await start(ctx, "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; exit 3")
        assert "bash_1" in said
        shell = ctx.shells.get("bash_1")
        assert shell is not None and shell.running  # waiting for `go`: the call did not wait for it
        await until(lambda: shell.total_bytes > 0, "output")
        first = await output(ctx)
        assert "<status>running</status>" in first and "first" in first and "second" not in first
        assert "(no new output)" in await output(ctx)  # what was read is not read again
        (tmp_path / "go").touch()
        await until_ended(ctx)
        last = await output(ctx)
        assert "<status>failed</status>" in last and "<exit_code>3</exit_code>" in last
        assert "second" in last and "first" not in last

    scenario(work)


def test_a_filter_shows_matching_lines_and_consumes_the_rest(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        await start(ctx, "printf 'ok 1\\nERROR boom\\nok 2\\nERROR bang\\n'")
        await until_ended(ctx)
        shown = await output(ctx, filter="^ERROR")
        assert "ERROR boom\nERROR bang" in shown and "ok 1" not in shown
        assert "2 lines did not match" in shown
        assert "(no new output)" in await output(ctx)
        bad = await call_async(BashOutput(), ctx, bash_id="bash_1", filter="([")
        assert bad.is_error and "regular expression" in text(bad)

    scenario(work)


def test_unknown_ids_are_refused_with_the_known_ones(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        await start(ctx, "true")
        for tool, key in ((BashOutput(), "bash_id"), (KillShell(), "shell_id")):
            out = await call_async(tool, ctx, **{key: "bash_9"})
            assert out.is_error and "bash_9" in text(out) and "bash_1" in text(out)

    scenario(work)


def test_kill_shell_ends_the_command_and_what_it_started(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    beat = tmp_path / "beat"

    async def work() -> None:
        # the loop runs in a child of a child: killing only the shell would leave it beating
        await start(ctx, "bash -c 'while :; do date +%s%N > beat; sleep 0.1; done' & wait")
        await until(beat.exists, "a beat")
        killed = await call_async(KillShell(), ctx, shell_id="bash_1")
        assert not killed.is_error and "Killed" in text(killed)
        assert await heartbeat_stops(beat)
        assert "<status>killed</status>" in await output(ctx)
        again = await call_async(KillShell(), ctx, shell_id="bash_1")
        assert "already ended" in text(again)

    scenario(work)


def test_a_timeout_kills_a_background_command(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        await start(ctx, "echo started; sleep 30", timeout=500)
        await until_ended(ctx)
        out = await output(ctx)
        assert "<status>killed</status>" in out and "timeout" in out and "started" in out

    scenario(work)


def test_unread_output_is_capped_and_the_discarded_part_counted(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        extra = 1_000_000
        await start(ctx, f"head -c {MAX_UNREAD_BYTES + extra} /dev/zero | tr '\\0' a; echo; echo END")
        await until_ended(ctx)
        out = await output(ctx)
        assert "bytes of earlier output were discarded unread" in out
        dropped = int(out.split("[... ")[1].split(" bytes")[0].replace(",", ""))
        assert extra <= dropped <= extra + 16
        assert out.rstrip().endswith("</timestamp>") and "END" in out

    scenario(work)


def test_the_model_is_told_what_changed_and_what_still_runs(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        await start(ctx, "echo one; while [ ! -e go ]; do sleep 0.05; done")
        await start(ctx, "sleep 30", description="wait a while")
        shell = ctx.shells.get("bash_1")
        assert shell is not None
        await until(lambda: shell.total_bytes > 0, "output")
        news = ctx.shells.news(turn_start=True) or ""
        assert "bash_1" in news and "has new output" in news
        assert "still running: bash_2 (`sleep 30`)" in news
        assert ctx.shells.news() is None  # said once
        (tmp_path / "go").touch()
        await until_ended(ctx)
        ended = ctx.shells.news() or ""
        assert "bash_1" in ended and "finished with exit code 0" in ended and "bash_2" not in ended
        await ctx.shells.kill_all()
        assert "bash_2 (`sleep 30`) was killed" in (ctx.shells.news() or "")
        assert ctx.shells.running() == []

    scenario(work)


def test_a_background_command_starts_where_the_shell_is_and_does_not_move_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    ctx = context(tmp_path)

    async def work() -> None:
        await call_async(Bash(), ctx, command="cd sub")
        await start(ctx, "pwd; cd /")
        await until_ended(ctx)
        assert f"{tmp_path}/sub" in await output(ctx)
        assert text(await call_async(Bash(), ctx, command="pwd")).strip() == f"{tmp_path}/sub"

    scenario(work)


def test_the_end_of_the_sessions_event_loop_kills_its_shells(tmp_path: Path) -> None:
    """A session whose loop ends with a shell running (an error, a signal): the shell's sandbox
    dies with its process group."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    ctx = context(tmp_path)
    beat = tmp_path / "beat"

    async def work() -> None:
        await start(ctx, "while :; do date +%s%N > beat; sleep 0.1; done")
        await until(beat.exists, "a beat")
        assert (tmp_path / ".piton").is_dir()  # held for the shell's sandbox

    asyncio.run(work())  # the loop ends with the shell still running
    ctx.shells.close()

    async def check() -> bool:
        return await heartbeat_stops(beat)

    assert asyncio.run(check())
    for placeholder in (".piton", ".claude"):  # made for the shell's sandbox; they stay, empty
        assert list((tmp_path / placeholder).iterdir()) == []


def test_a_filter_judges_a_line_only_once_it_is_whole(tmp_path: Path) -> None:
    ctx = context(tmp_path)

    async def work() -> None:
        await start(ctx, "printf 'ERR'; while [ ! -e go ]; do sleep 0.05; done; printf 'OR boom\\nok\\n'")
        shell = ctx.shells.get("bash_1")
        assert shell is not None
        await until(lambda: shell.total_bytes > 0, "output")
        assert "(no new output)" in await output(ctx, filter="^ERROR")  # `ERR` waits for its end
        (tmp_path / "go").touch()
        await until_ended(ctx)
        shown = await output(ctx, filter="^ERROR")
        assert "<stdout>\nERROR boom\n</stdout>" in shown

    scenario(work)
