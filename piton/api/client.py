"""Piton from Python: `query()` for one prompt, `Agent` for a conversation of several turns with
interrupts. Both open the session the CLI opens (`piton.session`) and yield the messages
stream-json prints (`piton.api.messages`)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from piton.api.init_line import Catalogue
from piton.api.messages import MessageStream, ResultMessage, RunMessage
from piton.api.options import AgentOptions, CallbackApprover, HookCallback, HookMatcher
from piton.session import NoTurn as NoTurn

if TYPE_CHECKING:
    from piton.core.conversation.events import AgentEvent
    from piton.core.conversation.messages import ContentBlock
    from piton.runtime import Runtime
    from piton.session import Session

INTERRUPTED = "interrupted by the caller"


class PitonError(Exception):
    """A run that cannot start (no credentials, a bad option, a session that cannot be opened);
    the message is one line meant for people."""


class Agent:
    """One session: `async with Agent(options) as agent: async for message in agent.query(…)`.
    Each `query` is a turn that ends with a `ResultMessage`; the history carries over."""

    def __init__(self, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        self._session: Session | None = None
        self._shown: list[AgentEvent] = []  # what opening reported (SessionStart hooks), not yet yielded
        self._stream: MessageStream | None = None
        self._turn: asyncio.Task[None] | None = None
        self._closed = False
        self._said: list[str] = []  # what the session log and MCP servers reported, not yet yielded

    @property
    def session_id(self) -> str:
        """The session's id, for `AgentOptions(resume=…)` later ("" before `connect`)."""
        return self._session.session_id if self._session is not None else ""

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("connect() the agent first")
        return self._session

    @property
    def runtime(self) -> Runtime:
        return self.session.runtime

    async def __aenter__(self) -> Agent:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the session: settings, tools, MCP servers, the model's provider, the SessionStart
        hooks. Raises `PitonError` for what stops it."""
        if self._session is not None:
            return
        if self._closed:
            raise RuntimeError("this agent is closed")
        self._session = session = _open(self.options)
        try:
            runtime = session.runtime
            self._stream = MessageStream(
                partial=self.options.include_partial_messages,
                catalogue=Catalogue.of_runtime(runtime),
            )
            session.report_to(self._said.append)  # a log that cannot be written says so
            if runtime.mcp is not None:
                from piton.mcp_turn import follow

                follow(self._stream, runtime.mcp)
            self._shown = await session.start()
        except BaseException:
            self._closed = False
            await self.close()
            raise

    def notices(self) -> list[str]:
        """What setting the session up had to say (ignored settings, servers not started…)."""
        return list(self.session.notices)

    async def query(self, prompt: str | list[ContentBlock]) -> AsyncIterator[RunMessage]:
        """One turn. `/name args` runs a skill or custom command, as typed in the terminal."""
        async for message in self._turn_of(lambda: self.session.turn(prompt)):
            yield message

    async def background(self) -> AsyncIterator[RunMessage]:
        """After a turn: while background agents and workflows it started are working, the turns
        their reports make, each with its result (as `piton -p` waits for them); ends when none is
        left."""
        async for message in self._turn_of(self.session.settle, some=False):
            yield message

    async def _turn_of(
        self, events: Callable[[], AsyncIterator[AgentEvent]], *, some: bool = True
    ) -> AsyncIterator[RunMessage]:
        """The messages of `events`, ending in a result; with `some` false, no turn at all may come
        (nothing was left in the background), and then nothing is said."""
        await self.connect()
        assert self._stream is not None
        if self._turn is not None and not self._turn.done():
            raise RuntimeError("a turn is already running: wait for its result or interrupt() it")
        stream, messages = self._stream, asyncio.Queue[RunMessage | None]()
        started = time.monotonic()

        async def run() -> None:
            def said() -> None:
                while self._said:
                    messages.put_nowait(_notice(stream, self._said.pop(0)))

            def show(event: AgentEvent) -> None:
                said()
                for message in stream.convert(event):
                    messages.put_nowait(message)

            try:
                shown, self._shown = self._shown, []
                for event in shown:
                    show(event)
                async for event in events():
                    show(event)
            finally:
                said()
                messages.put_nowait(None)

        turn = self._turn = asyncio.create_task(run())
        ended = False
        try:
            while (message := await messages.get()) is not None:
                ended = ended or isinstance(message, ResultMessage)
                yield message
            await asyncio.wait([turn])
        finally:
            if not turn.done():  # the caller stopped reading: the turn stops too
                turn.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await turn
        error = None if turn.cancelled() else turn.exception()
        if ended or (not some and not turn.cancelled() and error is None):
            return
        if error is None:
            text = INTERRUPTED
        elif isinstance(error, NoTurn):  # a prompt that made no turn: the words say why
            text = str(error)
        else:
            text = f"{type(error).__name__}: {error}"
        # through the stream, so that what it keeps of a cut reply (partial messages) is reset
        from piton.core.conversation.events import Result

        took = round((time.monotonic() - started) * 1000)
        cut = Result.cut_short(self.session.session_id, text, () if error is None else (text,), took)
        for message in stream.convert(cut):  # it resets what the stream kept of a cut reply
            yield message

    async def interrupt(self) -> None:
        """Stop the running turn; its `query` ends with an `error_during_execution` result, and the
        history stays valid for the next turn."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._turn

    def set_model(self, model: str) -> None:
        """The model for the next turns."""
        from piton.core.models import resolve_alias

        self.runtime.agent.config.model = resolve_alias(model)

    def set_permission_mode(self, mode: str) -> None:
        from piton.core.mode_names import PERMISSION_MODES

        if mode not in PERMISSION_MODES:
            raise ValueError(f"{mode!r} is not a permission mode ({', '.join(PERMISSION_MODES)})")
        gate = self.runtime.agent.gate
        if gate is not None:
            gate.permissions.mode = mode

    async def close(self) -> None:
        """End the session: the running turn, background shells, SessionEnd hooks, MCP servers; the
        log is saved."""
        if self._closed:
            return
        self._closed = True
        await self.interrupt()
        session, self._session = self._session, None
        if session is not None:
            await session.aclose("other")


