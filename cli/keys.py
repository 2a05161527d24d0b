"""The keys of the prompt, beyond prompt_toolkit's editing keys: Esc and Ctrl-C stop the work (or
dismiss a question), Ctrl-D exits, Enter sends (or continues a line ending in a backslash),
Alt+Enter and Ctrl-J add a line, Shift+Tab cycles the permission mode, Ctrl-O shows thinking, Ctrl-V
pastes an image from the clipboard, Esc Esc on
an empty prompt opens /rewind (in vi mode, an idle Esc is vi's)."""

from __future__ import annotations

import time
from typing import Protocol

from prompt_toolkit.application.current import get_app
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.filters import Condition, vi_navigation_mode
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

_DOUBLE_ESCAPE_S = 0.8  # two Esc presses this close on an empty prompt open /rewind


class Keyed(Protocol):
    """What the keys act on (the REPL)."""

    @property
    def asking(self) -> bool:
        """Whether a question stands in place of the prompt."""
        ...

    def interrupt(self) -> bool: ...

    def rewind(self) -> None: ...

    def answer(self, buffer: Buffer) -> None: ...

    def dismiss(self, buffer: Buffer) -> None: ...

    def exit(self) -> None: ...

    def ctrl_c(self, buffer: Buffer) -> None: ...

    def cycle_mode(self) -> None: ...

    def toggle_thinking(self) -> None: ...

    def paste_image(self, buffer: Buffer) -> None: ...

    def paste_text(self, data: str) -> str:
        """What the terminal's paste of `data` puts in the prompt (a long text: its marker)."""
        ...

    def typed_ahead(self) -> bool:
        """Whether the keys being read were typed before the first prompt was up."""
        ...

    @property
    def busy(self) -> bool:
        """Whether work (a turn, a `!cmd`) is under way."""
        ...


def bindings(repl: Keyed) -> KeyBindings:
    """The prompt's keys beyond prompt_toolkit's editing keys, acting on `repl`."""
    kb = KeyBindings()
    _stopping_keys(kb, repl)
    _line_keys(kb, repl)
    _mode_keys(kb, repl)
    return kb


def _stopping_keys(kb: KeyBindings, repl: Keyed) -> None:
    """Esc, Ctrl-C and Ctrl-D: stop the work, dismiss a question, rewind, clear the line or exit."""
    last_escape = [0.0]

    # in vi mode an idle Esc is vi's (to normal mode); work and questions still stop at Esc
    ours = Condition(lambda: get_app().editing_mode != EditingMode.VI or repl.asking or repl.busy)

    @kb.add("escape", eager=False, filter=ours)
    def _(event: KeyPressEvent) -> None:
        if repl.asking:
            repl.dismiss(event.app.current_buffer)
        elif not repl.interrupt() and not event.app.current_buffer.text:
            now = time.monotonic()
            if now - last_escape[0] < _DOUBLE_ESCAPE_S:
                last_escape[0] = 0.0
                repl.rewind()
            else:
                last_escape[0] = now

    @kb.add("c-c")
    def _(event: KeyPressEvent) -> None:
        if repl.asking:
            repl.dismiss(event.app.current_buffer)
        else:
            repl.ctrl_c(event.app.current_buffer)

    @kb.add("c-d")
    def _(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.delete()
        else:
            repl.exit()


def _line_keys(kb: KeyBindings, repl: Keyed) -> None:
    """Enter sends (or answers a question, or continues a line ending in a backslash); Alt+Enter and
    Ctrl-J add a line."""

    @kb.add("enter")
    def _(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if repl.asking:  # an answer, not a message: it never reaches the prompt history
            repl.answer(buffer)
        elif buffer.text.endswith("\\") and buffer.cursor_position == len(buffer.text):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _(event: KeyPressEvent) -> None:
        event.app.current_buffer.insert_text("\n")

    @kb.add("c-j")
    def _(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if repl.typed_ahead() and not repl.asking:  # an Enter typed before the prompt was up
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")


def _mode_keys(kb: KeyBindings, repl: Keyed) -> None:
    """Shift+Tab cycles the permission mode, Ctrl-O shows thinking, Ctrl-V pastes an image; a long
    text pasted from the terminal stands in the prompt as its marker."""

    @kb.add("s-tab")
    def _(event: KeyPressEvent) -> None:
        repl.cycle_mode()

    @kb.add("c-o")
    def _(event: KeyPressEvent) -> None:
        repl.toggle_thinking()

    # as in Claude Code (text still pastes with the terminal's own paste); vi's normal mode keeps
    # Ctrl-V for a block selection
    @kb.add(Keys.BracketedPaste)
    def _(event: KeyPressEvent) -> None:
        data = event.data.replace("\r\n", "\n").replace("\r", "\n")  # as prompt_toolkit's own paste
        event.current_buffer.insert_text(data if repl.asking else repl.paste_text(data))

    @kb.add("c-v", filter=~vi_navigation_mode)
    def _(event: KeyPressEvent) -> None:
        if not repl.asking:
            repl.paste_image(event.app.current_buffer)
