"""The signals that end a run from outside: SIGTERM (`kill`, a supervisor), SIGHUP (the terminal
closed) and SIGQUIT. Each is handled like an interrupt: the work under way is cancelled (the agent
leaves the history valid), the session log is synced, one line goes to stderr, and the exit code is
128 + the signal's number, as a shell reports a process the signal ended.

Only the standard library is imported here: the REPL loads this with its prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TextIO

STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


class Stopper:
    """Which stopping signal came first, once `install`ed on a running loop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._terminal: list[int] = []  # of stdout and stderr, those on a terminal

    def install(self, loop: asyncio.AbstractEventLoop, stop: Callable[[], object]) -> None:
        """Call `stop` on each stopping signal (again on a second one: a stop that waits on
        something may be stopped harder)."""
        # known now: once the terminal has hung up, it no longer answers as one
        self._terminal = [fd for fd in (1, 2) if _isatty(fd)]
        for signum in STOPPING:
            # not on the main thread, or no signals on this platform: the default action stands
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self._received, signum, stop)

    def _received(self, signum: int, stop: Callable[[], object]) -> None:
        if self.signum is None:
            self.signum = signum
        if signum == getattr(signal, "SIGHUP", None):
            leave_terminal(self._terminal)
        stop()

    def lost_terminal(self, error: OSError) -> bool:
        """Whether `error`, raised by a write, says the terminal is gone (EIO): its SIGHUP is on the
        way, and may come after the write that found out. Handled as that hangup, from now."""
        if error.errno != errno.EIO:
            return False
        if self.signum is None:
            self.signum = getattr(signal, "SIGHUP", signal.SIGTERM)
        leave_terminal(self._terminal)
        return True

    @property
    def stopped(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def told(self, session_id: str | None) -> str:
        """The line that says the run was interrupted (by which signal), and how to go on."""
        how = (
            f"interrupted by {signal.Signals(self.signum).name}" if self.signum is not None else "interrupted"
        )
        saved = f"; the session is saved (--resume {session_id} continues it)" if session_id else ""
        return f"piton: {how}{saved}"


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def leave_terminal(fds: list[int]) -> None:
    """After a hangup the terminal is gone: a write to it fails (EIO), and would fail again in every
    cleanup that draws or prints. What went to it (`fds`) goes to /dev/null instead; output bound for
    a file or a pipe is left alone, it is still read."""
    if not fds:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)


def say(line: str, stream: TextIO | None = None) -> None:
    """One line on stderr, and never an error for it: after a hangup nobody may be there to read.
    By default the process's own stderr: the REPL's screen has taken over `sys.stderr` meanwhile."""
    stream = stream if stream is not None else (sys.__stderr__ or sys.stderr)
    with contextlib.suppress(OSError, ValueError):
        stream.write(line + "\n")
        stream.flush()


def unexpected_errors(
    say_line: Callable[[str], None], quiet: Callable[[], bool]
) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """A handler of errors no task waited for: one line, or nothing while `quiet()` (the run is being
    stopped: a read cut short by the interrupt fails in the HTTP client's own callbacks, and nobody may
    read the terminal after a hangup). Never asyncio's traceback; in the REPL never prompt_toolkit's
    handler either, which asks to "Press ENTER to continue" and, on a terminal that has hung up (where
    reading fails at once, again and again), waited for it forever at full CPU."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if quiet():
            return
        error = context.get("exception")
        with contextlib.suppress(Exception):  # saying it must not fail in turn
            say_line(
                f"piton: {type(error).__name__}: {error}" if error else f"piton: {context.get('message')}"
            )

    return handle
