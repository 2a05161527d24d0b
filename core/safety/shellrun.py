"""What a shell command line may run, for deny and ask rules.

A deny rule for `rm` must see the `rm` in `timeout .5 rm x`, `flock /tmp/l -c 'rm x'`, `bash -c -- 'rm
x'`, `echo $(rm x)`, `find . -exec rm {} +` or `git -C . push` for `git push`, and must not fire on
`echo rm` or `grep rm file`. So the commands of a line (`shellsplit.scan`) are read the way the
programs in front read their arguments: wrappers by their own options (`wrappers.py`), shells and
`eval`/`trap` strings as command lines of their own, git without its global options. What cannot be
read here makes the list incomplete, and a line with an incomplete list asks whenever Bash deny or
ask rules exist: a command word from a variable or a glob, a script file or standard input fed to a
shell, `source`, arithmetic and subscripts (they can evaluate text left in any variable, even `$_`),
aliases, variables that hold code or change what runs (`PS4`, `BASH_ENV`, `PATH`, `LD_PRELOAD`),
options of a wrapper we do not know, `git -c`. Programs that run what their arguments or files tell
them (`python -c`, `make`, `npm run`, a script) are beyond any such reading: deny rules are a guard
rail, the sandbox is the boundary.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import field

from piton.core.records import record
from piton.core.safety.shellsplit import RESERVED, Word, scan
from piton.core.safety.wrappers import RUNNERS, Spec, read_options

_MAX_DEPTH = 4  # nested `bash -c`/`eval` strings read before giving up
SHELLS = frozenset({"sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish"})
# Variables whose value is code a shell or a program runs: read as a command line of its own.
_HOLDS_CODE = re.compile(
    r"PS[0-4]|PROMPT_COMMAND|BASH_FUNC_.*|\w*(_COMMAND|_CMD|EDITOR|VISUAL|PAGER|_SSH|_PROGRAM|SHELL|_DIFF|ASKPASS)"
)
# Variables that change which program runs or add code we cannot read (a file, a library, settings).
_CHANGES_WHAT_RUNS = re.compile(r"PATH|LD_\w+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|GIT_CONFIG\w*|GIT_EXEC_PATH")
_GIT_VALUED = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env")
_ARITHMETIC = ("-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R")


@record(frozen=True)
class Effect:
    commands: tuple[str, ...]  # commands the line runs or may run, words joined by single spaces
    open: tuple[str, ...]  # the known beginning of commands that go on with words not known here
    complete: bool  # nothing else runs: no command comes from a variable, a file or standard input


@record
class _Seen:
    commands: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    complete: bool = True

    def note(self, words: Sequence[Word]) -> None:
        cut = next((i for i, w in enumerate(words) if w.live), len(words))
        known = " ".join(w.text for w in words[:cut])
        if cut == len(words):
            self.commands.append(known)
        elif cut:
            self.open.append(known)


def effect(command: str) -> Effect:
    """Every command `command` may run, as far as it can be read (see the module's docstring)."""
    seen = _Seen()
    _script(command, seen, 0)
    return Effect(tuple(seen.commands), tuple(seen.open), seen.complete)


def _script(text: str, seen: _Seen, depth: int) -> None:
    if depth > _MAX_DEPTH:
        seen.complete = False
        return
    lines = scan(text)
    seen.complete &= lines.complete
    for part in lines.parts:
        _command(list(part.words), seen, depth)


def _nested(word: Word, seen: _Seen, depth: int) -> None:
    """A word that is a command line of its own (`bash -c WORD`, `eval`, `trap WORD EXIT`)."""
    seen.complete &= not word.live
    _script(word.text, seen, depth + 1)


def _command(words: list[Word], seen: _Seen, depth: int) -> None:
    while words:
        seen.note(words)
        head = words[0]
        if _assignment(head, seen, depth, any_name=False):
            words = words[1:]
            continue
        if head.live:
            seen.complete = False  # the program itself comes from an expansion
            return
        if head.text in RESERVED:
            words = words[2:] if head.text == "function" else words[1:]
            continue
        program = head.text.rpartition("/")[2]
        if program != head.text:
            words = [Word(program), *words[1:]]
            seen.note(words)
        if program not in ("[", "[[") and (not program or any(c in program for c in "*?[]{}")):
            seen.complete = False  # a pattern may match any program
            return
        words = _step(program, words[1:], seen, depth)


def _assignment(word: Word, seen: _Seen, depth: int, *, any_name: bool) -> bool:
    """Whether `word` assigns a variable (env takes any name); notes the code a value may hold."""
    name, eq, value = word.text.partition("=")
    name = name.removesuffix("+")
    if not eq or not (any_name or name.isidentifier()):
        return False
    if _HOLDS_CODE.fullmatch(name):
        _nested(Word(value, word.live), seen, depth)
    elif _CHANGES_WHAT_RUNS.fullmatch(name):
        seen.complete = False
    return True


def _step(program: str, args: list[Word], seen: _Seen, depth: int) -> list[Word]:
    """Notes what `program` runs with `args`; returns the command a wrapper runs, else nothing."""
    spec = RUNNERS.get(program)
    if spec is not None:
        return _unwrap(program, spec, args, seen, depth)
    texts = [w.text for w in args]
    if program in SHELLS:
        _shell(program, args, seen, depth)
    elif program == "eval":
        _nested(Word(" ".join(texts), any(w.live for w in args)), seen, depth)
    elif program == "trap":
        operands = args[1:] if texts[:1] == ["--"] else args
        if not (operands and operands[0].text in ("-p", "-l")) and len(operands) > 1:
            _nested(operands[0], seen, depth)
    elif program == "find":
        _find(args, seen, depth)
    elif program == "git":
        _git(args, seen)
    elif program == "alias":
        seen.complete = seen.complete and not any("=" in t for t in texts)
        for word in args:
            _nested(Word(word.text.partition("=")[2], word.live), seen, depth)
    elif program in ("source", ".") or _evaluates(program, texts):
        seen.complete = False
    return []


def _unwrap(program: str, spec: Spec, args: list[Word], seen: _Seen, depth: int) -> list[Word]:
    opts = read_options(spec, args)
    seen.complete &= opts.sure
    rest = args[opts.end :]
    if program == "env" and opts.strings:  # -S: the string is split into more arguments of env's
        string = opts.strings[-1]
        try:
            words = shlex.split(string.text)
        except ValueError:
            words = []
        seen.complete &= not string.live and not any(c in string.text for c in "$\\")  # env expands these
        return [Word("env"), *(Word(w) for w in words), *rest] if depth < _MAX_DEPTH else []
    for string in opts.strings:
        _nested(string, seen, depth)
    if opts.stops:
        return []
    if spec.no_words:
        seen.complete &= bool(opts.strings)  # without one: a shell that reads its standard input
        return []
    if program == "env":
        while rest and _assignment(rest[0], seen, depth, any_name=True):
            rest = rest[1:]
    if program == "watch" and not opts.keys & {"x", "exec"}:  # it runs `sh -c "WORDS"`
        _nested(Word(" ".join(w.text for w in rest), any(w.live for w in rest)), seen, depth)
        return []
    if program == "xargs":  # it adds words read from its input (and puts them anywhere with -I)
        command = rest or [Word("echo")]
        return [*(command[:1] if opts.keys & {"I", "i", "replace"} else command), Word("", live=True)]
    return rest


def _shell(program: str, args: list[Word], seen: _Seen, depth: int) -> None:
    """`bash -c STRING` runs STRING; a shell given a file or nothing runs what cannot be read here."""
    i, command_mode = 0, False
    while i < len(args):
        text = args[i].text
        seen.complete &= not args[i].live
        if text in ("--", "-"):
            i += 1
            break
        if text.startswith("--"):
            if text in ("--version", "--help"):
                return
            i += 2 if text in ("--rcfile", "--init-file") else 1
        elif text[:1] in ("-", "+") and len(text) > 1:
            command_mode |= text[0] == "-" and "c" in text
            i += 1 + text.count("o") + text.count("O")  # -o OPTION, -O SHOPT take a value
        else:
            break
    if program == "fish":
        seen.complete = False  # another language: its strings are read as bash, roughly
    if not command_mode:
        seen.complete = False  # a script file, or commands from its standard input
    elif i < len(args):
        _nested(args[i], seen, depth)


def _find(args: list[Word], seen: _Seen, depth: int) -> None:
    """The commands `find … -exec CMD {} ;` runs (`{}` stands for a path not known here)."""
    i = 0
    while i < len(args):
        if args[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
            command = [Word(w.text, w.live or "{}" in w.text) for w in args[i + 1 : end]]
            if depth < _MAX_DEPTH:
                _command(command, seen, depth + 1)
            i = end
        i += 1


def _git(args: list[Word], seen: _Seen) -> None:
    """`git -C . push` is `git push`; `-c` and `--config-env` settings can make git run anything."""
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        text = args[i].text
        name = text.split("=", 1)[0]
        seen.complete &= not args[i].live and name not in ("-c", "--config-env", "--exec-path")
        i += 2 if name in _GIT_VALUED and "=" not in text else 1
    if i:
        seen.note([Word("git"), *args[i:]])


def _evaluates(program: str, texts: list[str]) -> bool:
    """Whether a builtin evaluates arithmetic or an array subscript in what it is given, where any
    value (even `$_`, the last word of the command before) may hold a command substitution that runs."""
    flags = "".join(t[1:] for t in texts if t.startswith("-") and not t.startswith("--"))
    subscript = any("[" in t for t in texts)
    if program in ("let", "fc", "enable", "compgen", "complete"):
        return True
    if program == "[[":
        return any(t in _ARITHMETIC for t in texts)
    if program in ("declare", "typeset", "local", "export", "readonly"):
        return "i" in flags or subscript
    if program in ("printf", "test", "["):
        return "v" in flags and subscript
    if program in ("read", "unset", "mapfile", "readarray", "wait", "getopts"):
        return subscript or (program in ("mapfile", "readarray") and "C" in flags)
    return program == "hash" and "p" in flags
