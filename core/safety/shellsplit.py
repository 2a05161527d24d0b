"""Splitting a shell command line into its simple commands and their words, the way bash reads it.

`npm test && rm -rf build` is two commands; a rule allowing `npm test:*` must not allow the second.
One scanner follows bash where it matters for safety (quotes, backslashes, line continuations,
comments, substitutions, here-documents). A line is *exact* when nothing in it is expanded: no `$`
of any kind (quoted or not), no backticks, here-documents or `$'…'`; only then may a prefix allow
rule judge it part by part. Every line, exact or not, is still split into the commands it holds,
those inside substitutions too, each with words that say which hold an expansion, so that deny and
ask rules can see what it runs (`shellrun.py`). Each part also keeps its redirections and whether
it holds a `$` bash reads as one, so that what a line writes (`writes_files`) and whether it may
expand (`unquoted_dollar`) are questions asked of the scan, never of the text read again.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import field
from typing import NamedTuple

from piton.core.records import record

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = (">&", "<&", "&>>", "&>", ">|", ">>", "<>", ">", "<")
_DESCRIPTOR = re.compile(r"\d+|-")  # what `>&` duplicates (or closes) rather than opens as a file
_PLAIN_BRACES = re.compile(r"\$\{([A-Za-z_]\w*|[0-9@*#?$!-])\}")
_EXPANSION_START = re.compile(r"[A-Za-z0-9_@*#?$!-]")
# Runs of characters that mean only themselves: outside quotes, in single, ANSI-C and double quotes
_PLAIN = {
    "": re.compile(r"[^\\#`$<>'\"&|;()\s]+"),
    "'": re.compile(r"[^']+"),
    "$'": re.compile(r"[^'\\]+"),
    '"': re.compile(r'[^"\\$`]+'),
}
RESERVED = {
    "{",
    "}",
    "!",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "while",
    "until",
    "do",
    "done",
    "coproc",
    "function",
}


class Word(NamedTuple):
    text: str  # after quote removal
    live: bool = False  # holds an expansion (a variable, a substitution): its value is unknown here


class Redirect(NamedTuple):
    op: str  # as written: ">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<" or "<<<"
    target: Word | None  # None when the part ended before one was written

    @property
    def writes_file(self) -> bool:
        """Whether it opens a file for writing: an output redirection (`<>` too: it creates the file)
        to anything but /dev/null, `>&` to anything but a descriptor, or to what is not known here."""
        if ">" not in self.op:
            return False
        if self.target is None or self.target.live:
            return True
        if self.op == ">&" and _DESCRIPTOR.fullmatch(self.target.text):
            return False
        return self.target.text != "/dev/null"


@record(frozen=True)
class Part:
    raw: str  # as written, quotes kept
    words: tuple[Word, ...]  # its words, redirections left out
    redirects: tuple[Redirect, ...] = ()  # its own (those of commands inside it are theirs)
    dollar: bool = False  # its text (substitutions inside it too) holds a `$` that is not quoted away


@record(frozen=True)
class Scan:
    parts: tuple[Part, ...]  # the simple commands, those inside substitutions too
    exact: bool  # nothing is expanded: each part means what it says
    complete: bool  # the parts are all the line runs (no arithmetic, no `${…}` operators)


@record
class _Frame:
    closer: str  # "" the line itself, ")" a substitution, "`" backticks
    start: int
    raw: list[str] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    word: list[str] = field(default_factory=list)
    started: bool = False  # a word is under way (even an empty one: '')
    live: bool = False
    quote: str = ""  # "'", '"' or "$'" while inside one
    depth: int = 0  # parentheses open inside a substitution
    pending: str | None = None  # the operator of a redirection whose target is the next word
    redirects: list[Redirect] = field(default_factory=list)
    dollar: bool = False  # the part under way holds a `$` bash reads (see `Part.dollar`)
    saw_dollar: bool = False  # any part of this frame did: the frame's text, for the part around it


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.parts: list[Part] = []
        self.exact = self.complete = True
        self.frames = [_Frame("", 0)]
        self.heredocs: list[tuple[str, bool, bool]] = []  # delimiter, strip tabs, body expands

    @property
    def f(self) -> _Frame:
        return self.frames[-1]

    def add(self, raw: str, chars: str = "") -> None:
        self.f.raw.append(raw)
        self.f.word.append(chars)
        self.f.started = True
        self.i += len(raw)

    def end_word(self) -> None:
        f = self.f
        if f.started:
            word = Word("".join(f.word), f.live)
            if f.pending is None:
                f.words.append(word)
            else:
                f.redirects.append(Redirect(f.pending, word))
                f.pending = None
        f.word, f.started, f.live = [], False, False

    def redirect(self, op: str) -> None:
        """A redirection operator: the next word is its target."""
        f = self.f
        if f.pending is not None:  # two operators in a row: bash refuses the line; the first is unknown
            f.redirects.append(Redirect(f.pending, None))
        f.pending = op

    def end_part(self) -> None:
        self.end_word()
        f = self.f
        if f.pending is not None:  # no target before the command ended: bash refuses the line
            f.redirects.append(Redirect(f.pending, None))
        self.parts.append(Part("".join(f.raw), tuple(f.words), tuple(f.redirects), f.dollar))
        f.raw, f.words, f.redirects, f.pending, f.dollar = [], [], [], None, False

    def note_dollar(self) -> None:
        self.f.dollar = self.f.saw_dollar = True

    def push(self, closer: str, opener: str) -> None:
        self.exact = False
        self.f.live = self.f.started = True
        self.frames.append(_Frame(closer, self.i))
        self.i += len(opener)

    def pop(self) -> None:
        self.end_part()
        inner = self.frames.pop()
        self.i += 1
        self.f.raw.append(self.text[inner.start : self.i])
        if inner.saw_dollar:
            self.note_dollar()

    def run(self) -> Scan:
        while self.i < len(self.text):
            if self.f.quote:
                self.quoted()
            else:
                self.unquoted()
        if self.f.quote or len(self.frames) > 1:
            self.exact = self.complete = False
        while len(self.frames) > 1:
            self.pop()
        self.end_part()
        return Scan(tuple(self.parts), self.exact, self.complete)

    def quoted(self) -> None:
        f, t, i = self.f, self.text, self.i
        ch = t[i]
        if (run := _PLAIN[f.quote].match(t, i)) is not None:
            self.add(run.group(), run.group())
            return
        if f.quote == "'":
            self.add(ch, "" if ch == "'" else ch)
            f.quote = "" if ch == "'" else f.quote
        elif f.quote == "$'":
            if ch == "\\" and i + 1 < len(t):
                f.live = True  # an escape we do not decode
                self.add(t[i : i + 2], t[i + 1])
            else:
                self.add(ch, "" if ch == "'" else ch)
                f.quote = "" if ch == "'" else f.quote
        elif ch == "\\" and i + 1 < len(t):
            nxt = t[i + 1]
            self.add(t[i : i + 2], "" if nxt == "\n" else nxt if nxt in '$`"\\' else t[i : i + 2])
        elif ch == '"':
            self.add(ch, "")
            f.quote = ""
        elif not self.expansion():
            self.add(ch, ch)

    def expansion(self) -> bool:
        """`$…` or a backquote at the scanner's position: scan it (substitutions as commands of their
        own) and say whether there was one."""
        t, i = self.text, self.i
        if t[i] == "$":
            self.note_dollar()  # expanded or not (`$ `, `a$`), bash reads it: only quotes and `\` hide one
        if t.startswith(("$((", "$[", "${"), i) and not _PLAIN_BRACES.match(t, i):
            self.exact = self.complete = False  # arithmetic, or an operator that may evaluate a value
        if t.startswith("$(", i):
            self.push(")", "$(")
        elif t[i] == "`":
            self.push("`", "`")
        elif t.startswith(("$'", '$"'), i) and not self.f.quote:
            self.exact = False
            self.f.live = t[i + 1] == '"'  # translated
            self.add(t[i : i + 2], "")
            self.f.quote = "$'" if t[i + 1] == "'" else '"'
        elif t[i] == "$" and (t.startswith(("${", "$["), i) or _EXPANSION_START.match(t, i + 1)):
            self.exact = False
            self.f.live = True
            self.add("$", "$")
        elif t[i] == "$" and self.f.quote == '"':
            self.exact = False  # any `$` inside double quotes: no prefix rule vouches for it
            self.add("$", "$")
        else:
            return False
        return True

    def unquoted(self) -> None:
        f, t, i = self.f, self.text, self.i
        ch = t[i]
        if (run := _PLAIN[""].match(t, i)) is not None:
            self.add(run.group(), run.group())
            return
        if t.startswith("\\\n", i):
            self.i += 2
        elif ch == "\\" and i + 1 < len(t):
            self.add(t[i : i + 2], t[i + 1])
        elif ch == "#" and not f.started:
            while self.i < len(t) and t[self.i] != "\n":
                self.i += 1
        elif (f.closer == "`" and ch == "`") or (f.closer == ")" and ch == ")" and not f.depth):
            self.pop()
        elif t.startswith(("<(", ">("), i):
            self.push(")", t[i : i + 2])
        elif self.expansion():
            pass
        elif ch in "'\"":
            self.add(ch, "")
            f.quote = ch
        elif t.startswith("<<", i):
            self.heredoc()
        elif (redirect := next((r for r in _REDIRECTS if t.startswith(r, i)), None)) is not None:
            if not "".join(f.word).isdigit():
                self.end_word()
            f.started, f.word = False, []  # a descriptor number in front is the redirection's
            self.redirect(redirect)
            f.raw.append(redirect)
            self.i += len(redirect)
        elif (op := next((o for o in _OPERATORS if t.startswith(o, i)), None)) is not None:
            self.operator(op)
        elif ch in " \t":
            self.end_word()
            f.raw.append(ch)
            self.i += 1
        else:
            self.add(ch, ch)

    def operator(self, op: str) -> None:
        f = self.f
        if op == "(" and self.text.startswith("((", self.i):
            self.exact = self.complete = False  # an arithmetic command
        if f.closer == ")" and op in "()":
            f.depth += 1 if op == "(" else -1
        self.end_part()
        self.i += len(op)
        if op == "\n" and self.heredocs:
            self.skip_bodies()

    def heredoc(self) -> None:
        """`<<WORD` (or a `<<<` here-string): the body lines are data, read after this line."""
        self.exact = False
        f, t = self.f, self.text
        if t.startswith("<<<", self.i):
            self.end_word()
            f.raw.append("<<<")
            self.redirect("<<<")
            self.i += 3
            return
        strip = t.startswith("<<-", self.i)
        m = re.compile(r"\s*(\S+)").match(t, self.i + 2 + strip)
        word = m.group(1) if m else ""
        end = m.end() if m else len(t)
        f.raw.append(t[self.i : end])
        self.i = end
        quoted = any(q in word for q in "'\"\\")  # a quoted delimiter keeps the body from expanding
        self.heredocs.append((re.sub(r"['\"\\\\]", "", word), strip, not quoted))

    def skip_bodies(self) -> None:
        lines = self.text[self.i :].split("\n")
        taken = 0
        for delimiter, strip, expands in self.heredocs:
            while taken < len(lines):
                line = lines[taken]
                taken += 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                if expands and ("$" in line or "`" in line):
                    self.complete = False  # a substitution in the body runs
        self.heredocs = []
        self.i += sum(len(line) + 1 for line in lines[:taken])


def scan(command: str) -> Scan:
    return _Scanner(command).run()


def exact_parts(command: str) -> list[Part] | None:
    """The simple commands in `command` (those with any text), or None when it is not exact."""
    s = scan(command)
    return [p for p in s.parts if p.raw.strip()] if s.exact else None


def split_raw(command: str) -> list[str] | None:
    """The simple commands in `command` as written (quotes kept), or None when it is not exact."""
    parts = exact_parts(command)
    return None if parts is None else [p.raw for p in parts]


def split_command(command: str) -> list[str] | None:
    """The simple commands in `command`, each normalised to its words joined by single spaces;
    None when the line cannot be judged part by part."""
    raw = split_raw(command)
    if raw is None:
        return None
    out = []
    for part in raw:
        try:
            words = shlex.split(part)
        except ValueError:
            return None
        if words:
            out.append(" ".join(words))
    return out


def writes_files(part: Part) -> bool:
    """Whether a simple command redirects output into a file (anything but /dev/null or another
    descriptor), wherever the redirection stands (`echo hi>run.sh` too). Its own redirections only:
    a command inside a substitution is a part of its own."""
    return any(r.writes_file for r in part.redirects)


def unquoted_dollar(part: Part) -> bool:
    """Whether a simple command holds a `$` that bash reads as one, expanded or not (`$HOME`,
    `"$x"`, `$ `): one that is neither quoted by `'…'` or `$'…'` nor escaped by a backslash."""
    return part.dollar
