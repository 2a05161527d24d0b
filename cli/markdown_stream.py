"""Splitting streamed Markdown into finished blocks and an unfinished tail, in linear time.

A block is finished at a blank line outside a code fence, at the end of a fence, or at a heading's
end. Finished blocks are rendered once, to the scrollback; only the tail is redrawn while it grows,
so the cost of showing an answer stays proportional to its length.
"""

from __future__ import annotations


def _fence_opening(line: str) -> str | None:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return None
    for char in "`~":
        if stripped.startswith(char * 3):
            run = len(stripped) - len(stripped.lstrip(char))
            return char * run
    return None


class MarkdownStream:
    def __init__(self) -> None:
        self._block: list[str] = []  # complete lines of the block being built
        self._partial = ""  # the line being streamed
        self._fence: str | None = None  # the open fence's marker, inside a code block

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the blocks it finished."""
        if "\n" not in text:
            self._partial += text
            return []
        *lines, self._partial = (self._partial + text).split("\n")
        finished: list[str] = []
        for line in lines:
            finished += self._line(line)
        return finished

    def _emit(self) -> list[str]:
        block, self._block = self._block, []
        return ["\n".join(block)] if any(line.strip() for line in block) else []

    def _line(self, line: str) -> list[str]:
        if self._fence is not None:
            self._block.append(line)
            stripped = line.strip()
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
                self._fence = None
                return self._emit()
            return []
        fence = _fence_opening(line)
        if fence is not None:
            finished = self._emit()
            self._fence = fence
            self._block.append(line)
            return finished
        if not line.strip():
            return self._emit()
        if line.lstrip().startswith("#"):
            finished = self._emit()
            self._block.append(line)
            return finished + self._emit()
        self._block.append(line)
        return []

    @property
    def open_code(self) -> tuple[str, list[str]] | None:
        """Inside a code fence: its opening line and the body's complete lines so far."""
        if self._fence is None:
            return None
        return self._block[0], self._block[1:]

    @property
    def partial(self) -> str:
        """The line being streamed."""
        return self._partial

    @property
    def tail(self) -> str:
        """What has streamed but is not yet a finished block."""
        return "\n".join([*self._block, self._partial]) if self._block else self._partial

    def flush(self) -> list[str]:
        """The reply is over: whatever is left is a block."""
        if self._partial:
            self._block.append(self._partial)
            self._partial = ""
        self._fence = None
        return self._emit()
