"""The model's thinking in the terminal: drawn live while it streams, then held as a collapsed
"✻ Thought for 3s" until the reply's first words reach the scrollback.

Holding it matters when a reply is cut off and asked for again: a thought whose answer never
reached the scrollback is dropped with it, so a retried reply does not leave two thoughts behind.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import field

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from piton.cli.render_tools import CONTROL
from piton.core.records import record

THINKING_LINES = 3  # thinking collapses to its last lines once the answer starts
_WRAP_KEEP, _WRAP_STEP = 8192, 4096  # of a longer line, the live area wraps only the end
LiveText = list[tuple[str, str]]  # (style, text) pairs, as prompt_toolkit formats them


def last_rows(text: str, width: int, rows: int) -> list[str]:
    """The last `rows` screen rows of `text` wrapped at `width` columns, as the unfinished tail of a
    stream grows: only rows near the end are wrapped, and a very long line is cut at a point that
    stays put while it grows, so the rows above the newest one do not jump between redraws."""
    out: list[str] = []
    for line in reversed(text.split("\n")):
        if len(line) > _WRAP_KEEP:
            line = line[(len(line) - _WRAP_KEEP) // _WRAP_STEP * _WRAP_STEP :]
        wrapped = textwrap.wrap(
            line, width, replace_whitespace=False, drop_whitespace=True, break_on_hyphens=False
        )
        out = (wrapped or [""]) + out
        if len(out) >= rows:
            break
    return out[-rows:]


@record(slots=False)
class Thinking:
    """One reply's thinking: `streaming` while it comes, then `held` until `print` or `drop`."""

    streaming: list[str] = field(default_factory=list)
    held: tuple[str, list[str]] | None = None  # the header and the lines it keeps
    _started: float = 0.0

    def add(self, text: str) -> None:
        if not self.streaming:
            self._started = time.monotonic()
            self.streaming = [""]
        lines = text.split("\n")
        self.streaming[-1] += lines[0]
        self.streaming += lines[1:]

    def close(self, verbose: bool) -> None:
        """The thinking is over: it collapses to its last lines (all of them if `verbose`) and waits
        to be printed."""
        if not self.streaming:
            return
        lines = [CONTROL.sub("", line) for line in self.streaming if line.strip()]
        shown = lines if verbose else lines[-THINKING_LINES:]
        header = f"✻ Thought for {time.monotonic() - self._started:.0f}s"
        if len(shown) < len(lines):
            header += f" ({len(lines) - len(shown)} earlier lines hidden; Ctrl-O shows thinking in full)"
        self.held, self.streaming = (header, shown), []

    def print(self, console: Console, verbose: bool) -> None:
        """Into the scrollback, before what followed it there."""
        self.close(verbose)
        if self.held is None:
            return
        header, shown = self.held
        self.held = None
        console.print(Text(header, style="dim"))
        body = Text("\n".join(shown), style="dim italic")
        console.print(Padding(body, (0, 0, 0, 2)))  # a long line wraps under itself

    def drop(self) -> None:
        self.streaming, self.held = [], None

    def live(self, width: int) -> LiveText:
        if self.held is not None:
            header, shown = self.held
            rows = [row for line in shown for row in textwrap.wrap(line, width - 2) or [""]]
            return [("class:thinking", f"{header}\n"), *(("class:thinking", f"  {r}\n") for r in rows)]
        thinking = CONTROL.sub("", "\n".join(line for line in self.streaming if line.strip()))
        if not thinking:
            return []
        return [("class:thinking", f"  {row}\n") for row in last_rows(thinking, width - 2, THINKING_LINES)]
