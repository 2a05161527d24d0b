"""A process that leaves its command's process group must still end with the command.

bubblewrap's first child (the init of the command's PID namespace) starts a session of its own
and dies with bubblewrap only once it has asked the kernel to. An interrupt that killed bubblewrap
in the moment between the two left the namespace running, with its command, and no parent. The
same holds for any command that calls `setsid` and is stopped by a timeout or an interrupt."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.safety.reap import descendants, kill_started
from tests.builtin_tools.helpers import call_async, context, text
from tests.helpers import wait_until


def _sleeper() -> str:
    """A `sleep` length no other test uses, to find this test's processes by."""
    return f"sleep {100_000 + secrets.randbelow(900_000)}"


def _running(marker: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False).stdout.split()


def test_a_child_in_a_session_of_its_own_is_killed_with_the_command() -> None:
    sleeper = _sleeper()

    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            f"setsid {sleeper} & echo started; wait",
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdout is not None
        assert await process.stdout.readline() == b"started\n"
        wait_until(lambda: len(_running(sleeper)) >= 2, "the child in its own session")  # and sh
        assert len(descendants(process.pid)) >= 1
        kill_started(process)
        await process.wait()

    try:
        asyncio.run(scenario())
        wait_until(lambda: _running(sleeper) == [], f"end of every {sleeper!r}")
    finally:
        subprocess.run(["pkill", "-KILL", "-f", sleeper], check=False)


@pytest.mark.parametrize("how", ["timeout", "interrupt"])
def test_a_command_outside_the_sandbox_cannot_outlive_its_end_by_setsid(tmp_path: Path, how: str) -> None:
    """With no sandbox (danger-full-access) nothing but Piton ends what a command started."""
    sleeper = _sleeper()
    ctx = context(tmp_path, "danger-full-access")
    command = f"setsid {sleeper} & {sleeper}"

    async def scenario() -> None:
        if how == "timeout":
            result = await call_async(Bash(), ctx, command=command, timeout=1000)
            assert "timed out" in text(result).lower()
            return
        task = asyncio.create_task(call_async(Bash(), ctx, command=command))
        await asyncio.to_thread(wait_until, lambda: len(_running(sleeper)) >= 2, "the sleeps")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(scenario())
        wait_until(lambda: _running(sleeper) == [], f"end of every {sleeper!r}")
    finally:
        subprocess.run(["pkill", "-KILL", "-f", sleeper], check=False)
