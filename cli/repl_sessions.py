"""The REPL's sessions: the first one's start-up (the folder's trust, loading while the prompt is up, the
welcome), the switch to a new or an earlier one, reopening this one, and closing it at exit.

The agent's modules, the session and the HTTP client load here, on a worker thread, after the prompt is drawn:
they are imported inside the functions that need them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from piton.cli.controller import Controller
from piton.collection import pause_collection, resume_collection

if TYPE_CHECKING:
    from rich.console import Console

    from piton.cli.commands import Commands
    from piton.cli.status import StatusCommand
    from piton.cli.turns import TurnDriver
    from piton.core.options import RunOptions
    from piton.core.project.trust import Trust, TrustStore
    from piton.core.providers import Provider
    from piton.core.safety.permissions import Decision, PermissionRequest
    from piton.core.shells import BackgroundShell, BackgroundShells
    from piton.core.tools import AnyTool
    from piton.runtime import Runtime
    from piton.session import Session, StartSource


class SessionHost(Controller, Protocol):
    """What the sessions need of the terminal (the REPL), beyond what commands see."""

    def open_console(self) -> Console:
        """The terminal's console, made on first use (a question may come before the session loads)."""
        ...

    async def leave(self) -> None:
        """Exit, even when the prompt has not been drawn yet (a start-up that fails at once)."""
        ...

    async def approve(self, request: PermissionRequest) -> Decision:
        """Ask the user whether a tool call may run."""
        ...

    def redraw(self) -> None:
        """Something on screen changed."""
        ...

    def new_session(self) -> None:
        """Another session has opened (not this one reopened): what the terminal kept of the last one
        (its totals, its pasted images) starts anew."""
        ...


