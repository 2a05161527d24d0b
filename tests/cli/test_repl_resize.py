"""Resizing the terminal while an answer streams: what the screen shows afterwards, through a VT100
emulator fed everything the real `piton` writes to its pseudo-terminal."""

from __future__ import annotations

import os
import re
from collections import Counter
from functools import partial
from pathlib import Path

import pexpect
import pytest

from piton.testing.script import reply
from tests.cli.terminal import PITON, PROMPT, SPINNER, Terminal
from tests.fakes.fake_api import FakeAnthropicAPI, Hold
from tests.helpers import CEILING_S

ROWS, COLUMNS = 40, 100
_TOKEN = re.compile(r"\bp\d\dw\d\d\d\b")  # fixed width: a word cut at the screen's edge never matches


def paragraph(n: int, words: int = 80) -> str:
    return " ".join(f"p{n:02d}w{w:03d}" for w in range(words))


PARAGRAPHS = [paragraph(n) for n in range(6)]
LAST_WORD = PARAGRAPHS[-1].split()[-1]
QUESTION = "tell me a story"


@pytest.mark.parametrize("exported", [False, True], ids=["size-from-terminal", "COLUMNS-exported"])
def test_resizing_while_an_answer_streams_leaves_no_stale_rows(
    fake_api: FakeAnthropicAPI, project: Path, exported: bool
) -> None:
    # the last width is no multiple of a word's 8 columns: text laid out at a stale width splits words
    # at the screen's edge, and the last paragraph's words go missing
    resizes = (("p01w020", 60), ("p03w020", 90), ("p04w040", 69))
    # the answer pauses after each of these words until the terminal has been resized and redrawn
    fake_api.add(Hold(reply("\n\n".join(PARAGRAPHS), chunk=8), marks=tuple(word for word, _ in resizes)))
    # Whether or not the shell exports COLUMNS and LINES (at the starting size), the width must come
    # from the terminal and follow its resizes.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if exported:
        env.update(COLUMNS=str(COLUMNS), LINES=str(ROWS))
    env["TERM"] = "xterm-256color"
    child = pexpect.spawn(
        PITON, cwd=str(project), env=env, encoding="utf-8", timeout=CEILING_S, dimensions=(ROWS, COLUMNS)
    )
    term = Terminal(child, ROWS, COLUMNS)
    try:
        term.pump(lambda: term.shows("/help"), "welcome")  # typed earlier, the echo would precede it
        child.send(f"{QUESTION}\r")
        # Each resize lands while the live area holds several rows of an unfinished paragraph.
        streaming: list[bool] = []
        for held, (shown, columns) in enumerate(resizes, start=1):
            fake_api.wait_for_silence(held)
            term.pump(partial(term.shows, shown), shown)
            streaming.append(term.shows(SPINNER))
            term.resize_and_redraw(ROWS, columns, shown)
            fake_api.resume()
        term.pump(lambda: term.shows(LAST_WORD) and term.idle(), "end of the answer")
        rows, screen = term.rows(), term.dump()
    finally:
        child.close(force=True)

    assert any(streaming), f"the answer was over before the terminal was resized\n{screen}"
    assert not [row for row in rows if SPINNER in row], screen
    prompts = [i for i, row in enumerate(rows) if row.startswith(PROMPT.rstrip())]
    assert [rows[i] for i in prompts] == [f"{PROMPT}{QUESTION}", PROMPT.rstrip()], screen
    echo, prompt = prompts
    assert prompt >= len(rows) - ROWS, screen  # on the screen, not in the scrollback
    assert all(not row for row in rows[prompt + 1 : -1]), screen  # below it, only the status line

    last = max(i for i, row in enumerate(rows) if LAST_WORD in row)
    assert echo < last < prompt and all(not row for row in rows[last + 1 : prompt]), screen
    # Between the question and the answer's end there is only the answer: a copy of a live row
    # or a spinner frame left behind would show here.
    assert all(re.fullmatch(r"[pw\d ]*", row) for row in rows[echo + 1 : last + 1]), screen
    words = Counter(word for row in rows for word in _TOKEN.findall(row))
    repeated = sorted(word for word, count in words.items() if count > 1)
    assert not repeated, f"shown twice: {repeated[:20]}\n{screen}"
    # The last paragraph was printed after every resize, at the final width: all of it is there.
    assert all(word in words for word in PARAGRAPHS[-1].split()), screen
