"""What the file tools share: resolving paths, telling text from binary, keeping a file's encoding,
remembering what was read, numbering lines and showing diffs."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import stat
from abc import abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from piton.core.conversation.messages import valid_text
from piton.core.records import record
from piton.core.safety import pinned
from piton.core.safety.policy import PolicyError, SandboxPolicy, real
from piton.core.tools import InputT, Tool, ToolContext, ToolKind, ToolResult

MAX_LINE_CHARS = 2_000
SNIFF_BYTES = 8_192
_ESCAPED = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")  # a byte of a name that is not UTF-8, as shown
_READS = "files_read"  # ToolContext.state key: real path -> FileStamp at the last read or write


def policy_of(ctx: ToolContext) -> SandboxPolicy:
    if ctx.policy is None:  # a context built without one (tests of other parts) gets the default
        ctx.policy = SandboxPolicy.create("workspace-write", ctx.cwd)
    return ctx.policy


def resolve(ctx: ToolContext, file_path: str) -> Path:
    """An absolute path: `~` expanded, relative paths taken from the project directory. A name that
    is not UTF-8, as Glob and Grep show it (`name_\\xff.txt`), is the file of those bytes when no
    file has the name as written."""
    if "\0" in file_path:
        raise PolicyError(f"The path {file_path!r} holds a NUL byte; no file has such a name.")
    path = Path(os.path.expanduser(file_path))
    path = path if path.is_absolute() else ctx.cwd / path
    if "\\x" in file_path and not os.path.lexists(path):
        raw = _ESCAPED.sub(lambda m: chr(0xDC00 + int(m[1], 16)), str(path))
        if os.path.lexists(raw):
            return Path(raw)
    return path


def readable(ctx: ToolContext, file_path: str) -> Path:
    """The real path behind `file_path` if policy lets the model read it; raises PolicyError.
    A check only: open what it returns with `open_readable`, never by name."""
    return policy_of(ctx).check_read(resolve(ctx, file_path))


def writable(ctx: ToolContext, file_path: str) -> Path:
    return policy_of(ctx).check_write(resolve(ctx, file_path))


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def require_regular(path: Path, st: os.stat_result) -> None:
    """Refuse FIFOs, devices and sockets: reading one can block forever."""
    if not stat.S_ISREG(st.st_mode):
        raise PolicyError(f"{path} is {_kind(st.st_mode)}; only regular files can be read or changed.")


@record(frozen=True)
class Opened:
    """A file opened for reading through the path that was checked, and what it is."""

    fd: int
    path: Path  # the real path
    st: os.stat_result

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    def read(self) -> bytes:
        return pinned.read_all(self.fd)


@contextmanager
def open_readable(ctx: ToolContext, file_path: str) -> Iterator[Opened]:
    """`file_path` opened for reading if the policy lets the model read it: the path is checked and
    the very same path opened with no symbolic link followed, so a folder swapped for a symlink in
    between cannot lead elsewhere. Raises PolicyError, FileNotFoundError or PathChanged."""
    path = readable(ctx, file_path)
    st = os.stat(path)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        require_regular(path, st)  # never open a FIFO or a device: that alone can block or act
    fd = pinned.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        opened = Opened(fd, path, os.fstat(fd))
        if not opened.is_dir:
            require_regular(path, opened.st)
            os.set_blocking(fd, True)
        policy_of(ctx).check_privilege(path, opened.st)
        yield opened
    finally:
        os.close(fd)


def before_change(ctx: ToolContext, path: Path, existing: tuple[bytes, os.stat_result] | None) -> None:
    """The turn's checkpoint keeps what `path` held before the turn first changed it."""
    if ctx.checkpoints is not None:
        ctx.checkpoints.before_change(path, existing[0] if existing is not None else None)


def after_change(ctx: ToolContext, path: Path, data: bytes) -> None:
    if ctx.checkpoints is not None:
        ctx.checkpoints.after_change(path, data)


def read_existing(path: Path) -> tuple[bytes, os.stat_result] | None:
    """The bytes and status of the file at the real path `path` (opened without following links),
    or None when there is none. Raises PolicyError for a directory or a special file."""
    try:
        fd = pinned.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        require_regular(path, st)
        os.set_blocking(fd, True)
        return pinned.read_all(fd), st
    finally:
        os.close(fd)


def describe_os_error(path: str, e: OSError) -> str:
    if isinstance(e, pinned.PathChanged):
        return f"{e.strerror or e}; nothing was read or written. Try again."
    return f"Cannot access {path}: {e.strerror or e}."


