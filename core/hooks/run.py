"""Running hook commands: the event's JSON on stdin, exit code and output read back.

Hooks are the user's own commands (or a trusted folder's), run as Claude Code runs them: through
`sh -c`, in the project folder, with `$CLAUDE_PROJECT_DIR` set and the settings' `env` added, but in
a sandbox like Bash's unless the user's settings opt one out (`piton.core.safety.programs`, which
the caller's `start` asks). Every hook of one event runs at the same time. A hook that hangs is
killed (its whole process group) at its timeout; one that crashes, prints garbage or cannot start
is reported and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from piton.core.hooks.config import HookCommand
from piton.core.records import record
from piton.core.safety.programs import OPT_OUT_HINT
from piton.core.safety.reap import kill_started
from piton.core.safety.sandbox import Launch

MAX_OUTPUT = 1_000_000  # bytes kept of each stream: a hook that prints a gigabyte is not read whole
# how to start a hook: the argv and environment (sandboxed or not), or why it cannot start
Starter = Callable[[HookCommand], Launch | str]


@record(frozen=True)
class HookRun:
    """One hook's answer."""

    hook: HookCommand
    exit_code: int | None  # None: it did not finish (timeout) or could not start
    stdout: str
    stderr: str
    problem: str | None = None  # why it has no usable answer (timed out, could not start)

    @property
    def output(self) -> dict[str, Any] | None:
        """The JSON object it printed on a clean exit, if it printed one."""
        if self.exit_code != 0:
            return None
        text = self.stdout.strip()
        if not text.startswith("{"):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @property
    def blocks(self) -> bool:
        """Exit code 2: Claude Code's blocking error (stderr goes to whoever it concerns)."""
        return self.exit_code == 2

    @property
    def outcome(self) -> str:
        if self.problem is not None:
            return "error"
        return "success" if self.exit_code == 0 else "blocked" if self.blocks else "error"

    def failure(self) -> str | None:
        """One line for people when the hook failed without blocking (a crash, a timeout)."""
        if self.problem is not None:
            return f"{self.hook.event} hook `{self.hook.command}` {self.problem}{self._hint()}"
        if self.exit_code not in (0, 2):
            tail = (self.stderr.strip().splitlines() or [""])[-1][:200]
            return (
                f"{self.hook.event} hook `{self.hook.command}` failed (exit {self.exit_code})"
                + (f": {tail}" if tail else "")
                + self._hint()
            )
        if self.exit_code == 0 and self.stdout.strip().startswith("{") and self.output is None:
            return f"{self.hook.event} hook `{self.hook.command}` printed output that is not a JSON object"
        return None

    def _hint(self) -> str:
        """For a user's hook that failed in the sandbox: how to run it unconfined (not for a
        project's or a plugin's, which cannot be)."""
        if not (self.hook.sandboxed and self.hook.may_opt_out):
            return ""
        return f" (it ran in the sandbox; {OPT_OUT_HINT})"


async def run_hooks(
    hooks: Sequence[HookCommand], payload: dict[str, Any], cwd: Path, start: Starter
) -> list[HookRun]:
    """Run `hooks` side by side (each distinct command once), all given `payload` on stdin."""
    unique = list({h.command: h for h in hooks}.values())
    data = json.dumps(payload).encode()
    return list(await asyncio.gather(*(_run(h, data, cwd, start) for h in unique)))


async def _run(hook: HookCommand, data: bytes, cwd: Path, start: Starter) -> HookRun:
    launch = start(hook)
    if isinstance(launch, str):
        return HookRun(hook, None, "", "", problem=f"did not run: {launch}")
    try:
        return await _run_launched(hook, data, cwd, launch)
    finally:
        launch.close()


async def _run_launched(hook: HookCommand, data: bytes, cwd: Path, launch: Launch) -> HookRun:
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=cwd,
            env=launch.env,
            pass_fds=launch.pass_fds,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout ends all it started
        )
    except OSError as e:
        return HookRun(hook, None, "", "", problem=f"could not start ({e.strerror or e})")
    launch.started()
    try:
        stdout, stderr = await asyncio.wait_for(_communicate(process, data), hook.timeout)
    except TimeoutError:
        _kill(process)
        await process.wait()
        return HookRun(hook, None, "", "", problem=f"timed out after {hook.timeout:g} s and was stopped")
    except asyncio.CancelledError:
        _kill(process)
        with contextlib.suppress(Exception):
            await asyncio.shield(process.wait())
        raise
    return HookRun(hook, process.returncode, _text(stdout), _text(stderr))


async def _communicate(process: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a hook need not read its input
        process.stdin.write(data)
        await process.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.close()
    stdout, stderr = await asyncio.gather(_bounded(process.stdout), _bounded(process.stderr))
    await process.wait()
    return stdout, stderr


async def _bounded(stream: asyncio.StreamReader) -> bytes:
    """What a stream says, up to `MAX_OUTPUT` bytes (the rest is read and dropped)."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < MAX_OUTPUT:
            kept += chunk[: MAX_OUTPUT - len(kept)]
    return bytes(kept)


def _kill(process: asyncio.subprocess.Process) -> None:
    kill_started(process)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
