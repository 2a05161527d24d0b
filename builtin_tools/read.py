"""Read: a file's lines, numbered like `cat -n`; images as image blocks; binary files refused."""

from __future__ import annotations

import base64
import difflib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from piton.builtin_tools.files import (
    MAX_LINE_CHARS,
    SNIFF_BYTES,
    UTF8,
    Encoding,
    FileTool,
    Opened,
    bom_encoding,
    decode_line,
    detect,
    lines_of,
    looks_binary,
    numbered,
    open_readable,
    readable,
    remember,
)
from piton.core.conversation.media import image_type
from piton.core.conversation.messages import (
    Base64ImageSource,
    Base64PDFSource,
    DocumentBlock,
    ImageBlock,
    TextBlock,
)
from piton.core.tools import ToolContext, ToolInput, ToolResult

DEFAULT_LIMIT = 2_000
MAX_SOURCE_IMAGE_BYTES = 50 * 1024 * 1024  # an image file larger than this is not decoded at all
MAX_PDF_BYTES = 100 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024  # a larger one is read as text, a page of lines at a time
DEFAULT_PDF_PAGES = 10  # of a PDF read without `pages`
MAX_PDF_PAGES = 20  # in one call
DOCUMENT_PAGES = 10  # a PDF this short, read whole, goes to the model as a document it reads itself
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024  # and this small (the API takes 32 MB a request)
_DETECT_BYTES = 4 * 1024 * 1024
_KEEP_BYTES = MAX_LINE_CHARS * 4 + 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8, and a bit
# How far Read looks: for the end of one line, and for the line an offset names. A 2 GiB file of one
# line (or a sparse one) would otherwise be read whole, for minutes, to say how long that line is.
SCAN_LINE_BYTES = 64 * 1024 * 1024
SCAN_OFFSET_BYTES = 256 * 1024 * 1024
_UNREACHED = -1  # a line longer than SCAN_LINE_BYTES: its end, and what follows, were not looked for


class ReadInput(ToolInput):
    file_path: str = Field(
        description="The file to read: an absolute path, or relative to the project directory."
    )
    offset: int | None = Field(None, ge=0, description="The line number to start from (1 is the first line).")
    limit: int | None = Field(None, ge=1, description=f"How many lines to read (default {DEFAULT_LIMIT}).")
    pages: str | None = Field(
        None,
        description=f"Of a PDF: the pages to read, such as '3', '1-5' or '1,4-6' (at most {MAX_PDF_PAGES}).",
    )


def _missing(path: Path) -> str:
    message = f"File does not exist: {path}"
    if path.parent.is_dir():
        names = [p.name for p in path.parent.iterdir()]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            message += f". Did you mean: {', '.join(str(path.parent / c) for c in close)}?"
    return message


def _raw_lines(f: IO[bytes]) -> Iterator[tuple[bytes, int | None]]:
    """(the line's first bytes, its full length if more was skipped) for each line, in bounded
    memory even for a gigabyte on one line."""
    while chunk := f.readline(_KEEP_BYTES):
        head, length = chunk, len(chunk)
        while not chunk.endswith(b"\n") and (chunk := f.readline(1 << 20)):
            length += len(chunk)
            if length > SCAN_LINE_BYTES:
                yield head, _UNREACHED
                return
        if length > len(head):
            yield head, length - chunk.endswith(b"\n")  # the length of the line, not its newline
        else:
            yield head, None


class _TooFar(Exception):
    """The offset lies beyond SCAN_OFFSET_BYTES, past `args[0]` lines."""


def _text_data(path: str, start: int, lines: list[str], skipped: int, after: int | None) -> dict[str, Any]:
    """Claude Code's `tool_use_result` for text read: the lines whole (cut ones included), counted
    as it counts them, the text's line ends plus one; `after`: the line ends past what was read."""
    content = "\n".join(line.rstrip("\r\n") for line in lines) + ("\n" if lines[-1].endswith("\n") else "")
    ends = content.count("\n")
    total = None if after is None else skipped + ends + after + 1
    return {
        "type": "text",
        "file": {
            "filePath": path,
            "content": content,
            "numLines": ends + 1,
            "startLine": start,
            "totalLines": total,
        },
    }


def _newlines_after(pending: bytes, f: IO[bytes]) -> int | None:
    """How many line ends the rest of the file holds from `pending` (a line already read) on; None
    past `SCAN_OFFSET_BYTES`, where counting would cost more than the read."""
    count, scanned = pending.count(b"\n"), 0
    while block := f.read(1 << 20):
        scanned += len(block)
        if scanned > SCAN_OFFSET_BYTES:
            return None
        count += block.count(b"\n")
    return count


