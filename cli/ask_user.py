"""The model's AskUserQuestion in the REPL: each question with its numbered options; the user answers
with a number (several, comma-separated, where several may be chosen) or in their own words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.text import Text

from piton.core.safety.permissions import Decision, PermissionRequest

AskWith = Callable[..., Awaitable[str]]  # ask(question, check=…) -> the answer line


def _choices(line: str, count: int) -> list[int] | None:
    """The option numbers `line` picks, or None when it is an answer in the user's own words."""
    parts = [p.strip() for p in line.replace(" ", ",").split(",") if p.strip()]
    if parts and all(p.isdigit() and 1 <= int(p) <= count for p in parts):
        return list(dict.fromkeys(int(p) for p in parts))
    return None


async def answer_questions(request: PermissionRequest, console: Any, ask: AskWith) -> Decision:
    questions = request.input.get("questions") or []
    console.print(
        Text(
            "  ⎿  Piton has a question for you:" if len(questions) == 1 else "  ⎿  Piton has questions:",
            style="yellow",
        )
    )
    answers: dict[str, str] = {}
    for item in questions:
        options = [o for o in item.get("options") or [] if isinstance(o, dict)]
        header = f"[{item['header']}] " if item.get("header") else ""
        console.print(Text(f"    {header}{item.get('question', '')}", style="bold"))
        for number, option in enumerate(options, start=1):
            about = f" — {option['description']}" if option.get("description") else ""
            console.print(Text(f"      {number}. {option.get('label', '')}{about}"))
        several = bool(item.get("multiSelect"))

        def check(line: str, count: int = len(options), several: bool = several) -> str | None:
            picked = _choices(line, count)
            if not line.strip():
                return f"Type a number (1-{count}) or your own answer; Esc stops the turn"
            if picked is not None and len(picked) > 1 and not several:
                return "Choose one number, or type your own answer"
            if picked is None and all(part.strip().isdigit() for part in line.replace(",", " ").split()):
                return f"Choose numbers from 1 to {count}, or type your own answer"
            return None

        hint = "numbers, comma-separated" if several else "a number"
        line = (await ask(f"Your answer ({hint}, or your own words) › ", check=check)).strip()
        picked = _choices(line, len(options))
        chosen = ", ".join(str(options[n - 1].get("label", "")) for n in picked) if picked else line
        answers[str(item.get("question", ""))] = chosen
        console.print(Text(f"    ⎿  {chosen}", style="dim"))
    return Decision("allow", "the user answered", updated_input={**request.input, "answers": answers})
