"""Background shells: commands the model leaves running (Bash `run_in_background`) while the
conversation goes on: a dev server, a watcher, a long test run.

Shells are started through the command orchestrator (`piton.core.safety.run_command`), which chose the
sandbox and holds the command lock. Each runs in its own sandbox (`SandboxPolicy.left_running`),
where the guarded folders are read-only as a whole: it runs beside other commands and the file
tools, so no snapshot can be taken around it; the session's `LastingGuard` holds those folders
still and sweeps what it plants (`piton.core.safety.lasting`). Its output is kept in memory,
capped, until the model reads it (BashOutput); the newest part is also kept for the user
(`/bashes`). Shells belong to the session, not to the turn that started them: an interrupted turn
leaves them running, and they are killed when the session ends. What changed since the model last
heard (new output, an end) is told to it in a reminder with its next request.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Literal

from piton.core.clip import one_line
from piton.core.records import record
from piton.core.safety.lasting import LastingGuard
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.reap import kill_started
from piton.core.safety.sandbox import Launch, Sandbox
from piton.core.safety.shell import clean_output, start_process

ShellStatus = Literal["running", "completed", "failed", "killed"]
MAX_UNREAD_BYTES = 8 * 1024 * 1024  # what the model has not read yet; beyond it the oldest goes
TAIL_BYTES = 64 * 1024  # the newest output, for the user
SWEEP_EVERY_S = 2.0  # how often settings files planted below the roots are looked for
MAX_ENDED = 50  # ended shells kept for BashOutput and /bashes
_READ_CHUNK = 65536
_KILL_WAIT_S = 5.0
_DRAIN_S = 1.0


@record(frozen=True)
class Reading:
    """What BashOutput returns: the output since the last reading and where the shell stands."""

    text: str
    status: ShellStatus
    exit_code: int | None
    dropped_bytes: int  # unread output discarded because too much came before it was read
    hidden_lines: int = 0  # lines the filter left out (they are gone all the same)


@record
class BackgroundShell:
    id: str
    command: str
    description: str
    cwd: Path
    started: float = field(default_factory=time.time)
    status: ShellStatus = "running"
    exit_code: int | None = None
    ended: float | None = None
    notes: list[str] = field(default_factory=list)  # what the guard did when the shell ended
    total_bytes: int = 0
    _process: asyncio.subprocess.Process | None = None
    _launch: Launch | None = None
    _unread: bytearray = field(default_factory=bytearray)
    _dropped: int = 0
    _tail: bytearray = field(default_factory=bytearray)
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace")
    )
    _killed: bool = False
    _told: tuple[str, int] = ("running", 0)  # the status and output size the model last heard of
    _done: asyncio.Event = field(default_factory=asyncio.Event)
    _partial: str = ""  # an unfinished last line a filter has not judged yet
    policy: SandboxPolicy | None = None  # what its sandbox was made from
    held: frozenset[Path] = frozenset()  # the guarded places its sandbox binds read-only

    @property
    def running(self) -> bool:
        return self.status == "running"

    def runtime_s(self) -> float:
        return (self.ended or time.time()) - self.started

    def _take(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self._unread += chunk
        if len(self._unread) > MAX_UNREAD_BYTES:
            excess = len(self._unread) - MAX_UNREAD_BYTES
            del self._unread[:excess]
            self._dropped += excess
            self._decoder.reset()  # a character cut in two at the front is replaced, not misread
        self._tail += chunk
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]

    def read(self, pattern: re.Pattern[str] | None = None) -> Reading:
        """The output since the last read (the lines matching `pattern`, if given: the others are
        consumed too), and the status."""
        data, self._unread = bytes(self._unread), bytearray()
        dropped, self._dropped = self._dropped, 0
        text = self._partial + clean_output(self._decoder.decode(data, final=not self.running))
        self._partial = ""
        if self.notes and not self.running:
            text += ("\n" if text and not text.endswith("\n") else "") + "\n".join(self.notes) + "\n"
            self.notes = []
        hidden = 0
        if pattern is not None:
            if self.running and not text.endswith("\n"):  # judged when it is whole
                text, _, self._partial = text.rpartition("\n")
                text += "\n" if text else ""
            lines = text.splitlines()
            kept = [line for line in lines if pattern.search(line)]
            hidden = len(lines) - len(kept)
            text = "\n".join(kept) + ("\n" if kept else "")
        self._told = (self.status, self.total_bytes)
        return Reading(text, self.status, self.exit_code, dropped, hidden)

    def tail(self) -> str:
        """The newest output, for the user (reading it takes nothing from the model's)."""
        return clean_output(bytes(self._tail).decode("utf-8", "replace"))

    def kill(self) -> bool:
        """End the shell and all it started (the sandbox with it); False if it had ended."""
        if not self.running or self._process is None:
            return False
        if self._process.returncode is not None:
            return True  # ending already; its process group id may be another's by now
        self._killed = True
        kill_started(self._process)
        return True

    async def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the shell has ended and been cleaned up; False on timeout."""
        try:
            await asyncio.wait_for(self._done.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def told(self) -> None:
        """The model knows where the shell stands (it stopped it itself)."""
        self._told = (self.status, self.total_bytes)

    def news(self) -> str | None:
        """One line on what changed since the model last heard, or None."""
        said = f"Background shell {self.id} (`{one_line(self.command, 80)}`)"
        if not self.running and self._told[0] == "running":
            self._told = (self.status, self.total_bytes)
            if self.status == "killed":
                return f"{said} was killed. Any output it left can be read with BashOutput."
            return (
                f"{said} has finished with exit code {self.exit_code}. Read its output with BashOutput "
                f"(bash_id {self.id!r})."
            )
        if self.running and self.total_bytes > self._told[1]:
            self._told = (self.status, self.total_bytes)
            return f"{said} has new output. Read it with BashOutput (bash_id {self.id!r})."
        return None


class BackgroundShells:
    """The session's background shells, shared by the main agent and its subagents."""

    def __init__(self, sweep_every_s: float = SWEEP_EVERY_S) -> None:
        self._shells: dict[str, BackgroundShell] = {}
        self._count = 0
        self.guard = LastingGuard()  # what the shells that can write may not change, and their sweeps
        self._notes: list[str] = []  # what the sweeps did, for the next reminder
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._sweep_every_s = sweep_every_s
        self.listeners: list[Callable[[BackgroundShell], None]] = []  # told of each start and end

    def __iter__(self) -> Iterator[BackgroundShell]:
        return iter(list(self._shells.values()))

    def get(self, shell_id: str) -> BackgroundShell | None:
        return self._shells.get(shell_id.strip())

    def running(self) -> list[BackgroundShell]:
        return [s for s in self._shells.values() if s.running]

    def _writing(self) -> list[BackgroundShell]:
        return [s for s in self.running() if s.policy is not None and s.policy.mode == "workspace-write"]

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        description: str = "",
        timeout_s: float | None = None,
    ) -> BackgroundShell:
        """Start `command` in `sandbox` (a lasting one, made from `policy`) and return at once.
        Raises `GuardError` when the guarded folders cannot be held still for it, OSError when it
        cannot start."""
        held = await self.guard.start(policy, idle=lambda: not self._writing())
        self._count += 1
        shell = BackgroundShell(f"bash_{self._count}", command, description, cwd, policy=policy, held=held)
        try:
            shell._process, shell._launch = await start_process(sandbox, command, cwd)
        except BaseException:
            self._count -= 1
            raise
        self._shells[shell.id] = shell
        self._forget_old()
        task = asyncio.get_running_loop().create_task(self._follow(shell, timeout_s))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if policy.mode == "workspace-write" and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_while_running())
        self._tell(shell)
        return shell

    def _forget_old(self) -> None:
        ended = [s for s in self._shells.values() if not s.running]
        for shell in ended[: max(0, len(ended) - MAX_ENDED)]:
            del self._shells[shell.id]

    async def _follow(self, shell: BackgroundShell, timeout_s: float | None) -> None:
        process = shell._process
        assert process is not None and process.stdout is not None
        stdout = process.stdout

        async def read() -> None:
            while chunk := await stdout.read(_READ_CHUNK):
                shell._take(chunk)

        reader = asyncio.ensure_future(read())
        timed_out = False
        try:
            try:
                await asyncio.wait_for(process.wait(), timeout_s)
            except TimeoutError:
                timed_out = True
                shell.kill()
            await process.wait()
            # the sandbox's processes die with it; its output is complete when they all have
            await asyncio.wait({reader}, timeout=_DRAIN_S)
            if not self._writing() or self._writing() == [shell]:
                shell.notes += await self.guard.sweep()
        except BaseException:  # the loop is closing (the session ends): the command goes with it
            shell.kill()
            raise
        finally:
            reader.cancel()
            self._ended(shell, timed_out)

    def _ended(self, shell: BackgroundShell, timed_out: bool) -> None:
        if not shell.running:
            return
        process = shell._process
        code = process.returncode if process is not None else None
        shell.ended = time.time()
        if shell._killed or timed_out:
            shell.status = "killed"
            if timed_out:
                shell.notes.append("(The command reached its timeout and was killed.)")
        else:
            shell.status = "completed" if code == 0 else "failed"
            shell.exit_code = code
        if shell._launch is not None:
            shell._launch.close()
            shell._launch = None
        shell._done.set()
        self._tell(shell)

    async def _sweep_while_running(self) -> None:
        """While shells that can write run: every few seconds, remove the settings files they
        planted below the roots, and stop any whose sandbox no longer covers what is guarded."""
        while self._writing():
            await asyncio.sleep(self._sweep_every_s)
            self._notes += await self.guard.sweep()
            for shell in self._writing():
                assert shell.policy is not None
                new = await self.guard.appeared(shell.policy, shell.held)
                if new and shell.kill():
                    listed = ", ".join(str(p) for p in sorted(new))
                    shell.notes.append(
                        f"(Stopped: {listed} appeared while it ran (a new repository, hooks folder or "
                        "included git config), which it could have written. Start it again to run it "
                        "with them protected.)"
                    )

    def news(self, *, turn_start: bool = False) -> str | None:
        """A reminder for the model's next request: what changed, and at the start of a turn the
        shells still running. None when there is nothing to say."""
        lines = [line for shell in self._shells.values() if (line := shell.news())]
        lines += self._notes
        self._notes = []
        if turn_start and (running := [s for s in self.running() if not any(s.id in line for line in lines)]):
            listed = ", ".join(f"{s.id} (`{one_line(s.command, 60)}`)" for s in running)
            lines.append(
                f"Background shells still running: {listed}. Check them with BashOutput; stop them with "
                "KillShell when they are no longer needed."
            )
        return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>" if lines else None

    def kill(self, shell_id: str) -> BackgroundShell | None:
        shell = self.get(shell_id)
        if shell is not None:
            shell.kill()
        return shell

    async def kill_all(self, timeout_s: float = _KILL_WAIT_S) -> None:
        """Kill every running shell and wait until each is cleaned up."""
        running = self.running()
        for shell in running:
            shell.kill()
        if running:
            waits = [asyncio.ensure_future(s.wait()) for s in running]
            _, pending = await asyncio.wait(waits, timeout=timeout_s)
            for wait in pending:
                wait.cancel()

    def close(self) -> None:
        """Kill what still runs, without a loop to wait in (the last resort at exit): the sandbox
        dies with its process group, and the settings files the shells planted are swept."""
        running = self.running()
        for shell in running:
            shell.kill()
            shell.status, shell.ended = "killed", time.time()
            if shell._launch is not None:
                shell._launch.close()
                shell._launch = None
        if running and self.guard.watching:
            time.sleep(0.1)  # the sandboxes' processes die with them, a moment later
            self.guard.sweep_now()

    def tell(self, listener: Callable[[BackgroundShell], None]) -> None:
        self.listeners.append(listener)

    def _tell(self, shell: BackgroundShell) -> None:
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # a display's trouble is not the shell's
                listener(shell)
