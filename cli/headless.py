"""`piton -p`: one run, its output as text, one JSON result, or a JSON event per line.

Text mode prints only the final answer on stdout; everything else goes to stderr. Failures are one
readable line (a traceback only with --verbose) and exit code 1; an interrupt exits 130, and SIGTERM,
SIGHUP and SIGQUIT are handled like it, exiting 128 + the signal's number (`cli/signals`).
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
import sys
from dataclasses import field
from typing import TYPE_CHECKING, TextIO

from piton.cli.guarded import run_guarded
from piton.cli.signals import Stopper, say, unexpected_errors
from piton.collection import pause_collection, resume_collection
from piton.core.options import RunOptions
from piton.core.records import record

if TYPE_CHECKING:  # loaded once a run is known to be possible (a missing key is told without them)
    import asyncio
    from collections.abc import Callable

    from piton.cli.output import Writer
    from piton.core.conversation.events import AgentEvent, Result
    from piton.core.providers import Provider
    from piton.core.tools import AnyTool
    from piton.session import Session

STDIN_PATIENCE_S = 3.0


@record
class HeadlessOptions:
    run: RunOptions
    prompt: str | None
    output_format: str = "text"
    verbose: bool = False
    input_format: str = "text"  # "stream-json": user messages and control requests arrive on stdin
    include_partial_messages: bool = False  # stream-json: `stream_event` lines with the raw API events
    include_hook_events: bool = False  # stream-json: a `hook_response` line for each hook that ran
    replay_user_messages: bool = False  # stream-json input: echo each user message back on stdout


@record
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
    A prompt from one source is kept byte for byte (harnesses check the transcript's first message
    against the instruction they piped in); two are joined, trimmed.

    A pipe nobody closes would block here forever; after a few quiet seconds, say what we wait for.
    """
    piped = ""
    if stdin is not None and _stdin_has_input(stdin):
        if stderr is not None and not select.select([stdin], [], [], patience_s)[0]:
            stderr.write("piton: waiting for standard input to end (pass < /dev/null to give none)\n")
            stderr.flush()
        piped = stdin.read()
    parts = [p for p in (argument, piped) if p and p.strip()]
    if len(parts) == 1:
        return parts[0]
    return "\n\n".join(p.strip() for p in parts)


async def _drive(session: Session, prompt: str, writer: Writer, stopper: Stopper) -> Result | None:
    """The run's result; None when the prompt made no turn (an unknown `/name`, an MCP prompt that
    cannot be fetched: said, as Claude Code says it in -p, and the model never sees it). A run whose
    background agents are still working waits for their reports, each a turn of the model's, and
    reports one result for them all."""
    import asyncio
    import time

    from piton.core.run_state import combined
    from piton.session import NoTurn

    task = asyncio.current_task()
    reader_gone = False
    if task is not None:
        stopper.install(asyncio.get_running_loop(), task.cancel)
        running = task

        def stopping() -> bool:  # a signal, Ctrl-C (asyncio cancels the run), a reader gone, or the end
            return stopper.stopped or reader_gone or running.cancelling() > 0 or running.done()

        asyncio.get_running_loop().set_exception_handler(unexpected_errors(say, stopping))

    def show(event: AgentEvent) -> None:
        nonlocal reader_gone
        try:
            writer.handle(event)
        except BrokenPipeError:  # nobody reads on: closing what is open may fail in callbacks
            reader_gone = True
            raise
        except OSError as e:  # the terminal hung up before its SIGHUP came: stop as it will
            if task is None or not stopper.lost_terminal(e):
                raise
            task.cancel()

    team, started = session.agent.context.agents, time.monotonic()
    results: list[Result] = []
    shown_meanwhile = asyncio.ensure_future(_background(team.queue(), show))
    try:
        for shown in await session.start():
            show(shown)
        await _turns(session, prompt, show, results)
        shown_meanwhile.cancel()
        while not team.queue().empty():  # what the agents did before their reports came in
            show(team.queue().get_nowait())
        if results:
            results.append(combined(results, team.background_usage, int((time.monotonic() - started) * 1000)))
            show(results[-1])
    except NoTurn as e:
        writer.notice(str(e))
        return None
    finally:
        shown_meanwhile.cancel()
        for shown in await session.aclose("other"):  # background shells and agents end with the run
            show(shown)
    if not results:
        raise RuntimeError("the run ended without a result")
    return results[-1]


