"""The interactive terminal: a prompt that stays open while the model works.

The prompt is drawn first; the agent's modules, the session and the SDK load in the background while
the user types. Above the prompt, the live area shows what is still streaming; finished output goes to
the scrollback once. Typing while the model works queues the next message; Esc or Ctrl-C interrupts
the turn at once and leaves the history valid.

Only prompt_toolkit and the light option types are imported here at start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style

from piton.core.options import RunOptions

if TYPE_CHECKING:
    from rich.console import Console

    from piton.cli.commands import Commands
    from piton.cli.render import Renderer
    from piton.core.context.usage import Usage
    from piton.core.providers import Provider
    from piton.core.tools import Tool
    from piton.runtime import Runtime

_MENTION = re.compile(r"(?<![\w@])@(\S+)")
_EXIT_WINDOW_S = 2.0
_MAX_ATTACHMENT_CHARS = 200_000
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


@dataclass(slots=True)
class SessionTotals:
    """What this terminal session has used, across turns and models (for /cost and the status line)."""

    by_model: dict[str, Usage] = field(default_factory=dict)
    cost_usd: float = 0.0


class Repl:
    def __init__(
        self,
        options: RunOptions,
        *,
        verbose: bool = False,
        initial_prompt: str | None = None,
        provider_factory: Callable[[], Provider] | None = None,
        tools: list[Tool] | None = None,
        io: ReplIO | None = None,
    ) -> None:
        self.options = options
        self.verbose = verbose
        self.initial_prompt = initial_prompt
        self.provider_factory = provider_factory
        self.tools = tools
        self.io = io or ReplIO()
        self.runtime: Runtime | None = None
        self.renderer: Renderer | None = None
        self.commands: Commands | None = None
        self.console: Console | None = None
        self.totals = SessionTotals()
        self.queue: list[str] = []
        self.turn: asyncio.Task[None] | None = None
        self.question: tuple[str, asyncio.Future[str]] | None = None
        self.exiting = False
        self.files: list[str] = []
        self._ready: asyncio.Task[None] | None = None
        self._exit_armed_until = 0.0
        self._tasks: set[asyncio.Future[None]] = set()  # commands and shell commands under way
        self.session: PromptSession[str] | None = None
        self._asking = asyncio.Lock()

    # -- start-up ----------------------------------------------------------------------------------
    def _make_console(self) -> Console:
        from rich.console import Console

        if self.io.console is not None:
            return self.io.console
        return Console(file=sys.stdout, highlight=False, force_terminal=sys.stdout.isatty() or None)

    def _load(self) -> None:
        """Everything the first turn needs; runs on a worker thread while the prompt is up."""
        if self.provider_factory is None:
            from piton.core.providers.anthropic import prewarm

            prewarm()  # the SDK import (about a second) overlaps with the rest of loading
        from piton.cli.commands import Commands
        from piton.cli.render import Renderer
        from piton.runtime import build_runtime

        self.console = self._make_console()
        self.renderer = Renderer(self.console, verbose=self.verbose)
        provider = self.provider_factory() if self.provider_factory else _anthropic()
        self.runtime = build_runtime(self.options, provider, tools=self.tools, approver=self._approve)
        self.commands = Commands(self)
        self.files = _project_files(self.options.cwd)

    async def _start(self) -> None:
        try:
            await asyncio.to_thread(self._load)
        except Exception as e:  # a session that cannot open, bad options: say so, keep the prompt
            self._print_error(f"piton: {e}")
            raise
        assert self.runtime is not None
        for notice in self.runtime.notices:
            self.print_line(f"piton: {notice}", "yellow")
        with contextlib.suppress(Exception):
            self.runtime.agent.provider.check()

    async def ready(self) -> Runtime:
        assert self._ready is not None
        await asyncio.shield(self._ready)
        assert self.runtime is not None
        return self.runtime

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self) -> int:
        history = FileHistory(str(self.io.history_file)) if self.io.history_file else InMemoryHistory()
        from piton.cli.completion import PitonCompleter

        self.session = PromptSession(
            message=self._message,
            bottom_toolbar=self._toolbar,
            key_bindings=self._bindings(),
            history=history,
            completer=PitonCompleter(self),
            complete_while_typing=True,
            style=STYLE,
            refresh_interval=0.08,  # the live area redraws at most ~12 times a second
            erase_when_done=True,  # the scrollback is ours: on_input echoes what was typed
            input=self.io.input,
            output=self.io.output,
        )
        # Esc must interrupt at once. Alt+Enter arrives as one read, so a short wait still tells them apart.
        self.session.app.ttimeoutlen = 0.05
        self.session.app.timeoutlen = 0.1
        self._ready = asyncio.ensure_future(self._start())
        if self.initial_prompt:
            self.submit(self.initial_prompt)
        while not self.exiting:
            try:
                text = await self.session.prompt_async()
            except EOFError:
                break
            except KeyboardInterrupt:
                continue
            await self.on_input(text)
        await self._shutdown()
        return 0

    async def _shutdown(self) -> None:
        for task in [self.turn, *self._tasks]:
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._ready is not None and self._ready.done() and not self._ready.exception() and self.runtime:
            self.runtime.log.close()
            with contextlib.suppress(Exception):
                await self.runtime.agent.provider.aclose()
            self.print_line(f"Resume this session with: piton --resume {self.runtime.log.session_id}", "dim")

    async def on_input(self, text: str) -> None:
        if self.question is not None:
            question, answer = self.question
            self.question = None
            self.print_line(f"{question}{text}", "yellow")
            if not answer.done():
                answer.set_result(text)
            return
        text = text.strip()
        if not text:
            return
        self.print_line(f"❯ {text}", "bold cyan" if not self.busy else "dim")
        if text.startswith("/"):
            self._background(self._command(text))  # a command may ask a question: the prompt must stay up
        elif text.startswith("!"):
            self._background(self._shell(text[1:].strip()))
        else:
            self.send(text)

    async def _command(self, text: str) -> None:
        await self.ready()
        assert self.commands is not None
        await self.commands.run(text)

    def _background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            self._print_error(f"piton: {type(error).__name__}: {error}")

    @property
    def busy(self) -> bool:
        return self.turn is not None and not self.turn.done()

    def submit(self, text: str) -> None:
        self.turn = asyncio.ensure_future(self._turn(text))

    def send(self, text: str) -> None:
        """A message for the model: now, or when the turn under way ends."""
        if self.busy:
            self.queue.append(text)
            self.print_line("  (queued: it goes to Piton when this turn ends)", "dim")
        else:
            self.submit(text)

    def interrupt(self) -> bool:
        if self.busy:
            assert self.turn is not None
            self.turn.cancel()
            return True
        return False

    async def _turn(self, text: str) -> None:
        runtime = await self.ready()
        assert self.renderer is not None
        content = self._with_attachments(runtime, text)
        skill = runtime.catalog.invocation(text) if runtime.catalog is not None else None
        self.renderer.begin()
        try:
            async for event in runtime.agent.run(content, skill=skill):
                self.renderer.handle(event)
                self._count(event)
        except asyncio.CancelledError:
            self.renderer.interrupted()
            self.restore_queue()
            return
        except Exception as e:
            self.renderer.end()
            self._print_error(f"piton: internal error: {type(e).__name__}: {e}")
            return
        self.renderer.end()
        self.send_queued()

    def send_queued(self) -> None:
        """What was typed during a turn goes next: plain messages together, a /skill line on its own
        (its arguments are its own)."""
        if not self.queue:
            return
        if self.queue[0].startswith("/"):
            text = self.queue.pop(0)
        else:
            plain = next((i for i, t in enumerate(self.queue) if t.startswith("/")), len(self.queue))
            text = "\n\n".join(self.queue[:plain])
            del self.queue[:plain]
        self.submit(text)

    def restore_queue(self) -> None:
        """After an interrupt, what was queued comes back to the prompt, unsent."""
        if self.queue and self.session is not None:
            self.session.default_buffer.text = "\n\n".join(self.queue)
        self.queue.clear()

    def _count(self, event: Any) -> None:
        from piton.core.conversation.events import Compacted, MessageDone, SubagentEvent

        if isinstance(event, SubagentEvent):  # what subagents spend is the session's cost too
            event = event.event
        if isinstance(event, MessageDone | Compacted) and event.usage is not None:
            model = event.model or (self.runtime.agent.config.model if self.runtime else "")
            self.totals.by_model[model] = self.totals.by_model.get(model, type(event.usage)()) + event.usage
            self.totals.cost_usd += event.usage.cost_usd(model)

    # -- input helpers -----------------------------------------------------------------------------
    def _with_attachments(self, runtime: Runtime, text: str) -> Any:
        """The prompt, with the content of each `@path` it mentions attached (and counted as read)."""
        from piton.cli.attachments import attach

        return attach(runtime.agent.context, text, _MENTION.findall(text), self.print_line)

    async def _shell(self, command: str) -> None:
        """`!cmd`: run it in the sandbox now, show the output, and let the model see it next turn."""
        if not command:
            return
        runtime = await self.ready()
        from piton.builtin_tools.bash import Bash, BashInput

        result = await Bash().run(BashInput(command=command), runtime.agent.context)
        output = str(result.content)
        self.print_line(output, "red" if result.is_error else "")
        if runtime.agent.capper is not None:
            output = str(runtime.agent.capper.apply("Bash", "user-shell", result).content)
        runtime.agent.add_note(
            "The user ran a shell command:\n"
            f"<bash-input>{command}</bash-input>\n<bash-output>{output}</bash-output>"
        )

    async def ask(self, question: str) -> str:
        """Show `question` in place of the prompt and wait for the user's answer line."""
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.question = (question, answer)
        if self.session is not None:
            self.session.app.invalidate()
        try:
            return await answer
        finally:
            self.question = None

    async def _approve(self, request: Any) -> Any:
        from piton.cli.approval import approve

        assert self.runtime is not None and self.console is not None
        async with self._asking:  # subagents working side by side ask one question at a time
            return await approve(request, self.console, self.ask, self.runtime.agent.gate)

    # -- drawing -----------------------------------------------------------------------------------
    def print_line(self, text: str, style: str = "") -> None:
        if self.console is not None:
            from rich.text import Text

            self.console.print(Text(text, style=style))
        else:
            print(text)

    def _print_error(self, text: str) -> None:
        self.print_line(text, "bold red")

    def _message(self) -> FormattedText:
        parts: list[tuple[str, str]] = list(self.renderer.live()) if self.renderer is not None else []
        if self.question is not None:
            parts.append(("class:question", self.question[0]))
            return FormattedText(parts)
        parts.append(("class:prompt", "❯ "))
        return FormattedText(parts)

    def _toolbar(self) -> FormattedText:
        if time.monotonic() < self._exit_armed_until:
            return FormattedText([("", " Press Ctrl-C again to exit")])
        if self.runtime is None:
            return FormattedText([("", " starting…")])
        from piton.cli.status import status_line

        return FormattedText([("", status_line(self))])

    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("escape", eager=False)
        def _(event: KeyPressEvent) -> None:
            if self.question is not None:
                self._answer_now(event, "no")
            else:
                self.interrupt()

        @kb.add("c-c")
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if self.question is not None:
                self._answer_now(event, "no")
            elif self.interrupt():
                return
            elif buffer.text:
                buffer.reset()
            elif time.monotonic() < self._exit_armed_until:
                self.exiting = True
                event.app.exit(exception=EOFError())
            else:
                self._exit_armed_until = time.monotonic() + _EXIT_WINDOW_S

        @kb.add("c-d")
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if buffer.text:
                buffer.delete()
            else:
                self.exiting = True
                event.app.exit(exception=EOFError())

        @kb.add("enter")
        def _(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if buffer.text.endswith("\\") and buffer.cursor_position == len(buffer.text):
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
            else:
                buffer.validate_and_handle()

        @kb.add("escape", "enter")
        @kb.add("c-j")
        def _(event: KeyPressEvent) -> None:
            event.app.current_buffer.insert_text("\n")

        @kb.add("s-tab")
        def _(event: KeyPressEvent) -> None:
            if self.runtime is not None and self.runtime.agent.gate is not None:
                permissions = self.runtime.agent.gate.permissions
                current = permissions.mode if permissions.mode in _MODES else _MODES[-1]
                permissions.mode = _MODES[(_MODES.index(current) + 1) % len(_MODES)]  # type: ignore[assignment]

        @kb.add("c-o")
        def _(event: KeyPressEvent) -> None:
            if self.renderer is not None:
                self.renderer.verbose = not self.renderer.verbose

        return kb

    def _answer_now(self, event: KeyPressEvent, answer: str) -> None:
        event.app.current_buffer.text = answer
        event.app.current_buffer.validate_and_handle()


def _anthropic() -> Provider:
    from piton.core.providers.anthropic import AnthropicProvider

    return AnthropicProvider()


def _project_files(cwd: Path, limit: int = 20_000) -> list[str]:
    """Paths for @-completion: what ripgrep lists (gitignore-aware), relative to the project."""
    import subprocess

    from piton.builtin_tools.ripgrep import RipgrepMissing, rg_path

    try:
        done = subprocess.run(
            [rg_path(), "--files", "--hidden", "--glob=!.git"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, RipgrepMissing):
        return []
    return sorted(done.stdout.splitlines()[:limit])


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
