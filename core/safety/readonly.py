"""Which shell command lines only look: the one classification that both permissions (a read-only
command needs no question, and runs in plan mode) and the agent (read-only calls of one turn run
side by side) rely on.

A line is read-only when it can be split into simple commands, none redirects output into a file,
and each one, after wrappers such as `timeout 5` or `FOO=1`, runs a program known to change nothing,
with no option that makes it write (`sort -o`, `find -delete`, `git diff --output`). Anything
else, including every program we do not know, is not read-only: the cost of a wrong "no" is a
question or a serial call, the cost of a wrong "yes" is a change nobody approved.
"""

from __future__ import annotations

import shlex

from piton.core.safety.shellsplit import split_raw, unquoted_dollar, unwrap, writes_files

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
# Options that make an otherwise read-only program write or run something.
_WRITING_OPTIONS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output"),
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "rg": ("--pre",),  # runs a program on each file
    "tree": ("-o",),
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),  # writes a compiled magic file
}
# git subcommands that only read, and the options that would make them write.
_GIT_READERS = frozenset(
    {"blame", "cat-file", "describe", "diff", "grep", "log", "ls-files", "ls-tree", "rev-parse", "show",
     "shortlog", "status"}
)  # fmt: skip
_GIT_WRITING_OPTIONS = ("--output", "-o", "--ext-diff", "--textconv", "-O", "--open-files-in-pager")
# git options before the subcommand that change what runs or where it writes
_GIT_GLOBAL_UNSAFE = ("-c", "--config-env", "--exec-path", "-C", "--git-dir", "--work-tree", "--namespace")


def _has_option(args: list[str], options: tuple[str, ...]) -> bool:
    """Whether `args` holds one of `options`: alone, with `=value`, or a short one anywhere in a
    cluster of short flags (`-rno out`, `-ofile`). Erring towards yes only costs a question."""
    for arg in args:
        for option in options:
            if arg == option or arg.startswith(option + "="):
                return True
            short = len(option) == 2 and option[0] == "-"
            if short and arg.startswith("-") and not arg.startswith("--") and option[1] in arg[1:]:
                return True
    return False


def _git_reads(args: list[str]) -> bool:
    if not args or (args[0].startswith("-") and _has_option(args[:1], _GIT_GLOBAL_UNSAFE)):
        return False
    while args and args[0].startswith("-"):
        if args[0] in ("--no-pager", "--no-optional-locks", "-P", "--literal-pathspecs"):
            args = args[1:]
        else:
            return False
    if not args or args[0] not in _GIT_READERS:
        return False
    if args[0] == "grep" and _has_option(args[1:], ("-O", "--open-files-in-pager")):
        return False
    return not _has_option(args[1:], _GIT_WRITING_OPTIONS)


def _reads(words: list[str], expands: bool) -> bool:
    """Whether one simple command (as words, wrappers removed) only looks. `expands`: the command
    holds a `$` that bash expands, so an argument may turn out to be any option."""
    program = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if program == "git":
        return not expands and _git_reads(args)
    if program not in _LOOKERS:
        return False
    if program in _WRITING_OPTIONS:
        return not expands and not _has_option(args, _WRITING_OPTIONS[program])
    return True


def is_read_only_command(command: str) -> bool:
    """True when every command `command` may run only reads (see the module's docstring)."""
    parts = split_raw(command)
    if not parts:
        return False
    for part in parts:
        if writes_files(part):
            return False
        try:
            words = shlex.split(part)
        except ValueError:
            return False
        inner = unwrap(words)
        if inner != words and words[0] in ("sudo", "doas", "exec"):
            return False  # a wrapper that changes who runs it, or replaces the shell
        if not inner:
            if words and any("=" in w for w in words):
                return False  # a bare assignment changes the shell's variables: harmless, but not a look
            continue
        if any(c in inner[0] for c in "*?[]{}$") and inner[0] != "[":
            return False  # the program itself is a pattern or a variable
        if not _reads(inner, unquoted_dollar(part)):
            return False
    return True