class ReplSessions:
    """The session the REPL works in: opened at start-up, switched for another, closed at exit."""

    def __init__(
        self,
        host: SessionHost,
        driver: TurnDriver,
        options: RunOptions,
        *,
        verbose: bool = False,
        provider_factory: Callable[[], Provider] | None = None,
        tools: list[AnyTool] | None = None,
    ) -> None:
        self.host = host
        self.driver = driver
        self.options = options  # what the next session opens with (`/add-dir` adds folders)
        self.verbose = verbose
        self.provider_factory = provider_factory
        self.tools = tools
        self.conversation: Session | None = None  # the session, once it has opened
        self.commands: Commands | None = None
        self.files: list[str] = []  # what `@` completes
        self.status: StatusCommand | None = None  # the settings' statusLine command
        self.start_failed = False  # the session could not open: said once, and the REPL exits 1
        self._ready: asyncio.Task[None] | None = None
        self._listing: asyncio.Future[None] | None = None  # the first listing of what `@` completes
        self._trust_store: TrustStore | None = None  # the user's answers about trusting folders
        self._paused = False  # start-up stopped the garbage collector (`piton.collection`)

    @property
    def runtime(self) -> Runtime | None:
        return self.conversation.runtime if self.conversation is not None else None

    def start(self) -> None:
        """Open the first session in the background: the prompt is up meanwhile."""
        # no garbage collection while the session opens (`piton.collection`: 40 ms before `❯`); it
        # resumes once it is open, or when the start ends otherwise (cancelled at exit, perhaps
        # before it ran at all)
        self._paused = pause_collection()
        self._ready = asyncio.ensure_future(self._start())
        self._ready.add_done_callback(lambda _: resume_collection(self._paused))
        self._ready.add_done_callback(_observed)
        self._ready.add_done_callback(lambda _: self.host.redraw())  # the prompt's mark changes

    @property
    def started(self) -> bool:
        """Whether the first session has finished starting: a message sent now goes at once."""
        return self._ready is not None and self._ready.done()

    async def ready(self) -> Runtime:
        """The session, waiting for it to load if need be; a start-up that failed raises again."""
        assert self._ready is not None
        await asyncio.shield(self._ready)
        assert self.runtime is not None
        return self.runtime

    async def refresh_files(self) -> None:
        """What `@` completes, anew (a turn or a command may have made or removed files), listed off
        the event loop."""
        from piton.cli.completion import with_folders

        assert self.conversation is not None
        self.files = with_folders(await asyncio.to_thread(self.conversation.project_files))

    # -- start-up ----------------------------------------------------------------------------------
    async def _start(self) -> None:
        try:
            await self._trust()
            await asyncio.to_thread(self._load)
        except Exception as e:  # a session that cannot open, bad options: say so once, and leave
            self.host.print_line(f"piton: {e}", "bold red")
            self.start_failed = True
            await self.host.leave()
            raise
        finally:
            resume_collection(self._paused)
        assert self.conversation is not None and self.runtime is not None
        from piton.cli.welcome import welcome_lines

        for text, style in welcome_lines(self.runtime):
            self.host.print_line(text, style)
        for notice in self.conversation.notices:
            self.host.print_line(f"piton: {notice}", "yellow")
        # the log cannot be written, a server fails: said when it happens
        self.conversation.report_to(self._log_problem, asyncio.get_running_loop())
        self.runtime.agent.context.shells.tell(self._shell_changed)  # handed on from session to session
        try:  # no credentials: said on the first screen, not after a message that looks paid for
            await asyncio.to_thread(self.runtime.agent.provider.check)
        except Exception as e:
            self.host.print_line(f"piton: {e}", "bold red")
        await self._opened(self.conversation, "resume" if self.runtime.agent.history else "startup")
        # what `@` completes is listed once the prompt is ready: a walk of a large project is no wait
        self._listing = asyncio.ensure_future(self.refresh_files())
        self._listing.add_done_callback(_observed)

    async def _trust(self) -> None:
        """Before the session loads: when the folder's files would grant what the user was never
        asked about (allow rules, skills' allowed-tools), say what and ask whether to trust the
        folder. The answer is remembered in the user's state, so each folder asks once."""
        from piton.core.project.trust import TrustStore

        def examine() -> Trust:
            from piton.runtime import workspace_trust

            self._trust_store = self._trust_store or TrustStore()
            return workspace_trust(self.options, trust_store=self._trust_store)

        trust = await asyncio.to_thread(examine)
        if not trust.pending:
            return
        self.host.open_console()
        lines, question = trust.question()
        for line in lines:
            self.host.print_line(line, "yellow")
        answer = (await self.host.ask(question)).strip().lower()
        await asyncio.to_thread(trust.answer, answer in ("y", "yes"))
        if self._trust_store is not None and self._trust_store.problem:
            self.host.print_line(f"piton: {self._trust_store.problem}", "yellow")

    def _load(self) -> None:
        """Everything the first turn needs; runs on a worker thread while the prompt is up."""
        from piton.cli.commands import Commands
        from piton.cli.render import Renderer

        if self.provider_factory is not None:
            provider = self.provider_factory()
        else:  # no credentials: said on the first screen, once the session has opened
            from piton.starting import default_provider

            router = default_provider(self.options, require_key=False)
            router.prewarm()  # the HTTP client, on this thread, while the prompt is up
            provider = router
        self.driver.renderer = Renderer(self.host.open_console(), verbose=self.verbose)
        self.conversation = self._open(self.options, provider)
        self.commands = Commands(self.host)

    def _open(
        self, options: RunOptions, provider: Provider, shells: BackgroundShells | None = None
    ) -> Session:
        from piton.runtime import Parts
        from piton.session import Session

        parts = Parts(
            tools=self.tools, approver=self.host.approve, trust_store=self._trust_store, shells=shells
        )
        return Session.open(options, provider, parts=parts)

    async def _opened(self, conversation: Session, source: StartSource, *, recap: bool = True) -> None:
        """A session is open: its SessionStart hooks, and the settings' status line command."""
        from piton.cli.agents_view import AgentsWatch
        from piton.cli.loop_view import LoopWatch
        from piton.cli.status import StatusCommand
        from piton.cli.welcome import recap_lines

        runtime = conversation.runtime
        say = self.host.print_line
        AgentsWatch(conversation, self.driver, say, self.host.redraw)  # it lives as the session's listener
        LoopWatch(conversation, self.driver, say)  # it ends when the session closes
        shown = recap_lines(runtime.agent.history, session_id=runtime.log.session_id)
        for text, style in shown if source == "resume" and recap else []:
            say(text, style)
        # a session reopened where it stands (`recap=False`) does not start again
        for event in await conversation.start(source, quiet=not recap):
            if self.driver.renderer is not None:
                self.driver.renderer.handle(event)
        if runtime.status_command is not None:
            command, sandboxed = runtime.status_command
            self.status = StatusCommand(command, lambda t: say(f"piton: {t}", "yellow"), sandboxed=sandboxed)
            self.status.refresh(runtime, self.driver.totals, self.host.redraw)
        self.host.redraw()

    # -- another session ---------------------------------------------------------------------------
    async def switch(
        self, *, resume: str | None, add_dirs: Sequence[Path] = (), reopen: bool = False
    ) -> Runtime:
        """A new runtime for a new or resumed session, keeping the provider and the model; with
        `reopen` or `add_dirs` (more folders to work in), the same session reopened with the
        permission mode and rules it had, and no recap."""
        old = await self.ready()
        reopen = reopen or bool(add_dirs)
        if add_dirs:
            self.options = replace(self.options, add_dirs=[*self.options.add_dirs, *add_dirs])
        work = self.driver.task
        if self.driver.busy and work is not None and work is not asyncio.current_task():
            self.driver.interrupt()  # and wait until it has let go: its last lines belong to the old session
            with contextlib.suppress(BaseException):
                await work
        options = replace(self.options, continue_latest=False, model=old.agent.config.model, resume=resume)
        leaving = self.conversation
        assert leaving is not None
        # the same session reopened goes on: it neither ends nor starts again; the background shells
        # belong to the terminal's session and go on in the next one
        shells = old.agent.context.shells
        await leaving.aclose("clear" if resume is None else "other", handover=True, quiet=reopen)
        self.conversation = await asyncio.to_thread(self._open, options, old.agent.provider, shells)
        if not reopen:  # another session: /cost and `[Image #N]` speak of it alone
            self.host.new_session()
        for notice in self.conversation.notices:
            self.host.print_line(f"piton: {notice}", "yellow")
        self.conversation.report_to(self._log_problem, asyncio.get_running_loop())
        if reopen:
            _carry_permissions(old, self.conversation.runtime)
        else:  # the mode is the user's stance, chosen with Shift+Tab: it outlives /clear and /resume
            _carry_mode(old, self.conversation.runtime)
        await self._opened(self.conversation, "clear" if resume is None else "resume", recap=not reopen)
        return self.conversation.runtime

    async def shutdown(self, tasks: Iterable[asyncio.Future[Any] | None]) -> Runtime | None:
        """At exit: `tasks` (the work under way) stop, then the session closes, its MCP servers
        stopping before the terminal is back. The runtime, when one had loaded."""
        for task in tasks:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._ready is None or not self._ready.done() or self._ready.exception() or not self.runtime:
            return None
        assert self.conversation is not None
        await self.conversation.aclose("prompt_input_exit")
        if self.runtime.agent.history:  # an empty session has nothing to resume
            resume = f"Resume this session with: piton --resume {self.runtime.log.session_id}"
            self.host.print_line(resume, "dim")
        return self.runtime

    # -- what the session tells ----------------------------------------------------------------------
    def _shell_changed(self, shell: BackgroundShell) -> None:
        """A background shell started or ended: the status line counts them, and an end while the
        prompt waits is told (during a turn the model hears of it, and `/bashes` shows it)."""
        if not shell.running and not self.driver.busy:
            from piton.cli.bashes_command import ended_line

            self.host.print_line(ended_line(shell), "dim" if shell.status == "completed" else "yellow")
        self.host.redraw()

    def _log_problem(self, text: str) -> None:
        """The session log cannot be written (or can again): the conversation goes on regardless."""
        self.host.print_line(f"piton: {text}", "yellow")


def _carry_mode(old: Runtime, new: Runtime) -> None:
    before, after = old.agent.gate, new.agent.gate
    if before is not None and after is not None and after.permissions.allows_mode(before.permissions.mode):
        after.permissions.mode = before.permissions.mode  # unless the settings now forbid it


def _carry_permissions(old: Runtime, new: Runtime) -> None:
    """The same session reopened: the mode and the rules allowed meanwhile stay as they were."""
    _carry_mode(old, new)
    before, after = old.agent.gate, new.agent.gate
    if before is None or after is None:
        return
    after.permissions.allow += [r for r in before.permissions.allow if r not in after.permissions.allow]


def _observed(task: asyncio.Future[None]) -> None:
    """Mark a start-up failure as seen: it was reported on screen, and each wait for the session
    re-raises it."""
    if not task.cancelled():
        task.exception()
