"""`/memory edit FILE`: one of the model's memory notes (or the project's AGENTS.md) in the user's
editor. The editor is `$VISUAL` or `$EDITOR`, found on PATH as the clipboard program is (never in the
project or a folder the tools may write), else the system's `nano` or `vi`."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from piton.cli.clipboard import find_program
from piton.core.safety import pinned

if TYPE_CHECKING:
    from piton.cli.controller import Controller
    from piton.runtime import Runtime

_SYSTEM_EDITORS = ("/usr/bin/nano", "/bin/nano", "/usr/bin/vi", "/bin/vi")


def editor_command(exclude: list[Path]) -> list[str] | None:
    for name in ("VISUAL", "EDITOR"):
        words = shlex.split(os.environ.get(name, ""))
        if words:
            program = words[0] if os.path.isabs(words[0]) else find_program(words[0], exclude)
            if program is not None and not any(
                Path(program).resolve().is_relative_to(r.resolve()) for r in exclude
            ):
                return [program, *words[1:]]
    return next(([path] for path in _SYSTEM_EDITORS if os.access(path, os.X_OK)), None)


def memory_folder_of(runtime: Runtime) -> Path | None:
    """The folder of the session's memory tool, if it has one."""
    tool = next((t for t in runtime.agent.tools if t.name == "memory"), None)
    folder = getattr(tool, "root", None)
    return folder if isinstance(folder, Path) else None


INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md")  # the project's, at its root


async def edit_memory(ui: Controller, runtime: Runtime, name: str) -> None:
    target = _target(ui, runtime, name.strip())
    if target is None:
        return
    if target.is_symlink() or (target.exists() and not target.is_file()):
        ui.print_line(f"/memory edit: {target} is not a regular file; left as it is", "yellow")
        return
    policy = runtime.agent.context.policy
    editor = editor_command([ui.options.cwd, *(policy.roots if policy is not None else ())])
    if editor is None:
        ui.print_line("/memory edit: no editor found (set $EDITOR); the file is " + str(target), "yellow")
        return
    try:  # the folders made without following a link, as the memory tool makes them
        os.close(pinned.make_dirs(target.parent))
    except OSError as e:
        ui.print_line(f"/memory edit: {target.parent} cannot be used ({e.strerror or e})", "yellow")
        return
    before = _content(target)
    status = await ui.run_program([*editor, str(target)])
    exited = f" (the editor exited with {status})" if status else ""
    changed = _content(target) != before
    ui.print_line(f"{'Edited' if changed else 'Nothing changed in'} {target}{exited}", "dim")


def _target(ui: Controller, runtime: Runtime, name: str) -> Path | None:
    """The file `/memory edit NAME` opens: the project's instruction file by that name, else a file
    of the memory tool's folder; None (said) when there is none."""
    if name in INSTRUCTION_FILES:
        return ui.options.cwd / name
    folder = memory_folder_of(runtime)
    if folder is None:
        ui.print_line("/memory edit: the memory tool is not in use in this session", "yellow")
        return None
    relative = Path(name.removeprefix("/memories/").removeprefix("/"))
    if not name or relative.is_absolute() or ".." in relative.parts:
        usage = "Usage: /memory edit FILE (AGENTS.md, CLAUDE.md, or a file of the memory folder)"
        ui.print_line(usage, "yellow")
        return None
    return folder / relative


def _content(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
