"""Planning an exact-text edit: where old_string is in a file's text, and what new_string becomes
there, so that the file keeps its line endings and stray bytes and an edit undone gives back the
very bytes it replaced. And the lines around a place in the text, as Read shows them.

The model sees a file as Read shows it: lines split at \\n with the \\r of a CRLF ending removed,
and a byte that is not UTF-8 shown as U+FFFD. It writes old_string and new_string in that view;
this module maps them back onto the text as it is.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from piton.builtin_tools.files import lines_of, numbered
from piton.core.conversation.messages import valid_text
from piton.core.records import record

_MAX_LISTED = 10
_STRAY = "[\udc80-\udcff]+"  # bytes a UTF-8 file could not decode, as surrogateescape carries them
_SHOWN_STRAY = re.compile("(\ufffd+)")  # how Read shows them


class EditError(Exception):
    pass


@record(frozen=True)
class Plan:
    text: str  # the whole new text
    index: int  # where the first replacement starts
    span: int  # how long the first replacement is
    count: int  # how many replacements
    removed: str  # the text the first replacement took out, exactly as it was
    style: str | None = None  # the file's line endings before the edit, as far as known
    new: str = ""  # what took the place of each occurrence of `removed` (an exact match)
    loose: tuple[tuple[int, int, str], ...] = ()  # or each loose match: (start, end, what took its place)

    def replacements(self, before: str) -> Iterator[tuple[int, int, int]]:
        """Each replacement in order, as (start, end) in `before` and the length of its new text;
        found one at a time, so a diff that stops early never looks for the rest."""
        if self.loose:
            yield from ((start, end, len(new)) for start, end, new in self.loose)
            return
        start = self.index
        for _ in range(self.count):
            yield start, start + len(self.removed), len(self.new)
            start = before.find(self.removed, start + len(self.removed))


def newline_style(text: str) -> str | None:
    """ "\\r\\n" or "\\n" when every line ending is of that kind, "mixed" when both occur, None
    when the text has no line ending at all (and so says nothing about the file's style)."""
    newlines = text.count("\n")
    if not newlines:
        return None
    crlf = text.count("\r\n")
    return "\r\n" if crlf == newlines else "\n" if crlf == 0 else "mixed"


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _line_numbers(text: str, needle: str, step: int | None = None) -> list[int]:
    """The line of each occurrence of `needle` (the next looked for `step` characters on, by
    default past the end of this one), up to a few more than are listed."""
    numbers: list[int] = []
    start = 0
    while (index := text.find(needle, start)) >= 0 and len(numbers) <= _MAX_LISTED:
        numbers.append(text.count("\n", 0, index) + 1)
        start = index + (step or max(1, len(needle)))
    return numbers


# in a longer file than this, only the lines that hold one of old_string's words are compared
_COMPARED_LINES = 20_000
_WORDS = 4  # the longest words of old_string's first line looked for
_WORD = re.compile(r"\w+")


def _closest(text: str, old: str) -> str:
    """Where the model probably meant: the line most like the first line of old_string."""
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not first or not text:
        return ""
    if text.count("\n") <= _COMPARED_LINES:
        starts, lines = _line_starts(text), lines_of(text)
        candidates = list(zip(starts, lines, strict=False))
    else:
        candidates = _lines_with_words(text, first)
    if not candidates:
        return ""
    matcher = difflib.SequenceMatcher(None, b=first)
    rough = []
    for i, (_, line) in enumerate(candidates):
        matcher.set_seq1(line.strip()[:500])
        rough.append((matcher.quick_ratio(), i))
    exact = []
    for _, i in sorted(rough, reverse=True)[:20]:  # quick_ratio is an upper bound: rank the best exactly
        matcher.set_seq1(candidates[i][1].strip()[:500])
        exact.append((matcher.ratio(), -i))
    ratio, negative = max(exact)
    if ratio < 0.5:
        return ""
    start = candidates[-negative][0]
    number = text.count("\n", 0, start) + 1
    return f" The most similar text is near line {number}:\n{around(text, start, 0, 2)}"


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _lines_with_words(text: str, first: str) -> list[tuple[int, str]]:
    """The lines of a long text that hold one of the longest words of `first` (a word on more than
    _COMPARED_LINES lines narrows nothing and is passed over), as (start, line): a bounded number
    of lines, found at the speed of str.find."""
    words = sorted(set(_WORD.findall(first)), key=lambda word: (-len(word), word))[:_WORDS]
    starts: set[int] = set()
    for word in words:
        found: list[int] = []
        at = text.find(word)
        while at >= 0 and len(found) <= _COMPARED_LINES:
            found.append(text.rfind("\n", 0, at) + 1)
            end = text.find("\n", at)
            at = text.find(word, end) if end >= 0 else -1
        if len(found) <= _COMPARED_LINES:
            starts.update(found)
    lines = []
    for start in sorted(starts)[:_COMPARED_LINES]:
        end = text.find("\n", start)
        lines.append((start, text[start : end if end >= 0 else len(text)].removesuffix("\r")))
    return lines


def around(text: str, index: int, span: int, context: int = 3) -> str:
    """Numbered lines around text[index:index+span] as Read shows them, to show the model what an
    edit left behind: only those lines are split out of the text, however long it is."""
    first = text.count("\n", 0, index)
    last = first + text.count("\n", index, index + span)
    start = text.rfind("\n", 0, index) + 1
    for _ in range(min(context, first)):
        start = text.rfind("\n", 0, start - 1) + 1
    end = text.find("\n", index + span)
    for _ in range(context):
        end = text.find("\n", end + 1) if end >= 0 else -1
    shown = lines_of(text[start : end + 1 if end >= 0 else len(text)])
    top = first - min(context, first)
    return valid_text(
        "\n".join(numbered(line, top + n + 1) for n, line in enumerate(shown[: last + context + 1 - top]))
    )


def _ending_at(text: str, index: int) -> str:
    """The line ending of the line holding `index` (or of the line before, for the last line)."""
    end = text.find("\n", index)
    if end < 0:
        end = text.rfind("\n", 0, index)
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


# in the model's text: line endings and shown stray bytes (a \r\n it wrote out is meant as such)
_PARTS = re.compile("(\r\n|\n|\ufffd+)")


def _bare_newline(text: str) -> bool:
    return "\n" in text.replace("\r\n", "")


def _loose_matches(text: str, old: str) -> tuple[list[re.Match[str]], list[str]]:
    """Matches of `old` where each line ending may be \n or \r\n and each run of U+FFFD stands for
    a run of undecodable bytes; and, per group of the pattern, which of the two it captured."""
    loose_endings = _bare_newline(old) and "\r\n" in text
    loose_strays = "\ufffd" in old and re.search(_STRAY, text) is not None
    if not (loose_endings or loose_strays):
        return [], []
    pattern, kinds = [], []
    for i, part in enumerate(_PARTS.split(old)):
        if i % 2 == 0:
            pattern.append(re.escape(part))
        elif part.startswith("\ufffd"):
            pattern.append(f"({_STRAY})" if loose_strays else re.escape(part))
            kinds += ["stray"] if loose_strays else []
        elif part == "\r\n":
            pattern.append(re.escape(part))
        else:
            pattern.append("(\r?\n)" if loose_endings else re.escape(part))
            kinds += ["newline"] if loose_endings else []
    return list(re.finditer("".join(pattern), text)), kinds


def _filled(new: str, match: re.Match[str], kinds: list[str], text: str) -> str:
    """`new` with its k-th line ending and k-th run of U+FFFD taken from the k-th ones old_string
    matched: what was there stays as it was, byte for byte."""
    found = {kind: [g for g, k in zip(match.groups(), kinds, strict=True) if k == kind] for kind in kinds}
    endings, strays = found.get("newline", []), found.get("stray", [])
    fallback = endings[-1] if endings else _ending_at(text, match.start())
    out: list[str] = []
    for i, part in enumerate(_PARTS.split(new)):
        if i % 2 == 0:
            out.append(part)
        elif part.startswith("\ufffd"):
            out.append(strays.pop(0) if strays else part)
        elif part == "\r\n":
            out.append(part)
        else:
            out.append(endings.pop(0) if endings else fallback)
    return "".join(out)


def plan_edit(
    text: str,
    old: str,
    new: str,
    replace_all: bool,
    path: Path,
    *,
    style: str | None = None,
    removed: Sequence[str] = (),
) -> Plan:
    """Replace `old` by `new` in `text`; raises EditError.

    `style` is the file's line ending as last known (for a text that has none left), `removed` the
    text earlier edits took out of it: a new_string that puts such text back gets its exact bytes.
    In a file whose every newline is \\r\\n, old and new are taken in that convention; in a mixed file
    the \\r\\n form is tried when the text as given is absent, and new text takes the ending of the
    line it lands in."""
    if old == new:
        raise EditError("old_string and new_string are the same; there is nothing to change.")
    if not old:
        raise EditError(f"old_string is empty; {path} already exists, so use Write to replace it whole.")
    style = newline_style(text) or style
    if style == "\r\n":
        old, new = _crlf(old), _crlf(new)
    # in a mixed file, a \n of the model's may stand for either ending, and must never match the
    # \n of a \r\n alone (that would leave its \r behind)
    count = 0 if style == "mixed" and _bare_newline(old) else text.count(old)
    if count == 0:
        return _plan_loose(text, old, new, replace_all, path, removed, style)
    index = text.find(old)
    if count == 1 and not replace_all and text.find(old, index + 1) >= 0:
        # str.count skips overlaps: "aa" in "x aaa y" starts at two places, so which one is meant?
        starts = _line_numbers(text, old, step=1)
        raise EditError(_ambiguous(path, len(starts), starts))
    if count > 1 and not replace_all:
        raise EditError(_ambiguous(path, count, _line_numbers(text, old)))
    new = _restored(new, removed) or _in_style(new, old, text, index, style)
    new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return Plan(new_text, index, len(new), count, old, style, new=new)


def _plan_loose(
    text: str, old: str, new: str, replace_all: bool, path: Path, removed: Sequence[str], style: str | None
) -> Plan:
    """old_string is not in the text as given: look for it with either line ending at each line
    end (a file with mixed endings) and stray bytes where it shows U+FFFD."""
    matches, kinds = _loose_matches(text, old)
    if not matches:
        raise EditError(f"old_string was not found in {path} (0 matches).{_closest(text, old)}")
    if len(matches) > 1 and not replace_all:
        raise EditError(_ambiguous(path, len(matches), [text.count("\n", 0, m.start()) + 1 for m in matches]))
    pieces: list[str] = []
    replaced: list[tuple[int, int, str]] = []
    position = 0
    for match in matches if replace_all else matches[:1]:
        replaced.append(
            (match.start(), match.end(), _restored(new, removed) or _filled(new, match, kinds, text))
        )
        pieces += [text[position : match.start()], replaced[-1][2]]
        position = match.end()
    first = matches[0]
    return Plan(
        "".join(pieces) + text[position:],
        first.start(),
        len(replaced[0][2]),
        len(replaced),
        first.group(),
        style,
        loose=tuple(replaced),
    )


def _ambiguous(path: Path, count: int, lines: list[int]) -> str:
    listed = ", ".join(map(str, lines[:_MAX_LISTED]))
    return (
        f"old_string occurs {count} times in {path} (at lines {listed}). Include more of the surrounding "
        "text to make it unique, or set replace_all to replace every occurrence."
    )


def _view(text: str) -> str:
    """Text as the model sees it: \n line endings, each run of undecodable bytes one U+FFFD."""
    return _SHOWN_STRAY.sub("\ufffd", re.sub(_STRAY, "\ufffd", _lf(text)))


def _restored(new: str, removed: Sequence[str]) -> str | None:
    """Text an earlier edit took out, when `new` is that text as the model sees it."""
    seen = _view(new)
    return next((r for r in reversed(removed) if _view(r) == seen), None)


def _in_style(new: str, old: str, text: str, index: int, style: str | None) -> str:
    """New text with the line endings of where it lands, in a mixed file: those of old_string
    (found as given), or, when it had none, those of the line it is in."""
    if style != "mixed" or "\n" not in new or "\r\n" in new or "\n" in old:
        return new
    return _crlf(new) if _ending_at(text, index) == "\r\n" else new
