"""Edit and Write on large files: what people see (the diff) and what the model reads (the lines
around a change, the hint when old_string is missing) stay right while only the changed regions
are looked at. Diffs are checked by applying them, not by trusting how they were made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from piton.builtin_tools.diffs import diff_names, region_diff, unified_diff, whole_diff
from piton.builtin_tools.edit import Edit, edit_diff
from piton.builtin_tools.edit_plan import EditError, around, plan_edit
from piton.builtin_tools.files import snippet
from piton.builtin_tools.read import Read
from piton.builtin_tools.write import Write
from piton.core.display import FileDiff
from piton.core.tools import ToolContext, ToolResult
from tests.builtin_tools.helpers import call, context, text

PATH = Path("/w/f.txt")
NAMES = diff_names(PATH, PATH.parent)
HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def _lines(text_: str) -> list[str]:
    """Lines with their \\n, split at \\n only."""
    parts = text_.split("\n")
    last = parts.pop()
    return [p + "\n" for p in parts] + ([last] if last else [])


def apply(diff: str, before: str) -> str:
    """What `diff` says `before` becomes, checking every context and removed line against `before`
    and every hunk's counts; stops at a note that the diff leaves the rest out."""
    if not diff:
        return before
    header = diff.split("\n", 2)[:2]
    assert header[0].startswith("--- a/") and header[1] == "+++ b" + header[0][5:], diff[:200]
    rows: list[tuple[str, str]] = []
    for row in diff.split("\n")[2:]:
        if row.startswith("\\ No newline"):
            rows[-1] = (rows[-1][0], rows[-1][1].removesuffix("\n"))
        elif row:
            rows.append((row[0], row[1:] + "\n"))
    old, new, at = _lines(before), [], 0
    counts = [0, 0]
    for kind, body in rows:
        if kind == "@":
            assert counts == [0, 0], ("a hunk's counts do not add up", body)
            found = HUNK.match("@" + body.rstrip("\n"))
            assert found, body
            start, length = int(found[1]), int(found[2] or "1")
            counts = [length, int(found[4] or "1")]
            index = start if length == 0 else start - 1
            assert index >= at
            new += old[at:index]
            at = index
        elif kind in " -":
            assert old[at] == body, (at, old[at], body)
            new += [body] if kind == " " else []
            at += 1
            counts = [counts[0] - 1, counts[1] - (kind == " ")]
        elif kind == "+":
            new.append(body)
            counts[1] -= 1
        else:  # a note that the rest is not shown
            return "".join(new)
    assert counts == [0, 0]
    return "".join(new + old[at:])


# -- the diff, checked by applying it --------------------------------------------------------------

_line = st.sampled_from(["a", "b", "", "a b", "é"])
_texts = st.lists(_line, max_size=30).map("\n".join) | st.lists(_line, max_size=30).map(
    lambda lines: "".join(f"{line}\n" for line in lines)
)


@settings(max_examples=300, deadline=None)
@given(before=_texts, start=st.integers(0, 200), length=st.integers(0, 40), new=_texts)
def test_a_region_diff_applied_gives_the_new_text(before: str, start: int, length: int, new: str) -> None:
    start = min(start, len(before))
    end = min(len(before), start + length)
    after = before[:start] + new + before[end:]
    assert apply(region_diff(NAMES, before, after, [(start, end, len(new))]), before) == after
    assert apply(whole_diff(NAMES, before, after), before) == after


@settings(max_examples=200, deadline=None)
@given(lines=st.integers(1, 40), where=st.integers(0, 39), spans=st.integers(0, 3), new=_texts)
def test_on_distinct_lines_it_is_the_diff_difflib_gives_for_the_whole_file(
    lines: int, where: int, spans: int, new: str
) -> None:
    before = "".join(f"line {n}\n" for n in range(lines))
    start = before.find(f"line {min(where, lines - 1)}\n") + 2
    end = min(len(before), start + spans * 7)
    after = before[:start] + "Ω" + new.replace("\n", "Ω\n") + before[end:]  # no line of it is an old one
    expected = unified_diff(NAMES, before, after)
    assert (
        region_diff(NAMES, before, after, [(start, end, len(after) - len(before) + end - start)]) == expected
    )
    assert whole_diff(NAMES, before, after) == expected


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from(["x = 1", "y = 2", "z", ""]), max_size=40), new=_texts)
def test_every_replacement_of_a_replace_all_is_in_its_diff(lines: list[str], new: str) -> None:
    before = "\n".join(lines) + "\n"
    if "x = 1" not in before or new == "x = 1":
        return
    plan = plan_edit(before, "x = 1", new, True, PATH)
    assert apply(edit_diff(NAMES, before, plan), before) == plan.text


@settings(max_examples=300, deadline=None)
@given(content=_texts, index=st.integers(0, 200), span=st.integers(0, 30))
def test_the_lines_around_a_change_are_those_read_shows(content: str, index: int, span: int) -> None:
    index = min(index, len(content))
    span = min(span, len(content) - index)
    assert around(content, index, span) == snippet(content, index, span)


# -- through the tools, on large files --------------------------------------------------------------


