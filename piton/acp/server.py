"""`piton acp [--model M] [--permission-mode MODE] [--verbose]`: serve the Agent Client Protocol on
stdin and stdout until the editor closes them. Only protocol messages reach stdout: the process's
own stdout is moved to stderr first, so a stray print (or a program that inherits it) cannot break
the stream. Logs go to stderr, which editors keep as the agent's log."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
import threading
from typing import TYPE_CHECKING

from piton.collection import pause_collection, resume_collection

if TYPE_CHECKING:
    from piton.acp.agent import AgentOptions

USAGE = "usage: piton acp [--model MODEL] [--permission-mode MODE] [--verbose]"
ABOUT = (
    "Serve the Agent Client Protocol on stdin and stdout, for an editor that starts Piton as its agent\n"
    "(Zed, JetBrains IDEs, Neovim, Emacs). See docs/editors.md for each editor's configuration."
)
BUFFER_LIMIT = 50 * 1024 * 1024  # one message may carry images and whole files


def main(args: list[str]) -> int:
    from piton.acp.agent import AgentOptions
    from piton.core.mode_names import CHOSEN_MODES

    options, verbose = AgentOptions(), False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("-h", "--help"):
            print(f"{USAGE}\n\n{ABOUT}")
            return 0
        if arg == "--verbose":
            verbose = True
        elif arg in ("--model", "--permission-mode") and rest:
            value = rest.pop(0)
            if arg == "--model":
                options.model = value
            elif value in CHOSEN_MODES:
                options.permission_mode = value
            else:
                print(
                    f"piton acp: unknown permission mode {value!r} (one of {', '.join(CHOSEN_MODES)})",
                    file=sys.stderr,
                )
                return 2
        else:
            print(f"piton acp: unknown option {arg}\n{USAGE}", file=sys.stderr)
            return 2
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.WARNING,
        format="piton acp: %(message)s",
    )
    relay = _Relay()
    protocol_in, protocol_out = relay.readable(0), relay.writable(_keep_stdout_for_the_protocol())
    try:
        asyncio.run(_serve(options, protocol_in, protocol_out))
    except KeyboardInterrupt:
        return 130
    finally:
        relay.finish()
    return 0


def _keep_stdout_for_the_protocol() -> int:
    """A descriptor of the real stdout for the protocol alone; fd 1 becomes stderr."""
    out = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout = sys.stderr
    return out


def _watchable(fd: int) -> bool:
    """Whether the event loop can wait on `fd`: a pipe, a socket or a terminal. A file or /dev/null
    (`piton acp < requests.jsonl > replies.jsonl`) cannot be: epoll refuses them."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


class _Relay:
    """A pipe in place of each descriptor the loop cannot wait on, copied to or from it by a
    thread; `finish` waits until what was written has reached the file."""

    def __init__(self) -> None:
        self.outgoing: list[threading.Thread] = []

    def readable(self, fd: int) -> int:
        if _watchable(fd):
            return fd
        read_end, write_end = os.pipe()
        self._copy(fd, write_end, done=write_end)
        return read_end

    def writable(self, fd: int) -> int:
        if _watchable(fd):
            return fd
        read_end, write_end = os.pipe()
        self.outgoing.append(self._copy(read_end, fd, done=read_end))
        return write_end

    def finish(self, ceiling_s: float = 10.0) -> None:
        for thread in self.outgoing:
            thread.join(ceiling_s)

    @staticmethod
    def _copy(source: int, target: int, done: int) -> threading.Thread:
        def copy() -> None:
            try:
                while chunk := os.read(source, 1 << 16):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(target, view) :]
            except OSError:
                pass  # the other side is gone: nothing more can pass
            finally:
                os.close(done)  # the pipe's end: its reader sees the end of the stream

        thread = threading.Thread(target=copy, name="piton-acp-relay", daemon=True)
        thread.start()
        return thread


async def _serve(options: AgentOptions, protocol_in: int, protocol_out: int) -> None:
    # The SDK's import makes some 270 pydantic models, which live as long as the process: loaded
    # with no garbage collection and frozen after (`piton.collection`), a tenth of the CPU an
    # editor's agent takes to open its first session.
    paused = pause_collection()
    try:
        from acp import AgentSideConnection

        from piton.acp.agent import PitonAgent
    finally:
        resume_collection(paused)

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=BUFFER_LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(protocol_in, "rb", closefd=False)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(protocol_out, "wb")
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = PitonAgent(options)
    connection = AgentSideConnection(agent, writer, reader, listening=False)
    served = asyncio.current_task()
    for signum in (signal.SIGTERM, signal.SIGHUP):  # an editor ends its agent so: sessions still close
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, lambda: served.cancel() if served is not None else None)
    try:
        await connection.listen()
    except asyncio.CancelledError:
        pass
    finally:
        await agent.close()
        with contextlib.suppress(Exception):
            await connection.close()
        writer.close()  # where stdout is a file, its relay then writes the rest and ends