def _skip_lines(f: IO[bytes], count: int) -> int:
    """Move past `count` lines by counting newlines in large blocks (fast for a far offset).
    Returns how many lines were passed: fewer than `count` at the end of the file."""
    passed, unterminated, scanned = 0, False, 0
    while passed < count:
        if scanned >= SCAN_OFFSET_BYTES:
            raise _TooFar(passed)
        block = f.read(1 << 20)
        scanned += len(block)
        if not block:
            return passed + unterminated  # a last line without a newline is a line too
        newlines = block.count(b"\n")
        unterminated = not block.endswith(b"\n")
        if passed + newlines < count:
            passed += newlines
            continue
        index = -1
        for _ in range(count - passed):
            index = block.index(b"\n", index + 1)
        f.seek(index + 1 - len(block), 1)
        return count
    return passed


def _show(raw: bytes, skipped_length: int | None, number: int, encoding: Encoding | None) -> str:
    line = decode_line(raw, encoding).rstrip("\r\n")
    if skipped_length == _UNREACHED:
        return (
            f"{numbered(line[:MAX_LINE_CHARS], number)}… [line cut: over {SCAN_LINE_BYTES >> 20} MiB; "
            "Read goes no further in this file: use Bash (tail -c, sed -n) for what follows]"
        )
    if skipped_length is not None:  # the rest was never read; say how long the line really is
        return f"{numbered(line[:MAX_LINE_CHARS], number)}… [line cut: about {skipped_length:,} bytes]"
    return numbered(line, number)


