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
_UNSPLITTABLE = ("$(", "<(", ">(", "<<", "$'", "`")
_OUTPUT_REDIRECT = re.compile(r"^(?:\d*|&)>>?\|?(.*)$")
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
    "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"},
}
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
    """Whether a simple command redirects output into a file (not /dev/null, not another descriptor)."""
    try:
        words = shlex.split(part)
    except ValueError:
        return True
    for i, word in enumerate(words):
        m = _OUTPUT_REDIRECT.match(word)
        if m is None:
            continue
        target = m.group(1) or (words[i + 1] if i + 1 < len(words) else "")
        if target != "/dev/null" and not target.startswith("&"):
            return True
    return False


def _unwrap(words: list[str]) -> list[str]:
    """The command a wrapper (`timeout 5`, `env X=1`, `sudo -u me`, assignments) runs."""
    while words:
        if "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            words = words[1:]
        elif words[0] in _WRAPPERS:
            takes_value = _WRAPPERS[words[0]]
            words = words[1:]
            while words and (words[0].startswith("-") or "=" in words[0] or words[0][:1].isdigit()):
                words = words[2:] if words[0] in takes_value else words[1:]
        else:
            break
    return words


def split_raw(command: str) -> list[str] | None:
    """The simple commands in `command` as written (quotes kept), or None when not splittable."""
    raw = _raw_parts(command)
    return None if raw is None else [p for p in raw if p.strip()]


def effective_commands(part: str, depth: int = 0) -> list[str] | None:
    """What one simple command (as written) may really run, for deny and ask rules, each normalised:
    itself, the command a wrapper runs, and the commands in a `bash -c` or `eval` string. None when
    that cannot be known."""
    try:
        words = shlex.split(part)
    except ValueError:
        return None
    if not words:
        return []
    found = [" ".join(words)]
    inner = _unwrap(words)
    if inner and inner != words:
        found.append(" ".join(inner))
    if inner and (inner[0] == "eval" or (inner[0] in _SHELLS and "-c" in inner)):
        if depth >= 3:
            return None
        at = inner.index("-c") + 1 if inner[0] != "eval" else 1
        script = " ".join(inner[at:]) if inner[0] == "eval" else (inner[at] if at < len(inner) else "")
        nested = split_raw(script)
        if nested is None:
            return None
        for command in nested:
            more = effective_commands(command, depth + 1)
            if more is None:
                return None
            found += more
    return found
