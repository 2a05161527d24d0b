"""Write: create a file, or replace one the model has read, and show the change as a diff."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from piton.builtin_tools.diffs import diff_names, file_change, whole_diff
from piton.builtin_tools.edit_plan import newline_style
from piton.builtin_tools.files import (
    UTF8,
    FileTool,
    after_change,
    before_change,
    decode,
    decode_seen,
    not_read_yet,
    read_existing,
    remember,
    require_fresh_read,
    writable,
)
from piton.core.display import FileDiff
from piton.core.safety import pinned
from piton.core.tools import ToolContext, ToolInput, ToolResult


class WriteInput(ToolInput):
    file_path: str = Field(
        description="The file to write: an absolute path, or relative to the project directory."
    )
    content: str = Field(description="The complete new content of the file.")


class Write(FileTool[WriteInput]):
    name = "Write"
    description = (
        "Writes a file, creating it and any missing parent directories, or replacing it entirely.\n"
        "- To replace an existing file you must have read it with Read in this session; prefer Edit for "
        "changes to part of a file.\n"
        "- Only create files the task needs; do not create documentation files unless asked.\n"
        "- Writes are limited to the writable directories of the sandbox."
    )
    input_model = WriteInput
    kind = "edit"

    def refusal(self, args: WriteInput, ctx: ToolContext) -> str | None:
        return not_read_yet(ctx, args.file_path, "overwrite")

    def preview(self, args: WriteInput, ctx: ToolContext) -> str | None:
        path = writable(ctx, args.file_path)
        existing = read_existing(path)
        names = diff_names(path, ctx.cwd, created=existing is None)
        return whole_diff(names, decode(existing[0])[0] if existing else "", args.content)

    def run_sync(self, args: WriteInput, ctx: ToolContext) -> ToolResult:
        path = writable(ctx, args.file_path)
        if path.is_dir():
            return ToolResult.error(f"{path} is a directory; give the path of a file inside it.")
        existing = read_existing(path)
        before, encoding = "", UTF8
        if existing is not None:
            seen = require_fresh_read(ctx, path, existing[1], "overwrite")
            before, encoding = decode_seen(existing[0], seen)
        try:
            data = encoding.encode(args.content)
        except UnicodeEncodeError:  # the old encoding cannot hold the new text
            encoding = UTF8
            data = args.content.encode("utf-8")
        before_change(ctx, path, existing)
        try:
            st = pinned.replace(path, data, create_parents=True)
        except pinned.PathChanged:
            raise  # FileTool reports it: the path changed under us, nothing was written
        except OSError as e:
            return ToolResult.error(f"Cannot write {path}: {e.strerror or e}")
        after_change(ctx, path, data)
        remember(ctx, path, st, encoding=encoding, style=newline_style(args.content), edited=True)
        names = diff_names(path, ctx.cwd, created=existing is None)
        shown = whole_diff(names, before, args.content)
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
        verb = "Updated" if existing is not None else "Created"
        return ToolResult(
            f"{verb} {path} ({lines} lines).",
            summary=f"{verb.lower()}, {lines} lines",
            display=FileDiff(str(path), shown),
            data={
                "type": "update" if existing is not None else "create",
                "filePath": args.file_path,
                "content": args.content,
                **(file_change(before, shown) if existing is not None else _CREATED),
                "userModified": False,
            },
        )


_CREATED: dict[str, Any] = {"structuredPatch": [], "originalFile": None}
