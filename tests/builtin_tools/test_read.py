from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from piton.builtin_tools.read import Read
from piton.core.conversation.messages import Base64ImageSource, ImageBlock
from tests.builtin_tools.helpers import call, context, text
from tests.fakes.images import encoded

READ = Read()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


def test_lines_are_numbered_like_cat_n(ws: Path) -> None:
    (ws / "a.py").write_text("import os\n\nprint(os.sep)\n")
    result = call(READ, context(ws), file_path=str(ws / "a.py"))
    assert text(result) == "     1\timport os\n     2\t\n     3\tprint(os.sep)"
    assert not result.is_error and result.summary == "3 lines"


def test_relative_paths_start_at_the_working_directory(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x = 1\n")
    assert text(call(READ, context(ws), file_path="src/m.py")) == "     1\tx = 1"


def test_long_files_stop_at_2000_lines_with_a_note(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    out = text(call(READ, context(ws), file_path="big.txt"))
    lines = out.splitlines()
    assert lines[0] == "     1\tline 1" and lines[1999] == "  2000\tline 2000"
    assert out.endswith("(The file continues after line 2000. Read on with offset=2001.)")


def test_offset_and_limit_pick_a_range(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = text(call(READ, context(ws), file_path="big.txt", offset=50, limit=3))
    assert out.splitlines()[:3] == ["    50\tline 50", "    51\tline 51", "    52\tline 52"]
    assert "offset=53" in out
    past = call(READ, context(ws), file_path="big.txt", offset=500)
    assert past.is_error and text(past) == "The file has 100 lines; offset 500 is past the end."


def test_overlong_lines_are_cut(ws: Path) -> None:
    (ws / "min.js").write_text("x" * 5000 + "\nshort\n")
    first, second = text(call(READ, context(ws), file_path="min.js")).splitlines()
    assert first == "     1\t" + "x" * 2000 + "… [line cut: 5,000 characters]"
    assert second == "     2\tshort"


@pytest.mark.parametrize(
    ("kind", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_images_come_back_as_image_blocks(ws: Path, kind: str, media_type: str) -> None:
    data = encoded(kind)
    (ws / "pic").write_bytes(data)
    result = call(READ, context(ws), file_path="pic")
    assert isinstance(result.content, list), result.content
    [block] = result.content
    assert isinstance(block, ImageBlock) and isinstance(block.source, Base64ImageSource)
    assert block.source.media_type == media_type
    assert base64.b64decode(block.source.data) == data


def test_binary_files_are_refused_clearly(ws: Path) -> None:
    (ws / "lib.so").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    result = call(READ, context(ws), file_path="lib.so")
    assert (
        result.is_error
        and text(result) == f"{ws / 'lib.so'} is a binary file (264 bytes); Read shows only text and images."
    )


def test_a_missing_file_is_an_error_with_near_names(ws: Path) -> None:
    (ws / "config.yaml").write_text("a: 1\n")
    result = call(READ, context(ws), file_path="config.yml")
    assert (
        result.is_error
        and text(result) == f"File does not exist: {ws / 'config.yml'}. Did you mean: {ws / 'config.yaml'}?"
    )


def test_directories_and_empty_files(ws: Path) -> None:
    (ws / "empty").write_text("")
    assert text(call(READ, context(ws), file_path="empty")) == "(the file is empty)"
    result = call(READ, context(ws), file_path=str(ws))
    assert result.is_error and "is a directory" in text(result)


def test_other_encodings_and_line_endings_read_as_text(ws: Path) -> None:
    (ws / "u16.txt").write_bytes("héllo\nwörld\n".encode("utf-16"))
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (ws / "bom.txt").write_bytes("\ufefftitle\n".encode())
    assert text(call(READ, context(ws), file_path="u16.txt")) == "     1\théllo\n     2\twörld"
    assert text(call(READ, context(ws), file_path="latin.txt")) == "     1\tcafé"
    assert text(call(READ, context(ws), file_path="crlf.txt")) == "     1\tone\n     2\ttwo"
    assert text(call(READ, context(ws), file_path="bom.txt")) == "     1\ttitle"


def test_credentials_are_not_read(ws: Path) -> None:
    ssh = Path.home() / ".ssh"
    ssh.mkdir(exist_ok=True)
    (ssh / "id_rsa").write_text("PRIVATE KEY")
    result = call(READ, context(ws), file_path="~/.ssh/id_rsa")
    assert result.is_error and "credential files" in text(result) and "PRIVATE" not in text(result)
    (ws / ".env").write_text("API_KEY=x\n")
    assert "environment files" in text(call(READ, context(ws), file_path=".env"))


def test_fifos_and_devices_are_refused_not_waited_on(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    result = call(READ, context(ws), file_path="pipe")
    assert result.is_error and "is a FIFO" in text(result)
    device = call(READ, context(ws), file_path="/dev/zero")
    assert device.is_error and "is a device" in text(device)


def test_a_gigantic_line_is_cut_without_reading_it_whole(ws: Path) -> None:
    with (ws / "one-line.json").open("wb") as f:
        f.write(b"[" + b"1," * 3_000_000 + b"1]\nsecond\n")
    first, second = text(call(READ, context(ws), file_path="one-line.json")).splitlines()
    assert first.startswith("     1\t[1,1,") and first.endswith("… [line cut: about 6,000,003 bytes]")
    assert second == "     2\tsecond"


def test_offsets_count_lines_exactly_with_or_without_a_final_newline(ws: Path) -> None:
    (ws / "no-eol.txt").write_text("one\ntwo\nthree")
    assert text(call(READ, context(ws), file_path="no-eol.txt", offset=3)) == "     3\tthree"
    past = call(READ, context(ws), file_path="no-eol.txt", offset=5)
    assert text(past) == "The file has 3 lines; offset 5 is past the end."
    (ws / "big.txt").write_bytes(b"".join(b"row %d\n" % i for i in range(1, 300_001)))
    assert text(call(READ, context(ws), file_path="big.txt", offset=250_000, limit=1)).startswith(
        "250000\trow 250000"
    )


def test_a_huge_sparse_file_is_read_only_as_far_as_the_answer_needs(ws: Path) -> None:
    """16 KB of text, then 2 GiB of a hole: Read shows the text and stops at the endless line, and an
    offset past what it scans is an error that says what to do, both without reading 2 GiB."""
    big = ws / "sparse.log"
    with big.open("wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(1, 1801)))
        f.truncate(2 * 1024**3)
    out = text(call(Read(), context(ws), file_path=str(big)))
    assert "     1\tline 1" in out and "over 64 MiB" in out and "Read goes no further" in out
    far = call(Read(), context(ws), file_path=str(big), offset=5000)
    assert far.is_error and "sed -n '5000," in text(far)


def test_what_a_client_is_told_counts_the_lines_as_claude_code_does(ws: Path) -> None:
    (ws / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    part = call(READ, context(ws), file_path="ten.txt", offset=4, limit=3).data
    assert part == {
        "type": "text",
        "file": {
            "filePath": "ten.txt",
            "content": "line 4\nline 5\nline 6\n",
            "numLines": 4,  # the text's line ends plus one, as Claude Code counts
            "startLine": 4,
            "totalLines": 11,
        },
    }
    whole = call(READ, context(ws), file_path=str(ws / "ten.txt")).data
    assert whole is not None and whole["file"]["totalLines"] == 11 and whole["file"]["numLines"] == 11


def test_a_utf16_file_or_a_cut_line_is_told_line_by_line(ws: Path) -> None:
    (ws / "wide.txt").write_bytes("a\nb\nc\n".encode("utf-16"))
    whole = call(READ, context(ws), file_path="wide.txt").data
    assert whole is not None and whole["file"]["content"] == "a\nb\nc\n" and whole["file"]["totalLines"] == 4
    first = call(READ, context(ws), file_path="wide.txt", limit=1).data
    assert first is not None and (first["file"]["content"], first["file"]["totalLines"]) == ("a\n", 4)
    (ws / "long.txt").write_text("x" * 300_000 + "\nnext\n")
    cut = call(READ, context(ws), file_path="long.txt").data
    assert cut is not None and cut["file"]["content"].split("\n")[1:] == ["next", ""]
