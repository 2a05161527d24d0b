"""Running one shell command in the sandbox: a fresh process group, a deadline, captured output and
the working directory it ends in; and starting any sandboxed command (`start_process`), a command
left running too (`piton.core.shells`).

The command's stdin is /dev/null and stdout and stderr share one pipe, so output keeps its order.
On timeout or cancellation the whole process group is killed. The directory the command ends in is
reported on a private file descriptor by an EXIT trap, so the next command can start there. The
sandbox says how to start it (`Sandbox.launch`): the descriptors it reads (a seccomp filter) go to
the child alone, and what it set up for the command (a cgroup) is undone once the command has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from dataclasses import replace
from pathlib import Path

from piton.core.records import record
from piton.core.safety.reap import kill_started
from piton.core.safety.sandbox import Launch, Sandbox

MAX_CAPTURE_BYTES = 16 * 1024 * 1024  # kept of an output: its first and its last half of this
_NULS = re.compile("\x00+")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_READ_CHUNK = 65536
_DRAIN_S = 1.0


@record(frozen=True)
class ShellResult:
    output: str
    exit_code: int | None  # None when the command was killed by us
    timed_out: bool
    cwd: Path | None  # where the command ended, if it said
    dropped_bytes: int = 0


def clean_output(text: str) -> str:
    """Terminal output as text: colours gone, NUL bytes shown as ␀ (a run as its count), and of a
    line redrawn with carriage returns (a progress bar) only what was drawn last."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    if "\x00" in text:  # shown, not dropped: binary output is not "no output"
        text = _NULS.sub(
            lambda m: "\u2400" * len(m[0]) if len(m[0]) < 4 else f"[{len(m[0]):,} NUL bytes]", text
        )
    if "\r" in text:
        text = "\n".join(line.rstrip("\r").rpartition("\r")[2] for line in text.split("\n"))
    return text


def _script(command: str, cwd_fd: int) -> str:
    # The trap is set before the command is parsed, so even `exit` or a syntax error report the cwd.
    # `pwd` writes straight to the descriptor (a newline, then the NUL): `$(pwd -P)` would fork.
    return f"trap '{{ pwd -P; printf \"\\0\"; }} >&{cwd_fd} 2>/dev/null' EXIT\n{command}"


class _Capture:
    """An output's first and last MAX_CAPTURE_BYTES / 2, and how many bytes between them went: the
    end is where a failing command says why."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        half = MAX_CAPTURE_BYTES // 2
        room = half - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[room:] if room > 0 else chunk
        if len(self.tail) > half:
            self.dropped += len(self.tail) - half
            del self.tail[: len(self.tail) - half]

    def text(self) -> str:
        if not self.dropped:
            return (self.head + self.tail).decode("utf-8", "replace")
        cut = f"\n[... {self.dropped:,} bytes of output cut here ...]\n"
        return self.head.decode("utf-8", "replace") + cut + self.tail.decode("utf-8", "replace")


async def _read_into(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while chunk := await stream.read(_READ_CHUNK):
        capture.add(chunk)


def _read_reported_cwd(fd: int) -> Path | None:
    """What the EXIT trap wrote: the last NUL-terminated record (the command may have written there
    too, and a directory name may hold a newline). Non-blocking: a leftover background job may hold
    the pipe open."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while (chunk := os.read(fd, 4096)) and len(data) < 1 << 20:
            data += chunk
    os.close(fd)
    records = data.split(b"\0")
    if len(records) < 2 or not records[-2].startswith(b"/") or not records[-2].endswith(b"\n"):
        return None
    return Path(os.fsdecode(records[-2][:-1]))  # pwd's own newline off (a name may end in one too)


async def spawn(launch: Launch, cwd: Path, *fds: int) -> asyncio.subprocess.Process:
    """Start what `launch` describes: no input, stdout and stderr on one pipe (in order), its own
    process group and no controlling terminal, the sandbox's descriptors (and `fds`) passed on."""
    return await asyncio.create_subprocess_exec(
        *launch.argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=launch.env,
        start_new_session=True,
        pass_fds=(*fds, *launch.pass_fds),
        preexec_fn=launch.preexec,
    )


