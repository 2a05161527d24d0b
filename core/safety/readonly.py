"""Which shell command lines only look, and at what.

A line only looks when it can be split into simple commands, none redirects output into a file,
and each one runs, by its bare name (or from a system folder), a program known to change nothing,
with no option that makes it write or run another program (`sort -o`, `find -delete`,
`git diff --output`, `rg --pre`), no variable assignment in front (`GIT_EXTERNAL_DIFF=… git diff`
runs a program; only locale, time zone and terminal variables are let through), and no wrapper that
changes who runs it or what (`sudo`, `env -S`, `time -o`).
Anything else, including every program not listed here, is not read-only: the cost of a wrong
"no" is a question or a serial call, the cost of a wrong "yes" is a change nobody approved (and
the Bash tool runs a read-only line in a read-only sandbox, so even that change cannot land).

Besides the verdict, a classification says which paths the line names, when that can be known
(no `$`, glob or brace for bash to expand), and whether it reads whole trees (`rg`, `grep -r`,
`find`): permissions let such lines run unasked only when every named path is one the file tools
could read, and never for tree readers, which would see files the file tools hide.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from piton.core.safety.shellsplit import (
    RESERVED,
    split_raw,
    splits_a_string,
    unquoted_dollar,
    unwrap,
    writes_files,
)

# Programs that read files, the environment or the clock and write only to standard output.
_LOOKERS = frozenset(
    {
        "basename", "cat", "cd", "cmp", "column", "comm", "cut", "date", "df", "diff", "dirname", "du",
        "echo", "egrep", "expand", "false", "fgrep", "file", "find", "fmt", "fold", "grep", "head", "id",
        "join", "ls", "md5sum", "nl", "od", "paste", "printf", "pwd", "readlink", "realpath", "rev", "rg",
        "seq", "sha1sum", "sha256sum", "sha512sum", "sleep", "sort", "stat", "strings", "tac", "tail",
        "test", "tr", "tree", "true", "type", "uname", "wc", "which", "whoami", "[",
    }
)  # fmt: skip
# Of those, the ones whose arguments are never files to read.
_NO_FILES = frozenset(
    {"basename", "cd", "dirname", "echo", "false", "id", "printf", "pwd", "seq", "sleep", "true", "type",
     "uname", "which", "whoami"}
)  # fmt: skip
# Options that make an otherwise read-only program write, run something, or evaluate code.
_WRITING_OPTIONS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output", "--compress-program", "-T", "--temporary-directory"),
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "rg": ("--pre", "--hostname-bin", "--search-zip", "-z"),  # each runs other programs
    "tree": ("-o", "-R", "-H"),  # -R with -H writes an HTML file into every folder
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),  # writes a compiled magic file
    "printf": ("-v",),  # assigns through an array subscript, which bash evaluates
    "test": ("-v",),
    "[": ("-v",),
}
# Programs that read whole trees when given a folder (or none): what the file tools hide inside them
# would be read too.
_TREE_READERS = frozenset({"rg", "find", "tree"})
_RECURSIVE: dict[str, tuple[str, ...]] = {
    "grep": ("-r", "-R", "--recursive", "--dereference-recursive", "-d", "--directories"),
    "ls": ("-R", "--recursive"),
    "diff": ("-r", "--recursive"),
}
_RECURSIVE["egrep"] = _RECURSIVE["fgrep"] = _RECURSIVE["grep"]
# git subcommands that only read, and the options that would make them write or run a program.
_GIT_READERS = frozenset(
    {"blame", "cat-file", "describe", "diff", "grep", "log", "ls-files", "ls-tree", "rev-parse", "show",
     "shortlog", "status"}
)  # fmt: skip
_GIT_WRITING_OPTIONS = ("--output", "-o", "--ext-diff", "--textconv", "-O", "--open-files-in-pager")
_GIT_SAFE_GLOBALS = ("--no-pager", "--no-optional-locks", "-P", "--literal-pathspecs")
# Folders a program named by its full path may come from (anything else may be the project's own).
_SYSTEM_BIN = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
# Variables a command may be given in front without changing what program it runs or what it may do
_HARMLESS_VARIABLES = frozenset({"LANG", "LANGUAGE", "TZ", "NO_COLOR", "COLUMNS", "LINES", "TERM"})
# Wrappers that change who runs the command, or replace the shell
_ESCALATING = frozenset({"sudo", "doas", "exec", "su", "runuser", "setpriv", "chroot", "nsenter"})


@dataclass(frozen=True, slots=True)
class Reading:
    """What a command line was found to do."""

    read_only: bool
    reads_trees: bool = False  # some command reads whole folders (rg, grep -r, find)
    paths: tuple[str, ...] | None = ()  # the paths it names; None when expansion hides them


_NOT_READ_ONLY = Reading(False, paths=None)


def _has_option(args: list[str], options: tuple[str, ...]) -> bool:
    """Whether `args` holds one of `options`: alone, with `=value`, a long one by any prefix that
    GNU tools accept as an abbreviation (`--out=x`), or a short one anywhere in a cluster of short
    flags (`-rno out`, `-ofile`). Erring towards yes only costs a question."""
    for arg in args:
        if arg == "--":
            return False
        name = arg.split("=", 1)[0]
        for option in options:
            if arg == option or arg.startswith(option + "="):
                return True
            if (
                option.startswith("--")
                and name.startswith("--")
                and len(name) > 2
                and option.startswith(name)
            ):
                return True
            short = len(option) == 2 and option[0] == "-"
            if short and arg.startswith("-") and not arg.startswith("--") and option[1] in arg[1:]:
                return True
    return False


def _git_reads(args: list[str]) -> bool:
    while args and args[0].startswith("-"):
        if args[0] not in _GIT_SAFE_GLOBALS:
            return False  # -c, -C, --git-dir, --exec-path... change what runs or where
        args = args[1:]
    if not args or args[0] not in _GIT_READERS:
        return False
    return not _has_option(args[1:], _GIT_WRITING_OPTIONS)


def _program(word: str) -> str | None:
    """The program a command word runs, if it is one we can judge: a bare name, or a full path right
    inside a system folder (a `./ls` or `tools/cat` may be anything)."""
    if "/" not in word:
        return word
    folder, _, name = word.rpartition("/")
    return name if f"{folder}/" in _SYSTEM_BIN and name else None


def _paths(program: str, args: list[str]) -> list[str]:
    """The arguments that may name files the command reads: everything but options (whose values
    after `=`, or glued to a short option, count too when they look like paths)."""
    if program in _NO_FILES:
        return []
    found: list[str] = []
    for arg in args:
        if arg == "--":
            continue
        if arg.startswith("--"):
            value = arg.partition("=")[2]
            if value:
                found.append(value)
        elif arg.startswith("-") and len(arg) > 2:
            glued = arg[2:]
            if "/" in glued or "." in glued:
                found.append(glued)
        elif not arg.startswith("-") or arg == "-":
            found.append(arg)
    if program == "git":  # `HEAD:secrets/key` names a path after the colon
        found = [a.split(":", 1)[1] if ":" in a else a for a in found if a not in _GIT_READERS]
    return [p for p in found if p and p != "-"]


def _reads_trees(program: str, args: list[str]) -> bool:
    if program in _TREE_READERS:
        return True
    if program in _RECURSIVE:
        return _has_option(args, _RECURSIVE[program])
    return program == "git" and bool(args) and args[0] == "grep"


def _wrapped(stripped: list[str]) -> bool:
    """Whether the wrappers and words before the command leave it a plain look: no assignment (it
    can make the program run another: GIT_EXTERNAL_DIFF, PATH, LD_PRELOAD), no change of user, no
    string for `env` to run, no report written by `time -o`, no other process's priority changed."""
    for word in stripped:
        name = word.split("=", 1)[0] if "=" in word else ""
        if name.isidentifier() and name not in _HARMLESS_VARIABLES and not name.startswith("LC_"):
            return False
    if any(w in _ESCALATING for w in stripped) or splits_a_string(stripped):
        return False
    if "time" in stripped and _has_option(stripped[stripped.index("time") + 1 :], ("-o", "--output")):
        return False
    return not ({"ionice", "renice"} & set(stripped) and "-p" in stripped)


