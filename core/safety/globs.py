"""Glob patterns as people write them (`src/**/*.ts`, `*.{js,jsx}`, `./secrets/**`), compiled to regexes.

One matcher serves the Glob tool, permission rules and the credential exceptions, so a pattern
means the same thing everywhere: `*` and `?` stay within one path segment, `**` spans segments
(including none), `[...]` is a character class and `{a,b}` an alternation.
"""

from __future__ import annotations

import re
from functools import lru_cache


def _braces(pattern: str) -> list[str]:
    """Expand the first `{a,b}` group (recursively); unbalanced braces stay literal."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        if pattern[end] == "{":
            depth += 1
        elif pattern[end] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return [pattern]
    options, depth, current = [], 0, ""
    for ch in pattern[start + 1 : end]:
        if ch == "," and depth == 0:
            options.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    options.append(current)
    head, tail = pattern[:start], pattern[end + 1 :]
    return [expanded for option in options for expanded in _braces(head + option + tail)]


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*" and pattern.startswith("**", i):
            segment_start = i == 0 or pattern[i - 1] == "/"
            after = pattern[i + 2 : i + 3]
            if segment_start and after == "/":  # "**/": any number of directories, none included
                out.append("(?:.*/)?")
                i += 3
                continue
            if segment_start and after == "":  # a trailing "**": everything below, and the dir itself
                if out and out[-1] == "/":
                    out[-1] = "(?:/.*)?"
                else:
                    out.append(".*")
                i += 2
                continue
            out.append("[^/]*")  # "a**b" is just a star
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            # a `]` first in the class (after its negation, if any) is one of its characters
            first = i + 1 + (pattern[i + 1 : i + 2] in ("!", "^"))
            close = pattern.find("]", first + 1)
            if close < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : close]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
                i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching whole `/`-separated paths against `pattern`."""
    # the end anchor holds for every alternative, not only the last
    alternatives = "|".join(f"(?:{_translate(p)})" for p in _braces(pattern))
    return re.compile(f"(?:{alternatives})\\Z", re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    return compile_glob(pattern).match(path) is not None
