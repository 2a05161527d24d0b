"""Asking the user whether a tool call may run: what it would do, then allow once, allow for the
session, or deny with a reason the model will read; at the prompt, one question at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console
from rich.text import Text

from piton.cli.render_tools import diff_text
from piton.core.safety.permissions import Decision, PermissionGate, PermissionRequest

if TYPE_CHECKING:
    from piton.cli.questions import Check
    from piton.cli.render import Renderer
    from piton.runtime import Runtime

_YES = {"1", "y", "yes"}
_ALWAYS = {"2", "a", "always"}
_NO = {"3", "n", "no"}


def check_answer(line: str) -> str | None:
    """None when `line` answers the question; else what to type (a message typed out of habit is not
    taken as a no with itself as the reason)."""
    word, _, rest = line.strip().partition(" ")
    if word.lower() in _NO or (word.lower() in _YES | _ALWAYS and not rest.strip()):
        return None
    return "Answer 1, 2 or 3 (3 and a reason tells Piton what to do instead); Esc stops the turn"


class Asker(Protocol):
    """What a permission question needs of the terminal (the REPL)."""

    @property
    def runtime(self) -> Runtime | None: ...

    @property
    def console(self) -> Console: ...

    @property
    def renderer(self) -> Renderer | None:
        """Its spinner says what the turn waits for."""
        ...

    async def ask(self, question: str, *, check: Check | None = None, stops_turn: bool = False) -> str:
        """Show `question` in place of the prompt and wait for an answer line that `check` accepts."""
        ...

    def background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` beside what is under way."""
        ...


async def ask_permission(request: PermissionRequest, ui: Asker, one_at_a_time: asyncio.Lock) -> Decision:
    """A tool call needs the user's permission (or asks the user a question), at the prompt: the
    question stands in place of the prompt (Esc stops the turn), the Notification hook is told beside
    it, and the spinner says what the turn waits for."""
    from piton.cli.session_hooks import notify

    async def ask(question: str, check: Check = check_answer) -> str:
        return await ui.ask(question, check=check, stops_turn=True)

    async with one_at_a_time:  # subagents working side by side ask one question at a time
        runtime = ui.runtime  # read once the question's turn has come: the session may have changed
        assert runtime is not None
        asking = request.tool.kind == "question"
        message = (
            "Piton has a question for you"
            if asking
            else f"Piton needs your permission to use {request.tool.name}"
        )
        # beside the question, not before it: a slow Notification hook must not hold it back
        ui.background(notify(runtime, message, "permission_prompt"))
        renderer = ui.renderer
        if renderer is not None:
            renderer.doing = "Waiting for your answer" if asking else "Waiting for your permission"
        try:
            decision = await approve(request, ui.console, ask, runtime.agent.gate)
            if renderer is not None and request.preview and decision.behavior == "allow":
                renderer.shown_diffs.add(request.preview)
            return decision
        finally:
            if renderer is not None:
                renderer.doing = None


async def approve(
    request: PermissionRequest,
    console: Console,
    ask: Callable[..., Awaitable[str]],  # ask(question, check=…): the answer line
    gate: PermissionGate | None,
) -> Decision:
    if request.tool.kind == "plan":
        return await approve_plan(request, console, ask)
    if request.tool.kind == "question":
        from piton.cli.ask_user import answer_questions

        return await answer_questions(request, console, ask)
    why = "" if request.reason.endswith("needs permission") else f" ({request.reason})"
    console.print(Text(f"  ⎿  Waiting for your permission{why}", style="yellow"))
    if request.preview:
        console.print(diff_text(request.preview), end="")
    elif request.tool.kind == "execute" and request.content:
        console.print(Text(f"    {request.content}", style="bold"))
        if request.input.get("run_in_background"):  # it outlives the turn: the user should know
            console.print(
                Text("    (left running in the background; /bashes lists and stops it)", style="dim")
            )
    question = (
        f"Allow? 1 yes · 2 yes, and allow {request.suggestion} for this session · "
        "3 no (type a reason after it to tell Piton what to do instead) › "
    )
    answer = (await ask(question)).strip()
    word, _, rest = answer.partition(" ")
    if word.lower() in _YES:
        return Decision("allow", "the user allowed it")
    if word.lower() in _ALWAYS:
        if gate is not None:
            for rule in request.session_rules:
                gate.allow_for_session(rule)
        console.print(Text(f"  ⎿  {request.suggestion} is allowed for the rest of this session", style="dim"))
        return Decision("allow", f"the user allowed {request.suggestion} for this session")
    reason = rest.strip() if word.lower() in _NO else answer
    return Decision("deny", f"the user said no: {reason}" if reason else "the user said no")


async def approve_plan(
    request: PermissionRequest, console: Console, ask: Callable[[str], Awaitable[str]]
) -> Decision:
    """The model's plan, for the user to approve (and choose how the work goes on) or send back."""
    from rich.padding import Padding

    from piton.cli.markdown_render import render_block
    from piton.cli.markdown_stream import MarkdownStream

    console.print(Text("  ⎿  Here is the plan:", style="yellow"))
    stream = MarkdownStream()
    for block in stream.feed(str(request.input.get("plan", "")) + "\n") + stream.flush():
        console.print(Padding(render_block(block), (0, 0, 0, 4)))
    answer = (
        await ask(
            "Go ahead? 1 yes, and accept edits · 2 yes, and ask before each edit · "
            "3 no, keep planning (type what to change after it) › "
        )
    ).strip()
    word, _, rest = answer.partition(" ")
    if word.lower() in _YES:
        console.print(Text("  ⎿  The plan is approved; edits are accepted from now on", style="dim"))
        return Decision("allow", "the user approved the plan", mode="acceptEdits")
    if word.lower() in _ALWAYS:
        console.print(Text("  ⎿  The plan is approved; each edit is asked about", style="dim"))
        return Decision("allow", "the user approved the plan", mode="default")
    reason = rest.strip() if word.lower() in _NO else answer
    keep = "the user did not approve the plan; stay in plan mode and revise it"
    return Decision("deny", f"{keep}: {reason}" if reason else keep)
