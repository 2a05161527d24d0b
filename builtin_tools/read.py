"""Read: a file's lines, numbered like `cat -n`; images as image blocks; binary files refused."""

from __future__ import annotations

import asyncio
import base64
import difflib
from pathlib import Path

from pydantic import BaseModel, Field

from builtin_tools.files import (
    SNIFF_BYTES,
    bom_encoding,
    decode_line,
    image_type,
    looks_binary,
    numbered,
    readable,
    remember,
    resolve,
)
from core.messages import Base64ImageSource, ImageBlock
from core.policy import PolicyError
from core.tools import Tool, ToolContext, ToolResult

DEFAULT_LIMIT = 2_000
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the API's limit for one image


class ReadInput(BaseModel):
    file_path: str = Field(
        description="The file to read: an absolute path, or relative to the working directory."
    )
    offset: int | None = Field(None, ge=0, description="The line number to start from (1 is the first line).")
    limit: int | None = Field(None, ge=1, description=f"How many lines to read (default {DEFAULT_LIMIT}).")


def _missing(path: Path) -> str:
    message = f"File does not exist: {path}"
    if path.parent.is_dir():
        names = [p.name for p in path.parent.iterdir()]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            message += f". Did you mean: {', '.join(str(path.parent / c) for c in close)}?"
    return message


class Read(Tool):
    name = "Read"
    description = (
        "Reads a file from the local filesystem and returns its lines numbered like `cat -n` "
        "(line number, a tab, the line).\n"
        f"- Reads up to {DEFAULT_LIMIT} lines from the start by default; use offset and limit to read "
        "a specific part of a long file. Lines longer than 2000 characters are cut.\n"
        "- Relative paths are taken from the working directory; absolute paths are best.\n"
        "- Images (PNG, JPEG, GIF, WebP) are returned as images you can see. Other binary files are "
        "refused.\n"
        "- Read several files at once by calling this tool several times in one turn.\n"
        "- You must read a file before you Edit it or overwrite it with Write."
    )
    input_model = ReadInput
    read_only = True
    kind = "read"

    def rule_content(self, args: ReadInput, ctx: ToolContext) -> str | None:
        return str(resolve(ctx, args.file_path))

    async def run(self, args: ReadInput, ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._run, args, ctx)  # file IO off the event loop

    def _run(self, args: ReadInput, ctx: ToolContext) -> ToolResult:
        try:
            path = readable(ctx, args.file_path)
        except PolicyError as e:
            return ToolResult.error(str(e))
        if path.is_dir():
            return ToolResult.error(f"{path} is a directory, not a file: list it with Glob or Bash (ls).")
        if not path.exists():
            return ToolResult.error(_missing(path))
        try:
            return self._read(ctx, path, args)
        except PermissionError:
            return ToolResult.error(f"Permission denied: {path} cannot be read.")

    def _read(self, ctx: ToolContext, path: Path, args: ReadInput) -> ToolResult:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
            media_type = image_type(head)
            if media_type is not None:
                return self._image(ctx, path, media_type, head + f.read())
            if looks_binary(head):
                size = path.stat().st_size
                return ToolResult.error(
                    f"{path} is a binary file ({size:,} bytes); Read shows only text and images."
                )
            f.seek(0)
            encoding = bom_encoding(head)
            if encoding == "utf-16":
                lines = f.read().decode("utf-16").splitlines(keepends=True)
                rows = (line.encode("utf-8") for line in lines)
            else:
                rows = iter(f)
            start = max(1, args.offset or 1)
            limit = args.limit or DEFAULT_LIMIT
            shown: list[str] = []
            number = 0
            more = False
            for number, raw in enumerate(rows, start=1):
                if number < start:
                    continue
                if len(shown) == limit:
                    more = True
                    break
                line = decode_line(raw).rstrip("\r\n")
                if number == 1 and encoding == "utf-8-sig":
                    line = line.removeprefix("\ufeff")
                shown.append(numbered(line, number))
        remember(ctx, path)
        if number == 0:
            return ToolResult("(the file is empty)", summary="empty file")
        if not shown:
            return ToolResult.error(f"{path} has {number} lines; offset {start} is past the end.")
        text = "\n".join(shown)
        last = start + len(shown) - 1
        if more:
            text += f"\n\n(The file continues after line {last}. Read on with offset={last + 1}.)"
        return ToolResult(text, summary=f"{len(shown)} lines")

    def _image(self, ctx: ToolContext, path: Path, media_type: str, data: bytes) -> ToolResult:
        if len(data) > MAX_IMAGE_BYTES:
            return ToolResult.error(
                f"{path} is a {len(data) / 2**20:.1f} MB image; images over 5 MB cannot be sent to the model."
            )
        remember(ctx, path)
        source = Base64ImageSource(media_type=media_type, data=base64.b64encode(data).decode("ascii"))  # type: ignore[arg-type]
        return ToolResult([ImageBlock(source=source)], summary=f"image, {len(data):,} bytes")