async def _turns(
    session: Session, prompt: str, show: Callable[[AgentEvent], None], results: list[Result]
) -> None:
    """The prompt's turn, then, while background agents work, a turn for each report that comes
    unheard (unless the settings say not to wait): their results kept, the rest shown."""
    from piton.core.conversation.events import Result

    turns = [session.turn(prompt)]
    if session.agent.context.agents.limits.wait_in_print:
        turns.append(session.settle())
    for turn in turns:
        # closed here, not left to the loop's shutdown: a turn cut short (a reader gone, a hangup)
        # records its interruption in the log before `aclose` closes the log
        async with contextlib.aclosing(turn) as events:
            async for event in events:
                if isinstance(event, Result):
                    results.append(event)
                else:
                    show(event)


async def _background(queue: asyncio.Queue[AgentEvent], show: Callable[[AgentEvent], None]) -> None:
    """Show what background agents do while the turns go on (stream-json's `task_*` lines)."""
    while True:
        show(await queue.get())


def run_headless(
    options: HeadlessOptions,
    *,
    provider: Provider | None = None,
    tools: list[AnyTool] | None = None,
    streams: Streams | None = None,
) -> int:
    """Run once; `provider` and `tools` replace the Anthropic provider and the built-in tools."""
    streams = streams or Streams()
    if options.input_format == "stream-json":  # the client's messages come on stdin: no prompt needed
        from piton.cli.control import run_control

        return run_control(options, provider=provider, tools=tools, streams=streams)
    out = streams
    return run_guarded(
        lambda: _run(options, provider, tools, out),
        stdout=out.stdout,
        stderr=out.stderr,
        verbose=options.verbose,
    )


def _run(
    options: HeadlessOptions, provider: Provider | None, tools: list[AnyTool] | None, streams: Streams
) -> int:
    from piton.core.providers import ProviderError

    prompt = read_prompt(options.prompt, streams.stdin, streams.stderr)
    if not prompt:
        streams.stderr.write("piton: no prompt: pass one as an argument or on standard input\n")
        return 1
    # no garbage collection while the session opens (`piton.collection`); a provider passed in means
    # a library or a test drives the run, in a process that is not Piton's own
    paused = provider is None and pause_collection()
    try:
        if provider is None:
            from piton.starting import default_provider

            router = default_provider(options.run)
            router.check()  # before a session is created for a run that cannot start
            router.prewarm()
            provider = router
        else:
            provider.check()
        return _start(options, provider, tools, streams, prompt, paused)
    except ProviderError as e:
        streams.stderr.write(f"piton: {e}\n")
        return 1
    finally:
        resume_collection(paused)


def _start(
    options: HeadlessOptions,
    provider: Provider,
    tools: list[AnyTool] | None,
    streams: Streams,
    prompt: str,
    paused: bool,
) -> int:
    import asyncio

    from piton.api.init_line import Catalogue
    from piton.cli.output import StreamJsonWriter, make_writer
    from piton.core.conversation.session import SessionError
    from piton.runtime import Parts, SetupError
    from piton.session import Session

    try:
        session = Session.open(options.run, provider, parts=Parts(tools=tools))
    except (SessionError, SetupError) as e:
        streams.stderr.write(f"piton: {e}\n")
        return 1
    resume_collection(paused)
    runtime = session.runtime
    writer = make_writer(options.output_format, streams.stdout, streams.stderr, options.verbose)
    if isinstance(writer, StreamJsonWriter):
        from piton.mcp_turn import follow

        writer.stream.catalogue = Catalogue.of_runtime(runtime)
        writer.stream.hook_events = options.include_hook_events
        follow(writer.stream, runtime.mcp)
    for notice in session.notices:
        writer.notice(notice)
    # a log that cannot be written says so, and the run goes on; a server that fails is told before
    # the request that misses it
    session.report_to(writer.notice)
    stopper = Stopper()
    try:
        result = asyncio.run(_drive(session, prompt, writer, stopper))
    except (KeyboardInterrupt, asyncio.CancelledError):
        say(stopper.told(session.session_id), streams.stderr)  # after a hangup, nobody may read it
        return stopper.exit_code
    finally:
        session.close_now()  # when the run was cut short before it could close itself
    return 1 if result is None or result.is_error else 0
