from __future__ import annotations

import asyncio
import codecs
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from piton.builtin_tools.edit import Edit
from piton.builtin_tools.read import Read
from piton.builtin_tools.write import Write
from piton.core.conversation.messages import ToolUseBlock
from piton.core.display import FileDiff
from piton.core.tools import AnyTool, Call, ToolContext, ToolRegistry, ToolResult
from tests.builtin_tools.helpers import call, context, text

READ, WRITE, EDIT = Read(), Write(), Edit()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return root


def diff_of(result: ToolResult) -> str:
    assert isinstance(result.display, FileDiff)
    return result.display.diff


def read(ctx: ToolContext, path: Path) -> None:
    assert not call(READ, ctx, file_path=str(path)).is_error


# -- Write ----------------------------------------------------------------------------------------


def test_write_creates_a_file_and_its_directories_with_a_diff(ws: Path) -> None:
    result = call(WRITE, context(ws), file_path="pkg/sub/mod.py", content="x = 1\ny = 2\n")
    assert (ws / "pkg" / "sub" / "mod.py").read_text() == "x = 1\ny = 2\n"
    assert text(result) == f"Created {ws.resolve() / 'pkg/sub/mod.py'} (2 lines)."
    diff = diff_of(result)
    assert diff.startswith("--- /dev/null\n+++ b/pkg/sub/mod.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"), diff


