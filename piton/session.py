"""One conversation, whichever front end drives it. The terminal, `piton -p`, the control protocol
(the Agent SDK), the Python library and the editors' agent all open, run and close a session through
this object, so that a hook event or a cleanup step lands in one place:

    session = Session.open(options, provider)          # settings, tools, log, MCP servers
    shown = await session.start()                      # SessionStart hooks (startup, resume, clear)
    async for event in session.turn("fix the bug"):    # @mentions, MCP prompts, skills, the agent
        ...
    shown = await session.aclose("other")              # shells, SessionEnd hooks, provider, servers, log

What a step has to say comes back as events (hook output, notices), for the front end to show.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Literal

from piton.core.records import record
from piton.runtime import Runtime, build_runtime

if TYPE_CHECKING:
    from piton.core.activation import Activation
    from piton.core.agent import Agent
    from piton.core.conversation.events import AgentEvent
    from piton.core.conversation.messages import ContentBlock
    from piton.core.conversation.session import SessionLog
    from piton.core.options import RunOptions
    from piton.core.providers import Provider
    from piton.core.tools import ToolResult
    from piton.runtime import Parts

StartSource = Literal["startup", "resume", "clear"]
# Claude Code's reasons: `clear` (/clear), `prompt_input_exit` (the terminal was left), `other`
EndReason = Literal["clear", "prompt_input_exit", "logout", "other"]
Extra = Callable[["str | list[ContentBlock]"], "str | list[ContentBlock]"]


class NoTurn(LookupError):
    """A prompt that makes no turn: a `/name` nothing answers to, an MCP prompt that cannot be
    fetched. The message says why, in one line; the model never sees the prompt."""


@record
class Session:
    runtime: Runtime
    _started: bool = False
    _closed: bool = False

    @classmethod
    def open(
        cls,
        options: RunOptions,
        provider: Provider,
        *,
        report: Callable[[str], None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        parts: Parts | None = None,
    ) -> Session:
        """Build the session `options` describe (raises `SessionError` or `SetupError` for one that
        cannot open). `report` hears, a line each, what goes wrong beside the turns later (the log
        cannot be written, an MCP server fails): at once when `loop` is the caller's event loop,
        else at the next turn."""
        session = cls(build_runtime(options, provider, parts=parts))
        if report is not None:
            session.report_to(report, loop)
        return session

    # -- what front ends read ----------------------------------------------------------------------
    @property
    def agent(self) -> Agent:
        return self.runtime.agent

    @property
    def log(self) -> SessionLog:
        return self.runtime.log

    @property
    def session_id(self) -> str:
        return self.runtime.log.session_id

    @property
    def notices(self) -> list[str]:
        """What opening had to say (settings ignored, servers not started…), once, at the start."""
        return self.runtime.notices

    def report_to(self, report: Callable[[str], None], loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.runtime.log.report_to(report)
        if self.runtime.mcp is not None:
            self.runtime.mcp.report_to(report, loop)

    # -- the lifecycle -----------------------------------------------------------------------------
    async def start(self, source: StartSource | None = None, *, quiet: bool = False) -> list[AgentEvent]:
        """Before the first turn, once: the MCP servers' tools as they have connected so far, and the
        SessionStart hooks (what they print is context for the model's first turn). `quiet`: the
        same session reopened goes on (more folders to work in), so it does not start again."""
        if self._started:
            return []
        self._started = True
        agent = self.agent
        if self.runtime.mcp is not None:
            await agent.tools.refresh()
        hooks = agent.hooks
        if quiet or hooks is None or not hooks.has("SessionStart"):
            return []
        for text in await hooks.session_start(source or ("resume" if agent.history else "startup")):
            agent.add_note(text)
        return list(hooks.drain())

    async def turn(
        self,
        prompt: str | list[ContentBlock],
        *,
        turn_id: str | None = None,
        mentions: bool = False,
        extra: Extra | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """One turn of the user's. A typed `/name args` starts a skill or command, a
        `/mcp__server__prompt` line becomes the prompt's messages, `@server:uri` attaches an MCP
        resource, and with `mentions` `@path` attaches a file; `extra` adds what the front end holds
        (pasted images). Raises `NoTurn`, before anything reaches the model, for a prompt that
        makes no turn."""
        for shown in await self.start():
            yield shown
        warnings: list[str] = []
        told: list[str] = []  # what was attached
        content, skill = await self._prepared(prompt, mentions, extra, warnings, told)
        from piton.core.conversation.events import Notice

        for text in told:
            yield Notice(text, "info")
        for text in warnings:
            yield Notice(text)
        async for event in self.agent.run(content, skill=skill, turn_id=turn_id):
            yield event

    async def settle(self) -> AsyncGenerator[AgentEvent, None]:
        """After a turn of a run that does not wait for the user (`-p`): while background agents
        the session started are working, wait; each time one ends unheard, its report goes to the
        model as a turn of its own. Ends when none is running and all were heard."""
        team = self.agent.context.agents
        while await team.wait_news():
            async for event in self.agent.run("\n\n".join(team.take_news())):
                yield event

    async def _prepared(
        self,
        prompt: str | list[ContentBlock],
        mentions: bool,
        extra: Extra | None,
        warnings: list[str],
        told: list[str],
    ) -> tuple[str | list[ContentBlock], Activation | None]:
        """What the model is sent for `prompt`, and the skill it starts."""
        if not isinstance(prompt, str):
            return prompt, None
        catalog = self.runtime.catalog
        skill = catalog.invocation(prompt) if catalog is not None else None
        if skill is None and catalog is not None and (unknown := catalog.unknown(prompt)) is not None:
            raise NoTurn(unknown)
        if self.runtime.mcp is not None:  # the tools of servers that have connected since
            await self.agent.tools.refresh()

        def warn(line: str) -> None:
            warnings.append(line.strip())

        content: str | list[ContentBlock] = prompt
        if mentions:
            from piton.builtin_tools.mentions import attach

            content = attach(self.agent.context, prompt, warn, told.append)
        if extra is not None:
            content = extra(content)
        from piton.mcp_turn import turn_content

        expanded = await turn_content(self.runtime.mcp, prompt, content, warn)
        if expanded is None:  # an MCP prompt that is unknown or could not be fetched
            raise NoTurn(warnings[-1] if warnings else "the MCP prompt made no turn")
        return expanded, skill

    async def run_shell(self, command: str) -> ToolResult:
        """A command the user typed (`!cmd`), run in the session's sandbox like the model's commands
        (no question: the user asked for it)."""
        from piton.builtin_tools.bash import Bash, BashInput

        return await Bash().run(BashInput(command=command), self.agent.context)

    def project_files(self, limit: int = 20_000) -> list[str]:
        """Paths for completion: what ripgrep lists (gitignore-aware), relative to the project."""
        from piton.builtin_tools.ripgrep import list_files

        return list_files(self.agent.context.cwd, limit)

    async def aclose(
        self, reason: EndReason = "other", *, handover: bool = False, quiet: bool = False
    ) -> list[AgentEvent]:
        """End the session, once: its background shells and agents, the SessionEnd hooks (unless `quiet`: the
        same session is reopened; they cannot keep it open), the provider's connections, the MCP
        servers, the telemetry, and the log, synced. Returns what the hooks reported. With
        `handover`, the shells and the provider go on in the session that follows (`open` it with
        them)."""
        if self._closed:
            return []
        self._closed = True
        agent, shown = self.agent, []
        try:
            if not handover:
                agent.context.shells.listeners.clear()  # leaving: their ends need no telling
                await agent.context.shells.kill_all()
            agent.context.agents.listeners.clear()
            await agent.context.agents.stop_all()  # agents work for this session alone
            agent.context.schedule.close()  # and so do its loop and scheduled prompts
            if not quiet and agent.hooks is not None and agent.hooks.has("SessionEnd"):
                with contextlib.suppress(Exception):  # a hook cannot keep the session open
                    await agent.hooks.session_end(reason)
                shown = agent.hooks.drain()
            if not handover:
                with contextlib.suppress(Exception):
                    await agent.provider.aclose()
        finally:
            await asyncio.to_thread(self._release, handover)  # before the caller goes on
        return shown

    def close_now(self) -> None:
        """What `aclose` does that needs no event loop, for a session whose loop was cut short (an
        interrupt at the wrong moment): shells killed, servers stopped, the log synced. Nothing
        when the session closed already."""
        if not self._closed:
            self._closed = True
            self._release(handover=False)

    def _release(self, handover: bool) -> None:
        runtime = self.runtime
        try:
            if not handover:
                runtime.agent.context.shells.close()
            runtime.close()
        finally:
            with contextlib.suppress(OSError):  # what could not be synced was still written
                runtime.log.sync()
            runtime.log.close()
