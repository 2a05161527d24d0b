"""Edit, fuzzed: files in every encoding and line-ending style Piton keeps, edited the way a model
edits them (old_string copied from what Read showed), then edited back. The bytes must come back
exactly, every result must be loggable text, and a failed edit must leave the file untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from piton.builtin_tools.edit import Edit
from piton.builtin_tools.files import decode
from piton.builtin_tools.read import Read
from piton.core.conversation.messages import Message
from piton.core.conversation.session import SessionLog
from piton.core.display import FileDiff
from piton.core.tools import ToolResult
from tests.builtin_tools.helpers import call, context

ENDINGS = {"lf": ["\n"], "crlf": ["\r\n"], "mixed": ["\n", "\r\n"]}
WORDS = ["a", "b", "x", "yy", " ", "é", "ü", "€", "日本", "\t", "z"]
LATIN1_WORDS = [w for w in WORDS if w not in ("€", "日本")]
STRAY = [b"\xff", b"\xe9", b"\x80\x81", b"\xc3"]  # bytes that are not UTF-8 where they stand


# strategies made once: hypothesis validates a strategy the first time it draws from it
KINDS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1", "utf-8+stray"])
STYLES = st.sampled_from(sorted(ENDINGS))
LINES = {
    latin: st.lists(st.sampled_from(LATIN1_WORDS if latin else WORDS), max_size=6) for latin in (True, False)
}
NEWLINES = {style: st.sampled_from(endings) for style, endings in ENDINGS.items()}
STRAYS = st.sampled_from(STRAY)


@st.composite
def files(draw: st.DrawFn) -> tuple[bytes, str]:
    """A file's bytes, and how it was made (for the failure message)."""
    kind = draw(KINDS)
    style = draw(STYLES)
    codec = {"utf-16": "utf-16-le", "latin-1": "latin-1"}.get(kind, "utf-8")
    count = draw(st.integers(1, 7))
    out = bytearray()
    for number in range(count):
        line = "".join(draw(LINES[kind == "latin-1"]))
        data = line.encode(codec)
        if kind == "utf-8+stray" and draw(st.booleans()):
            cut = draw(st.integers(0, len(data)))
            data = data[:cut] + draw(STRAYS) + data[cut:]
        last = number == count - 1
        ending = "" if last and draw(st.booleans()) else draw(NEWLINES[style])
        out += data + ending.encode(codec)
    if kind == "utf-16":
        return "\ufeff".encode("utf-16-le") + bytes(out), f"{kind} {style}"
    if kind == "utf-8-sig":
        return b"\xef\xbb\xbf" + bytes(out), f"{kind} {style}"
    return bytes(out), f"{kind} {style}"


def shown_lines(result: ToolResult) -> list[str]:
    """The lines of a file as Read showed them, without the line-number prefix."""
    assert isinstance(result.content, str)
    if result.content == "(the file is empty)":
        return []
    return [re.sub(r"^ *\d+\t", "", line, count=1) for line in result.content.split("\n")]


def positions(path: Path, needle: str) -> int:
    """Where `needle` starts in the file as the model knows it (the lines Read shows, and a last
    newline if there is one), overlapping places included."""
    text = decode(path.read_bytes())[0].replace("\r\n", "\n")
    return sum(text.startswith(needle, i) for i in range(len(text)))


