"""The real `piton` in a pseudo-terminal, as tests drive it: a VT100 screen fed what it writes,
answering what it asks of its terminal as a terminal does."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pexpect
import pyte

from tests.helpers import CEILING_S

PITON = str(Path(sys.executable).with_name("piton"))
PROMPT = "❯ "
SPINNER = "esc to interrupt"
_ANSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def expect_text(child: pexpect.spawn[str], text: str) -> None:
    """Wait for `text` on the screen, styled or not (ANSI sequences may stand between characters)."""
    child.expect(_ANSI.join(re.escape(ch) for ch in text))


def spawn(project: Path, *args: str, **extra_env: str) -> pexpect.spawn[str]:
    """`piton ARGS` in a terminal of 40 rows and 100 columns, once its prompt is drawn. The terminal
    answers where its cursor is, as a real one does: unanswered, prompt_toolkit waits two seconds."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40", **extra_env}
    child = pexpect.spawn(
        PITON,
        list(args),
        cwd=str(project),
        env=env,
        encoding="utf-8",
        timeout=CEILING_S,
        dimensions=(40, 100),
    )
    answering(child, 40, 100)
    child.expect_exact(PROMPT)
    return child


def answering(child: pexpect.spawn[str], rows: int = 24, columns: int = 80) -> Terminal:
    """A terminal of that size behind `child`'s reads (`expect`'s too), answering what the program asks."""
    terminal = Terminal(child, rows, columns)
    child.logfile_read = terminal
    return terminal


class Terminal(pyte.HistoryScreen):
    """A screen that keeps what scrolls off its top, as a terminal's scrollback does, and answers the
    cursor position reports prompt_toolkit asks for. It is fed what the child writes either by
    `pump`, or, as the child's `logfile_read`, by every read of pexpect's own `expect`."""

    def __init__(self, child: pexpect.spawn[str], rows: int, columns: int) -> None:
        super().__init__(columns, rows, history=10_000)
        self.child = child
        self.stream = pyte.Stream(self)
        self.position_requests = 0  # the cursor position reports asked for so far

    def write_process_input(self, data: str) -> None:
        self.child.send(data)

    def write(self, data: str) -> None:  # pexpect's `logfile_read`
        self.stream.feed(data)

    def flush(self) -> None:
        pass

    def report_device_status(self, mode: int) -> None:
        if mode == 6:  # where the cursor is: prompt_toolkit asks as it draws anew (a start, a resize)
            self.position_requests += 1
        super().report_device_status(mode)

    def resize_both(self, rows: int, columns: int) -> None:
        # The pty and the screen change together, as a terminal window does: SIGWINCH follows.
        self.resize(rows, columns)
        self.child.setwinsize(rows, columns)

    def resize_and_redraw(self, rows: int, columns: int, shown: str) -> None:
        """Resize, then feed the screen until the program has drawn its live area anew at the new
        size (it erases it and asks where the cursor is first), `shown` in it again."""
        asked = self.position_requests
        self.resize_both(rows, columns)
        self.pump(
            lambda: self.position_requests > asked and self.shows(shown), f"redraw at {columns} columns"
        )

    def rows(self) -> list[str]:
        """Every row, scrollback first, without trailing blanks."""
        scrolled = ["".join(line[x].data for x in sorted(line)).rstrip() for line in self.history.top]
        return scrolled + [row.rstrip() for row in self.display]

    def dump(self) -> str:
        return "\n".join(f"{i:4d}|{row}" for i, row in enumerate(self.rows()))

    def pump(self, until: Callable[[], bool], what: str, timeout: float = CEILING_S) -> None:
        """Feed the screen what the child writes until `until()` holds for it."""
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout:.0f} s; the screen:\n{self.dump()}")
            try:
                data = self.child.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF as e:
                raise AssertionError(f"piton exited before {what}; the screen:\n{self.dump()}") from e
            if self.child.logfile_read is not self:  # else pexpect has fed it already
                self.stream.feed(data)

    def shows(self, text: str) -> bool:
        return any(text in row for row in self.display)

    def idle(self) -> bool:
        """The prompt is drawn without the spinner right above it, where the live area keeps it;
        a spinner left anywhere else is for the assertions to find, not a reason to wait."""
        rows = [row.rstrip() for row in self.display]
        return any(row == PROMPT.rstrip() and SPINNER not in above for above, row in pairwise(rows))


def watched(project: Path, rows: int = 40, columns: int = 120) -> tuple[pexpect.spawn[str], Terminal]:
    """`piton` in a terminal whose screen a test reads (`Terminal`), once its welcome is drawn."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    child = pexpect.spawn(
        PITON,
        cwd=str(project),
        env={**env, "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=CEILING_S,
        dimensions=(rows, columns),
    )
    term = Terminal(child, rows, columns)
    term.pump(lambda: term.shows("/help"), "welcome")
    return child, term
