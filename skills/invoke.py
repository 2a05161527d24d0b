"""What a skill or command says once invoked: its body with the arguments and variables put in.

The rules are Claude Code's: `$ARGUMENTS` is everything typed after the name; `$ARGUMENTS[N]` and
`$N` are its N-th word counted from 0. A positional placeholder with no such argument stays as
written, so `$5.00` in a body survives unless a sixth argument was typed; `\\$0` is a literal `$0`.
`${CLAUDE_SESSION_ID}`, `${CLAUDE_SKILL_DIR}` (or `${PITON_SKILL_DIR}`) and `${CLAUDE_PLUGIN_ROOT}`
become the session's id, the skill's folder and its plugin's folder; any other `$NAME` or `${VAR}`
is shell text and is left alone. Substitution is one pass: a value put in is never read again as a
placeholder.
"""

from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path

from piton.core.records import record

# one alternation, so the text is scanned once and what is put in is not scanned again
_PLACEHOLDER = re.compile(
    r"(?P<escaped>\\)?\$(?:ARGUMENTS\[(?P<index>\d+)\]|(?P<all>ARGUMENTS)(?![\[\w])|(?P<number>\d+)(?!\w))"
    r"|\$\{(?P<var>(?:CLAUDE|PITON)_(?:SKILL_DIR|SESSION_ID|PLUGIN_ROOT))\}"
)


_COMMAND = re.compile(r"\A/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s|\Z)")  # `/name`, never `/usr/bin/x`


@record(frozen=True)
class Variables:
    """What `${…}` names in a body stand for, where it is known."""

    session_id: str | None = None
    skill_dir: str | None = None
    plugin_root: str | None = None

    def value(self, name: str) -> str | None:
        key = name.split("_", 1)[1]
        return {"SKILL_DIR": self.skill_dir, "SESSION_ID": self.session_id, "PLUGIN_ROOT": self.plugin_root}[
            key
        ]


def positional(args: str) -> list[str]:
    """The arguments as words, quotes respected; unbalanced quotes fall back to plain splitting."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def expand(body: str, args: str, variables: Variables | str | None = None, *, append: bool = True) -> str:
    """`body` with the arguments and variables put in. A body that uses no argument placeholder
    gets the arguments appended (`ARGUMENTS: …`), so nothing the user typed is lost."""
    if not isinstance(variables, Variables):  # the folder alone, as callers before variables passed it
        variables = Variables(skill_dir=variables)
    args = args.strip()
    words: list[str] | None = None
    used = False

    def fill(match: re.Match[str]) -> str:
        nonlocal used, words
        if match.group("var") is not None:
            value = variables.value(match.group("var"))
            return match.group() if value is None else value
        if match.group("escaped"):
            return match.group()[1:]  # `\$0` is a literal `$0`
        if match.group("all") is not None:
            used = True
            return args
        words = positional(args) if words is None else words
        index = int(match.group("index") or match.group("number"))
        if index >= len(words):
            return match.group()  # no such argument: a price, or a literal `$1`
        used = True
        return words[index]

    text = _PLACEHOLDER.sub(fill, body)
    if args and not used and append:
        text = f"{text.rstrip()}\n\nARGUMENTS: {args}"
    return text


def unknown_command(line: str, known: bool, names: list[str]) -> str | None:
    """Claude Code's note for a `/name` line that names nothing: `Unknown command: /name` and the
    nearest of `names`. None when the line is no command: not `/name`, a known one, an MCP prompt
    (its own turn says whether it exists) or a path that exists (`/tmp` is a prompt)."""
    match = _COMMAND.match(line)
    if known or match is None or match.group(1).startswith("mcp__"):
        return None
    name = match.group(1)
    try:
        if Path("/" + name).exists():
            return None
    except OSError:
        pass
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"Unknown command: /{name}" + (f". Did you mean /{close[0]}?" if close else "")
