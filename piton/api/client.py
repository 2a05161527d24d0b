"""Piton from Python: `query()` for one prompt, `Agent` for a conversation of several turns with
interrupts. Both build the session the CLI builds (`piton.runtime`) and yield the messages
stream-json prints (`piton.api.messages`)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from piton.api.messages import Catalogue, MessageStream, ResultMessage, RunMessage
from piton.api.options import AgentOptions, CallbackApprover, HookCallback, HookMatcher

if TYPE_CHECKING:
    from piton.core.activation import Activation
    from piton.core.conversation.messages import ContentBlock
    from piton.runtime import Runtime

INTERRUPTED = "interrupted by the caller"


class PitonError(Exception):
    """A run that cannot start (no credentials, a bad option, a session that cannot be opened);
    the message is one line meant for people."""


class NoTurn(LookupError):
    """A prompt that makes no turn (a `/name` nothing answers to); the message says why."""


class Agent:
    """One session: `async with Agent(options) as agent: async for message in agent.query(…)`.
    Each `query` is a turn that ends with a `ResultMessage`; the history carries over."""

    def __init__(self, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        self._runtime: Runtime | None = None
        self._stream: MessageStream | None = None
        self._turn: asyncio.Task[None] | None = None
        self._closed = False
        self._said: list[str] = []  # what the session log and MCP servers reported, not yet yielded

    @property
    def session_id(self) -> str:
        """The session's id, for `AgentOptions(resume=…)` later ("" before `connect`)."""
        return self._runtime.log.session_id if self._runtime is not None else ""

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("connect() the agent first")
        return self._runtime

    async def __aenter__(self) -> Agent:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the session: settings, tools, MCP servers, the model's provider. Raises
        `PitonError` for what stops it."""
        if self._runtime is not None:
            return
        if self._closed:
            raise RuntimeError("this agent is closed")
        self._runtime = runtime = _build(self.options)
        try:
            self._stream = MessageStream(
                partial=self.options.include_partial_messages,
                catalogue=Catalogue.of(runtime.catalog, runtime.agent_types, runtime.style_name),
            )
            runtime.log.report_to(self._said.append)  # a log that cannot be written says so
            if runtime.mcp is not None:
                from piton.mcp_turn import follow

                follow(self._stream, runtime.mcp)
                runtime.mcp.report_to(self._said.append)
            await runtime.start_hooks("resume" if runtime.agent.history else "startup")
        except BaseException:
            self._closed = False
            await self.close()
            raise

    def notices(self) -> list[str]:
        """What setting the session up had to say (ignored settings, servers not started…)."""
        return list(self.runtime.notices)

    async def query(self, prompt: str | list[ContentBlock]) -> AsyncIterator[RunMessage]:
        """One turn. `/name args` runs a skill or custom command, as typed in the terminal."""
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

            try:
                content, skill = await turn_input(
                    self.runtime, prompt, lambda t: messages.put_nowait(_notice(stream, t))
                )
                async for event in self.runtime.agent.run(content, skill=skill):
                    said()
                    for message in stream.convert(event):
                        messages.put_nowait(message)
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
        if ended:
            return
        error = None if turn.cancelled() else turn.exception()
        if error is None:
            text = INTERRUPTED
        elif isinstance(error, NoTurn):  # a prompt that made no turn: the words say why
            text = str(error)
        else:
            text = f"{type(error).__name__}: {error}"
        # through the stream, so that what it keeps of a cut reply (partial messages) is reset
        from piton.core.conversation.events import Result

        took = round((time.monotonic() - started) * 1000)
        cut = Result.cut_short(self.runtime.log.session_id, text, () if error is None else (text,), took)
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
        from piton.core.safety.permissions import PERMISSION_MODES

        if mode not in PERMISSION_MODES:
            raise ValueError(f"{mode!r} is not a permission mode ({', '.join(PERMISSION_MODES)})")
        gate = self.runtime.agent.gate
        if gate is not None:
            gate.permissions.mode = mode

    async def close(self) -> None:
        """End the session: the running turn, background shells, MCP servers; the log is saved."""
        if self._closed:
            return
        self._closed = True
        await self.interrupt()
        runtime, self._runtime = self._runtime, None
        if runtime is None:
            return
        try:
            await runtime.agent.context.shells.kill_all()
            await runtime.end_hooks("other")
            await runtime.agent.provider.aclose()
        finally:
            runtime.close()
            with contextlib.suppress(OSError):
                runtime.log.sync()
            runtime.log.close()


async def query(
    prompt: str | list[ContentBlock], *, options: AgentOptions | None = None
) -> AsyncIterator[RunMessage]:
    """One prompt, one session: the messages of its run, the last a `ResultMessage`."""
    async with Agent(options) as agent:
        async for message in agent.query(prompt):
            yield message


async def turn_input(
    runtime: Runtime, prompt: str | list[ContentBlock], warn: Any
) -> tuple[str | list[ContentBlock], Activation | None]:
    """What a typed prompt becomes: a skill or command (`/name args`), an MCP prompt's messages, the
    prompt with the resources it mentions (`@server:uri`). Raises `NoTurn` for a `/name`
    nothing answers to (no turn is made: the model never sees it)."""
    from piton.mcp_turn import is_prompt_command, turn_content

    if not isinstance(prompt, str):
        return prompt, None
    catalog = runtime.catalog
    skill = catalog.invocation(prompt) if catalog is not None else None
    if skill is None and catalog is not None and (unknown := catalog.unknown(prompt)) is not None:
        raise NoTurn(unknown)
    if runtime.mcp is not None:  # the tools of servers that have connected since
        await runtime.agent.tools.refresh()
    if runtime.mcp is not None or is_prompt_command(prompt):
        said: list[str] = []

        def told(line: str) -> None:
            said.append(line.strip())
            warn(line.strip())

        content = await turn_content(runtime, prompt, prompt, told)
        if content is None:
            raise NoTurn(said[-1] if said else "the MCP prompt made no turn")
        return content, skill
    return prompt, skill


def _notice(stream: MessageStream, text: str) -> RunMessage:
    from piton.core.conversation.events import Notice

    return stream.convert(Notice(text))[0]


def _build(options: AgentOptions) -> Runtime:
    """The session `options` describe, as the CLI builds it."""
    from piton.core.conversation.session import SessionError, SessionStore
    from piton.core.providers import ProviderError
    from piton.runtime import SetupError, build_runtime

    try:
        run = options.run_options()
    except ValueError as e:
        raise PitonError(str(e)) from e
    provider = options.provider or default_provider(run)
    try:
        provider.check()
    except ProviderError as e:
        raise PitonError(str(e)) from e
    store: SessionStore | None = None
    if options.session_storage is not None:
        from piton.core.conversation.storage import StorageStore

        store = StorageStore(options.session_storage)
    approver = CallbackApprover(options.can_use_tool) if options.can_use_tool is not None else None
    try:
        runtime = build_runtime(
            run,
            provider,
            store=store,
            approver=approver,
            extra_tools=list(options.tools),
            telemetry=options.telemetry,
        )
    except (SessionError, SetupError) as e:
        raise PitonError(str(e)) from e
    _install_hooks(runtime, options.hooks)
    return runtime


def default_provider(run: Any) -> Any:
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.core.providers.credentials import NO_API_KEY, credential_source
    from piton.core.providers.route import Router, default_model, needs_anthropic
    from piton.starting import starting_model

    model = starting_model(run)
    if needs_anthropic(model) and credential_source() is None:
        raise PitonError(NO_API_KEY)
    return Router(AnthropicProvider(), default_model(model))


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
    if "PostToolUse" in matchers:
        agent.after_tool = PostToolHooks(matchers["PostToolUse"], call, then=agent.after_tool, **where)  # type: ignore[arg-type]