def test_a_diff_names_the_file_as_git_does(ws: Path, tmp_path: Path) -> None:
    """In the project: a/ and b/ before its path there; outside it (an added folder): its absolute
    path; a file the change creates: /dev/null before it."""
    elsewhere = tmp_path / "outside"
    ctx = context(ws, extra_dirs=(elsewhere,))
    (ws / "m.py").write_text("x = 1\n")
    read(ctx, ws / "m.py")
    edited = call(EDIT, ctx, file_path=str(ws / "m.py"), old_string="x = 1", new_string="x = 2")
    assert diff_of(edited).startswith("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    made = call(EDIT, ctx, file_path=str(elsewhere / "n.py"), old_string="", new_string="y\n")
    real = elsewhere.resolve() / "n.py"
    assert diff_of(made).startswith(f"--- /dev/null\n+++ {real}\n@@ -0,0 +1 @@\n+y\n")
    read(ctx, real)
    rewritten = call(WRITE, ctx, file_path=str(real), content="z\n")
    assert diff_of(rewritten).startswith(f"--- {real}\n+++ {real}\n@@ -1 +1 @@\n-y\n+z\n")


def test_overwriting_needs_a_read_first_and_a_fresh_one(ws: Path) -> None:
    target = ws / "a.txt"
    target.write_text("old\n")
    ctx = context(ws)
    refused = call(WRITE, ctx, file_path="a.txt", content="new\n")
    assert refused.is_error and "has not been read" in text(refused)
    assert target.read_text() == "old\n"
    read(ctx, target)
    target.write_text("changed by someone else\n")
    os.utime(target, ns=(1, 1))
    stale = call(WRITE, ctx, file_path="a.txt", content="new\n")
    assert stale.is_error and "modified since read, read it again" in text(stale)
    read(ctx, target)
    done = call(WRITE, ctx, file_path="a.txt", content="new\n")
    assert not done.is_error and target.read_text() == "new\n"
    assert "-changed by someone else\n+new\n" in diff_of(done)


@pytest.mark.parametrize("target", ["../outside/x.txt", "/etc/piton-test", ".git/hooks/pre-commit"])
def test_write_refuses_paths_outside_or_protected(ws: Path, target: str) -> None:
    result = call(WRITE, context(ws), file_path=target, content="#!/bin/sh\n")
    assert result.is_error
    assert not (ws / target).exists()


def test_write_refuses_through_a_symlink_that_points_out(ws: Path) -> None:
    (ws / "escape").symlink_to(ws.parent / "outside")
    result = call(WRITE, context(ws), file_path="escape/x.txt", content="x")
    assert result.is_error and "outside the writable directories" in text(result)
    assert not (ws.parent / "outside" / "x.txt").exists()


def test_write_in_a_read_only_sandbox_is_refused(ws: Path) -> None:
    result = call(WRITE, context(ws, "read-only"), file_path="a.txt", content="x")
    assert result.is_error and "read-only" in text(result)


def test_write_keeps_a_files_encoding(ws: Path) -> None:
    target = ws / "latin.txt"
    target.write_bytes("caf\xe9\n".encode("latin-1"))
    ctx = context(ws)
    read(ctx, target)
    call(WRITE, ctx, file_path="latin.txt", content="déjà vu\n")
    assert target.read_bytes() == "déjà vu\n".encode("latin-1")


# -- Edit -----------------------------------------------------------------------------------------


def edit_file(ws: Path, content: bytes, **edit: object) -> tuple[Path, ToolResult]:
    target = ws / "f.txt"
    target.write_bytes(content)
    ctx = context(ws)
    read(ctx, target)
    return target, call(EDIT, ctx, file_path=str(target), **edit)


def test_edit_replaces_a_unique_string_and_shows_the_result(ws: Path) -> None:
    target, result = edit_file(
        ws, b"def f():\n    return 1\n\nprint(f())\n", old_string="return 1", new_string="return 2"
    )
    assert target.read_text() == "def f():\n    return 2\n\nprint(f())\n"
    assert not result.is_error
    assert "     2\t    return 2" in text(result)
    assert "-    return 1\n+    return 2\n" in diff_of(result)


def test_edit_not_found_names_the_count_and_the_nearest_text(ws: Path) -> None:
    target, result = edit_file(
        ws, b"alpha = 1\nbeta = 2\ngamma = 3\n", old_string="beta =  2", new_string="beta = 3"
    )
    message = text(result)
    assert "was not found" in message and "(0 matches)" in message
    assert "near line 2" in message and "     2\tbeta = 2" in message
    assert target.read_bytes() == b"alpha = 1\nbeta = 2\ngamma = 3\n"


def test_edit_of_a_repeated_string_needs_context_or_replace_all(ws: Path) -> None:
    content = b"x = 1\ny = 1\nx = 1\n"
    target, result = edit_file(ws, content, old_string="x = 1", new_string="x = 2")
    assert "occurs 2 times" in text(result) and "lines 1, 3" in text(result)
    assert target.read_bytes() == content
    target, result = edit_file(ws, content, old_string="x = 1", new_string="x = 2", replace_all=True)
    assert target.read_text() == "x = 2\ny = 1\nx = 2\n"
    assert result.summary == "2 replacements"


@pytest.mark.parametrize(
    ("content", "old"),
    [(b"x aaa y\n", "aa"), ("a\x85\x85\x85b\n".encode("utf-16"), "\x85\x85")],
    ids=["aaa", "utf-16"],
)
def test_overlapping_occurrences_are_not_unique(ws: Path, content: bytes, old: str) -> None:
    """`aa` starts at two places in `aaa`: which one is meant is not known, so nothing changes."""
    target, result = edit_file(ws, content, old_string=old, new_string="Z")
    assert result.is_error and "occurs 2 times" in text(result), text(result)
    assert target.read_bytes() == content


def test_edit_needs_a_fresh_read(ws: Path) -> None:
    target = ws / "f.txt"
    target.write_text("a\n")
    ctx = context(ws)
    assert "has not been read" in text(call(EDIT, ctx, file_path=str(target), old_string="a", new_string="b"))
    read(ctx, target)
    target.write_text("a and more\n")
    os.utime(target, ns=(5, 5))
    stale = call(EDIT, ctx, file_path=str(target), old_string="a", new_string="b")
    assert "modified since read, read it again" in text(stale)
    assert target.read_text() == "a and more\n"


def test_edit_keeps_crlf_line_endings(ws: Path) -> None:
    target, _ = edit_file(ws, b"one\r\ntwo\r\nthree\r\n", old_string="one\ntwo", new_string="uno\ndos")
    assert target.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


@pytest.mark.parametrize(
    ("bom", "codec"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (b"", "latin-1"),
    ],
)
def test_edit_keeps_the_encoding(ws: Path, bom: bytes, codec: str) -> None:
    original = "naïve café\nline two\n"
    target, _ = edit_file(ws, bom + original.encode(codec), old_string="café", new_string="crème")
    assert target.read_bytes() == bom + "naïve crème\nline two\n".encode(codec)


def test_edit_of_utf8_text_with_a_stray_byte_keeps_every_byte(ws: Path) -> None:
    original = "naïve\n".encode() + b"bad \xff byte\n" + "café\n".encode()
    target, result = edit_file(ws, original, old_string="café", new_string="crème brûlée")
    assert not result.is_error, text(result)
    assert target.read_bytes() == "naïve\n".encode() + b"bad \xff byte\n" + "crème brûlée\n".encode()


def test_edit_in_a_crlf_file_writes_crlf_even_for_a_one_line_match(ws: Path) -> None:
    target, _ = edit_file(ws, b"one\r\ntwo\r\n", old_string="two", new_string="two\nextra")
    assert target.read_bytes() == b"one\r\ntwo\r\nextra\r\n"


def test_edit_line_numbers_agree_with_read(ws: Path) -> None:
    content = b"a\x0cb\nc\rd\ne\n" + b"".join(b"line %d\n" % i for i in range(4, 10)) + b"target here\n"
    target, result = edit_file(ws, content, old_string="target here", new_string="changed")
    numbered = call(READ, context(ws), file_path=str(target)).content
    assert "    10\tchanged" in str(numbered)
    assert "    10\tchanged" in text(result)


def test_a_read_through_a_symlink_counts_for_the_real_file(ws: Path) -> None:
    (ws / "real.txt").write_text("x = 1\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    ctx = context(ws)
    read(ctx, ws / "alias.txt")
    result = call(EDIT, ctx, file_path=str(ws / "real.txt"), old_string="x = 1", new_string="x = 2")
    assert not result.is_error and (ws / "real.txt").read_text() == "x = 2\n"


def test_files_under_dot_git_are_never_written(ws: Path) -> None:
    for rel in (
        ".git/commondir",
        ".git/modules/sub/hooks/post-checkout",
        "sub/.git/hooks/pre-commit",
        ".git/HEAD",
    ):
        result = call(WRITE, context(ws), file_path=rel, content="x")
        assert result.is_error and ".git" in text(result), rel
        assert not (ws / rel).exists() or rel == ".git/HEAD"


def test_edit_refuses_what_the_encoding_cannot_hold(ws: Path) -> None:
    content = "caf\xe9\n".encode("latin-1")
    target, result = edit_file(ws, content, old_string="caf", new_string="カフェ")
    assert result.is_error and "is Latin-1 (ISO-8859-1), which cannot hold" in text(result)
    assert target.read_bytes() == content


def test_edit_with_equal_strings_or_an_empty_old_string_on_a_file(ws: Path) -> None:
    _, same = edit_file(ws, b"a\n", old_string="a", new_string="a")
    assert "the same" in text(same)
    _, empty = edit_file(ws, b"a\n", old_string="", new_string="b")
    assert "old_string is empty" in text(empty)


def test_edit_with_an_empty_old_string_creates_a_new_file(ws: Path) -> None:
    result = call(EDIT, context(ws), file_path="new/file.md", old_string="", new_string="# Title\n")
    assert not result.is_error and (ws / "new" / "file.md").read_text() == "# Title\n"
    missing = call(EDIT, context(ws), file_path="nope.md", old_string="x", new_string="y")
    assert missing.is_error and "does not exist" in text(missing)


def test_edit_refuses_protected_and_outside_paths(ws: Path) -> None:
    assert "outside" in text(call(EDIT, context(ws), file_path="../outside/x", old_string="", new_string="x"))
    assert call(
        EDIT, context(ws), file_path=".git/hooks/post-checkout", old_string="", new_string="x"
    ).is_error


# -- fuzz: an edit applies exactly, or leaves the file byte for byte -------------------------------

_alphabet = st.sampled_from(list("ab \n\r\tx=é"))
_texts = st.text(alphabet=_alphabet, max_size=40)
_SCHEMES = {  # how the file is stored: BOM + codec
    "utf-8": (b"", "utf-8"),
    "utf-8-sig": (codecs.BOM_UTF8, "utf-8"),
    "utf-16-le": (codecs.BOM_UTF16_LE, "utf-16-le"),
    "utf-16-be": (codecs.BOM_UTF16_BE, "utf-16-be"),
    "latin-1": (b"", "latin-1"),
}


def _stored(text_: str, scheme: str) -> bytes:
    bom, codec = _SCHEMES[scheme]
    return bom + text_.encode(codec)


def _as_crlf(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\n", "\r\n")


def _occurrences(text: str, part: str) -> int:
    """How often `part` starts in `text`, overlapping places included (as Edit counts them)."""
    return sum(text.startswith(part, i) for i in range(len(text)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=_texts,
    start=st.integers(0, 40),
    length=st.integers(0, 8),
    random_old=_texts,
    use_substring=st.booleans(),
    new=_texts,
    replace_all=st.booleans(),
    scheme=st.sampled_from(sorted(_SCHEMES)),
)
# found by the search: overlapping places are not unique; the exact text is edited where it stands
@example(
    content="===",
    start=0,
    length=2,
    random_old="",
    use_substring=True,
    new="",
    replace_all=False,
    scheme="latin-1",
)
@example(
    content="===\n\r\n\n",
    start=4,
    length=3,
    random_old="",
    use_substring=True,
    new="=",
    replace_all=False,
    scheme="latin-1",
)
def test_edit_applies_exactly_or_changes_nothing(
    tmp_path: Path,
    content: str,
    start: int,
    length: int,
    random_old: str,
    use_substring: bool,
    new: str,
    replace_all: bool,
    scheme: str,
) -> None:
    old = content[start : start + length] if use_substring else random_old
    target = tmp_path / "fuzz.txt"
    original = _stored(content, scheme)
    target.write_bytes(original)
    ctx = context(tmp_path)
    read(ctx, target)
    result = call(EDIT, ctx, file_path=str(target), old_string=old, new_string=new, replace_all=replace_all)
    if result.is_error:
        assert target.read_bytes() == original, text(result)
        # a plain, unique, encodable edit in a file without CRLF must not be refused
        plain = old and old != new and _occurrences(content, old) == 1 and "\r\n" not in content
        assert not plain or "which cannot hold" in text(result), text(result)
        return
    # bytes valid as UTF-8 are UTF-8: an all-ASCII "Latin-1" file is written back as UTF-8
    written = "utf-8" if scheme == "latin-1" and original.isascii() else scheme
    bare = old.replace("\r\n", "")
    if "\r\n" in content and "\n" in content.replace("\r\n", "") and "\n" in bare and "\r" not in bare:
        # mixed line endings and a bare \n in old_string: it stands for either ending, so the edit is
        # exact as the model sees the file (every line ending a \n)
        after = target.read_bytes().decode(_SCHEMES[written][1]).removeprefix("\ufeff")
        view, o, n = (t.replace("\r\n", "\n") for t in (content, old, new))
        expected = {view.replace(o, n) if replace_all else view.replace(o, n, 1)}
        if not replace_all and _occurrences(content, old) == 1:  # the exact text, found as it is
            expected.add(content.replace(old, new, 1).replace("\r\n", "\n"))
        assert after.replace("\r\n", "\n") in expected
        return
    outcomes = []
    for o, n in ((old, new), (_as_crlf(old), _as_crlf(new))):
        if o and (content.count(o) == 1 or (replace_all and o in content)):
            outcomes.append(content.replace(o, n) if replace_all else content.replace(o, n, 1))
    assert any(target.read_bytes() == _stored(expected, written) for expected in outcomes), (
        content,
        old,
        new,
    )
    newlines = content.count("\n")
    if newlines and content.count("\r\n") == newlines and "\r" not in old + new:
        # an all-CRLF file stays all-CRLF when the model writes plain \n (as it sees the file in Read)
        after = target.read_bytes().decode(_SCHEMES[written][1]).removeprefix("\ufeff")
        assert after.count("\n") == after.count("\r\n")


def test_a_latin1_file_with_one_accidental_utf8_pair_stays_latin1(ws: Path) -> None:
    """`É` followed by a no-break space is valid UTF-8 (`à`) by accident: the file's other accented
    letters say Latin-1, so Read shows them and Edit writes its new ones in Latin-1, never a second
    encoding into the file."""
    content = "École: É\xa0fin. Café, crème brûlée, garçon, élève.\n".encode("latin-1")
    target, result = edit_file(ws, content, old_string="Café", new_string="Thé")
    assert not result.is_error, text(result)
    assert target.read_bytes() == content.replace("Café".encode("latin-1"), "Thé".encode("latin-1"))
    shown = text(call(Read(), context(ws), file_path=str(target)))
    assert "crème brûlée" in shown and "\ufffd" not in shown


def test_a_change_to_a_file_not_read_is_refused_before_anyone_is_asked(tmp_path: Path) -> None:
    """Read-before-edit is known before the permission question: the user is never asked to approve
    an Edit or a Write that would fail. Once the file was read, the same calls are put to the gate."""
    (tmp_path / "a.py").write_text("x = 1\n")
    ctx = context(tmp_path)
    asked: list[str] = []

    async def gate(call: Call) -> None:
        asked.append(call.block.name)

    def through_gate(tool: AnyTool, **tool_input: object) -> ToolResult:
        block = ToolUseBlock(id="toolu_gate", name=tool.name, input=tool_input)
        return asyncio.run(ToolRegistry([tool]).call(block, ctx, gate=gate))

    edit = {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    for tool, tool_input in ((EDIT, edit), (WRITE, {"file_path": "a.py", "content": "y\n"})):
        result = through_gate(tool, **tool_input)
        assert result.is_error and "before you" in text(result) and asked == []
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    assert not call(READ, ctx, file_path="a.py").is_error
    assert not through_gate(EDIT, **edit).is_error and asked == ["Edit"]
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
