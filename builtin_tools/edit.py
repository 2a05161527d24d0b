"""Edit: replace an exact string in a file the model has read, keeping its encoding and line endings.

Either the file ends up with exactly the requested replacement, or it is left byte for byte as it
was and the model is told why (no match, several matches, stale read, unencodable text).

People see the change as a unified diff of just the regions it touched (Write's too): the cost of
showing it follows the size of the change, not of the file.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from piton.builtin_tools.diffs import DiffNames, diff_names, file_change, region_diff, whole_diff
from piton.builtin_tools.edit_plan import EditError, Plan, around, plan_edit
from piton.builtin_tools.files import (
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


class EditInput(ToolInput):
    file_path: str = Field(
        description="The file to change: an absolute path, or relative to the working directory."
    )
    old_string: str = Field(
        description="The exact text to replace, as it appears in the file (indentation included)."
    )
    new_string: str = Field(description="The text to put in its place; must differ from old_string.")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring a unique one."
    )


class Edit(FileTool[EditInput]):
    name = "Edit"
    description = (
        "Replaces exact text in a file.\n"
        "- You must Read the file in this session first, and it must not have changed since.\n"
        "- old_string must match the file exactly, indentation and all, and must occur once unless "
        "replace_all is set; copy it from the Read output without the line-number prefix.\n"
        "- To create a new file, use Write (or Edit with an empty old_string).\n"
        "- The file keeps its encoding and line endings."
    )
    input_model = EditInput
    kind = "edit"

    def refusal(self, args: EditInput, ctx: ToolContext) -> str | None:
        return not_read_yet(ctx, args.file_path, "edit")

    def preview(self, args: EditInput, ctx: ToolContext) -> str | None:
        path = writable(ctx, args.file_path)
        existing = read_existing(path)
        if existing is None:
            return whole_diff(diff_names(path, ctx.cwd, created=True), "", args.new_string)
        text, _ = decode(existing[0])
        plan = plan_edit(text, args.old_string, args.new_string, args.replace_all, path)
        return edit_diff(diff_names(path, ctx.cwd), text, plan)

    def run_sync(self, args: EditInput, ctx: ToolContext) -> ToolResult:
        path = writable(ctx, args.file_path)
        if path.is_dir():
            return ToolResult.error(f"{path} is a directory, not a file.")
        existing = read_existing(path)
        if existing is None:
            return self._create(ctx, path, args)
        seen = require_fresh_read(ctx, path, existing[1], "edit")
        text, encoding = decode_seen(existing[0], seen)
        try:
            plan = plan_edit(
                text,
                args.old_string,
                args.new_string,
                args.replace_all,
                path,
                style=seen.style,
                removed=seen.removed,
            )
            data = encoding.encode(plan.text)
        except EditError as e:
            return ToolResult.error(str(e))
        except UnicodeEncodeError as e:
            return ToolResult.error(
                f"{path} is {encoding.name}, which cannot hold {e.object[e.start : e.end]!r} from "
                "new_string; nothing changed. Write the file whole to change its encoding to UTF-8."
            )
        before_change(ctx, path, existing)
        try:
            st = pinned.replace(path, data)
        except pinned.PathChanged:
            raise  # FileTool reports it: the path changed under us, nothing was written
        except OSError as e:
            return ToolResult.error(f"Cannot write {path}: {e.strerror or e}")
        after_change(ctx, path, data)
        remember(ctx, path, st, encoding=encoding, style=plan.style, removed=plan.removed, edited=True)
        changed = f"{plan.count} replacements" if plan.count > 1 else "1 replacement"
        shown = edit_diff(diff_names(path, ctx.cwd), text, plan)
        return ToolResult(
            f"Edited {path} ({changed}). The result around the change:\n"
            f"{around(plan.text, plan.index, plan.span)}",
            summary=changed,
            display=FileDiff(str(path), shown),
            data={
                "filePath": args.file_path,
                "oldString": args.old_string,
                "newString": args.new_string,
                **file_change(text, shown),
                "userModified": False,
                "replaceAll": args.replace_all,
            },
        )

    def _create(self, ctx: ToolContext, path: Path, args: EditInput) -> ToolResult:
        if args.old_string:
            return ToolResult.error(f"File does not exist: {path}. Use Write to create it.")
        data = args.new_string.encode("utf-8")
        before_change(ctx, path, None)
        st = pinned.replace(path, data, create_parents=True)
        after_change(ctx, path, data)
        remember(ctx, path, st)
        return ToolResult(
            f"Created {path}.",
            summary="created",
            display=FileDiff(
                str(path), whole_diff(diff_names(path, ctx.cwd, created=True), "", args.new_string)
            ),
        )


def edit_diff(names: DiffNames, before: str, plan: Plan) -> str:
    """What an edit changed, as people see it (its preview and its result show the same)."""
    return region_diff(names, before, plan.text, plan.replacements(before), plan.count)