class PathTool(Tool[InputT]):
    """A tool that works on one path: permission rules match the path's real location."""

    kind: ToolKind = "read"

    def rule_content(self, args: InputT, ctx: ToolContext) -> str | None:
        given = (
            getattr(args, "file_path", None)
            or getattr(args, "notebook_path", None)
            or getattr(args, "path", None)
            or "."
        )
        return str(real(resolve(ctx, given)))


class FileTool(PathTool[InputT]):
    """A path tool whose work is file IO: it runs on a worker thread, so concurrent calls overlap
    and the event loop stays free for interrupts, and never while a command that can write runs."""

    async def run(self, args: InputT, ctx: ToolContext) -> ToolResult:
        async with ctx.lock.shared():
            work = asyncio.ensure_future(asyncio.to_thread(self._run_sync, args, ctx))
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                # the thread cannot be stopped: keep the lock until its IO is over
                with contextlib.suppress(BaseException):
                    await work
                raise

    def _run_sync(self, args: InputT, ctx: ToolContext) -> ToolResult:
        try:
            result = self.run_sync(args, ctx)
            if self.read_only or result.is_error or not isinstance(result.content, str):
                return result
            note = ctx.agents.wrote(self.rule_content(args, ctx) or "", ctx.session_id)
            return result if note is None else replace(result, content=f"{result.content}\n\n{note}")
        except PolicyError as e:
            return ToolResult.error(str(e))
        except OSError as e:
            return ToolResult.error(describe_os_error(str(getattr(args, "file_path", "")), e))

    @abstractmethod
    def run_sync(self, args: InputT, ctx: ToolContext) -> ToolResult: ...


# -- text and binary ------------------------------------------------------------------------------


@record(frozen=True)
class Encoding:
    """How a file's bytes become text and back, byte for byte: a codec, the BOM it starts with, and
    how undecodable bytes are carried (surrogateescape keeps stray bytes in a UTF-8 file)."""

    codec: str
    bom: bytes = b""
    errors: str = "strict"

    @property
    def name(self) -> str:
        """The encoding as people call it."""
        return "Latin-1 (ISO-8859-1)" if self.codec == "latin-1" else self.codec.upper()

    def decode(self, data: bytes) -> str:
        return data[len(self.bom) :].decode(self.codec, self.errors)

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.codec, self.errors)


UTF8 = Encoding("utf-8")
_BOMS = (
    (codecs.BOM_UTF8, Encoding("utf-8", codecs.BOM_UTF8)),
    (codecs.BOM_UTF16_LE, Encoding("utf-16-le", codecs.BOM_UTF16_LE)),
    (codecs.BOM_UTF16_BE, Encoding("utf-16-be", codecs.BOM_UTF16_BE)),
)


def bom_encoding(head: bytes) -> Encoding | None:
    return next((enc for bom, enc in _BOMS if head.startswith(bom)), None)


def looks_binary(head: bytes) -> bool:
    """NUL bytes outside a UTF-16 file mean binary data, as git and grep judge it."""
    encoding = bom_encoding(head)
    return (encoding is None or not encoding.codec.startswith("utf-16")) and b"\x00" in head


def _mostly_utf8(data: bytes) -> bool:
    """Whether undecodable bytes are strays in UTF-8 text rather than a single-byte encoding: in
    UTF-8 text with stray bytes, valid multi-byte characters are at least as many as the strays;
    Latin-1 or cp1252 text forms one only by accident (`É` then a no-break space reads as `à`),
    among many bytes that are not UTF-8. Counted at C speed: a file may be large."""
    text = data.decode("utf-8", "surrogateescape")
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    strays = len(text) - len(text.encode("utf-8", "ignore").decode("utf-8"))  # the lone surrogates
    return non_ascii - strays >= strays


def detect(data: bytes) -> Encoding:
    """The encoding that gives back the same bytes: a BOM's codec, else UTF-8 (stray bytes kept),
    else Latin-1 (which maps every byte, so an edit keeps bytes it does not touch)."""
    encoding = bom_encoding(data[:4])
    if encoding is not None:
        return encoding
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return Encoding("utf-8", errors="surrogateescape") if _mostly_utf8(data) else Encoding("latin-1")
    return UTF8


def decode(data: bytes) -> tuple[str, Encoding]:
    encoding = detect(data)
    return encoding.decode(data), encoding


