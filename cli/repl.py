"""The interactive terminal: a prompt that stays open while the model works.

The prompt is drawn first; the agent's modules, the session and the SDK load in the background while
the user types. Above the prompt, the live area shows what is still streaming; finished output goes to
the scrollback once. Typing while the model works queues the next message; Esc or Ctrl-C interrupts
the work at once and leaves the history valid (`turns.TurnDriver` owns all of that). The screen is
redrawn when something changed, never on a timer while idle.

Only prompt_toolkit and the light option types are imported here at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.formatted_text import ANSI, FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style

from piton.cli.clipboard import PastedImages
from piton.cli.keys import bindings
from piton.cli.questions import Check, Question, Questions
from piton.cli.signals import Stopper, say
from piton.cli.turns import SessionTotals, TurnDriver
from piton.core.options import RunOptions

if TYPE_CHECKING:
    from rich.console import Console

    from piton.cli.commands import Commands
    from piton.cli.render import Renderer
    from piton.cli.status import StatusCommand
    from piton.core.conversation.events import AgentEvent
    from piton.core.project.trust import Trust, TrustStore
    from piton.core.providers import Provider
    from piton.core.safety.permissions import Decision, PermissionRequest
    from piton.core.shells import BackgroundShell, BackgroundShells
    from piton.core.tools import AnyTool, ToolResult
    from piton.runtime import Runtime
    from piton.session import Session, StartSource

_EXIT_WINDOW_S = 2.0
_SPINNER_S = 0.1  # the spinner's frame time, while the model works (and only then)
_REDRAW_S = 0.05  # the least time between two redraws, however fast the stream
_TYPED_AHEAD_S = 0.2  # keys read this soon after the first prompt started were typed before it
_MODES = ("default", "acceptEdits", "plan")  # Shift+Tab cycles these; bypass only by flag
STYLE = Style.from_dict(
    {
        "prompt": "bold ansicyan",
        "live": "",
        "thinking": "italic ansibrightblack",
        "spinner": "ansiyellow",
        "question": "bold ansiyellow",
        "bottom-toolbar": "noreverse ansibrightblack",
    }
)


@dataclass(slots=True)
class ReplIO:
    """Where the REPL reads and draws; the defaults are the terminal. Tests pass pipes and a record."""

    input: Input | None = None
    output: Output | None = None
    console: Console | None = None
    history_file: Path | None = None


class Repl:
    """The prompt loop, the keys, and the session's start-up; implements `Controller` for commands."""

    def __init__(
        self,
        options: RunOptions,
        *,
        verbose: bool = False,
        initial_prompt: str | None = None,
        provider_factory: Callable[[], Provider] | None = None,
        tools: list[AnyTool] | None = None,
        io: ReplIO | None = None,
    ) -> None:
        self.options = options
        self.verbose = verbose
        self.initial_prompt = initial_prompt
        self.provider_factory = provider_factory
        self.tools = tools
        self.io = io or ReplIO()
        self.conversation: Session | None = None  # the session, once it has opened
        self.commands: Commands | None = None
        self._console: Console | None = None
        self.questions = Questions(self._redraw, self.print_line)
        self.exiting = False
        self.files: list[str] = []
        self.session: PromptSession[str] | None = None
        self.driver = TurnDriver(
            model=lambda: self.runtime.agent.config.model if self.runtime else "",
            submit=self.submit,
            restore=self.edit,
            changed=self._redraw,
            print_line=self.print_line,
        )
        self._ready: asyncio.Task[None] | None = None
        self._exit_armed_until = 0.0
        self._prompt_since = float("-inf")  # when the first prompt started, with keys typed ahead
        self._tasks: set[asyncio.Future[None]] = set()  # commands and shell commands under way
        self._asking = asyncio.Lock()
        self._ticker: asyncio.Task[None] | None = None
        self._trust_store: TrustStore | None = None  # the user's answers about trusting folders
        self.stopper = Stopper()  # SIGTERM, SIGHUP, SIGQUIT: the turn is interrupted and the REPL ends
        self.status: StatusCommand | None = None  # the settings' statusLine command
        self._told_checkpoints = False
        self.start_failed = False  # the session could not open: said once, and the REPL exits 1
        self.images = PastedImages()  # Ctrl-V's, by the number of their `[Image #N]`

    # -- what commands and tests see ---------------------------------------------------------------
    @property
    def runtime(self) -> Runtime | None:
        return self.conversation.runtime if self.conversation is not None else None

    @property
    def console(self) -> Console:
        assert self._console is not None, "the console exists once the session has loaded"
        return self._console

    @property
    def renderer(self) -> Renderer | None:
        return self.driver.renderer

    @property
    def totals(self) -> SessionTotals:
        return self.driver.totals

    @property
    def queue(self) -> list[str]:
        return self.driver.queue

    @property
    def busy(self) -> bool:
        return self.driver.busy

    @property
    def question(self) -> Question | None:
        return self.questions.current

    @property
    def asking(self) -> bool:
        return self.questions.current is not None

    def answer(self, buffer: Buffer) -> None:
        """Enter while a question is up: an answer clears the input and stays out of the history;
        anything else stays in the input to be corrected."""
        if self.questions.offer(buffer.text):
            buffer.reset()

    def dismiss(self, buffer: Buffer) -> None:
        """Esc or Ctrl-C at a question: a permission question stops the turn it belongs to (as Esc
        does anywhere in a turn); another question is answered no."""
        question = self.questions.current
        if question is None:
            return
        buffer.reset()
        if question.stops_turn and self.interrupt():
            self.print_line(f"{question.text}(Esc)", "yellow")
            return
        self.questions.offer("no")

    @property
    def idle(self) -> bool:
        """Loaded, and nothing under way: no turn, no command, no shell command."""
        return self.runtime is not None and not self.busy and not self._tasks

    def command_names(self) -> list[tuple[str, str]]:
        return self.commands.names() if self.commands is not None else []

    def _mentionable(self) -> list[str]:
        """What `@` completes: the project's files, then the MCP servers' resources (`server:uri`)."""
        mcp = self.runtime.mcp if self.runtime is not None else None
        return self.files + ([f"{r.server}:{r.uri}" for r in mcp.resources()] if mcp is not None else [])

    def send(self, text: str) -> None:
        self.driver.send(text)

    def submit(self, text: str) -> None:
        self.driver.start(self._shell(text[1:].strip()) if text.startswith("!") else self._turn(text))

    def interrupt(self) -> bool:
        return self.driver.interrupt()

    async def work(self, events: AsyncIterator[AgentEvent], *, interrupted: str) -> bool:
        return await self.driver.drive(events, interrupted=interrupted)

    def exit(self) -> None:
        self.exiting = True
        if self.session is not None and self.session.app.is_running:
            self.session.app.exit(exception=EOFError())

    async def _leave(self) -> None:
        """Exit even when the prompt has not been drawn yet (a start-up that fails at once)."""
        self.exiting = True
        for _ in range(250):
            if self.session is not None and self.session.app.is_running:
                self.session.app.exit(exception=EOFError())
                return
            await asyncio.sleep(0.02)

    # -- start-up ----------------------------------------------------------------------------------
    def _make_console(self) -> Console:
        from rich.console import Console

        if self.io.console is not None:
            return self.io.console
        # Rich would take an exported COLUMNS (or LINES) as the width for good: the terminal's own
        # size, asked at each print, follows its resizes
        environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return Console(
            file=sys.stdout, highlight=False, force_terminal=sys.stdout.isatty() or None, _environ=environ
        )

    def _load(self) -> None:
        """Everything the first turn needs; runs on a worker thread while the prompt is up."""
        from piton.cli.commands import Commands
        from piton.cli.render import Renderer

        if self.provider_factory is not None:
            provider = self.provider_factory()
        else:  # no credentials: said on the first screen, once the session has opened
            from piton.core.providers.route import Router, needs_anthropic
            from piton.starting import default_provider

            provider = default_provider(self.options, require_key=False)
            if isinstance(provider, Router) and needs_anthropic(provider.default):
                provider.prewarm()  # the SDK import (about a second) overlaps with the rest of loading
        self._console = self._console or self._make_console()
        self.driver.renderer = Renderer(self._console, verbose=self.verbose)
        self.conversation = self._open(self.options, provider)
        self.commands = Commands(self)
        self.files = with_folders(self.conversation.project_files())

    def _open(
        self, options: RunOptions, provider: Provider, shells: BackgroundShells | None = None
    ) -> Session:
        from piton.runtime import Parts
        from piton.session import Session

        parts = Parts(tools=self.tools, approver=self._approve, trust_store=self._trust_store, shells=shells)
        return Session.open(options, provider, parts=parts)

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
        self._console = self._console or self._make_console()
        lines, question = trust.question()
        for line in lines:
            self.print_line(line, "yellow")
        answer = (await self.ask(question)).strip().lower()
        await asyncio.to_thread(trust.answer, answer in ("y", "yes"))
        if self._trust_store is not None and self._trust_store.problem:
            self.print_line(f"piton: {self._trust_store.problem}", "yellow")

    async def _start(self) -> None:
        try:
            await self._trust()
            await asyncio.to_thread(self._load)
        except Exception as e:  # a session that cannot open, bad options: say so once, and leave
            self.print_line(f"piton: {e}", "bold red")
            self.start_failed = True
            await self._leave()
            raise
        assert self.conversation is not None and self.runtime is not None
        from piton.cli.welcome import welcome_lines

        for text, style in welcome_lines(self.runtime):
            self.print_line(text, style)
        for notice in self.conversation.notices:
            self.print_line(f"piton: {notice}", "yellow")
        # the log cannot be written, a server fails: said when it happens
        self.conversation.report_to(self._log_problem, asyncio.get_running_loop())
        self.runtime.agent.context.shells.tell(self._shell_changed)  # handed on from session to session
        try:  # no credentials: said on the first screen, not after a message that looks paid for
            await asyncio.to_thread(self.runtime.agent.provider.check)
        except Exception as e:
            self.print_line(f"piton: {e}", "bold red")
        await self._opened(self.conversation, "resume" if self.runtime.agent.history else "startup")

    async def _opened(self, conversation: Session, source: StartSource, *, recap: bool = True) -> None:
        """A session is open: its SessionStart hooks, and the settings' status line command."""
        from piton.cli.status import StatusCommand
        from piton.cli.welcome import recap_lines

        runtime = conversation.runtime
        for text, style in recap_lines(runtime.agent.history) if source == "resume" and recap else []:
            self.print_line(text, style)
        # a session reopened where it stands (`recap=False`) does not start again
        for event in await conversation.start(source, quiet=not recap):
            if self.driver.renderer is not None:
                self.driver.renderer.handle(event)
        if runtime.status_command is not None:
            self.status = StatusCommand(
                runtime.status_command, lambda t: self.print_line(f"piton: {t}", "yellow")
            )
            self.status.refresh(runtime, self.totals, self._redraw)
        self._redraw()

    async def ready(self) -> Runtime:
        assert self._ready is not None
        await asyncio.shield(self._ready)
        assert self.runtime is not None
        return self.runtime

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
        if self.busy and work is not None and work is not asyncio.current_task():
            self.interrupt()  # and wait until it has let go: its last lines belong to the old session
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
            self.driver.totals = SessionTotals()
            self.images = PastedImages()
        for notice in self.conversation.notices:
            self.print_line(f"piton: {notice}", "yellow")
        self.conversation.report_to(self._log_problem, asyncio.get_running_loop())
        if reopen:
            _carry_permissions(old, self.conversation.runtime)
        await self._opened(self.conversation, "clear" if resume is None else "resume", recap=not reopen)
        return self.conversation.runtime

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self) -> int:
        history = FileHistory(str(self.io.history_file)) if self.io.history_file else InMemoryHistory()
        from piton.cli.completion import PitonCompleter

        self.session = PromptSession(
            message=self._message,
            bottom_toolbar=self._toolbar,
            key_bindings=bindings(self),
            history=history,
            completer=PitonCompleter(self.command_names, self._mentionable),
            complete_while_typing=True,
            style=STYLE,
            erase_when_done=True,  # the scrollback is ours: on_input echoes what was typed
            input=self.io.input,
            output=self.io.output,
        )
        app = self.session.app
        # Esc must interrupt at once. Alt+Enter arrives as one read, so a short wait still tells them apart.
        app.ttimeoutlen = 0.05
        app.timeoutlen = 0.1
        app.min_redraw_interval = _REDRAW_S  # a fast stream invalidates often; redraw at a bounded rate
        app.terminal_size_polling_interval = None  # SIGWINCH tells of a resize: no waking twice a second
        self._ready = asyncio.ensure_future(self._start())
        self._ready.add_done_callback(_observed)
        self.stopper.install(asyncio.get_running_loop(), self._stop)
        if self.initial_prompt:  # `piton "first message"` (or `-r` alone: /resume), as if typed
            self._console = self._console or self._make_console()
            await self.on_input(self.initial_prompt)
        if _pending_input(app.input):
            self._prompt_since = time.monotonic()
        while not self.exiting:
            try:
                text = await self.session.prompt_async()
            except EOFError:
                break
            except KeyboardInterrupt:
                continue
            except OSError as e:  # drawing found the terminal gone before its SIGHUP came
                if not self.stopper.lost_terminal(e):
                    raise
                self.interrupt()
                break
            await self.on_input(text)
        loaded = await self._shutdown()
        if self.stopper.stopped:  # by a signal: said on stderr, whatever became of the screen
            say(self.stopper.told(loaded.log.session_id if loaded else None))
        if self.stopper.stopped:
            return self.stopper.exit_code
        return 1 if self.start_failed else 0

    def _stop(self) -> None:
        self.interrupt()
        self.exit()

    async def _shutdown(self) -> Runtime | None:
        for task in [self.driver.task, self._ticker, *self._tasks]:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._ready is None or not self._ready.done() or self._ready.exception() or not self.runtime:
            return None
        assert self.conversation is not None
        await self.conversation.aclose("prompt_input_exit")  # MCP servers stop before the terminal is back
        self.print_line(f"Resume this session with: piton --resume {self.runtime.log.session_id}", "dim")
        return self.runtime

    async def on_input(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        self.print_line(f"❯ {text}", "bold cyan" if not self.busy else "dim")
        if text.startswith("/"):
            self._background(self._command(text))  # a command may ask a question: the prompt must stay up
        elif text.startswith("#"):  # a note for a memory file, as in Claude Code
            from piton.cli.session_commands import remember

            self._background(remember(self, text[1:].strip()))
        else:  # a message or a !shell command: now, or after the work under way
            self.send(text)

    async def _command(self, text: str) -> None:
        await self.ready()
        assert self.commands is not None
        await self.commands.run(text)

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            self.print_line(f"piton: {type(error).__name__}: {error}", "bold red")
        self._redraw()

    async def _turn(self, text: str) -> None:
        try:
            runtime = await self.ready()
        except asyncio.CancelledError:  # Esc before the session had loaded: nothing was sent
            self.driver.interrupted_before_start(text)
            return
        except Exception:  # the session did not start; that was said when it failed
            return
        from piton.session import NoTurn

        assert self.conversation is not None
        turn = self.conversation.turn(
            text, mentions=True, extra=lambda content: self.images.attach(text, content)
        )
        try:
            await self.driver.drive(turn)
        except NoTurn as e:  # an MCP prompt that is unknown or could not be fetched: said, nothing sent
            self.print_line(str(e), "yellow")
            return
        except Exception as e:
            self.print_line(f"piton: internal error: {type(e).__name__}: {e}", "bold red")
        if self.status is not None:
            self.status.refresh(runtime, self.totals, self._redraw)
        checkpoints = runtime.agent.context.checkpoints
        if checkpoints is not None and checkpoints.problem is not None and not self._told_checkpoints:
            self._told_checkpoints = True  # /rewind cannot restore what was not kept: said once
            self.print_line(f"piton: {checkpoints.problem}; /rewind may not restore every file", "yellow")
        self._refresh_files(runtime)

    def _refresh_files(self, runtime: Runtime) -> None:
        """The turn or command may have made or removed files: `@` completion lists them anew, off the
        event loop."""

        async def refresh() -> None:
            assert self.conversation is not None
            self.files = with_folders(await asyncio.to_thread(self.conversation.project_files))

        self._background(refresh())

    def edit(self, text: str) -> None:
        """Put `text` into the input, the cursor at its end (queued messages after an interrupt, a
        rewound prompt)."""
        if self.session is not None:
            self.session.default_buffer.text = text
            self.session.default_buffer.cursor_position = len(text)

    def typed_ahead(self) -> bool:
        """Whether keys now read were typed before the first prompt was up: the terminal, not yet in
        raw mode, turned their Enter into a line feed, which must still send rather than add a line."""
        return time.monotonic() - self._prompt_since < _TYPED_AHEAD_S

    def toggle_vi(self) -> bool:
        from prompt_toolkit.enums import EditingMode

        if self.session is None:
            return False
        app = self.session.app
        app.editing_mode = EditingMode.EMACS if app.editing_mode == EditingMode.VI else EditingMode.VI
        return app.editing_mode == EditingMode.VI

    def rewind(self) -> None:
        """Esc Esc on an empty prompt: /rewind, as Claude Code has it."""
        if not self.busy:
            self._background(self._command("/rewind"))

    async def _shell(self, command: str) -> None:
        """`!cmd`: run it in the sandbox now as the work under way (Esc or Ctrl-C stop it and what it
        started), show the output, and let the model see it next turn."""
        if not command:
            return
        try:
            runtime = await self.ready()
        except Exception:  # the session did not start; that was said when it failed
            return
        done: list[ToolResult] = []

        async def run() -> None:
            assert self.conversation is not None
            done.append(await self.conversation.run_shell(command))

        stopped = "  ⎿  Interrupted; the command and what it started were stopped."
        if not await self.driver.hold(run(), doing=f"Running !{command[:40]}", interrupted=stopped):
            runtime.agent.add_note(
                f"The user ran a shell command and stopped it:\n<bash-input>{command}</bash-input>"
            )
            return
        [result] = done
        self._refresh_files(runtime)
        output = str(result.content)
        self.print_line(output, "red" if result.is_error else "")
        if runtime.agent.capper is not None:
            output = str(runtime.agent.capper.apply("Bash", "user-shell", result).content)
        runtime.agent.add_note(
            "The user ran a shell command:\n"
            f"<bash-input>{command}</bash-input>\n<bash-output>{output}</bash-output>"
        )

    async def ask(self, question: str, *, check: Check | None = None, stops_turn: bool = False) -> str:
        """Show `question` in place of the prompt and wait for the user's answer line."""
        return await self.questions.ask(question, check=check, stops_turn=stops_turn)

    async def _approve(self, request: PermissionRequest) -> Decision:
        from piton.cli.approval import approve, check_answer
        from piton.cli.session_hooks import notify

        assert self.runtime is not None

        async def ask(question: str, check: Check = check_answer) -> str:
            return await self.ask(question, check=check, stops_turn=True)

        async with self._asking:  # subagents working side by side ask one question at a time
            # beside the question, not before it: a slow Notification hook must not hold it back
            asking = request.tool.kind == "question"
            message = (
                "Piton has a question for you"
                if asking
                else f"Piton needs your permission to use {request.tool.name}"
            )
            self._background(notify(self.runtime, message, "permission_prompt"))
            renderer = self.driver.renderer
            if renderer is not None:
                renderer.doing = "Waiting for your answer" if asking else "Waiting for your permission"
            try:
                decision = await approve(request, self.console, ask, self.runtime.agent.gate)
                if renderer is not None and request.preview and decision.behavior == "allow":
                    renderer.shown_diffs.add(request.preview)
                return decision
            finally:
                if renderer is not None:
                    renderer.doing = None

    # -- drawing -----------------------------------------------------------------------------------
    def _shell_changed(self, shell: BackgroundShell) -> None:
        """A background shell started or ended: the status line counts them, and an end while the
        prompt waits is told (during a turn the model hears of it, and `/bashes` shows it)."""
        if not shell.running and not self.busy:
            from piton.cli.bashes_command import ended_line

            self.print_line(ended_line(shell), "dim" if shell.status == "completed" else "yellow")
        self._redraw()

    def _log_problem(self, text: str) -> None:
        """The session log cannot be written (or can again): the conversation goes on regardless."""
        self.print_line(f"piton: {text}", "yellow")

    def print_line(self, text: str, style: str = "") -> None:
        if self._console is not None:
            from rich.text import Text

            self._console.print(Text(text, style=style))
        else:
            print(text)

    def _redraw(self) -> None:
        """Something on screen changed: redraw once, and keep the spinner turning while work is
        under way (only then: an idle prompt costs nothing)."""
        if self.session is None:
            return
        self.session.app.invalidate()
        if self.busy and (self._ticker is None or self._ticker.done()):
            self._ticker = asyncio.ensure_future(self._spin())

    async def _spin(self) -> None:
        while self.busy and self.session is not None:
            self.session.app.invalidate()
            await asyncio.sleep(_SPINNER_S)
        if self.session is not None:
            self.session.app.invalidate()

    def _message(self) -> FormattedText:
        renderer = self.driver.renderer
        parts: list[tuple[str, str]] = list(renderer.live()) if renderer is not None else []
        if self.question is not None:
            parts.append(("class:question", self.question.text))
            return FormattedText(parts)
        parts.append(("class:prompt", "❯ "))
        return FormattedText(parts)

    def _toolbar(self) -> FormattedText:
        if time.monotonic() < self._exit_armed_until:
            return FormattedText([("", " Press Ctrl-C again to exit")])
        if self.runtime is None:
            return FormattedText([("", " starting…")])
        if self.status is not None and self.status.text is not None:
            return FormattedText(ANSI(" " + self.status.text).__pt_formatted_text__())
        from piton.cli.status import status_line

        width = self.session.app.output.get_size().columns if self.session is not None else 200
        return FormattedText([("", status_line(self.runtime, self.totals, len(self.queue), width))])

    def _arm_exit(self) -> None:
        self._exit_armed_until = time.monotonic() + _EXIT_WINDOW_S
        self._redraw()
        asyncio.get_running_loop().call_later(_EXIT_WINDOW_S + 0.05, self._redraw)

    def cycle_mode(self) -> None:
        if self.runtime is not None and self.runtime.agent.gate is not None:
            permissions = self.runtime.agent.gate.permissions
            current = permissions.mode if permissions.mode in _MODES else _MODES[-1]
            permissions.mode = _MODES[(_MODES.index(current) + 1) % len(_MODES)]  # type: ignore[assignment]
            self._redraw()

    def paste_image(self, buffer: Buffer) -> None:
        """Ctrl-V: the clipboard's image, as `[Image #N]` where the cursor is."""
        from piton.cli.clipboard import paste

        policy = self.runtime.agent.context.policy if self.runtime is not None else None
        exclude = [self.options.cwd, *(policy.roots if policy is not None else ())]
        self._background(paste(buffer, self.images, exclude, self.print_line))

    def toggle_thinking(self) -> None:
        """Ctrl-O: while work is under way, thinking streams in full (or collapses again); at the
        prompt, the transcript so far opens in full."""
        if self.busy or self.runtime is None or self.session is None:
            if self.driver.renderer is not None:
                self.driver.renderer.verbose = not self.driver.renderer.verbose
            return
        from prompt_toolkit.application import run_in_terminal

        from piton.cli.transcript_view import show

        history, width = list(self.runtime.agent.history), self.session.app.output.get_size().columns

        def page() -> None:
            text = show(history, width, self.options.cwd)
            if text is not None:  # no pager here: the transcript goes to the scrollback
                sys.stdout.write(text)

        async def view() -> None:
            await run_in_terminal(page)

        self._background(view())

    async def run_program(self, argv: list[str]) -> int:
        import subprocess

        from prompt_toolkit.application import run_in_terminal

        def run() -> int:
            return subprocess.run(argv, check=False).returncode

        return await run_in_terminal(run) if self.session is not None else run()

    def ctrl_c(self, buffer: Buffer) -> None:
        """Ctrl-C: stop the work under way, else clear the line, else exit on a second press."""
        if self.interrupt():
            return
        if buffer.text:
            buffer.reset()
        elif time.monotonic() < self._exit_armed_until:
            self.exit()
        else:
            self._arm_exit()


def _pending_input(source: Input) -> bool:
    """Whether keys wait to be read already (typed while Piton started)."""
    import fcntl
    import struct
    import termios

    try:
        fd = source.fileno()
        return bool(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except (OSError, ValueError, NotImplementedError):
        return False


def _carry_permissions(old: Runtime, new: Runtime) -> None:
    """The same session reopened: the mode and the rules allowed meanwhile stay as they were."""
    before, after = old.agent.gate, new.agent.gate
    if before is None or after is None:
        return
    after.permissions.mode = before.permissions.mode
    after.permissions.allow += [r for r in before.permissions.allow if r not in after.permissions.allow]


def with_folders(files: list[str]) -> list[str]:
    """What `@` completes: the files, and the folders they are in (`src/`), each once."""
    folders = {f"{parent}/" for f in files for parent in _parents(f)}
    return files + sorted(folders)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _observed(task: asyncio.Future[None]) -> None:
    """Mark a start-up failure as seen: it was reported on screen, and each wait for the session
    re-raises it."""
    if not task.cancelled():
        task.exception()


def history_path() -> Path:
    from platformdirs import user_state_path

    path = user_state_path("piton", appauthor=False) / "repl_history"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def run_repl(options: RunOptions, *, verbose: bool = False, initial_prompt: str | None = None) -> int:
    """`piton` without -p: the interactive terminal."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write(
            'piton: the interactive mode needs a terminal; use piton -p "your prompt" in scripts\n'
        )
        return 2
    repl = Repl(
        options, verbose=verbose, initial_prompt=initial_prompt, io=ReplIO(history_file=history_path())
    )
    with patch_stdout(raw=True):
        try:
            return asyncio.run(repl.run())
        except KeyboardInterrupt:
            return 130
