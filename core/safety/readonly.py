"""Which shell command lines only look.

A line only looks when it can be split into simple commands, none redirects output into a file,
and each one runs, by its bare name (or from a system folder), a program known to change nothing,
with no option that makes it write or run another program (`sort -o`, `find -delete`,
`git diff --output`, `rg --pre`), no variable assignment in front but locale, time zone and
terminal ones (`GIT_EXTERNAL_DIFF=… git diff` runs a program), and no wrapper that changes who runs
it or what (`sudo`, `env -S`, `time -o`). Anything else, including every program not listed here,
is not read-only.

What the verdict buys is deliberately small, so that a misjudged line costs nothing: read-only
lines of one turn run side by side, each in a read-only sandbox (where a line that writes after all
simply fails), and plan mode asks about them instead of refusing them. It never skips a question:
no syntactic check can know every file a command will read.
"""

from __future__ import annotations

import functools
import shlex

from piton.core.records import record
from piton.core.safety.shellrun import effect
from piton.core.safety.shellsplit import RESERVED, Part, exact_parts, unquoted_dollar, writes_files
from piton.core.safety.wrappers import RUNNERS, unwrap

# Programs that read files, the environment or the clock and write only to standard output.
_LOOKERS = frozenset(
    {
        "basename", "cat", "cd", "cmp", "column", "comm", "cut", "date", "df", "diff", "dirname", "du",
        "echo", "egrep", "expand", "false", "fgrep", "file", "find", "fmt", "fold", "grep", "head", "id",
        "join", "ls", "md5sum", "nl", "od", "paste", "popd", "printf", "pushd", "pwd", "readlink",
        "realpath", "rev", "rg", "seq", "sha1sum", "sha256sum", "sha512sum", "sleep", "sort", "stat",
        "strings", "tac", "tail", "test", "tr", "tree", "true", "type", "uname", "wc", "which", "whoami",
        "[",
    }
)  # fmt: skip
_MOVERS = frozenset({"cd", "pushd", "popd"})  # change the shell's directory, which the next call keeps
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
# env's options that leave the command as it is (anything else, `-S` and `-C` above all, does not)
_ENV_PLAIN = ("-i", "--ignore-environment", "-u", "--unset", "-0", "--null")
# Wrappers that leave a look a look (`flock` creates its lock file, `setsid -f` outlives the call...)
_PLAIN_WRAPPERS = frozenset(
    {"command", "builtin", "nohup", "time", "nice", "ionice", "timeout", "env", "stdbuf"}
)


@record(frozen=True)
class Reading:
    """What a command line was found to do."""

    read_only: bool
    changes_directory: bool = False  # a `cd`, `pushd` or `popd` (or `env -C`) somewhere in it


_UNKNOWN = Reading(False, changes_directory=True)


def _has_option(args: list[str], options: tuple[str, ...]) -> bool:
    """Whether `args` holds one of `options`: alone, with `=value`, a long one by any prefix that
    GNU tools accept as an abbreviation (`--out=x`), or a short one anywhere in a cluster of short
    flags (`-rno out`, `-ofile`). Erring towards yes only costs a serial call."""
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


def _plain_env(stripped: list[str]) -> bool:
    """Whether `env` among the wrapper words only clears or unsets variables."""
    after = stripped[stripped.index("env") + 1 :] if "env" in stripped else []
    return all(not word.startswith("-") or word in _ENV_PLAIN for word in after)


def _wrapped(stripped: list[str]) -> bool:
    """Whether the words before the command leave it a plain look: no assignment that can make the
    program run another (GIT_EXTERNAL_DIFF, PATH, LD_PRELOAD), no change of user, no option of env
    beyond clearing variables, no report written by `time -o`, no other process's priority."""
    for word in stripped:
        name = word.split("=", 1)[0] if "=" in word else ""
        if name.isidentifier() and name not in _HARMLESS_VARIABLES and not name.startswith("LC_"):
            return False
    if any(w in _ESCALATING or (w in RUNNERS and w not in _PLAIN_WRAPPERS) for w in stripped):
        return False
    if not _plain_env(stripped):
        return False
    if "time" in stripped and _has_option(stripped[stripped.index("time") + 1 :], ("-o", "--output")):
        return False
    return not ({"ionice", "renice"} & set(stripped) and "-p" in stripped)


def _simple(part: Part) -> Reading:
    """One simple command, as scanned."""
    if "\\\n" in part.raw:
        return _UNKNOWN  # bash and shlex disagree about a continuation inside quotes
    try:
        words = shlex.split(part.raw)
    except ValueError:
        return _UNKNOWN
    inner = unwrap(words)
    if inner is None:
        return _UNKNOWN  # a wrapper that runs a string, nothing, or with options we cannot read
    stripped = words[: len(words) - len(inner)]
    moves = bool(inner) and _program(inner[0]) in _MOVERS
    if writes_files(part) or not _wrapped(stripped):
        return Reading(False, moves)
    if not inner:  # only reserved words (`}`, `fi`, `done`) remain; a wrapper alone runs nothing we know
        return Reading(all(w in RESERVED for w in stripped))
    word = inner[0]
    program = "[" if word == "[" else None if any(c in word for c in "*?[]{}$~\\") else _program(word)
    if program is None:
        return _UNKNOWN  # a pattern, a variable, an escape, or a path we cannot vouch for (`./ls`)
    args = inner[1:]
    expands = unquoted_dollar(part) or any(c in a for a in args for c in "*?[]{}")
    if program == "git":
        return Reading(not expands and _git_reads(args))
    if program not in _LOOKERS:
        return Reading(False, moves)
    writes = program in _WRITING_OPTIONS and (expands or _has_option(args, _WRITING_OPTIONS[program]))
    return Reading(not writes, moves)


def classify(command: str) -> Reading:
    """What `command` does, judged command by command (see the module's docstring). A Bash call
    asks three times (plan mode, concurrency, the sandbox it gets): short lines are remembered."""
    return _remembered(command) if len(command) <= _REMEMBERED_CHARS else _classify(command)


_REMEMBERED_CHARS = 4096  # a long line (a heredoc) is judged afresh rather than kept


@functools.lru_cache(maxsize=256)
def _remembered(command: str) -> Reading:
    return _classify(command)


def _classify(command: str) -> Reading:
    parts = exact_parts(command)
    if not parts or not effect(command).complete:
        return _UNKNOWN  # not exact, or it runs what cannot be read: never a plain look
    readings = [_simple(part) for part in parts]
    return Reading(all(r.read_only for r in readings), any(r.changes_directory for r in readings))