def decode_line(raw: bytes, encoding: Encoding | None = None) -> str:
    """One line for display, in the file's `encoding` when it is known (so that what the model sees
    is what Edit will match), else UTF-8 where it is and a readable stand-in where it is not.
    Undecodable bytes show as U+FFFD."""
    if encoding is not None:
        return raw.decode(encoding.codec, "replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace") if _mostly_utf8(raw) else raw.decode("latin-1")


# -- what was read --------------------------------------------------------------------------------


@record(frozen=True)
class FileStamp:
    mtime_ns: int
    size: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_mtime_ns, st.st_size, st.st_ino)


@record
class Seen:
    """What the model last saw of a file, and what an edit needs to give it back byte for byte."""

    stamp: FileStamp
    encoding: Encoding | None = None  # known once the whole file was decoded
    style: str | None = None  # its line endings as last known ("\n", "\r\n", "mixed")
    removed: tuple[str, ...] = ()  # text edits took out, exactly (the last few)


_KEEP_REMOVED = 8


def remember(
    ctx: ToolContext,
    path: Path,
    st: os.stat_result,
    *,
    encoding: Encoding | None = None,
    style: str | None = None,
    removed: str | None = None,
    edited: bool = False,
) -> None:
    """Note that the model has seen the file at the real path `path` as it was at `st` (taken
    before reading, so a change made while it was read counts as unseen), or has just `edited` it
    into that state. What is known of its encoding, line endings and removed text is kept while the
    file is the one it was known of."""
    seen: dict[str, Seen] = ctx.state.setdefault(_READS, {})
    stamp = FileStamp.of(st)
    before = seen.get(str(path))
    record = Seen(stamp)
    if before is not None and (before.stamp == stamp or edited):
        record = Seen(stamp, before.encoding, before.style, before.removed)
    if encoding is not None and (edited or record.encoding is None):  # a read only detects it
        record.encoding = encoding
    record.style = style or record.style
    if removed:
        record.removed = (*record.removed, removed)[-_KEEP_REMOVED:]
    seen[str(path)] = record


def require_fresh_read(ctx: ToolContext, path: Path, st: os.stat_result, verb: str) -> Seen:
    """What the model saw of the file at `path`, now at `st`; raises PolicyError unless it was read
    in this session and has not changed since."""
    record: Seen | None = ctx.state.get(_READS, {}).get(str(path))
    if record is None:
        raise PolicyError(f"Read {path} before you {verb} it: it has not been read in this session.")
    if record.stamp != FileStamp.of(st):
        raise PolicyError(f"{path} was modified since read, read it again before you {verb} it.")
    return record


def not_read_yet(ctx: ToolContext, file_path: str, verb: str) -> str | None:
    """Why `file_path` cannot be changed yet (not readable or writable here, or not read since it last
    changed), asked before the user is: an approval the call would not use is never sought. A
    file that does not exist needs no read; the tool checks again, on what it opens, when it runs."""
    try:
        path = writable(ctx, file_path)
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):  # else the tool says what it is
            require_fresh_read(ctx, path, st, verb)
    except PolicyError as e:
        return str(e)
    except OSError:
        pass
    return None


def decode_seen(data: bytes, seen: Seen) -> tuple[str, Encoding]:
    """The file's text in the encoding it was known to have (a Latin-1 file whose last accented
    letter an edit removed is still Latin-1), else as detected."""
    if seen.encoding is not None:
        try:
            return seen.encoding.decode(data), seen.encoding
        except UnicodeDecodeError:
            pass
    return decode(data)


# -- showing text ---------------------------------------------------------------------------------


def numbered(line: str, number: int) -> str:
    """One line as `cat -n` shows it, cut at MAX_LINE_CHARS."""
    if len(line) > MAX_LINE_CHARS:
        line = f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} characters]"
    return f"{number:>6}\t{line}"


def lines_of(text: str) -> list[str]:
    """Lines as Read numbers them: split at \\n only (a form feed or a lone \\r is not a line end)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def snippet(text: str, index: int, span: int, context: int = 3) -> str:
    """Numbered lines around text[index:index+span], to show the model what an edit left behind."""
    lines = lines_of(text)
    first = text.count("\n", 0, index)
    last = first + text.count("\n", index, index + span)
    start, end = max(0, first - context), min(len(lines), last + context + 1)
    return valid_text("\n".join(numbered(lines[i], i + 1) for i in range(start, end)))