async def _end_started(starting: asyncio.Future[asyncio.subprocess.Process], launch: Launch) -> None:
    """An interrupted start, finished and undone: all it started ends (its process group, and its
    cgroup where there is one: killed before the wait, since what it left holds the pipes)."""
    try:
        process = await starting
        kill_started(process)
    except Exception:  # it never started
        return
    finally:
        launch.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), 2)


async def start_process(
    sandbox: Sandbox, script: str, cwd: Path, *fds: int
) -> tuple[asyncio.subprocess.Process, Launch]:
    """Start bash `script` in `sandbox`, with every protection and limit it applies
    (`Sandbox.launch`): the process, and the launch to `close()` once the process has ended (that
    undoes what the sandbox set up for it). If it cannot start, that is undone at once."""
    launch = sandbox.launch(script, cwd)
    # An interrupt cannot cut the start short half-way: the process may be running before asyncio
    # has connected its pipes, and asyncio would then kill the first process alone, leaving what it
    # started to run on (outside a sandbox nothing else ends them) and holding the pipes open.
    starting = asyncio.ensure_future(spawn(launch, cwd, *fds))
    try:
        process = await asyncio.shield(starting)
    except asyncio.CancelledError:
        await _end_started(starting, launch)
        raise
    except BaseException:
        launch.close()
        raise
    launch.started()
    return process, launch


async def run_shell(command: str, *, cwd: Path, sandbox: Sandbox, timeout_s: float) -> ShellResult:
    """Run `command` once. A sandbox that failed to start ran nothing, so it is started again once:
    a place it hides may have come or gone between its look and its mounts (another user's
    credential file). One that fails again is the result, saying so."""
    result = await _run_once(command, cwd, sandbox, timeout_s)
    if not _never_started(result):
        return result
    result = await _run_once(command, cwd, sandbox, timeout_s)
    if not _never_started(result):
        return result
    why = result.output.strip()
    return replace(result, output=f"The command did not run: its sandbox could not start ({why}).")


def _never_started(result: ShellResult) -> bool:
    """bubblewrap failed before the shell ran: an error of its own, and no directory reported by
    the shell's EXIT trap (which every shell that started sets first)."""
    text = result.output.strip()
    return result.exit_code == 1 and result.cwd is None and text.startswith("bwrap: ") and "\n" not in text


async def _run_once(command: str, cwd: Path, sandbox: Sandbox, timeout_s: float) -> ShellResult:
    read_fd, write_fd = os.pipe()
    try:
        process, launch = await start_process(sandbox, _script(command, write_fd), cwd, write_fd)
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    os.close(write_fd)
    try:
        return await _collect(process, read_fd, timeout_s)
    finally:
        launch.close()


async def _collect(process: asyncio.subprocess.Process, read_fd: int, timeout_s: float) -> ShellResult:
    assert process.stdout is not None
    capture = _Capture()
    reader = asyncio.create_task(_read_into(process.stdout, capture))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
        kill_started(process)  # on timeout the command; otherwise what it left running in its group
        await process.wait()
        # output still buffered arrives at once; a job that escaped the group must not hold us
        await asyncio.wait({reader}, timeout=_DRAIN_S)
    except BaseException:  # cancelled (Ctrl-C): nothing of the command may outlive the call
        kill_started(process)
        reader.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(process.wait(), 2)
        os.close(read_fd)
        raise
    finally:
        reader.cancel()
    reported = _read_reported_cwd(read_fd)
    output = clean_output(capture.text())
    return ShellResult(
        output=output,
        exit_code=None if timed_out else process.returncode,
        timed_out=timed_out,
        cwd=None if timed_out else reported,
        dropped_bytes=capture.dropped,
    )
