"""LS and TodoRead, tools of Claude Code's earlier versions that some community agent files still
list. A subagent whose file names them gets them, so it keeps the tools it was written for: LS lists
one folder (as Glob and Read see it), TodoRead returns the task list TodoWrite keeps."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence

from pydantic import Field

from piton.builtin_tools.files import FileTool, open_readable
from piton.builtin_tools.todo import TODOS
from piton.core.safety.policy import PolicyError
from piton.core.tools import AnyTool, Tool, ToolContext, ToolInput, ToolResult

MAX_ENTRIES = 1_000


class LSInput(ToolInput):
    path: str = Field(description="The folder to list: an absolute path, or relative to the project.")
    ignore: list[str] | None = Field(None, description="Glob patterns of names to leave out.")


class LS(FileTool[LSInput]):
    name = "LS"
    description = "Lists the files and folders in a folder (folders end with /). Prefer Glob to find files."
    input_model = LSInput
    read_only = True
    kind = "read"

    def run_sync(self, args: LSInput, ctx: ToolContext) -> ToolResult:
        try:
            with open_readable(ctx, args.path) as opened:
                if not opened.is_dir:
                    return ToolResult.error(f"{opened.path} is a file, not a folder; read it with Read.")
                names = sorted(os.listdir(opened.fd))
                ignored = args.ignore or []
                kept = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in ignored)]

                def is_dir(name: str) -> bool:
                    try:
                        return stat.S_ISDIR(os.stat(name, dir_fd=opened.fd, follow_symlinks=False).st_mode)
                    except OSError:
                        return False

                lines = [f"{n}/" if is_dir(n) else n for n in kept[:MAX_ENTRIES]]
                path = opened.path
        except (PolicyError, FileNotFoundError, NotADirectoryError) as e:
            return ToolResult.error(f"Cannot list {args.path}: {e}")
        more = f"\n… {len(kept) - MAX_ENTRIES} more" if len(kept) > MAX_ENTRIES else ""
        listing = "\n".join(lines) or "(empty)"
        return ToolResult(
            f"{path}/\n{listing}{more}", summary=f"{len(kept)} entr{'ies' if len(kept) != 1 else 'y'}"
        )


class TodoReadInput(ToolInput):
    pass


class TodoRead(Tool[TodoReadInput]):
    name = "TodoRead"
    description = "Returns the current task list (as TodoWrite last set it)."
    input_model = TodoReadInput
    read_only = True

    async def run(self, args: TodoReadInput, ctx: ToolContext) -> ToolResult:
        todos = ctx.state.get(TODOS) or []
        if not todos:
            return ToolResult("The task list is empty.", summary="no tasks")
        lines = [f"{n}. [{t.get('status')}] {t.get('content')}" for n, t in enumerate(todos, start=1)]
        return ToolResult("\n".join(lines), summary=f"{len(todos)} task{'s' if len(todos) != 1 else ''}")


def requested_aliases(names: Sequence[str] | None) -> list[AnyTool]:
    """The alias tools an agent file's tool list names."""
    wanted = set(names or ())
    return [tool for tool in (LS(), TodoRead()) if tool.name in wanted]
