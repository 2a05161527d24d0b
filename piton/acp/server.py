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
import sys
from typing import TYPE_CHECKING

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
    protocol_out = _keep_stdout_for_the_protocol()
    try:
        asyncio.run(_serve(options, protocol_out))
    except KeyboardInterrupt:
        return 130
    return 0


def _keep_stdout_for_the_protocol() -> int:
    """A descriptor of the real stdout for the protocol alone; fd 1 becomes stderr."""
    out = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout = sys.stderr
    return out


async def _serve(options: AgentOptions, protocol_out: int) -> None:
    from acp import AgentSideConnection

    from piton.acp.agent import PitonAgent

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=BUFFER_LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False)
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