def loggable(result: ToolResult, tmp: Path) -> None:
    """What a tool returns must be valid text for the session log and for the terminal."""
    message = Message(role="user", content=[result.to_block("toolu_1")])
    json.dumps(message.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    if isinstance(result.display, FileDiff):
        result.display.diff.encode("utf-8")
    log = SessionLog(tmp / "log.jsonl", "s")
    try:
        log.append_message(message)
    finally:
        log.close()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(
    file=files(),
    span=st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 6), st.integers(0, 6)),
    replacement=st.lists(st.sampled_from([*WORDS, "\n", "q"]), min_size=0, max_size=8),
)
def test_an_edit_and_its_reverse_give_back_the_same_bytes(
    tmp_path: Path, file: tuple[bytes, str], span: tuple[int, int, int, int], replacement: list[str]
) -> None:
    data, made = file
    target = tmp_path / "f.txt"
    target.write_bytes(data)
    ctx = context(tmp_path)
    read = call(Read(), ctx, file_path=str(target))
    loggable(read, tmp_path)
    lines = shown_lines(read)
    assume(lines)
    first, count, cut_start, cut_end = span
    first %= len(lines)
    chosen = lines[first : first + 1 + count % 3]
    old = "\n".join(chosen)
    old = old[cut_start % (len(old) + 1) :]
    old = old[: len(old) - cut_end % (len(old) + 1)] if cut_end else old
    new = "".join(replacement)
    assume(old and old != new and positions(target, old) == 1)

    forward = call(Edit(), ctx, file_path=str(target), old_string=old, new_string=new)
    loggable(forward, tmp_path)
    if forward.is_error:  # a span of what Read showed is found; it may not be unique or encodable
        refusal = str(forward.content)
        assert "occurs" in refusal or "Latin-1 (ISO-8859-1), which cannot hold" in refusal, (
            made,
            old,
            refusal,
        )
        assert target.read_bytes() == data
        return
    # undoing needs new_string at one place only (an empty one cannot be searched for at all)
    assume(new and positions(target, new) == 1)
    back = call(Edit(), ctx, file_path=str(target), old_string=new, new_string=old)
    loggable(back, tmp_path)
    assert not back.is_error, (made, old, new, back.content)
    assert target.read_bytes() == data, (made, old, new)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=files(), needle=st.lists(st.sampled_from([*WORDS, "\n", "\ufffd", "nomatch"]), min_size=1))
def test_a_refused_edit_leaves_the_file_byte_for_byte(
    tmp_path: Path, file: tuple[bytes, str], needle: list[str]
) -> None:
    data, _ = file
    target = tmp_path / "f.txt"
    target.write_bytes(data)
    ctx = context(tmp_path)
    call(Read(), ctx, file_path=str(target))
    result = call(Edit(), ctx, file_path=str(target), old_string="".join(needle) + "nomatch", new_string="x")
    loggable(result, tmp_path)
    assert result.is_error
    assert target.read_bytes() == data


@pytest.mark.parametrize(
    ("data", "old", "new"),
    [
        # a Latin-1 file whose only accented letter goes, then comes back: still Latin-1
        ("caf\xe9 au lait\n".encode("latin-1"), "café", "cafe"),
        # a CRLF file that loses its last newline, then gets it back: still CRLF
        (b"one\r\ntwo\r\n", "one\ntwo\n", "onetwo"),
        # mixed endings, an edit across both kinds, then undone
        (b"a\r\nb\nc\r\n", "a\nb\nc", "abc"),
        # mixed endings, lines added where the line ends in \r\n, then removed
        (b"x\ny\r\nz\n", "y", "y\ninserted"),
        # a stray byte in a UTF-8 file, in the text the model edits
        (
            "ünï \xff code\n".encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"),
            "\ufffd code",
            "\ufffd text",
        ),
    ],
    ids=["latin-1-to-ascii", "crlf-last-newline", "mixed-across", "mixed-insert", "stray-byte"],
)
def test_known_round_trips(tmp_path: Path, data: bytes, old: str, new: str) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(data)
    ctx = context(tmp_path)
    call(Read(), ctx, file_path=str(target))
    forward = call(Edit(), ctx, file_path=str(target), old_string=old, new_string=new)
    assert not forward.is_error, forward.content
    assert target.read_bytes() != data
    back = call(Edit(), ctx, file_path=str(target), old_string=new, new_string=old)
    assert not back.is_error, back.content
    assert target.read_bytes() == data
