"""The REPL's view: the prompt_toolkit session, the live area above the prompt and the toolbar below it,
the spinner, the window in which a second Ctrl-C exits, and the console the scrollback is printed on.

The screen is redrawn when something changed, never on a timer while idle. Only prompt_toolkit is
imported here at start-up (Rich when the console is made): the REPL draws its prompt before the agent's
modules have loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import ANSI, FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from piton.core.clip import one_line
from piton.core.records import record

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from prompt_toolkit.key_binding import KeyBindings
    from rich.console import Console

    from piton.cli.questions import Question
    from piton.cli.render import Renderer
    from piton.cli.status import StatusCommand
    from piton.cli.turns import SessionTotals
    from piton.runtime import Runtime

EXIT_WINDOW_S = 2.0  # a second Ctrl-C this soon after the first exits
QUEUED = "  (queued: goes when this turn ends)"  # after a message waiting above the prompt
SPINNER_S = 0.1  # the spinner's frame time, while the model works (and only then)
REDRAW_S = 0.05  # the least time between two redraws, however fast the stream
TYPED_AHEAD_S = 0.2  # keys read this soon after the first prompt started were typed before it
STYLE = Style.from_dict(
    {
        "prompt": "bold ansicyan",
        "starting": "ansibrightblack",
        "live": "",
        "thinking": "italic ansibrightblack",
        "spinner": "ansiyellow",
        "question": "bold ansiyellow",
        "bottom-toolbar": "noreverse ansibrightblack",
        "vi-mode": "bold",
        "queued": "ansibrightblack",
    }
)


@record
class ReplIO:
    """Where the REPL reads and draws; the defaults are the terminal. Tests pass pipes and a record."""

    input: Input | None = None
    output: Output | None = None
    console: Console | None = None
    history_file: Path | None = None  # the prompt's history, kept across sessions; else in memory


class Shown(Protocol):
    """What the view shows of the REPL."""

    @property
    def renderer(self) -> Renderer | None:
        """What streams above the prompt, once the session has loaded."""
        ...

    @property
    def question(self) -> Question | None:
        """The question standing in place of the prompt, if any."""
        ...

    @property
    def busy(self) -> bool:
        """Whether work is under way: the spinner turns while it is."""
        ...

    @property
    def runtime(self) -> Runtime | None:
        """The session, once it has loaded."""
        ...

    @property
    def starting(self) -> bool:
        """Whether the first session is still starting (a message sent now would wait for it)."""
        ...

    @property
    def status(self) -> StatusCommand | None:
        """The settings' statusLine command, whose text replaces Piton's own status line."""
        ...

    @property
    def totals(self) -> SessionTotals: ...

    @property
    def queue(self) -> list[str]:
        """Messages typed during the work, waiting for it to end."""
        ...


class PromptView:
    """The prompt and what is drawn around it; `session` exists once `open` has run."""

    def __init__(self, shown: Shown) -> None:
        self.shown = shown
        self.session: PromptSession[str] | None = None
        self.ticker: asyncio.Task[None] | None = None  # turns the spinner while work is under way
        self._exit_armed_until = 0.0
        self._prompt_since = float("-inf")  # when the first prompt started, with keys typed ahead

    def open(self, io: ReplIO, key_bindings: KeyBindings, completer: Completer) -> PromptSession[str]:
        """Make the prompt (drawn by the caller's `prompt_async`)."""
        history = FileHistory(str(io.history_file)) if io.history_file else InMemoryHistory()
        self.session = PromptSession(
            message=self.message,
            bottom_toolbar=self.toolbar,
            key_bindings=key_bindings,
            history=history,
            completer=completer,
            complete_while_typing=True,
            style=STYLE,
            erase_when_done=True,  # the scrollback is ours: the REPL echoes what was typed
            input=io.input,
            output=io.output,
        )
        app = self.session.app
        # Esc must interrupt at once. Alt+Enter arrives as one read, so a short wait still tells them apart.
        app.ttimeoutlen = 0.05
        app.timeoutlen = 0.1
        app.min_redraw_interval = REDRAW_S  # `redraw` sets it again: bounded while busy, none while idle
        app.terminal_size_polling_interval = None  # SIGWINCH tells of a resize: no waking twice a second
        return self.session

    def note_typed_ahead(self) -> None:
        """Just before the first prompt: keys waiting to be read now were typed while Piton started."""
        if self.session is not None and _pending_input(self.session.app.input):
            self._prompt_since = time.monotonic()

    def typed_ahead(self) -> bool:
        """Whether keys now read were typed before the first prompt was up: the terminal, not yet in
        raw mode, turned their Enter into a line feed, which must still send rather than add a line."""
        return time.monotonic() - self._prompt_since < TYPED_AHEAD_S

    def message(self) -> FormattedText:
        """The live area, then the prompt (or the question that stands in its place)."""
        renderer = self.shown.renderer
        parts: list[tuple[str, str]] = list(renderer.live()) if renderer is not None else []
        room = max(self.columns() - 1 - len(QUEUED) - 2, 10)  # after "❯ ", before the note
        for text in self.shown.queue:  # until it goes (or Esc puts it back in the prompt)
            line = text.split("\n", 1)[0] + (" …" if "\n" in text else "")
            line = one_line(line, room)
            parts.append(("class:queued", f"❯ {line}{QUEUED}\n"))
        question = self.shown.question
        if question is not None:
            parts.append(("class:question", question.text))
            return FormattedText(parts)
        if self.shown.starting:
            # keys may be typed ahead, but the prompt's mark waits until a message would go at once
            parts.append(("class:starting", "… "))
        else:
            parts.append(("class:prompt", "❯ "))
        return FormattedText(parts)

    def toolbar(self) -> FormattedText:
        """The line below the prompt: the statusLine command's text, else Piton's own status line."""
        if self.exit_armed:
            return FormattedText([("", " Press Ctrl-C again to exit")])
        runtime = self.shown.runtime
        if runtime is None:
            return FormattedText([("", " starting…")])
        status = self.shown.status
        if status is not None and status.text is not None:
            return FormattedText(ANSI(" " + status.text).__pt_formatted_text__())
        from piton.cli.status import status_line

        vi = self.vi_mode()
        mark = f" -- {vi} --" if vi else ""
        line = status_line(runtime, self.shown.totals, len(self.shown.queue), self.columns() - len(mark))
        return FormattedText([("class:vi-mode", mark), ("", line)])

    def vi_mode(self) -> str | None:
        """With vi keys on, the mode the prompt is in (INSERT, NORMAL, REPLACE), as vim shows it."""
        from prompt_toolkit.enums import EditingMode
        from prompt_toolkit.key_binding.vi_state import InputMode

        if self.session is None or self.session.app.editing_mode != EditingMode.VI:
            return None
        mode = self.session.app.vi_state.input_mode
        if mode in (InputMode.REPLACE, InputMode.REPLACE_SINGLE):
            return "REPLACE"
        return "NORMAL" if mode == InputMode.NAVIGATION else "INSERT"

    def columns(self) -> int:
        """The terminal's width, asked now (it follows resizes)."""
        return self.session.app.output.get_size().columns if self.session is not None else 200

    def redraw(self) -> None:
        """Something on screen changed: redraw once, and keep the spinner turning while work is
        under way (only then: an idle prompt costs nothing)."""
        if self.session is None:
            return
        app = self.session.app
        # a stream invalidates often and is drawn at a bounded rate; a change while idle (the session
        # ready, a line printed above) is drawn at once, not up to a frame late
        app.min_redraw_interval = REDRAW_S if self.shown.busy else 0.0
        app.invalidate()
        if self.shown.busy and (self.ticker is None or self.ticker.done()):
            self.ticker = asyncio.ensure_future(self._spin())

    async def _spin(self) -> None:
        while self.shown.busy and self.session is not None:
            self.session.app.invalidate()
            await asyncio.sleep(SPINNER_S)
        if self.session is not None:
            self.session.app.invalidate()

    @property
    def exit_armed(self) -> bool:
        """Whether a Ctrl-C now exits (one came on an empty prompt less than `EXIT_WINDOW_S` ago)."""
        return time.monotonic() < self._exit_armed_until

    def arm_exit(self) -> None:
        """A Ctrl-C on an empty prompt: the toolbar says a second one exits, for a while."""
        self._exit_armed_until = time.monotonic() + EXIT_WINDOW_S
        self.redraw()
        asyncio.get_running_loop().call_later(EXIT_WINDOW_S + 0.05, self.redraw)

    def raw_between_prompts(self) -> contextlib.AbstractContextManager[None]:
        """The terminal raw from the first prompt to the last, not only while one is up: between two, a
        cooked terminal echoed keys typed in that moment and turned their Enter into a newline
        (Ctrl-J), which the next prompt inserted rather than sent. Programs run in the terminal
        (`!cmd`, the pager) still get it cooked."""
        assert self.session is not None
        return self.session.app.input.raw_mode()

    def close(self) -> bool:
        """End the prompt, as Ctrl-D does; False when it is not up (yet)."""
        if self.session is not None and self.session.app.is_running:
            with contextlib.suppress(Exception):  # one already answered cannot be ended: it returns anyway
                self.session.app.exit(exception=EOFError())
            return True
        return False

    async def close_when_up(self) -> None:
        """End the prompt as soon as it is up (a start-up may fail before it was first drawn)."""
        for _ in range(250):
            if self.close():
                return
            await asyncio.sleep(0.02)

    async def run_program(self, argv: list[str]) -> int:
        """Run a program in the terminal (an editor), the prompt put aside meanwhile; its exit status."""
        import subprocess

        from prompt_toolkit.application import run_in_terminal

        def run() -> int:
            return subprocess.run(argv, check=False).returncode

        if self.session is None:
            return run()
        if self.session.app.is_running:
            return await run_in_terminal(run)  # the prompt set aside, the terminal cooked for it
        with self.session.app.input.cooked_mode():  # between prompts the terminal is raw (see below)
            return run()

    def edit(self, text: str) -> None:
        """Put `text` into the input, the cursor at its end."""
        if self.session is not None:
            self.session.default_buffer.text = text
            self.session.default_buffer.cursor_position = len(text)

    def toggle_vi(self) -> bool:
        """Switch between vi and emacs keys; whether vi keys are on now."""
        from prompt_toolkit.enums import EditingMode

        if self.session is None:
            return False
        app = self.session.app
        app.editing_mode = EditingMode.EMACS if app.editing_mode == EditingMode.VI else EditingMode.VI
        return app.editing_mode == EditingMode.VI


def terminal_console() -> Console:
    """A Rich console on the terminal (the REPL's, unless a test passes its own)."""
    from rich.console import Console

    # Rich would take an exported COLUMNS (or LINES) as the width for good: the terminal's own
    # size, asked at each print, follows its resizes
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return Console(
        file=sys.stdout, highlight=False, force_terminal=sys.stdout.isatty() or None, _environ=environ
    )


def history_path() -> Path:
    """Where the prompt's history is kept: the user's state, never the project."""
    from piton.core.conversation.state_dir import private_state_dir  # not session's: no pydantic yet

    path = private_state_dir() / "repl_history"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


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


# how long output written above the prompt may wait to be drawn with what follows it: prompt_toolkit's
# own 0.2 s held an answer back that long after the banner or the echoed message; the live area, not
# these writes, carries what streams, so they are few and may go at once
_WRITE_BATCH_S = 0.01


@contextlib.contextmanager
def output_above_prompt() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` written above the prompt while the REPL runs (escape sequences
    kept: Rich draws with them)."""
    from prompt_toolkit.patch_stdout import StdoutProxy

    with StdoutProxy(sleep_between_writes=_WRITE_BATCH_S, raw=True) as proxy:
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = cast(TextIO, proxy)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved
