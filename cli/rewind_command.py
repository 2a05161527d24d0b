"""/rewind (and Esc Esc on an empty prompt): pick an earlier message, then restore the code, the
conversation, or both to where they were before it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from piton.core.clip import one_line
from piton.rewind import RewindError, plan, rewind

if TYPE_CHECKING:
    from piton.cli.controller import Controller
    from piton.core.checkpoints import Checkpoint, RestorePlan
    from piton.rewind import Rewound

_SHOWN = 12
_CHOICES = {"1": (True, True), "2": (False, True), "3": (True, False)}  # (code, conversation)


async def rewind_command(ui: Controller) -> None:
    say = ui.print_line
    runtime = await ui.ready()
    if ui.busy:
        say("Stop the work under way first (Esc), then /rewind.", "yellow")
        return
    agent = runtime.agent
    checkpoint = await _pick(
        ui, agent.context.checkpoints.turns if agent.context.checkpoints is not None else []
    )
    if checkpoint is None:
        return
    try:
        restore = plan(agent, checkpoint.id)
    except RewindError as e:
        say(str(e), "yellow")
        return
    _show_plan(ui, restore)
    choice = await _choose(ui, checkpoint)
    if choice is None:
        return
    code, conversation = choice
    overwrite = await _may_overwrite(ui, restore) if code and restore.conflicts else False
    try:
        done = rewind(agent, checkpoint.id, code=code, conversation=conversation, overwrite=overwrite)
    except RewindError as e:
        say(str(e), "yellow")
        return
    _show_done(ui, done, code=code)


async def _pick(ui: Controller, turns: list[Checkpoint]) -> Checkpoint | None:
    """The message to go back to before, from the latest ones; None when there is none, or the user
    cancelled."""
    if not turns:
        ui.print_line("Nothing to rewind yet: each message you send is a checkpoint.", "dim")
        return None
    shown = turns[-_SHOWN:]
    for number, turn in enumerate(shown, start=1):
        when = time.strftime("%H:%M", time.localtime(turn.time))
        changed = sum(len(t.files) for t in turns[turns.index(turn) :])
        files = (
            f"{changed} file change{'s' if changed != 1 else ''} since"
            if changed
            else "no file changes since"
        )
        ui.print_line(f"  {number:>2}. {when}  {one_line(turn.prompt, 70)}  ({files})")
    answer = (await ui.ask("Rewind to before which message? (number, Enter cancels) › ")).strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(shown):
        return None
    return shown[int(answer) - 1]


def _show_plan(ui: Controller, restore: RestorePlan) -> None:
    """What going back would do to the files."""
    for change in restore.changes:
        verb = "remove" if change.action == "delete" else "restore"
        ui.print_line(
            f"    {verb} {change.path}" + ("  (changed outside Piton since)" if change.conflict else ""),
            "dim",
        )
    if not restore.changes:
        ui.print_line("    no file differs from what it was then", "dim")


async def _choose(ui: Controller, checkpoint: Checkpoint) -> tuple[bool, bool] | None:
    """What goes back: (code, conversation); None when the user cancelled."""
    if checkpoint.conversation:
        question = "Restore 1 code and conversation · 2 conversation only · 3 code only (Enter cancels) › "
        return _CHOICES.get((await ui.ask(question)).strip())
    ui.print_line("The conversation was compacted after that message; only the code can go back.", "dim")
    return (
        (True, False)
        if (await ui.ask("Restore the code? (y/N) › ")).strip().lower() in ("y", "yes")
        else None
    )


async def _may_overwrite(ui: Controller, restore: RestorePlan) -> bool:
    """Whether files changed outside Piton since may be overwritten."""
    names = ", ".join(str(p) for p in restore.conflicts[:5])
    asked = await ui.ask(f"Overwrite what was changed outside Piton in {names}? (y/N) › ")
    return asked.strip().lower() in ("y", "yes")


def _show_done(ui: Controller, done: Rewound, *, code: bool) -> None:
    say = ui.print_line
    for path in done.restored:
        say(f"  ⎿  restored {path}", "dim")
    for problem in done.problems:
        say(f"  ⎿  {problem}", "yellow")
    if code:
        say("Files changed by shell commands are not restored.", "dim")
    if done.prompt is not None:
        ui.edit(done.prompt)
        say("The conversation is back to before that message; it is in the prompt to edit.", "dim")
