"""One editor session: a Piton session (the same one the terminal opens), the turn in flight, and
what the editor was told: its mode, its commands, the tool calls it is showing."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, schema

from piton.acp import updates
from piton.acp.prompt import Block, Prompt, prompt_of
from piton.core.mode_names import PERMISSION_MODES

if TYPE_CHECKING:
    from acp.interfaces import Client

    from piton.core.conversation.events import AgentEvent, Result
    from piton.session import Session

MODES = {
    "default": ("Default", "Asks before a command runs or a file changes"),
    "acceptEdits": ("Accept edits", "Changes files in the project without asking; asks before commands"),
    "plan": ("Plan", "Reads and plans; changes nothing until the plan is approved"),
    "bypassPermissions": ("Bypass permissions", "Asks nothing; the sandbox still holds"),
}


class EditorSession:
    def __init__(self, client: Client, session: Session, cwd: Path) -> None:
        self.client = client
        self.session = session
        self.cwd = cwd
        self._turn: asyncio.Task[Result | None] | None = None
        self._inputs: dict[str, tuple[str, dict[str, Any]]] = {}  # tool calls shown, by id
        self._mode = self.mode
        self._commands: list[schema.AvailableCommand] | None = None
        self._closed = False  # after `close`, nothing more is told of this session

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def mode(self) -> str:
        gate = self.session.agent.gate
        return gate.permissions.mode if gate is not None else "default"

    def modes(self) -> schema.SessionModeState:
        gate = self.session.agent.gate
        offered = [m for m in PERMISSION_MODES if gate is None or gate.permissions.allows_mode(m)]
        return schema.SessionModeState(
            current_mode_id=self.mode,
            available_modes=[
                schema.SessionMode(id=m, name=MODES[m][0], description=MODES[m][1]) for m in offered
            ],
        )

    async def tell(self, update: Any) -> None:
        if not self._closed:
            await self.client.session_update(session_id=self.session_id, update=update)

    # -- what the editor is told besides turns -----------------------------------------------------

    async def opened(self, replay: bool) -> None:
        """After `session/new` or `session/load`: the history (when loading), what opening had to
        say, and the commands a user may type."""
        if replay:
            for update in updates.replayed(self.session.agent.history, self.cwd):
                await self.tell(update)
        for notice in self.session.notices:
            await self.tell(updates.message_text(f"piton: {notice}\n\n"))
        await self.commands_changed()

    async def commands_changed(self) -> None:
        """The slash commands (skills, custom commands, MCP prompts), when they differ from the last told."""
        from piton.mcp_turn import prompt_commands

        runtime = self.session.runtime
        found: list[schema.AvailableCommand] = []
        for skill in runtime.catalog.for_user() if runtime.catalog is not None else []:
            found.append(_command(skill.name, skill.description, skill.argument_hint))
        for name, summary, usage in prompt_commands(runtime.mcp):
            found.append(_command(name, summary, usage.partition(" ")[2] or None))
        if found != self._commands:
            self._commands = found
            await self.tell(
                schema.AvailableCommandsUpdate(
                    session_update="available_commands_update", available_commands=found
                )
            )

    async def mode_changed(self) -> None:
        if (mode := self.mode) != self._mode:
            self._mode = mode
            await self.tell(
                schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode)
            )

    def set_mode(self, mode: str) -> None:
        from piton.core.safety.rules import ModeRefused

        gate = self.session.agent.gate
        if mode not in PERMISSION_MODES or gate is None:
            raise RequestError.invalid_params({"modeId": mode, "reason": "not a mode of this session"})
        try:
            gate.permissions.mode = mode
        except ModeRefused as e:
            raise RequestError.invalid_params({"modeId": mode, "reason": str(e)}) from None
        self._mode = mode

    # -- turns -------------------------------------------------------------------------------------

    async def prompt(self, blocks: list[Block]) -> schema.PromptResponse:
        from piton.session import NoTurn

        if self._turn is not None and not self._turn.done():
            raise RequestError.invalid_request({"reason": "a prompt is already running in this session"})
        prompt = prompt_of(blocks, self.cwd)
        # the turn exists before anything is awaited, so that a cancel arriving meanwhile stops it
        self._turn = turn = asyncio.create_task(self._run(prompt))
        try:
            await asyncio.wait([turn])
        except asyncio.CancelledError:  # the connection is closing: the turn ends with it
            turn.cancel()
            raise
        if turn.cancelled():
            return schema.PromptResponse(stop_reason="cancelled")
        try:
            result = turn.result()
        except NoTurn as e:
            raise RequestError.invalid_params({"reason": str(e)}) from None
        if result is None:
            raise RequestError.internal_error({"reason": "the turn ended without a result"})
        if result.is_error and result.subtype != "error_max_turns":
            raise RequestError.internal_error(
                {"reason": result.result or "the turn failed", "stop": result.subtype}
            )
        return schema.PromptResponse(
            stop_reason=updates.stop_reason_of(result), usage=updates.usage_of(result)
        )

    def cancel(self) -> None:
        """Like Esc in the terminal: the turn stops, with its commands and subagents; what was done stays."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    async def _run(self, prompt: Prompt) -> Result | None:
        from piton.core.conversation.events import Result

        for line in prompt.skipped:
            await self.tell(updates.message_text(f"piton: {line}\n\n"))
        extra = prompt.extra if prompt.attached else None
        result: Result | None = None
        try:
            async with contextlib.aclosing(
                self.session.turn(prompt.text, mentions=True, extra=extra)
            ) as events:
                async for event in events:
                    await self._show(event)
                    if isinstance(event, Result):
                        result = event
        finally:
            with contextlib.suppress(Exception):  # the editor may be gone; the turn's end is not its
                await self.mode_changed()
                await self.commands_changed()
        return result

    async def _show(self, event: AgentEvent) -> None:
        from piton.core.conversation.events import (
            Notice,
            TextDelta,
            ThinkingDelta,
            ToolFinished,
            ToolStarted,
            ToolUseStart,
        )

        if isinstance(event, TextDelta):
            await self.tell(updates.message_text(event.text))
        elif isinstance(event, ThinkingDelta):
            await self.tell(updates.thought_text(event.thinking))
        elif isinstance(event, ToolUseStart):
            self._inputs[event.id] = (event.name, {})
            await self.tell(updates.announced(event.id, event.name))
        elif isinstance(event, ToolStarted):
            if event.tool_use_id not in self._inputs:
                await self.tell(updates.announced(event.tool_use_id, event.name))
            self._inputs[event.tool_use_id] = (event.name, event.input)
            await self.tell(updates.running(event.tool_use_id, event.name, event.input, self.cwd))
            if event.name == "TodoWrite" and (plan := updates.plan_of(event.input)) is not None:
                await self.tell(plan)
        elif isinstance(event, ToolFinished):
            name, tool_input = self._inputs.pop(event.tool_use_id, (event.name, {}))
            await self.tell(updates.finished(event.tool_use_id, name, tool_input, event.result, self.cwd))
            await self.mode_changed()
        elif isinstance(event, Notice) and event.level == "warning":
            await self.tell(updates.message_text(f"\n\npiton: {event.text}\n\n"))

    async def close(self) -> None:
        self.cancel()
        self._closed = True
        if self._turn is not None:
            with contextlib.suppress(BaseException):
                await self._turn
        await self.session.aclose("other")


def _command(name: str, description: str, hint: str | None) -> schema.AvailableCommand:
    typed = schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint=hint)) if hint else None
    return schema.AvailableCommand(name=name, description=description or name, input=typed)
