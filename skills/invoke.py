"""What a skill or command says once invoked: its body with the arguments put in."""

from __future__ import annotations

import re
import shlex

_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])(?![A-Za-z0-9_])")
_DIR = re.compile(r"\$\{(?:PITON|CLAUDE)_SKILL_DIR\}")


def positional(args: str) -> list[str]:
    """The arguments as words, quotes respected; unbalanced quotes fall back to plain splitting."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def expand(body: str, args: str, directory: str | None) -> str:
    """`$ARGUMENTS` is everything typed after the name, `$1`…`$9` its words, `${PITON_SKILL_DIR}`
    (or `${CLAUDE_SKILL_DIR}`) the skill's folder. A body without placeholders gets the arguments
    appended, so nothing the user typed is lost."""
    args = args.strip()
    text = _DIR.sub(lambda _: directory or "", body)
    words = positional(args)
    used = False

    def fill(match: re.Match[str]) -> str:
        nonlocal used
        used = True
        key = match.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    text = _PLACEHOLDER.sub(fill, text)
    if args and not used:
        text = f"{text.rstrip()}\n\nARGUMENTS: {args}"
    return text
