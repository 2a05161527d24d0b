"""Edit: replace an exact string in a file the model has read, keeping its encoding and line endings.

Either the file ends up with exactly the requested replacement, or it is left byte for byte as it
was and the model is told why (no match, several matches, stale read, unencodable text).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import BaseModel, Field

from piton.builtin_tools.files import (
    FileTool,
    decode,
    lines_of,
    numbered,
    read_existing,
    remember,
    require_fresh_read,
    snippet,
    unified_diff,
    writable,
)
from piton.core.display import FileDiff
from piton.core.safety import pinned
from piton.core.tools import ToolContext, ToolResult

_MAX_LISTED = 10


class EditInput(BaseModel):
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


class EditError(Exception):
    pass


def _line_numbers(text: str, needle: str) -> list[int]:
    numbers: list[int] = []
    start = 0
    while (index := text.find(needle, start)) >= 0 and len(numbers) <= _MAX_LISTED:
        numbers.append(text.count("\n", 0, index) + 1)
        start = index + max(1, len(needle))
    return numbers


def _closest(text: str, old: str) -> str:
    """Where the model probably meant: the line most like the first line of old_string."""
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    lines = lines_of(text)
    if not first or not lines:
        return ""
    matcher = difflib.SequenceMatcher(None, b=first)
    rough = []
    for i, line in enumerate(lines):
        matcher.set_seq1(line.strip()[:500])
        rough.append((matcher.quick_ratio(), i))
    best_rough = sorted(rough, reverse=True)[
        :20
    ]  # quick_ratio is an upper bound: rank exactly among the best
    exact = []
    for _, i in best_rough:
        matcher.set_seq1(lines[i].strip()[:500])
        exact.append((matcher.ratio(), -i))
    ratio, negative = max(exact)
    best = -negative
    if ratio < 0.5:
        return ""
    around = "\n".join(numbered(lines[i], i + 1) for i in range(max(0, best - 2), min(len(lines), best + 3)))
    return f" The most similar text is near line {best + 1}:\n{around}"


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def plan_edit(text: str, old: str, new: str, replace_all: bool, path: Path) -> tuple[str, int, int]:
    """The new text, the index of the first change and the number of replacements; raises EditError.

    The model writes newlines as \\n. In a file whose every newline is \\r\\n, old and new are taken
    in that convention; in a mixed file, the \\r\\n form is tried when the text as given is absent."""
    if old == new:
        raise EditError("old_string and new_string are the same; there is nothing to change.")
    if not old:
        raise EditError(f"old_string is empty; {path} already exists, so use Write to replace it whole.")
    newlines = text.count("\n")
    if newlines and text.count("\r\n") == newlines:
        old, new = _crlf(old), _crlf(new)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and text.count(_crlf(old)):
        old, new = _crlf(old), _crlf(new)
        count = text.count(old)
    if count == 0:
        raise EditError(f"old_string was not found in {path} (0 matches).{_closest(text, old)}")
    if count > 1 and not replace_all:
        lines = ", ".join(map(str, _line_numbers(text, old)[:_MAX_LISTED]))
        raise EditError(
            f"old_string occurs {count} times in {path} (at lines {lines}). Include more of the surrounding "
            "text to make it unique, or set replace_all to replace every occurrence."
        )
    index = text.find(old)
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), index, count


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

    def preview(self, args: EditInput, ctx: ToolContext) -> str | None:
        path = writable(ctx, args.file_path)
        existing = read_existing(path)
        if existing is None:
            return unified_diff(path, "", args.new_string)
        text, _ = decode(existing[0])
        new_text, _, _ = plan_edit(text, args.old_string, args.new_string, args.replace_all, path)
        return unified_diff(path, text, new_text)

    def run_sync(self, args: EditInput, ctx: ToolContext) -> ToolResult:
        path = writable(ctx, args.file_path)
        if path.is_dir():
            return ToolResult.error(f"{path} is a directory, not a file.")
        existing = read_existing(path)
        if existing is None:
            return self._create(ctx, path, args)
        require_fresh_read(ctx, path, existing[1], "edit")
        text, encoding = decode(existing[0])
        try:
            new_text, index, count = plan_edit(text, args.old_string, args.new_string, args.replace_all, path)
            data = encoding.encode(new_text)
        except EditError as e:
            return ToolResult.error(str(e))
        except UnicodeEncodeError:
            return ToolResult.error(
                f"new_string has characters that {path}'s encoding cannot hold; nothing changed."
            )
        try:
            st = pinned.replace(path, data)
        except pinned.PathChanged:
            raise  # FileTool reports it: the path changed under us, nothing was written
        except OSError as e:
            return ToolResult.error(f"Cannot write {path}: {e.strerror or e}")
        remember(ctx, path, st)
        changed = f"{count} replacements" if count > 1 else "1 replacement"
        return ToolResult(
            f"Edited {path} ({changed}). The result around the change:\n"
            f"{snippet(new_text, index, len(args.new_string))}",
            summary=changed,
            display=FileDiff(str(path), unified_diff(path, text, new_text)),
        )

    def _create(self, ctx: ToolContext, path: Path, args: EditInput) -> ToolResult:
        if args.old_string:
            return ToolResult.error(f"File does not exist: {path}. Use Write to create it.")
        st = pinned.replace(path, args.new_string.encode("utf-8"), create_parents=True)
        remember(ctx, path, st)
        return ToolResult(
            f"Created {path}.",
            summary="created",
            display=FileDiff(str(path), unified_diff(path, "", args.new_string)),
        )
