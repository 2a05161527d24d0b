"""A question in place of the prompt: one at a time, answered by the next line the user enters.

Answers are not messages: they never reach the prompt history, and a line that is not an answer
(a message typed out of habit, `!ls`) stays in the input with a word on what is expected, rather
than being taken as an answer. A question that belongs to the model's turn (a permission) is
dismissed by Esc or Ctrl-C by stopping the turn, as a question outside a turn is answered "no".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from piton.core.records import record

Check = Callable[[str], str | None]  # None when the line is an answer, else what to say about it


@record
class Question:
    text: str
    answer: asyncio.Future[str]
    check: Check | None = None
    stops_turn: bool = False  # Esc stops the turn it belongs to rather than answering "no"


class Questions:
    """The question standing in place of the prompt, if any."""

    def __init__(self, changed: Callable[[], None], print_line: Callable[[str, str], None]) -> None:
        self.current: Question | None = None
        self._changed = changed
        self._print = print_line

    async def ask(self, text: str, *, check: Check | None = None, stops_turn: bool = False) -> str:
        """Show `text` in place of the prompt and wait for an answer line that `check` accepts."""
        question = Question(text, asyncio.get_running_loop().create_future(), check, stops_turn)
        self.current = question
        self._changed()
        try:
            return await question.answer
        finally:
            if self.current is question:
                self.current = None
            self._changed()

    def dismiss(self, stop_turn: Callable[[], bool]) -> None:
        """Esc or Ctrl-C at the question: one of the turn's is dismissed by `stop_turn` (True when a
        turn was under way to stop), another is answered no."""
        question = self.current
        if question is None:
            return
        if question.stops_turn and stop_turn():
            self._print(f"{question.text}(Esc)", "yellow")
            return
        self.offer("no")

    def offer(self, line: str) -> bool:
        """The user entered `line` while a question is up: True when it answered it (the caller then
        clears the input); False when it was not an answer, which has been said."""
        question = self.current
        if question is None:
            return False
        problem = question.check(line) if question.check is not None else None
        if problem is not None:
            self._print(f"  ⎿  {problem}", "yellow")
            return False
        self.current = None
        self._print(f"{question.text}{line}", "yellow")
        if not question.answer.done():
            question.answer.set_result(line)
        self._changed()
        return True
