"""What a line writes and whether it holds a `$`, asked of the scan (`writes_files`, `unquoted_dollar`).

Both used to read the raw text again with a quote state of their own; they are now questions asked
of the scanner's parts. Where the two readings could differ, the cases are spelled out below, each
checked against what bash does; the properties run bash itself as the oracle.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piton.core.safety.shellsplit import (
    Part,
    Redirect,
    Word,
    scan,
    split_command,
    unquoted_dollar,
    writes_files,
)
from tests.helpers import CEILING_S


def parts(command: str) -> list[Part]:
    return [p for p in scan(command).parts if p.raw.strip()]


def writes(command: str) -> bool:
    return any(writes_files(p) for p in parts(command))


def dollar(command: str) -> bool:
    return any(unquoted_dollar(p) for p in parts(command))


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > f",
        "echo hi>run.sh",
        "echo hi >> f",
        "echo hi >| f",
        "echo hi &> f",
        "echo hi &>> f",
        "exec 3<> f",  # `<>` opens the file for writing, creating it
        "echo hi >& f",  # `>&` with a file, not a descriptor, writes the file
        "echo hi &>2",  # `&>` always names a file
        "echo 2 > 3",
        "echo hi > /dev/null2",
        "echo hi >/dev/null >f",
        "echo hi >&2-",  # moving a descriptor is not read here: it counts as a file
        "echo hi >",  # no target: bash refuses the line, and it is not vouched for
        "echo >> ; ls",
    ],
)
def test_output_into_a_file_is_writing(command: str) -> None:
    assert writes(command)


@pytest.mark.parametrize(
    "command",
    [
        "echo hi",
        "echo hi > /dev/null",
        "echo hi 2>/dev/null 1>&2",
        "echo hi >&2",
        "echo hi >& 2",
        "echo hi >&-",
        "cat < f",
        "cat <&3",
        "echo '>' f",
        'echo "a > b"',
        "echo a\\>b",
        "ls # > f",  # a comment
    ],
)
def test_what_does_not_open_a_file_for_writing_is_not(command: str) -> None:
    assert not writes(command)


@pytest.mark.parametrize(
    "command",
    [
        # The old reading took the target as written, quotes and all; bash removes them first.
        "echo hi > '/dev/null'",
        'echo hi > "/dev/null"',
        "echo hi > \\/dev/null",
        "echo hi > /dev/null''",
        # ...and took only unquoted digits for a descriptor: `>&\2` duplicates descriptor 2 too.
        "echo hi >&\\2",
        'echo hi >&"1"',
        # `>&` and `<>` to /dev/null were always writing to it; bash writes nothing anywhere.
        "echo hi >& /dev/null",
        "echo hi >&/dev/null",
        "exec 3<> /dev/null",
        # A comment used to count when the text was read again (the parts never held one).
        "ls # > x",
    ],
)
def test_what_the_old_reading_took_for_a_write_and_bash_does_not(command: str) -> None:
    assert not writes(command)


def test_an_input_redirection_after_an_output_one_is_not_its_target() -> None:
    # the old reading took `/dev/null<f` for the target of `>`; bash reads f into a command writing nowhere
    assert not writes("cat >/dev/null <f")
    assert not writes("cat >&-<f")


def test_a_dangling_redirection_leaves_the_next_command_its_words() -> None:
    # bash refuses `echo > ; rm x`; the scan used to take `rm` for the target and lose the command
    scanned = scan("echo > ; rm x")
    assert [[w.text for w in p.words] for p in scanned.parts] == [["echo"], ["rm", "x"]]
    assert scanned.parts[0].redirects == (Redirect(">", None),)
    assert writes_files(scanned.parts[0])


def test_redirections_are_kept_with_their_part() -> None:
    first, second = scan("sort -o x a 2>&1 >out | tee log >/dev/null").parts
    assert first.redirects == (Redirect(">&", Word("1")), Redirect(">", Word("out")))
    assert second.redirects == (Redirect(">", Word("/dev/null")),)
    assert writes_files(first) and not writes_files(second)
    inner, outer = scan("echo $(cat >f)").parts
    assert writes_files(inner) and not writes_files(outer)  # a substitution is a part of its own


def test_a_target_with_an_expansion_is_a_write() -> None:
    assert writes('echo hi > "$out"') and writes("echo hi >&$fd")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo $HOME", True),
        ('echo "$HOME"', True),
        ("echo $ a", True),  # a `$` bash reads, though it expands nothing
        ("echo a$", True),
        ("echo '$HOME'", False),
        ("echo \\$HOME", False),
        ("echo $'x'", True),
        # Where the old reading differed: an escaped `$` inside double quotes is a plain `$`...
        ('echo "\\$HOME"', False),
        # ...an escaped backslash does not escape the `$` after it...
        ("echo \\\\$ x", True),
        # ...an escaped quote opens no quote...
        ("echo \\' $ \\'", True),
        # ...and a double quote after an escaped backslash does close the string.
        ("echo \"a\\\\\" '$'", False),
        ("echo `echo $x`", True),  # a `$` inside a substitution is in the part's text
    ],
)
def test_a_dollar_bash_reads(command: str, expected: bool) -> None:
    assert dollar(command) is expected


# -- bash as the oracle ---------------------------------------------------------------------------

_TARGETS = st.sampled_from(
    [
        "f",
        "g",
        "/dev/null",
        "'/dev/null'",
        '"/dev/null"',
        "\\/dev/null",
        "1",
        "2",
        "-",
        "\\2",
        '"1"',
        "2-",
        "'f'",
    ]
)
_OPERATORS = st.sampled_from([">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<", "1>", "2>", "2>&"])
_WORDS = st.sampled_from(["a", "'b c'", '"d"', "e\\ f", "'>'", '">"', "\\>"])


@st.composite
def _simple_commands(draw: st.DrawFn) -> str:
    """`echo` with words and redirections in any order, targets spelled in the ways bash reads."""
    pieces = ["echo"]
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            space = draw(st.sampled_from(["", " "]))
            pieces.append(f"{draw(_OPERATORS)}{space}{draw(_TARGETS)}")
        else:
            pieces.append(draw(_WORDS))
    return " ".join(pieces)


def _bash(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", "--noprofile", "--norc", "-c", command],
        cwd=cwd,
        env={"PATH": os.defpath, "LANG": "C"},
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_simple_commands())
def test_a_line_said_not_to_write_writes_no_file_in_bash(command: str) -> None:
    [part] = parts(command)
    assert scan(command).exact and split_command(command) is not None
    with tempfile.TemporaryDirectory() as folder:
        _bash(command, Path(folder))
        written = sorted(os.listdir(folder))
    if written:
        assert writes_files(part), (command, written)


# every `$` is followed by `{Z}`, so that what comes after it cannot make it name another variable
_FRAGMENTS = st.sampled_from(
    [
        "${Z}",
        "'a${Z}'",
        '"a${Z}"',
        '"\\${Z}"',
        "\\${Z}",
        "\\\\${Z}",
        "\\'",
        '\\"',
        '"\\\\"',
        "a",
        "'b'",
        '"c"',
        "-",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_FRAGMENTS, min_size=1, max_size=5), st.booleans())
def test_a_dollar_is_found_exactly_where_bash_expands_one(fragments: list[str], spaced: bool) -> None:
    word = (" " if spaced else "").join(fragments)
    [part] = parts(f"echo {word}")
    expanded = "EXPANDED" in _bash(f"Z=EXPANDED; echo {word}", Path(tempfile.gettempdir())).stdout
    assert unquoted_dollar(part) is expanded, word
