"""`--input-format stream-json`: a conversation driven over stdin/stdout, as the Claude Agent SDK
drives `claude`.

Each `user` line on stdin is one turn of one long-lived agent; its events go out as stream-json
lines. `control_request` lines go both ways: the client initializes, interrupts, changes the
permission mode or the model; Piton asks the client whether a tool may run (`can_use_tool`, with
`--permission-prompt-tool stdio`) and what its PreToolUse hooks say (`hook_callback`). Every line
on stdout is JSON; notices go to stderr. The run ends when stdin closes and the queued turns are done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
import uuid
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from piton.cli.guarded import run_guarded
from piton.collection import pause_collection, resume_collection
from piton.core.mcp.sdk import SdkHost
from piton.core.records import record
from piton.session import NoTurn

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from piton.cli.output import StreamJsonWriter
    from piton.core.conversation.events import AgentEvent
    from piton.core.conversation.messages import ContentBlock
    from piton.core.options import RunOptions
    from piton.core.providers import Provider
    from piton.core.tools import AnyTool
    from piton.runtime import Runtime
    from piton.session import Session

INTERRUPTED = "[Request interrupted by the user]"
NEWS = "task-notification"  # queued beside the client's messages: background agents' reports wait


class HeadlessOptions(Protocol):
    """What of `piton.cli.headless.HeadlessOptions` a conversation uses (that module starts this one,
    so it is not imported back)."""

    @property
    def run(self) -> RunOptions: ...

    @property
    def verbose(self) -> bool: ...

    @property
    def include_partial_messages(self) -> bool: ...

    @property
    def include_hook_events(self) -> bool: ...

    @property
    def replay_user_messages(self) -> bool: ...


class Streams(Protocol):
    @property
    def stdin(self) -> TextIO | None: ...

    @property
    def stdout(self) -> TextIO: ...

    @property
    def stderr(self) -> TextIO: ...


@record
class _StandardStreams:
    stdin: TextIO | None = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)


def run_control(
    options: HeadlessOptions,
    *,
    provider: Provider | None = None,
    tools: list[AnyTool] | None = None,
    streams: Streams | None = None,
) -> int:
    """Serve the conversation on `streams`; `provider` and `tools` replace the Anthropic provider
    and the built-in tools."""
    out = streams or _StandardStreams()
    return run_guarded(
        lambda: _start(options, provider, tools, out),
        stdout=out.stdout,
        stderr=out.stderr,
        verbose=options.verbose,
    )


def _start(
    options: HeadlessOptions, provider: Provider | None, tools: list[AnyTool] | None, streams: Streams
) -> int:
    from piton.client_gate import ClientApprover
    from piton.core.conversation.session import SessionError
    from piton.core.providers import ProviderError
    from piton.runtime import Parts, SetupError
    from piton.session import Session
    from piton.starting import default_provider

    control = ControlSession(options, streams)
    approver = ClientApprover(control.request) if options.run.permission_prompt_tool == "stdio" else None
    paused = provider is None and pause_collection()  # while the session opens (`piton.collection`)
    try:
        provider = provider or default_provider(options.run)
        provider.check()
        parts = Parts(tools=tools, approver=approver, sdk_host=control.sdk_host)
        session = Session.open(options.run, provider, parts=parts)
    except (ProviderError, SessionError, SetupError) as e:
        streams.stderr.write(f"piton: {e}\n")
        return 1
    finally:
        resume_collection(paused)
    if approver is not None:
        approver.gate = session.agent.gate
    control.attach(session)
    try:
        asyncio.run(control.serve())
    except KeyboardInterrupt:
        return 130
    finally:
        session.close_now()  # when the loop was cut short before the session could close itself
    return 0


class ControlSession:
    """One agent, the lines that drive it, and the control requests in flight either way."""

    def __init__(self, options: HeadlessOptions, streams: Streams) -> None:
        self.options = options
        self.streams = streams
        self._session: Session | None = None
        self._writer: StreamJsonWriter | None = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._counter = 0
        self._closed = False  # stdin ended: nobody will answer a new question
        self._turn: asyncio.Task[None] | None = None
        self._turns: asyncio.Queue[dict[str, Any] | None] | None = None
        self._model_after_turn: str | None = None
        self._news_waiting = False  # a turn for background agents' reports is queued
        self.sdk_host = SdkHost()  # the client's in-process MCP servers, reached through `request`

    @property
    def session(self) -> Session:
        assert self._session is not None, "attach() a session first"
        return self._session

    @property
    def runtime(self) -> Runtime:
        return self.session.runtime

    @property
    def writer(self) -> StreamJsonWriter:
        assert self._writer is not None, "attach() a session first"
        return self._writer

    def attach(self, session: Session) -> None:
        from piton.api.init_line import Catalogue
        from piton.cli.output import StreamJsonWriter
        from piton.mcp_turn import follow

        self._session, runtime = session, session.runtime
        catalogue = Catalogue.of_runtime(runtime)
        verbose, partial = self.options.verbose, self.options.include_partial_messages
        self._writer = StreamJsonWriter(
            self.streams.stdout, self.streams.stderr, verbose, partial=partial, catalogue=catalogue
        )
        self._writer.stream.hook_events = self.options.include_hook_events
        follow(self._writer.stream, runtime.mcp)
        for notice in session.notices:
            self._writer.notice(notice)
        runtime.log.report_to(self._writer.notice)

    # -- lines ------------------------------------------------------------------------------------

    def _write(self, data: dict[str, Any]) -> None:
        self.streams.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.streams.stdout.flush()

    def _read(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
        """On a thread: stdin blocks, and the loop must go on answering while it waits."""
        stdin = self.streams.stdin
        try:
            while stdin is not None and (line := stdin.readline()):
                loop.call_soon_threadsafe(lines.put_nowait, line)
        except (OSError, ValueError):
            pass
        with contextlib.suppress(RuntimeError):  # the loop may have ended already
            loop.call_soon_threadsafe(lines.put_nowait, None)

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._turns = asyncio.Queue()
        threading.Thread(target=self._read, args=(loop, lines), daemon=True, name="piton-stdin").start()
        self.sdk_host.bind(loop, self.request)
        worker = asyncio.create_task(self._work())
        team = self.session.agent.context.agents
        team.listeners.append(self._agents_changed)
        told = asyncio.create_task(_show(team.queue(), self.writer.handle))  # their `task_*` lines
        try:
            while (line := await lines.get()) is not None:
                if line.strip():
                    self._dispatch(line)
        finally:
            self._closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the client closed its input"))
            self._turns.put_nowait(None)
            try:
                await worker
                if team.limits.wait_in_print:  # as `-p`: the agents' reports still come, each a turn
                    await self._run_turn(self.session.settle(), str(uuid.uuid4()))
            finally:  # background shells and agents end with it, and the SessionEnd hooks run
                told.cancel()
                for shown in await self.session.aclose("other"):
                    self.writer.handle(shown)

    def _dispatch(self, line: str) -> None:
        try:
            message = json.loads(line)
        except json.JSONDecodeError as e:
            self.writer.notice(f"ignored a line that is not JSON: {e}")
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "control_request":
            self._control(message)
        elif kind == "control_response":
            self._answered(message.get("response") or {})
        elif kind == "user":
            assert self._turns is not None
            self._turns.put_nowait(message)
        elif kind not in ("keep_alive", "control_cancel_request"):
            self.writer.notice(f"ignored a line of type {kind!r}")

    # -- control requests from the client ----------------------------------------------------------

    def _control(self, message: dict[str, Any]) -> None:
        from piton.cli.control_answers import answer

        request_id = message.get("request_id")
        request = message.get("request")
        try:
            if not isinstance(request, dict):
                raise ValueError("a control request without a request object")
            payload = answer(self, request)
        except Exception as e:  # an unknown or bad request is an error answer, never the end of the run
            self._write(
                {
                    "type": "control_response",
                    "response": {"subtype": "error", "request_id": request_id, "error": str(e)},
                }
            )
            return
        self._write(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": payload},
            }
        )

    def interrupt(self) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    def set_model(self, model: str) -> None:
        self.runtime.agent.config.model = model
        if self._turn is not None and not self._turn.done():
            self._model_after_turn = model  # a turn puts back the model it started with

    # -- control requests to the client ------------------------------------------------------------

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Ask the client; its `response` object, or an exception when it answers with an error."""
        if self._closed:
            raise ConnectionError("the client closed its input")
        request_id = self._next_id()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._write({"type": "control_request", "request_id": request_id, "request": payload})
        try:
            return await future
        finally:
            self._pending.pop(request_id, None)

    def tell(self, payload: dict[str, Any]) -> None:
        """Send a request whose answer is not awaited (a SessionEnd callback: the client may have
        closed its input already, as it does to end a run, and still reads what comes)."""
        self._write({"type": "control_request", "request_id": self._next_id(), "request": payload})

    def _next_id(self) -> str:
        self._counter += 1
        return f"piton_req_{self._counter}_{os.urandom(4).hex()}"

    def _answered(self, response: dict[str, Any]) -> None:
        future = self._pending.get(str(response.get("request_id")))
        if future is None or future.done():
            return
        if response.get("subtype") == "error":
            future.set_exception(
                RuntimeError(str(response.get("error") or "the client answered with an error"))
            )
        else:
            payload = response.get("response")
            future.set_result(payload if isinstance(payload, dict) else {})

    # -- turns -------------------------------------------------------------------------------------

    async def _work(self) -> None:
        """The turns, one after another, while control requests are answered meanwhile. The session
        starts (SessionStart hooks) with the first turn: after `initialize`, which may bring hook
        callbacks for it."""
        assert self._turns is not None
        while (message := await self._turns.get()) is not None:
            for shown in await self.session.start():
                self.writer.handle(shown)
            # the uuid names the turn's checkpoint (for rewind_files), as Claude Code's echo does
            turn_id = str(message.get("uuid") or uuid.uuid4())
            if message.get("type") == NEWS:
                self._news_waiting = False
                if not (news := self.session.agent.context.agents.take_news()):
                    continue
                turn = self.session.turn("\n\n".join(news), turn_id=turn_id)
            else:
                if self.options.replay_user_messages:
                    self._write({**message, "uuid": turn_id})
                turn = self.session.turn(self._prompt(message), turn_id=turn_id)
            started = time.monotonic()
            self._turn = asyncio.create_task(self._run_turn(turn, turn_id))
            await asyncio.wait([self._turn])
            self._agents_changed()  # a report that came as the turn ended gets a turn of its own
            if self._turn.cancelled():
                self._interrupted(started)
            elif (error := self._turn.exception()) is not None:
                self._failed(started, error)
            if self._model_after_turn is not None:
                self.runtime.agent.config.model, self._model_after_turn = self._model_after_turn, None

    def _prompt(self, message: dict[str, Any]) -> str | list[ContentBlock]:
        """A `user` line's content: its text, or its blocks (images, documents)."""
        from pydantic import ValidationError

        from piton.core.conversation.messages import Message

        content = (message.get("message") or {}).get("content", "")
        if isinstance(content, str):
            return content
        try:
            return list(Message.model_validate({"role": "user", "content": content}).content)
        except ValidationError:
            texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            return "\n\n".join(texts)

    async def _run_turn(self, turn: AsyncGenerator[AgentEvent, None], turn_id: str) -> None:
        async with contextlib.aclosing(turn) as events:
            async for event in events:  # closed here if the writer fails, before the session ends
                self.writer.handle(event)

    def _agents_changed(self) -> None:
        """A background agent's report waits while no turn runs: a turn of its own brings it to the
        model, as Claude Code's does (its `result` line included)."""
        idle = self._turn is None or self._turn.done()
        waiting = self._news_waiting or not self.session.agent.context.agents.has_news()
        if idle and not self._closed and not waiting and self._turns is not None:
            self._news_waiting = True
            self._turns.put_nowait({"type": NEWS})

    def _interrupted(self, started: float) -> None:
        self._end(started, INTERRUPTED, ())

    def _failed(self, started: float, error: BaseException) -> None:
        text = str(error) if isinstance(error, NoTurn) else f"{type(error).__name__}: {error}"
        self.writer.notice(text if isinstance(error, NoTurn) else f"the turn failed: {text}")
        self._end(started, text, (text,))

    def _end(self, started: float, text: str, errors: tuple[str, ...]) -> None:
        """The result line of a turn that ended without the agent's own (the client waits for one)."""
        from piton.core.conversation.events import Result

        took = round((time.monotonic() - started) * 1000)
        self.writer.handle(Result.cut_short(self.runtime.agent.config.session_id, text, errors, took))


async def _show(queue: asyncio.Queue[AgentEvent], handle: Callable[[AgentEvent], None]) -> None:
    """What background agents do, as it happens, for the client."""
    while True:
        handle(await queue.get())
