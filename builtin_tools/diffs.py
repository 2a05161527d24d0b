"""The diffs people see of a change to a file (a permission question's preview, the terminal's line
under an Edit, Write or NotebookEdit): unified diffs as difflib writes them, made of just the
regions a change touched, so a small edit of a huge file costs what the edit costs."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from piton.core.conversation.messages import valid_text
from piton.core.safety.policy import real

DiffNames = tuple[str, str]  # the file's names in a diff's `---` and `+++` lines


def diff_names(path: Path, cwd: Path, *, created: bool = False) -> DiffNames:
    """What a diff's header calls the file, as git does: `a/` and `b/` before its path in the
    project, the absolute path for a file outside it, and `/dev/null` before a file the change
    creates."""
    for root in (cwd, real(cwd)):
        if path.is_relative_to(root) and path != root:
            name = path.relative_to(root).as_posix()
            old, new = f"a/{name}", f"b/{name}"
            break
    else:
        old = new = str(path)
    return ("/dev/null" if created else old), new


def unified_diff(names: DiffNames, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), *names, n=3
    )
    # shown to people: stray bytes become U+FFFD rather than text no terminal can print
    return valid_text(
        "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    )


_CONTEXT = 3  # lines around a change, as difflib's unified_diff shows
_DIFF_LINES = 10_000  # a diff stops near this many lines, saying what it leaves out
_MATCHED_LINES = 20_000  # a longer region shows as removed, then added: matching its lines is quadratic


def region_diff(
    names: DiffNames, before: str, after: str, changes: Iterable[tuple[int, int, int]], count: int = 1
) -> str:
    """`before` -> `after` as a unified diff (as difflib's, with 3 lines of context) made of just the
    regions `changes` touched: each (start, end) in `before` and the length of what took its place,
    in order. The rest of the text is never split into lines nor compared. Past _DIFF_LINES lines
    it stops, saying how many of the `count` changes it leaves out."""
    out: list[str] = []
    shown = 0
    old_at = new_at = (0, 0)  # a position in each text and its line number: counting goes on from there
    for lo, hi, shift, shift_after, changed in _regions(before, changes):
        if len(out) >= _DIFF_LINES:
            rest = count - shown
            out.append(f"... {rest:,} more change{'s' * (rest != 1)} not shown\n")
            break
        shown += changed
        lo, hi = _lines_back(before, lo), _lines_on(before, hi)
        old_at = (lo, old_at[1] + before.count("\n", old_at[0], lo))
        new_at = (lo + shift, new_at[1] + after.count("\n", new_at[0], lo + shift))
        a, b = _with_ends(before[lo:hi]), _with_ends(after[lo + shift : hi + shift_after])
        out += _hunks(a, b, old_at[1], new_at[1])
    if not out:
        return ""
    lines = (line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)
    return valid_text(f"--- {names[0]}\n+++ {names[1]}\n" + "".join(lines))


def whole_diff(names: DiffNames, before: str, after: str) -> str:
    """The diff of a text replaced whole, as region_diff's: the one region between what both keep
    at their start and at their end (found by comparing blocks of text, not characters)."""
    shorter = min(len(before), len(after))
    head = _common(before, after, 1, shorter)
    tail = _common(before, after, -1, shorter - head)
    return region_diff(names, before, after, [(head, len(before) - tail, len(after) - tail - head)])


def _common(a: str, b: str, direction: int, most: int) -> int:
    """How many characters, `most` at most, `a` and `b` share at their start (direction 1) or end (-1)."""
    step = 1 << 16

    def same(lo: int, hi: int) -> bool:  # are the characters lo to hi from that side the same?
        if direction > 0:
            return a[lo:hi] == b[lo:hi]
        return a[len(a) - hi : len(a) - lo] == b[len(b) - hi : len(b) - lo]

    lo = 0
    while lo + step <= most and same(lo, lo + step):
        lo += step
    hi = min(lo + step, most)
    while lo < hi:  # the first `lo` are the same, and not all of the first `hi + 1`, or hi == most
        middle = (lo + hi + 1) // 2
        lo, hi = (middle, hi) if same(lo, middle) else (lo, middle - 1)
    return lo


def _regions(
    before: str, changes: Iterable[tuple[int, int, int]]
) -> Iterator[tuple[int, int, int, int, int]]:
    """The whole lines of `before` the changes touch, as (start, end, shift at the start, shift at
    the end, how many changes): the same lines lie at start+shift to end+shift-at-end in the new
    text. Regions at most 2 x _CONTEXT lines apart are one, as difflib would show one hunk."""
    region: list[int] = []
    shift = 0
    for start, end, length in changes:
        lo = before.rfind("\n", 0, start) + 1
        hi = before.find("\n", end) + 1 or len(before)
        if region and before.count("\n", region[1], lo) <= 2 * _CONTEXT:
            region[1], region[3], region[4] = hi, shift + length - (end - start), region[4] + 1
        else:
            if region:
                yield region[0], region[1], region[2], region[3], region[4]
            region = [lo, hi, shift, shift + length - (end - start), 1]
        shift += length - (end - start)
    if region:
        yield region[0], region[1], region[2], region[3], region[4]


def _lines_back(text: str, start: int) -> int:
    for _ in range(_CONTEXT):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def _lines_on(text: str, end: int) -> int:
    for _ in range(_CONTEXT):
        end = text.find("\n", end) + 1 or len(text)
    return end


def _with_ends(text: str) -> list[str]:
    """Lines with their \\n, split at \\n only (as Read numbers them)."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _hunks(a: list[str], b: list[str], old_line: int, new_line: int) -> list[str]:
    """The hunks of a -> b, their lines numbered on from `old_line` and `new_line` (0-based)."""
    if a == b:
        return []
    if len(a) + len(b) > _MATCHED_LINES:
        groups = [_replaced(a, b)]
    else:
        groups = list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(_CONTEXT))
    out = []
    for group in groups:
        first, last = group[0], group[-1]
        old, new = (
            _range(first[1] + old_line, last[2] + old_line),
            _range(first[3] + new_line, last[4] + new_line),
        )
        out.append(f"@@ -{old} +{new} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            out += ["-" + line for line in a[i1 : min(i2, i1 + _DIFF_LINES)]]
            out += ["+" + line for line in b[j1 : min(j2, j1 + _DIFF_LINES)]]
            cut = max(0, i2 - i1 - _DIFF_LINES) + max(0, j2 - j1 - _DIFF_LINES)
            out += [f"... {cut:,} more changed lines not shown\n"] if cut else []
    return out


def _replaced(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """a -> b as one block replaced between the lines they share at each end (with context)."""
    n = min(len(a), len(b))
    head = next((i for i in range(n) if a[i] != b[i]), n)
    tail = next((i for i in range(n - head) if a[-1 - i] != b[-1 - i]), n - head)
    before, after = max(0, head - _CONTEXT), min(tail, _CONTEXT)
    a_end, b_end = len(a) - tail, len(b) - tail
    return [
        ("equal", before, head, before, head),
        ("replace", head, a_end, head, b_end),
        ("equal", a_end, a_end + after, b_end, b_end + after),
    ]


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (difflib's rule: an empty range names the
    line before it)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


PATCHED_FILE_CHARS = 1 << 20  # past this, a change's data leaves out the file's text


def file_change(before: str, shown: str) -> dict[str, Any]:
    """`originalFile` and `structuredPatch`, as Claude Code reports a file change to clients.
    `shown` is the unified diff the call shows people, read back into hunks: the change is not
    compared a second time. A file over a mebibyte is reported without its text."""
    return {
        "originalFile": before if len(before) <= PATCHED_FILE_CHARS else None,
        "structuredPatch": hunks(shown),
    }


def hunks(unified: str) -> list[dict[str, Any]]:
    """A unified diff's hunks as Claude Code's `structuredPatch`: their places and their lines (` `
    kept, `-` removed, `+` added), without line ends or the diff's own notes."""
    out: list[dict[str, Any]] = []
    for line in unified.splitlines():
        if line.startswith("@@"):
            old, new = _HUNK.match(line).groups()  # type: ignore[union-attr]
            (o_start, o_len), (n_start, n_len) = _span(old), _span(new)
            out.append(
                {"oldStart": o_start, "oldLines": o_len, "newStart": n_start, "newLines": n_len, "lines": []}
            )
        elif out and line[:1] in (" ", "-", "+"):
            out[-1]["lines"].append(line)
    return out


_HUNK = re.compile(r"@@ -(\S+) \+(\S+) @@")


def _span(text: str) -> tuple[int, int]:
    start, _, length = text.partition(",")
    return int(start), int(length) if length else 1
