"""What the file tools share: resolving paths, telling text from binary, keeping a file's encoding,
remembering what was read, numbering lines and showing diffs."""

from __future__ import annotations

import codecs
import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from core.policy import PolicyError, SandboxPolicy
from core.tools import ToolContext

MAX_LINE_CHARS = 2_000
SNIFF_BYTES = 8_192
_READS = "files_read"  # ToolContext.state key: real path -> FileStamp at the last read or write


def policy_of(ctx: ToolContext) -> SandboxPolicy:
    if ctx.policy is None:  # a context built without one (tests of other parts) gets the default
        ctx.policy = SandboxPolicy.create("workspace-write", ctx.cwd)
    return ctx.policy


def resolve(ctx: ToolContext, file_path: str) -> Path:
    """An absolute path: `~` expanded, relative paths taken from the working directory."""
    path = Path(os.path.expanduser(file_path))
    return path if path.is_absolute() else ctx.cwd / path


def readable(ctx: ToolContext, file_path: str) -> Path:
    """The real path behind `file_path` if policy lets the model read it; raises PolicyError."""
    return policy_of(ctx).check_read(resolve(ctx, file_path))


def writable(ctx: ToolContext, file_path: str) -> Path:
    return policy_of(ctx).check_write(resolve(ctx, file_path))


# -- text and binary ------------------------------------------------------------------------------

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(head: bytes) -> str | None:
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def bom_encoding(head: bytes) -> str | None:
    return next((enc for bom, enc in _BOMS if head.startswith(bom)), None)


def looks_binary(head: bytes) -> bool:
    """NUL bytes outside a UTF-16 file mean binary data, as git and grep judge it."""
    return bom_encoding(head) != "utf-16" and b"\x00" in head


def decode(data: bytes) -> tuple[str, str]:
    """The text and the codec that gives back the same bytes: a BOM's codec, else UTF-8, else
    Latin-1 (which maps every byte, so an edit keeps bytes it does not touch)."""
    encoding = bom_encoding(data[:4])
    if encoding:
        return data.decode(encoding), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def decode_line(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# -- what was read --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileStamp:
    mtime_ns: int
    size: int

    @classmethod
    def of(cls, path: Path) -> FileStamp:
        st = path.stat()
        return cls(st.st_mtime_ns, st.st_size)


def remember(ctx: ToolContext, path: Path) -> None:
    """Note that the model has seen `path` as it now is on disk."""
    ctx.state.setdefault(_READS, {})[str(path)] = FileStamp.of(path)


def require_fresh_read(ctx: ToolContext, path: Path, verb: str) -> None:
    """Raise PolicyError unless `path` was read in this session and has not changed since."""
    stamp = ctx.state.get(_READS, {}).get(str(path))
    if stamp is None:
        raise PolicyError(f"Read {path} before you {verb} it: it has not been read in this session.")
    if stamp != FileStamp.of(path):
        raise PolicyError(f"{path} was modified since read, read it again before you {verb} it.")


# -- showing text ---------------------------------------------------------------------------------


def numbered(line: str, number: int) -> str:
    """One line as `cat -n` shows it, cut at MAX_LINE_CHARS."""
    if len(line) > MAX_LINE_CHARS:
        line = f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} characters]"
    return f"{number:>6}\t{line}"


def unified_diff(path: Path, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a{path}", f"b{path}", n=3
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def snippet(text: str, index: int, span: int, context: int = 3) -> str:
    """Numbered lines around text[index:index+span], to show the model what an edit left behind."""
    lines = text.splitlines()
    first = text.count("\n", 0, index)
    last = first + text.count("\n", index, index + span)
    start, end = max(0, first - context), min(len(lines), last + context + 1)
    return "\n".join(numbered(lines[i], i + 1) for i in range(start, end))