async def query(
    prompt: str | list[ContentBlock], *, options: AgentOptions | None = None
) -> AsyncIterator[RunMessage]:
    """One prompt, one session: the messages of its run, the last a `ResultMessage`."""
    async with Agent(options) as agent:
        async for message in agent.query(prompt):
            yield message


def _notice(stream: MessageStream, text: str) -> RunMessage:
    from piton.core.conversation.events import Notice

    return stream.convert(Notice(text))[0]


def _open(options: AgentOptions) -> Session:
    """The session `options` describe, as the CLI opens it."""
    from piton.core.conversation.session import SessionError
    from piton.core.providers import ProviderError
    from piton.runtime import Parts, SetupError
    from piton.session import Session

    try:
        run = options.run_options()
    except ValueError as e:
        raise PitonError(str(e)) from e
    approver = CallbackApprover(options.can_use_tool) if options.can_use_tool is not None else None
    parts = Parts(extra_tools=list(options.tools), approver=approver, telemetry=options.telemetry)
    if options.session_storage is not None:
        from piton.core.conversation.storage import StorageStore

        parts.store = StorageStore(options.session_storage)
    try:
        provider = options.provider or default_provider(run)
        provider.check()
        session = Session.open(run, provider, parts=parts)
    except (ProviderError, SessionError, SetupError) as e:
        raise PitonError(str(e)) from e
    _install_hooks(session.runtime, options.hooks)
    return session


def default_provider(run: Any) -> Any:
    """The provider a run of `run` (its `RunOptions`) starts with; raises `PitonError` when the
    model needs Anthropic's API and no credentials are at hand."""
    from piton.core.providers import ProviderError
    from piton.starting import default_provider as make

    try:
        return make(run)
    except ProviderError as e:
        raise PitonError(str(e)) from e


def _install_hooks(runtime: Runtime, hooks: dict[str, list[HookMatcher]]) -> None:
    """The caller's Python hooks, run as the Agent SDK's are: each gets Claude Code's hook input
    and answers with a hook output; the settings' command hooks run too."""
    from piton.client_gate import ClientPreToolHooks, PostToolHooks

    callbacks: dict[str, HookCallback] = {}
    matchers: dict[str, list[dict[str, Any]]] = {}
    for event, entries in hooks.items():
        for entry in entries:
            ids = []
            for function in entry.hooks:
                ids.append(f"hook_{len(callbacks)}")
                callbacks[ids[-1]] = function
            # a Python guard that raises refuses the call: a bug in it must not wave calls through
            matchers.setdefault(event, []).append(
                {"matcher": entry.matcher, "hookCallbackIds": ids, "onFailure": "block"}
            )

    async def call(payload: dict[str, Any]) -> dict[str, Any]:
        output = callbacks[payload["callback_id"]](payload["input"], payload.get("tool_use_id"), None)
        if inspect.isawaitable(output):
            output = await output
        return output if isinstance(output, dict) else {}

    agent, gate = runtime.agent, runtime.agent.gate
    mode = (lambda: str(gate.permissions.mode)) if gate is not None else (lambda: "bypassPermissions")
    where = {"session_id": agent.config.session_id, "cwd": str(agent.config.cwd), "mode": mode}
    if "PreToolUse" in matchers and gate is not None:
        gate.pre_tool = ClientPreToolHooks(matchers["PreToolUse"], call, then=gate.pre_tool, **where)  # type: ignore[arg-type]
    if "PostToolUse" in matchers:  # after the settings' own PostToolUse hooks
        agent.after_tool.put("library", PostToolHooks(matchers["PostToolUse"], call, **where))  # type: ignore[arg-type]