def _big(ws: Path, lines: int = 200_000) -> tuple[Path, str]:
    ws.mkdir(exist_ok=True)
    path = ws / "big.py"
    content = "".join(f"value_{i} = compute({i}, 'some text')\n" for i in range(lines))
    path.write_text(content)
    return path, content


def _read_then(ctx: ToolContext, path: Path, tool: Edit | Write, **edit: object) -> ToolResult:
    """`tool` called on `path` after a Read of it, as the model must."""
    assert not call(Read(), ctx, file_path=str(path)).is_error
    return call(tool, ctx, file_path=str(path), **edit)


def test_an_edit_deep_in_a_large_file_shows_just_its_hunk(tmp_path: Path) -> None:
    path, _ = _big(tmp_path / "ws")
    ctx = context(path.parent)
    old, new = "value_150000 = compute(", "value_150000 = recompute("
    assert not call(Read(), ctx, file_path=str(path)).is_error
    preview = Edit().preview(Edit.input_model(file_path=str(path), old_string=old, new_string=new), ctx)
    result = call(Edit(), ctx, file_path=str(path), old_string=old, new_string=new)
    assert isinstance(result.display, FileDiff)
    assert (
        result.display.diff
        == preview
        == (
            "--- a/big.py\n+++ b/big.py\n@@ -149998,7 +149998,7 @@\n"
            + "".join(f" value_{i} = compute({i}, 'some text')\n" for i in range(149997, 150000))
            + "-value_150000 = compute(150000, 'some text')\n"
            + "+value_150000 = recompute(150000, 'some text')\n"
            + "".join(f" value_{i} = compute({i}, 'some text')\n" for i in range(150001, 150004))
        )
    )
    assert text(result).splitlines()[1:] == [
        "149998\tvalue_149997 = compute(149997, 'some text')",
        "149999\tvalue_149998 = compute(149998, 'some text')",
        "150000\tvalue_149999 = compute(149999, 'some text')",
        "150001\tvalue_150000 = recompute(150000, 'some text')",
        "150002\tvalue_150001 = compute(150001, 'some text')",
        "150003\tvalue_150002 = compute(150002, 'some text')",
        "150004\tvalue_150003 = compute(150003, 'some text')",
    ]


def test_a_replace_all_of_many_places_shows_a_bounded_diff_that_says_what_it_leaves_out(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / "many.py"
    content = "".join(f"{'hit()' if i % 10 == 0 else f'line {i}'}\n" for i in range(300_000))
    path.write_text(content)
    result = _read_then(context(ws), path, Edit(), old_string="hit()", new_string="miss()", replace_all=True)
    assert text(result).startswith(f"Edited {path.resolve()} (30000 replacements).")
    assert path.read_text() == content.replace("hit()", "miss()")
    assert isinstance(result.display, FileDiff)
    diff = result.display.diff
    assert 10_000 <= diff.count("\n") <= 10_020
    shown = diff.count("\n-hit()\n")
    assert diff.endswith(f"... {30_000 - shown:,} more changes not shown\n")
    assert apply(diff, content) == content.replace("hit()", "miss()")[: len(apply(diff, content))]


def test_a_missing_old_string_in_a_large_file_still_gets_its_hint(tmp_path: Path) -> None:
    path, content = _big(tmp_path / "ws")
    ctx = context(path.parent)
    typo = "value_123456 = compute(123456, 'some txt')"  # `compute` and `some` are on every line
    result = _read_then(ctx, path, Edit(), old_string=typo, new_string="x")
    assert result.is_error
    assert text(result).endswith(
        "(0 matches). The most similar text is near line 123457:\n"
        + "\n".join(f"{n + 1:>6}\tvalue_{n} = compute({n}, 'some text')" for n in range(123454, 123459))
    )
    # nothing but words on too many lines to narrow the search: the plain error
    common = call(Edit(), ctx, file_path=str(path), old_string="compute(text, some)", new_string="x")
    assert text(common).endswith(f"was not found in {path.resolve()} (0 matches).")
    assert path.read_text() == content


def test_the_hint_in_a_large_file_is_the_best_line_holding_a_word_of_old_string() -> None:
    content = "".join(f"row {i}: alpha beta\n" for i in range(30_000)) + "def rare_name(x):\n"
    with pytest.raises(EditError) as raised:
        plan_edit(content, "def rare_nam(x):", "y", False, PATH)
    assert str(raised.value).endswith(
        "near line 30001:\n 29999\trow 29998: alpha beta\n 30000\trow 29999: alpha beta\n 30001\tdef rare_name(x):"
    )


def test_writing_over_a_large_file_shows_just_what_changed(tmp_path: Path) -> None:
    path, content = _big(tmp_path / "ws")
    changed = content.replace("value_99999 = compute(", "value_99999 = compute2(")
    result = _read_then(context(path.parent), path, Write(), content=changed)
    assert path.read_text() == changed
    assert isinstance(result.display, FileDiff)
    assert result.display.diff.count("\n") == 2 + 1 + 3 + 2 + 3  # header, hunk, context, change, context
    assert apply(result.display.diff, content) == changed
