"""Slash commands about the session's surroundings: /add-dir (another folder to work in), /export (the
conversation as Markdown), /vim (vi keys in the prompt); and `#` at the start of a line, which
appends a note to a memory file."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from piton.core.conversation.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from piton.core.conversation.results import part_text
from piton.core.modes import is_reminder

if TYPE_CHECKING:
    from piton.cli.controller import Controller

_RESULT_LINES = 40  # of each tool result, in an export


async def add_dir(ui: Controller, args: str) -> None:
    if not args:
        ui.print_line(
            "Usage: /add-dir PATH (a folder the tools may read and write, for the rest of the session)"
        )
        return
    runtime = await ui.ready()
    folder = _under(ui.options.cwd, args).resolve()
    if not folder.is_dir():
        ui.print_line(f"/add-dir: {folder} is not a folder", "yellow")
        return
    policy = runtime.agent.context.policy
    if policy is not None and any(folder == root for root in policy.roots):
        ui.print_line(f"{folder} is already a working folder", "dim")
        return
    runtime = await ui.switch(resume=runtime.log.session_id, add_dirs=[folder])
    runtime.agent.add_note(f"The user added a working folder: {folder}. The tools may read and write there.")
    ui.print_line(
        f"Added {folder} for this session (to keep it: piton config add permissions.additionalDirectories "
        f"{folder})",
        "dim",
    )


async def export(ui: Controller, args: str) -> None:
    runtime = await ui.ready()
    history = runtime.agent.history
    if not history:
        ui.print_line("Nothing to export yet.", "dim")
        return
    session = runtime.log.session_id
    name = args or f"piton-{time.strftime('%Y%m%d-%H%M%S')}-{session[:8]}.md"
    target = _under(ui.options.cwd, name)
    text = transcript_markdown(history, session=session, model=runtime.agent.config.model)
    try:
        write_export(target, text)
    except OSError as e:
        ui.print_line(f"/export: cannot write {target}: {e.strerror or e}", "yellow")
        return
    ui.print_line(f"Exported {len(history)} messages to {target}", "dim")


def _under(cwd: Path, typed: str) -> Path:
    """What the user typed, as a path: relative to the working folder, `~` expanded."""
    return cwd / os.path.expanduser(typed)


def write_export(path: Path, text: str) -> None:
    """Write `path` without following a symbolic link put in its place (the model may have made one)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _block(text: str, info: str = "") -> str:
    fence = _fence(text)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _result_text(block: ToolResultBlock) -> str:
    content = block.content
    text = content if isinstance(content, str) else "\n".join(part_text(b) for b in content)
    lines = text.splitlines()
    if len(lines) > _RESULT_LINES:
        lines = [*lines[:_RESULT_LINES], f"… {len(lines) - _RESULT_LINES} more lines"]
    return "\n".join(lines)


def transcript_markdown(history: list[Message], *, session: str, model: str) -> str:
    """The conversation as people read it: prompts, answers, each tool call with its input and the
    start of its result (thinking is left out)."""
    import json

    from piton.cli.output import tool_label

    parts = [f"# Piton session {session}", f"Model: {model} · exported {time.strftime('%Y-%m-%d %H:%M')}"]
    for message in history:
        if message.role == "user":
            results = message.tool_results
            typed = [b.text for b in message.content if isinstance(b, TextBlock)]
            for block in results:
                label = "Error" if block.is_error else "Result"
                parts.append(f"{label}:\n\n{_block(_result_text(block))}")
            if typed and not results and not is_reminder(typed[0]):
                parts.append(f"## You\n\n{typed[0]}")
            continue
        answer = [b.text for b in message.content if isinstance(b, TextBlock) and b.text.strip()]
        if answer:
            parts.append("## Piton\n\n" + "\n\n".join(answer))
        for use in (b for b in message.content if isinstance(b, ToolUseBlock)):
            tool_input: dict[str, Any] = use.input if isinstance(use.input, dict) else {}
            call = _block(json.dumps(tool_input, indent=2), "json")
            parts.append(f"**{tool_label(use.name, tool_input)}**\n\n{call}")
    return "\n\n".join(parts) + "\n"


async def vim(ui: Controller, _: str) -> None:
    on = ui.toggle_vi()
    ui.print_line(
        "Vi keys are on: Esc at the prompt goes to normal mode (and still stops work under way); "
        "/vim turns them off"
        if on
        else "Vi keys are off",
        "dim",
    )


def memory_targets(ui: Controller) -> list[tuple[str, Path]]:
    """Where a `#` note may go: the project's memory file (the AGENTS.md or CLAUDE.md it has, else a
    new AGENTS.md) and the user's own."""
    from piton.core.project.settings_sources import user_config_dir

    cwd = ui.options.cwd
    project = next((cwd / n for n in ("AGENTS.md", "CLAUDE.md") if (cwd / n).is_file()), cwd / "AGENTS.md")
    return [("project memory", project), ("your memory", user_config_dir() / "AGENTS.md")]


async def remember(ui: Controller, note: str) -> None:
    """`# note`: append it to a memory file the user picks; the model hears of it at once, and the
    file is read into the system prompt of the next session."""
    if not note:
        ui.print_line("Type the note after the #: # always run the tests with -x", "dim")
        return
    targets = memory_targets(ui)
    choices = " · ".join(
        f"{i} {name} ({path.name if i == 1 else '~/.piton/' + path.name})"
        for i, (name, path) in enumerate(targets, 1)
    )
    answer = (await ui.ask(f"Save the note to {choices} · Esc cancels › ")).strip()
    if answer not in ("1", "2"):
        ui.print_line("Not saved.", "dim")
        return
    name, path = targets[int(answer) - 1]
    try:
        append_note(path, f"- {note}\n")
    except OSError as e:
        ui.print_line(f"piton: cannot add to {path}: {e.strerror or e}", "yellow")
        return
    runtime = await ui.ready()
    runtime.agent.add_note(f"The user added this to {name} ({path}): {note}")
    ui.print_line(f"Saved to {path}", "dim")


def append_note(path: Path, line: str) -> None:
    """Append to a regular file, never through a symbolic link put in its place (a project file the
    model could have swapped for a link to ~/.bashrc), and never blocking on a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
            line = "\n" + line
        os.write(fd, line.encode())
    finally:
        os.close(fd)
