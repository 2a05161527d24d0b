"""Text cut to fit one line for people: at a word where one is near, and always marked with `…`."""

from __future__ import annotations

_WORD_REACH = 3  # back off to a space in the last third of the room, no further


def one_line(text: str, width: int) -> str:
    """`text` on one line (runs of whitespace made one space) in at most `width` characters."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: max(width - 1, 0)]
    space = cut.rfind(" ")
    if space >= width - width // _WORD_REACH:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"