class Read(FileTool[ReadInput]):
    name = "Read"
    description = (
        "Reads a file from the local filesystem and returns its lines numbered like `cat -n` "
        "(line number, a tab, the line).\n"
        f"- Reads up to {DEFAULT_LIMIT} lines from the start by default; use offset and limit to read "
        "a specific part of a long file. Lines longer than 2000 characters are cut.\n"
        "- Relative paths are taken from the project directory (not the shell's current directory); "
        "absolute paths are best.\n"
        "- Images (PNG, JPEG, GIF, WebP) are returned as images you can see (large ones scaled down). "
        f"A PDF of up to {DOCUMENT_PAGES} pages read whole may come as the document itself; otherwise "
        f"PDFs are returned as their text, page by page: the first {DEFAULT_PDF_PAGES} pages unless "
        "pages says which. Jupyter notebooks (.ipynb) are shown cell by cell with their outputs. "
        "Other binary files are refused.\n"
        "- Read several files at once by calling this tool several times in one turn.\n"
        "- You must read a file before you Edit it or overwrite it with Write."
    )
    input_model = ReadInput
    read_only = True

    def run_sync(self, args: ReadInput, ctx: ToolContext) -> ToolResult:
        try:
            with open_readable(ctx, args.file_path) as opened:
                if opened.is_dir:
                    return ToolResult.error(
                        f"{opened.path} is a directory, not a file: list it with Glob or Bash (ls)."
                    )
                return self._read(ctx, args, opened)
        except FileNotFoundError:
            return ToolResult.error(_missing(readable(ctx, args.file_path)))
        except PermissionError:
            return ToolResult.error(f"Permission denied: {args.file_path} cannot be read.")

    def _read(self, ctx: ToolContext, args: ReadInput, opened: Opened) -> ToolResult:
        path = opened.path
        with os.fdopen(os.dup(opened.fd), "rb") as f:
            head = f.read(SNIFF_BYTES)
            media_type = image_type(head)
            if media_type is not None:
                return self._image(ctx, opened, media_type, f, head)
            if head.startswith(b"%PDF-"):
                return self._pdf(ctx, opened, f, head, args.pages)
            if path.suffix == ".ipynb" and opened.st.st_size <= MAX_NOTEBOOK_BYTES:
                return self._notebook(ctx, opened, f, head)
            if looks_binary(head):
                return ToolResult.error(
                    f"{path} is a binary file ({opened.st.st_size:,} bytes); Read shows only text and images."
                )
            f.seek(0)
            # the whole file decides its encoding, as it does for Edit; past a size, its first lines
            encoding = detect(f.read()) if opened.st.st_size <= _DETECT_BYTES else bom_encoding(head)
            f.seek(0)
            result = self._text(f, encoding, args)
        remember(ctx, path, opened.st, encoding=encoding)
        return result

    def _text(self, f: IO[bytes], encoding: Encoding | None, args: ReadInput) -> ToolResult:
        start = max(1, args.offset or 1)
        shown_as = encoding
        decoded: int | None = None
        if encoding is not None and encoding.codec.startswith("utf-16"):
            lines = lines_of(encoding.decode(f.read()))
            shown_as = UTF8  # the rows below are the decoded lines, in UTF-8
            rows: Iterator[tuple[bytes, int | None]] = (
                (line.encode("utf-8") + b"\n", None) for line in lines[start - 1 :]
            )
            decoded = len(lines)  # the file's lines, known here: no need to count the rest
            skipped = min(start - 1, len(lines))
        else:
            try:
                skipped = _skip_lines(f, start - 1)
            except _TooFar as e:
                return ToolResult.error(
                    f"Read looks for an offset in the first {SCAN_OFFSET_BYTES >> 20} MiB of a file, "
                    f"which hold {e.args[0]:,} lines here; use Bash (sed -n '{start},+{DEFAULT_LIMIT}p') "
                    "beyond them."
                )
            rows = _raw_lines(f)
        limit = args.limit or DEFAULT_LIMIT
        shown: list[str] = []
        raws: list[bytes] = []
        more: bytes | None = None  # the first line not shown, if there is one
        for number, (raw, skipped_length) in enumerate(rows, start=start):
            if len(shown) == limit:
                more = raw
                break
            if number == 1 and shown_as is not None:
                raw = raw.removeprefix(shown_as.bom)
            shown.append(_show(raw, skipped_length, number, shown_as))
            raws.append(raw)
        if not shown:
            if skipped == 0:
                return ToolResult("(the file is empty)", summary="empty file")
            return ToolResult.error(f"The file has {skipped} lines; offset {start} is past the end.")
        text = "\n".join(shown)
        last = start + len(shown) - 1
        if more is not None:
            text += f"\n\n(The file continues after line {last}. Read on with offset={last + 1}.)"
        after = (
            0
            if more is None
            else decoded - skipped - len(raws)
            if decoded is not None
            else _newlines_after(more, f)
        )
        data = _text_data(args.file_path, start, [decode_line(raw, shown_as) for raw in raws], skipped, after)
        return ToolResult(text, summary=f"{len(shown)} line{'s' if len(shown) != 1 else ''}", data=data)

    def _image(
        self, ctx: ToolContext, opened: Opened, media_type: str, f: IO[bytes], head: bytes
    ) -> ToolResult:
        from piton.builtin_tools.media import ImageError, fit_image

        size = opened.st.st_size
        if size > MAX_SOURCE_IMAGE_BYTES:
            return ToolResult.error(
                f"{opened.path} is a {size / 2**20:.1f} MB image; Read takes images up to 50 MB."
            )
        try:
            data, media_type, note = fit_image(head + f.read(), media_type)
        except ImageError as e:
            return ToolResult.error(f"{opened.path}: {e}")
        remember(ctx, opened.path, opened.st)
        source = Base64ImageSource(media_type=media_type, data=base64.b64encode(data).decode("ascii"))
        summary = f"image, {len(data):,} bytes" + (f" ({note})" if note else "")
        return ToolResult([ImageBlock(source=source)], summary=summary)

    def _notebook(self, ctx: ToolContext, opened: Opened, f: IO[bytes], head: bytes) -> ToolResult:
        from piton.builtin_tools.notebook import notebook_view

        try:
            view = notebook_view(head + f.read())
        except ValueError as e:
            return ToolResult.error(f"{opened.path}: {e}; read it as text with offset and limit")
        remember(ctx, opened.path, opened.st)
        return ToolResult(view, summary="notebook")

    def _document(self, ctx: ToolContext, opened: Opened, data: bytes) -> ToolResult | None:
        """A small PDF as a document block the model reads itself (text, tables and figures),
        where the model can; None to give its text instead. Only a PDF that parses strictly is
        sent: one the API refused would fail every later request of the conversation."""
        from piton.builtin_tools.media import strict_page_count

        assert ctx.reads_documents is not None
        total = strict_page_count(data)
        if total is None or not 0 < total <= DOCUMENT_PAGES or not ctx.reads_documents():
            return None
        remember(ctx, opened.path, opened.st)
        source = Base64PDFSource(data=base64.b64encode(data).decode("ascii"))
        note = TextBlock(text=f"(The PDF {opened.path}, {total} page{'s' if total != 1 else ''}:)")
        summary = f"PDF, {total} page{'s' if total != 1 else ''}, as a document"
        return ToolResult([note, DocumentBlock(source=source, title=opened.path.name)], summary=summary)

    def _pdf(
        self, ctx: ToolContext, opened: Opened, f: IO[bytes], head: bytes, pages: str | None
    ) -> ToolResult:
        from piton.builtin_tools.media import PdfError, pdf_pages

        if opened.st.st_size > MAX_PDF_BYTES:
            return ToolResult.error(
                f"{opened.path} is a {opened.st.st_size / 2**20:.0f} MB PDF; Read takes PDFs up to 100 MB."
            )
        data = head + f.read()
        if pages is None and opened.st.st_size <= MAX_DOCUMENT_BYTES and ctx.reads_documents is not None:
            document = self._document(ctx, opened, data)
            if document is not None:
                return document
        try:
            text, shown, total = pdf_pages(data, pages, default=DEFAULT_PDF_PAGES, most=MAX_PDF_PAGES)
        except PdfError as e:
            return ToolResult.error(f"{opened.path}: {e}")
        remember(ctx, opened.path, opened.st)
        if pages is None and total > len(shown):
            text += (
                f"\n\n(The PDF has {total} pages; these are the first {len(shown)}. Read others with "
                f'pages, such as pages="{len(shown) + 1}-{min(total, len(shown) + MAX_PDF_PAGES)}".)'
            )
        return ToolResult(text, summary=f"PDF, {len(shown)} of {total} page{'s' if total != 1 else ''}")