def _simple(part: str) -> Reading:
    """One simple command, as written."""
    if writes_files(part):
        return _NOT_READ_ONLY
    try:
        words = shlex.split(part)
    except ValueError:
        return _NOT_READ_ONLY
    inner = unwrap(words)
    stripped = words[: len(words) - len(inner)]
    if not _wrapped(stripped):
        return _NOT_READ_ONLY
    if not inner:  # only reserved words (`}`, `fi`, `done`) remain; a wrapper alone runs nothing we know
        return Reading(all(w in RESERVED for w in stripped))
    word = inner[0]
    program = "[" if word == "[" else None if any(c in word for c in "*?[]{}$~") else _program(word)
    if program is None:
        return _NOT_READ_ONLY  # a pattern, a variable, or a path we cannot vouch for (`./ls`)
    args = inner[1:]
    expands = unquoted_dollar(part) or any(c in a for a in args for c in "*?[]{}")
    if program == "git":
        if expands or not _git_reads(args):
            return _NOT_READ_ONLY
    elif program not in _LOOKERS or (
        program in _WRITING_OPTIONS and (expands or _has_option(args, _WRITING_OPTIONS[program]))
    ):
        return _NOT_READ_ONLY
    paths = None if expands else tuple(_paths(program, args))
    return Reading(True, _reads_trees(program, args), paths)


def classify(command: str) -> Reading:
    """What `command` does, judged command by command (see the module's docstring)."""
    parts = split_raw(command)
    if not parts:
        return _NOT_READ_ONLY
    trees, moved = False, False
    paths: list[str] | None = []
    for part in parts:
        reading = _simple(part)
        if not reading.read_only:
            return _NOT_READ_ONLY
        trees = trees or reading.reads_trees
        if paths is not None and reading.paths is not None and not (moved and reading.paths):
            paths += reading.paths
        else:
            paths = None  # unknown, or relative to a directory a `cd` before it changed to
        moved = moved or part.split(maxsplit=1)[:1] in (["cd"], ["pushd"], ["popd"])
    return Reading(True, trees, None if paths is None else tuple(paths))


def is_read_only_command(command: str) -> bool:
    """True when every command `command` may run only looks."""
    return classify(command).read_only
