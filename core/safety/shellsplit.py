"""Splitting a shell command line into the simple commands a permission rule can judge.

`npm test && rm -rf build` is two commands; a rule allowing `npm test:*` must not allow the second.
Anything whose meaning depends on expansion we do not perform (command or process substitution,
here-documents, ANSI-C quoting) is reported as not splittable, so no prefix rule can allow it.
The scanner follows bash where it matters for safety: quotes, backslashes, line continuations, and
`#` starting a comment only at the start of a word.
"""

from __future__ import annotations

import re
import shlex

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = (">&", "<&", "&>>", "&>", ">|")
_UNSPLITTABLE = ("$(", "<(", ">(", "<<", "$'", "`", "${")  # ${x@P} runs its value as a prompt string
_DUP_TARGET = re.compile(r"\s*(\d+|-)(?=\s|$)")
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
# Commands that run the command after them (with their options that take a value): a deny rule for
# `git push` must see through `timeout 5 git push`.
_WRAPPERS: dict[str, set[str]] = {
    "command": set(),
    "exec": {"-a"},
    "nohup": set(),
    "time": {"-f", "-o"},
    "builtin": set(),
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
}
# Commands that run commands we cannot see (from stdin, from a file): opaque to deny rules.
_OPAQUE_RUNNERS = {"xargs", "source", ".", "parallel", "watch"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish"}


def _raw_parts(command: str) -> list[str] | None:
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    word_start = True  # at the start of a word: where `#` begins a comment
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if quote:
            current.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < n:
                current.append(command[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
            elif quote == '"' and (ch == "`" or command.startswith("$(", i)):
                return None
            i += 1
            continue
        if command.startswith("\\\n", i):  # a line continuation: bash removes both characters
            i += 2
            continue
        if ch == "\\" and i + 1 < n:
            current += [ch, command[i + 1]]
            word_start = False
            i += 2
            continue
        if ch == "#" and word_start:
            while i < n and command[i] != "\n":
                i += 1
            continue
        if command.startswith(_UNSPLITTABLE, i):
            return None
        if ch in "'\"":
            quote = ch
            current.append(ch)
            word_start = False
            i += 1
            continue
        redirect = next((r for r in _REDIRECTS if command.startswith(r, i)), None)
        if redirect is not None:  # `2>&1`, `&> log`: part of the command, not a separator
            current.append(redirect)
            word_start = True
            i += len(redirect)
            continue
        op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        if op is not None:
            parts.append("".join(current))
            current = []
            word_start = True
            i += len(op)
            continue
        current.append(ch)
        word_start = ch in " \t<>"
        i += 1
    if quote:
        return None
    parts.append("".join(current))
    return parts


def _words(parts: list[str]) -> list[list[str]] | None:
    out = []
    for part in parts:
        try:
            words = shlex.split(part)
        except ValueError:
            return None
        if words:
            out.append(words)
    return out


def split_command(command: str) -> list[str] | None:
    """The simple commands in `command`, each normalised to its words joined by single spaces;
    None when the line cannot be judged part by part."""
    raw = _raw_parts(command)
    words = None if raw is None else _words(raw)
    return None if words is None else [" ".join(w) for w in words]


def writes_files(part: str) -> bool:
    """Whether a simple command, as written, redirects output into a file (anything but /dev/null
    or another descriptor), wherever the redirection stands (`echo hi>run.sh` too)."""
    quote = ""
    i, n = 0, len(part)
    while i < n:
        ch = part[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == ">":
            if i > 0 and part[i - 1] == "<":
                return True  # <> opens the file for writing
            j = i + 1
            if j < n and part[j] in ">|":
                j += 1
            if j < n and part[j] == "&":
                if not _DUP_TARGET.match(part, j + 1):
                    return True  # >&file writes the file
                i = j + 1
                continue
            target = part[j:].lstrip().split(maxsplit=1)
            if not target or target[0] != "/dev/null":
                return True
        i += 1
    return False


def unwrap(words: list[str]) -> list[str]:
    """The command a wrapper (`timeout 5`, `env X=1`, `sudo -u me`, assignments) or a reserved
    word (`{`, `!`, `if`, `while`...) runs."""
    while words:
        if words[0] in RESERVED or ("=" in words[0] and words[0].split("=", 1)[0].isidentifier()):
            words = words[1:]
        elif words[0] in _WRAPPERS:
            takes_value = _WRAPPERS[words[0]]
            words = words[1:]
            while words and (words[0].startswith("-") or "=" in words[0] or words[0][:1].isdigit()):
                words = words[2:] if words[0] in takes_value else words[1:]
        else:
            break
    return words


def splits_a_string(wrappers: list[str]) -> bool:
    """Whether `env` among these wrapper words is told to split a string into a command (`-S`,
    `--split-string`, or any abbreviation GNU env accepts)."""
    if "env" not in wrappers:
        return False
    for word in wrappers[wrappers.index("env") + 1 :]:
        name = word.split("=", 1)[0]
        short_cluster = word.startswith("-") and not word.startswith("--")
        if (short_cluster and "S" in word[1:]) or (len(name) >= 3 and "--split-string".startswith(name)):
            return True
        if not word.startswith("-") and "=" not in word:
            break  # the command env runs begins here
    return False


def _find_exec(words: list[str]) -> list[str]:
    """The commands `find ... -exec CMD ;` runs."""
    found, i = [], 0
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            found.append(" ".join(words[i + 1 : end]))
            i = end
        i += 1
    return found


def unquoted_dollar(part: str) -> bool:
    quote = ""
    for i, ch in enumerate(part):
        if quote:
            if ch == quote and (quote == "'" or part[i - 1] != "\\"):
                quote = ""
            elif ch == "$" and quote == '"':
                return True
        elif ch in "'\"":
            quote = ch
        elif ch == "$" and (i == 0 or part[i - 1] != "\\"):
            return True
    return False


def split_raw(command: str) -> list[str] | None:
    """The simple commands in `command` as written (quotes kept), or None when not splittable."""
    raw = _raw_parts(command)
    return None if raw is None else [p for p in raw if p.strip()]


def effective_commands(part: str, depth: int = 0) -> list[str] | None:
    """What one simple command (as written) may really run, for deny and ask rules, each normalised:
    itself, what wrappers and reserved words lead to, its program by basename, `find -exec`
    commands, and the commands in a `bash -c` or `eval` string. None when that cannot be known:
    a variable may hold any word, a glob may match any program, `xargs` and `source` read their
    commands from elsewhere."""
    if unquoted_dollar(part):
        return None
    try:
        words = shlex.split(part)
    except ValueError:
        return None
    if not words:
        return []
    found = [" ".join(words)]
    inner = unwrap(words)
    if splits_a_string(words[: len(words) - len(inner)]):
        return None  # `env -S 'git push'` runs a string of its own
    if not inner:
        return found
    program = inner[0]
    if any(c in program for c in "*?[]{}") or program in _OPAQUE_RUNNERS:
        return None
    if inner != words:
        found.append(" ".join(inner))
    if "/" in program:
        found.append(" ".join([program.rsplit("/", 1)[1], *inner[1:]]))
        program = program.rsplit("/", 1)[1]
    if program in _SHELLS and "-c" not in inner and len(inner) > 1:
        return None  # a script file we do not read
    nested_scripts = []
    if program == "eval":
        nested_scripts.append(" ".join(inner[1:]))
    elif program in _SHELLS and "-c" in inner:
        at = inner.index("-c") + 1
        nested_scripts.append(inner[at] if at < len(inner) else "")
    elif program == "find":
        nested_scripts += _find_exec(inner)
    if nested_scripts and depth >= 3:
        return None
    for script in nested_scripts:
        nested = split_raw(script)
        if nested is None:
            return None
        for command in nested:
            more = effective_commands(command, depth + 1)
            if more is None:
                return None
            found += more
    return found
