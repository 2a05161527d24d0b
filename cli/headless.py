"""`piton -p`: one run, its output as text, one JSON result, or a JSON event per line.

Text mode prints only the final answer on stdout; everything else goes to stderr. Failures are one
readable line (a traceback only with --verbose) and exit code 1; an interrupt exits 130.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import stat
import sys
import traceback
from dataclasses import dataclass, field
from typing import TextIO

from piton.cli.output import Writer, make_writer
from piton.core.activation import Activation
from piton.core.agent import Agent
from piton.core.conversation.events import Result
from piton.core.conversation.session import SessionError
from piton.core.providers import Provider, ProviderError
from piton.core.tools import Tool
from piton.runtime import RunOptions, SetupError, build_runtime

STDIN_PATIENCE_S = 3.0


@dataclass(slots=True)
class HeadlessOptions:
    run: RunOptions
    prompt: str | None
    output_format: str = "text"
    verbose: bool = False


@dataclass(slots=True)
class Streams:
    stdin: TextIO | None = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)


def _stdin_has_input(stdin: TextIO | None) -> bool:
    """True for a pipe or a redirected file; never for a terminal, a closed stdin or /dev/null."""
    if stdin is None:
        return False
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def read_prompt(
    argument: str | None,
    stdin: TextIO | None,
    stderr: TextIO | None = None,
    patience_s: float = STDIN_PATIENCE_S,
) -> str:
    """The prompt argument, with piped standard input appended as context (or alone without one).

    A pipe nobody closes would block here forever; after a few quiet seconds, say what we wait for.
    """
    piped = ""
    if stdin is not None and _stdin_has_input(stdin):
        if stderr is not None and not select.select([stdin], [], [], patience_s)[0]:
            stderr.write("piton: waiting for standard input to end (pass < /dev/null to give none)\n")
            stderr.flush()
        piped = stdin.read()
    parts = [p.strip() for p in (argument, piped) if p and p.strip()]
    return "\n\n".join(parts)


async def _drive(agent: Agent, prompt: str, writer: Writer, skill: Activation | None = None) -> Result:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
    result: Result | None = None
    try:
        async for event in agent.run(prompt, skill=skill):
            writer.handle(event)
            if isinstance(event, Result):
                result = event
    finally:
        await agent.provider.aclose()
    if result is None:
        raise RuntimeError("the run ended without a result")
    return result


def run_headless(
    options: HeadlessOptions,
    *,
    provider: Provider | None = None,
    tools: list[Tool] | None = None,
    streams: Streams | None = None,
) -> int:
    """Run once; `provider` and `tools` replace the Anthropic provider and the built-in tools."""
    streams = streams or Streams()
    try:
        return _run(options, provider, tools, streams)
    except BrokenPipeError:  # the reader went away (`piton -p … | head`): nobody is left to tell
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), streams.stdout.fileno())
        return 141
    except Exception as e:
        if options.verbose:
            traceback.print_exc(file=streams.stderr)
        streams.stderr.write(f"piton: internal error: {type(e).__name__}: {e} (--verbose shows the trace)\n")
        return 1


def _run(
    options: HeadlessOptions, provider: Provider | None, tools: list[Tool] | None, streams: Streams
) -> int:
    prompt = read_prompt(options.prompt, streams.stdin, streams.stderr)
    if not prompt:
        streams.stderr.write("piton: no prompt: pass one as an argument or on standard input\n")
        return 1
    if provider is None:
        from piton.core.providers.anthropic import AnthropicProvider, prewarm

        prewarm()  # the SDK import overlaps with reading settings, the session and git status
        provider = AnthropicProvider()
    try:
        provider.check()  # before a session is created for a run that cannot start
        runtime = build_runtime(options.run, provider, tools=tools)
    except (SessionError, ProviderError, SetupError) as e:
        streams.stderr.write(f"piton: {e}\n")
        return 1
    writer = make_writer(options.output_format, streams.stdout, streams.stderr, options.verbose)
    for notice in runtime.notices:
        writer.notice(notice)
    # `/name args` starts a skill or custom command; any other text (an unknown /x too) is a prompt
    skill = runtime.catalog.invocation(prompt) if runtime.catalog is not None else None
    try:
        result = asyncio.run(_drive(runtime.agent, prompt, writer, skill))
    except (KeyboardInterrupt, asyncio.CancelledError):
        streams.stderr.write(
            f"piton: interrupted; the session is saved (--resume {runtime.log.session_id} continues it)\n"
        )
        return 130
    finally:
        runtime.log.close()
    return 1 if result.is_error else 0
