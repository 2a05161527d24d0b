"""The interactive terminal: a prompt that stays open while the model works.

The prompt is drawn first; the agent's modules, the session and the HTTP client load in the background while
the user types (`repl_sessions`). Above the prompt, the live area shows what is still streaming; finished
output goes to the scrollback once (`repl_view` draws both). Typing while the model works queues the next
message; Esc or Ctrl-C interrupts the work at once and leaves the history valid (`turns.TurnDriver` owns
all of that). This module holds the REPL object that commands see (`controller.Controller`) and the keys
act on (`keys.Keyed`), and the input loop. Only prompt_toolkit and the light option types are
imported here at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit.buffer import Buffer

from piton.cli.clipboard import Pasted
from piton.cli.keys import bindings
from piton.cli.message_turn import MessageTurns
from piton.cli.questions import Check, Question, Questions
from piton.cli.repl_sessions import ReplSessions
from piton.cli.repl_view import PromptView, history_path, output_above_prompt, terminal_console
from piton.cli.repl_view import ReplIO as ReplIO  # where the REPL reads and draws, for its callers
from piton.cli.signals import Stopper, say, unexpected_errors
from piton.cli.turns import SessionTotals, TurnDriver, prompt_echo
from piton.cli.user_shell import user_shell
from piton.core.mode_names import CYCLED_MODES
from piton.core.options import RunOptions

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from piton.cli.commands import Commands
    from piton.cli.render import Renderer
    from piton.cli.status import StatusCommand
    from piton.core.conversation.events import AgentEvent
    from piton.core.providers import Provider
    from piton.core.safety.permissions import Decision, PermissionRequest
    from piton.core.tools import AnyTool
    from piton.runtime import Runtime
    from piton.session import Session


class Repl:
    """The prompt loop and what the keys and commands act on (it implements `Controller`); the session's
    start-up and switching are `ReplSessions`', the drawing is `PromptView`'s."""

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
        self.initial_prompt = initial_prompt
        self.io = io or ReplIO()
        self._console: Console | None = None
        self.questions = Questions(self.redraw, self.print_line)
        self.exiting = False
        self.driver = TurnDriver(
            model=lambda: self.runtime.agent.config.model if self.runtime else "",
            submit=self.submit,
            restore=self.edit,
            changed=self.redraw,
            print_line=self.print_line,
        )
        self.view = PromptView(self)
        self.sessions = ReplSessions(
            self, self.driver, options, verbose=verbose, provider_factory=provider_factory, tools=tools
        )
        self.messages = MessageTurns(self)
        self._tasks: set[asyncio.Future[None]] = set()  # commands and shell commands under way
        self._asking = asyncio.Lock()
        self.stopper = Stopper()  # SIGTERM, SIGHUP, SIGQUIT: the turn is interrupted and the REPL ends
        self.pastes = Pasted()  # Ctrl-V's images and long texts, by the number of their marker

    # -- what commands and tests see ---------------------------------------------------------------
    @property
    def options(self) -> RunOptions:
        return self.sessions.options

    @property
    def conversation(self) -> Session | None:
        """The session, once it has opened."""
        return self.sessions.conversation

    @property
    def runtime(self) -> Runtime | None:
        return self.sessions.runtime

    @property
    def starting(self) -> bool:
        return not self.sessions.started

    @property
    def commands(self) -> Commands | None:
        return self.sessions.commands

    @property
    def files(self) -> list[str]:
        return self.sessions.files

    @property
    def status(self) -> StatusCommand | None:
        """The settings' statusLine command."""
        return self.sessions.status

    @property
    def session(self) -> PromptSession[str] | None:
        """The prompt, once the loop has started."""
        return self.view.session

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

    @property
    def idle(self) -> bool:
        """Loaded, and nothing under way: no turn, no command, no shell command."""
        return self.runtime is not None and not self.busy and not self._tasks

    def command_names(self) -> list[tuple[str, str]]:
        return self.commands.names() if self.commands is not None else []

    def mentionable(self) -> list[str]:
        """What `@` completes: the project's files, then the MCP servers' resources (`server:uri`)."""
        mcp = self.runtime.mcp if self.runtime is not None else None
        return self.files + ([f"{r.server}:{r.uri}" for r in mcp.resources()] if mcp is not None else [])

    def send(self, text: str) -> None:
        self.driver.send(text)

    def submit(self, text: str) -> None:
        self.driver.start(
            user_shell(text[1:].strip(), self) if text.startswith("!") else self.messages.turn(text)
        )

    def interrupt(self) -> bool:
        return self.driver.interrupt()

    async def work(self, events: AsyncIterator[AgentEvent], *, interrupted: str) -> bool:
        return await self.driver.drive(events, interrupted=interrupted)

    async def ready(self) -> Runtime:
        return await self.sessions.ready()

    async def switch(
        self, *, resume: str | None, add_dirs: Sequence[Path] = (), reopen: bool = False
    ) -> Runtime:
        return await self.sessions.switch(resume=resume, add_dirs=add_dirs, reopen=reopen)

    def exit(self) -> None:
        self.exiting = True  # a prompt not up yet is closed once it is up; one answered, as it returns
        if not self.view.close():
            self.background(self.view.close_when_up())

    async def leave(self) -> None:  # exit when a start-up fails at once, before the prompt is drawn
        self.exiting = True
        await self.view.close_when_up()

    def edit(self, text: str) -> None:
        """Put `text` into the input, the cursor at its end (queued messages after an interrupt, a
        rewound prompt)."""
        self.view.edit(text)

    def toggle_vi(self) -> bool:
        return self.view.toggle_vi()

    def redraw(self) -> None:
        self.view.redraw()

    def refresh_files(self) -> None:
        """The turn or command may have made or removed files: `@` completion lists them anew."""
        self.background(self.sessions.refresh_files())

    def new_session(self) -> None:
        """Another session: /cost and `[Image #N]` speak of it alone."""
        self.driver.totals = SessionTotals()
        self.pastes = Pasted()

    def open_console(self) -> Console:
        """The console, made on first use: the one `io` names, else the terminal's."""
        if self._console is None:
            self._console = self.io.console if self.io.console is not None else terminal_console()
        return self._console

    def print_line(self, text: str, style: str = "") -> None:
        if self._console is not None:
            from rich.text import Text

            self._console.print(Text(text, style=style))
        else:
            print(text)

    async def ask(self, question: str, *, check: Check | None = None, stops_turn: bool = False) -> str:
        """Show `question` in place of the prompt and wait for the user's answer line."""
        return await self.questions.ask(question, check=check, stops_turn=stops_turn)

    async def approve(self, request: PermissionRequest) -> Decision:
        """A tool call needs the user's permission, or asks the user a question."""
        from piton.cli.approval import ask_permission

        return await ask_permission(request, self, self._asking)

    async def run_program(self, argv: list[str]) -> int:
        return await self.view.run_program(argv)

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self) -> int:
        """The prompt, until Ctrl-D, /exit or a signal ends it; the exit status."""
        from piton.cli.completion import PitonCompleter

        self.view.open(self.io, bindings(self), PitonCompleter(self.command_names, self.mentionable))
        self.sessions.start()
        self.stopper.install(loop := asyncio.get_running_loop(), self._stop)
        loop.set_exception_handler(unexpected_errors(self.print_line, lambda: self.stopper.stopped))
        if self.initial_prompt:  # `piton "first message"` (or `-r` alone: /resume), as if typed
            self.open_console()
            # below the first screen (and after the trust question), not above them
            with contextlib.suppress(Exception):  # a start that failed says so itself, and leaves
                await self.sessions.ready()
            if not self.sessions.start_failed:
                await self.on_input(self.initial_prompt)
        self.view.note_typed_ahead()
        with self.view.raw_between_prompts():
            await self._read_lines()
        loaded = await self.sessions.shutdown([self.driver.task, self.view.ticker, *self._tasks])
        if self.stopper.stopped:  # by a signal: said on stderr, whatever became of the screen
            say(self.stopper.told(loaded.log.session_id if loaded else None))
            return self.stopper.exit_code
        return 1 if self.sessions.start_failed else 0

    async def _read_lines(self) -> None:
        """Each line entered goes to `on_input`, until the prompt ends."""
        assert self.session is not None
        while not self.exiting:
            try:
                text = await self.session.prompt_async(set_exception_handler=False)  # see unexpected_errors
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

    def _stop(self) -> None:
        self.interrupt()
        self.exit()

    async def on_input(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if not self.busy or text.startswith(("/", "#")):  # a queued message is echoed when it goes
            self.print_line(prompt_echo(text), "bold cyan" if not self.busy else "dim")
        text = self.pastes.expand(text)
        if text.startswith("/"):
            self.background(self._command(text))  # a command may ask a question: the prompt must stay up
        elif text.startswith("#"):  # a note for a memory file, as in Claude Code
            from piton.cli.session_commands import remember

            self.background(remember(self, text[1:].strip()))
        else:  # a message or a !shell command: now, or after the work under way
            self.send(text)

    async def _command(self, text: str) -> None:
        await self.ready()
        assert self.commands is not None
        await self.commands.run(text)

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` beside what is under way: the REPL is not idle until it has ended."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.print_line(f"piton: {type(error).__name__}: {error}", "bold red")
        self.redraw()

    # -- what the keys do (`keys.Keyed`) -------------------------------------------------------------
    def answer(self, buffer: Buffer) -> None:
        """Enter while a question is up: an answer clears the input and stays out of the history;
        anything else stays in the input to be corrected."""
        if self.questions.offer(buffer.text):
            buffer.reset()

    def dismiss(self, buffer: Buffer) -> None:
        """Esc or Ctrl-C at a question: a permission question stops the turn it belongs to (as Esc
        does anywhere in a turn); another question is answered no."""
        if self.questions.current is not None:
            buffer.reset()
            self.questions.dismiss(self.interrupt)

    def typed_ahead(self) -> bool:
        return self.view.typed_ahead()

    def rewind(self) -> None:
        """Esc Esc on an empty prompt: /rewind, as Claude Code has it."""
        if not self.busy:
            self.background(self._command("/rewind"))

    def cycle_mode(self) -> None:
        if self.runtime is not None and self.runtime.agent.gate is not None:
            permissions = self.runtime.agent.gate.permissions
            current = permissions.mode if permissions.mode in CYCLED_MODES else CYCLED_MODES[-1]
            permissions.mode = CYCLED_MODES[(CYCLED_MODES.index(current) + 1) % len(CYCLED_MODES)]
            self.redraw()

    def paste_text(self, data: str) -> str:
        return self.pastes.text(data)

    def paste_image(self, buffer: Buffer) -> None:
        """Ctrl-V: the clipboard's image, as `[Image #N]` where the cursor is."""
        from piton.cli.clipboard import paste

        policy = self.runtime.agent.context.policy if self.runtime is not None else None
        exclude = [self.options.cwd, *(policy.roots if policy is not None else ())]
        self.background(paste(buffer, self.pastes, exclude, self.print_line))

    def toggle_thinking(self) -> None:
        """Ctrl-O: while work is under way, thinking streams in full (or collapses again); at the
        prompt, the transcript so far opens in full."""
        if self.busy or self.runtime is None or self.session is None:
            if self.driver.renderer is not None:
                self.driver.renderer.verbose = not self.driver.renderer.verbose
            return
        from piton.cli.transcript_view import page_in_terminal

        history = list(self.runtime.agent.history)
        self.background(page_in_terminal(history, self.view.columns(), self.options.cwd))

    def ctrl_c(self, buffer: Buffer) -> None:
        """Ctrl-C: stop the work under way, else clear the line, else exit on a second press."""
        if self.interrupt():
            return
        if buffer.text:
            buffer.reset()
        elif self.view.exit_armed:
            self.exit()
        else:
            self.view.arm_exit()


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
    with output_above_prompt():
        try:
            return asyncio.run(repl.run())
        except KeyboardInterrupt:
            return 130
