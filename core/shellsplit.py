"""Splitting a shell command line into the simple commands a permission rule can judge.

`npm test && rm -rf build` is two commands; a rule allowing `npm test:*` must not allow the second.
Anything whose meaning depends on expansion we do not perform (command or process substitution,
here-documents) is reported as not splittable, so no prefix rule can allow it.
"""

from __future__ import annotations

import shlex

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = (">&", "<&", "&>>", "&>", ">|")


def _raw_parts(command: str) -> list[str] | None:
    parts: list[str] = []
    current: list[str] = []
    quote = ""
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
        if ch in "'\"":
            quote = ch
        elif ch == "\\" and i + 1 < n:
            current += [ch, command[i + 1]]
            i += 2
            continue
        elif ch == "#" and (not current or current[-1].isspace()):
            while i < n and command[i] != "\n":  # a comment runs to the end of the line
                i += 1
            continue
        elif ch == "`" or command.startswith(("$(", "<(", ">(", "<<"), i):
            return None
        redirect = next((r for r in _REDIRECTS if command.startswith(r, i)), None)
        if redirect is not None:  # `2>&1`, `&> log`: part of the command, not a separator
            current.append(redirect)
            i += len(redirect)
            continue
        op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        if op is not None:
            parts.append("".join(current))
            current = []
            i += len(op)
            continue
        current.append(ch)
        i += 1
    if quote:
        return None
    parts.append("".join(current))
    return parts


def split_command(command: str) -> list[str] | None:
    """The simple commands in `command`, each normalised to its words joined by single spaces;
    None when the line cannot be judged part by part."""
    raw = _raw_parts(command)
    if raw is None:
        return None
    out: list[str] = []
    for part in raw:
        try:
            words = shlex.split(part)
        except ValueError:
            return None
        if words:
            out.append(" ".join(words))
    return out
