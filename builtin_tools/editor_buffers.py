"""Read, Edit and Write through an editor's buffers (`piton acp` with a client that offers `fs/*`):
when they may, and the disk otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from piton.builtin_tools.files import read_existing
from piton.core.tools import ToolContext


def editor_text(ctx: ToolContext, path: Path) -> str | None:
    """`path`'s text as the editor holds it (unsaved changes included), when an editor holds the
    files and nothing the model started is running; None: read the disk. The editor opens the path
    by name, outside the sandbox: with no command of the model's alive (a file tool holds the lock
    a writing command needs, and no background shell runs), nothing can swap a folder on the path
    for a link between the policy's check and the editor's read."""
    if ctx.editor is None or ctx.shells.running():
        return None
    return ctx.editor.read_text(path)


def editor_write(ctx: ToolContext, path: Path, text: str, before: os.stat_result) -> os.stat_result | None:
    """Write `text` over the existing file `path` through the editor (so the change lands in its
    buffer), under the rule of `editor_text`; the file's status after it (`before` when the editor
    keeps the change in its buffer), or None when the tool is to write itself."""
    if ctx.editor is None or ctx.shells.running() or not ctx.editor.write_text(path, text):
        return None
    after = read_existing(path)
    return after[1] if after is not None else before
