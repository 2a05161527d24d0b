"""The rule offered with option 2 ("allow for this session"): the one a careful user would write.

For a command line, one rule per command in it, never the whole tool. A program that takes
subcommands gets its subcommand (`Bash(npm test:*)`); another program any arguments
(`Bash(echo:*)`, not `Bash(echo PAR-A:*)`, which the next call would not match). A destructive
program, or an interpreter given code inline, gets exactly this command: `Bash(rm -rf:*)` or
`Bash(python3 -c:*)` would allow far more than was approved. A `cd` into a folder below the
working one needs no rule (the permission check lets it pass, as harmless).
"""

from __future__ import annotations

import os
import re
from typing import Protocol

from piton.core.safety.shellsplit import split_command


class Named(Protocol):
    """What a rule is offered for: the tool's name and kind (a tool of `rules.GovernedTool`)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...


# programs whose second word names what they do (`git status`, `npm test`, `cargo build`)
SUBCOMMANDS = frozenset(
    [
        "git",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "helm",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "make",
        "gh",
        "brew",
        "apt",
        "apt-get",
        "dnf",
        "systemctl",
        "dotnet",
        "mvn",
        "gradle",
        "terraform",
        "bundle",
        "rails",
        "npx",
        "bunx",
        "uvx",
        "pnpx",
        "deno",
        "just",
        "rustup",
        "conda",
        "hatch",
        "tox",
        "nox",
        "pre-commit",
    ]
)
# programs that remove, overwrite, move or kill what they are given, or run commands of their own
DESTRUCTIVE = frozenset(
    [
        "rm",
        "rmdir",
        "unlink",
        "dd",
        "mkfs",
        "shred",
        "truncate",
        "chmod",
        "chown",
        "chgrp",
        "mv",
        "cp",
        "ln",
        "kill",
        "pkill",
        "killall",
        "sudo",
        "su",
        "doas",
        "find",
        "xargs",
        "sed",
        "perl",
    ]
)
INTERPRETERS = frozenset(
    [
        "python",
        "python3",
        "python2",
        "node",
        "ruby",
        "php",
        "lua",
        "bash",
        "sh",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "env",
        "eval",
        "exec",
        "source",
        ".",
    ]
)
_PLAIN = re.compile(r"[\w./@+-]+")  # a word the shell takes as it is: no expansion, no quoting


def harmless_cd(part: str) -> str | None:
    """The folder a `cd` into a plain relative path below the working one goes to, else None."""
    words = part.split()
    if len(words) != 2 or words[0] != "cd" or not _PLAIN.fullmatch(words[1]) or words[1].startswith("/"):
        return None
    target = os.path.normpath(words[1])
    return None if target == ".." or target.startswith("../") else target


def rule_for(tool: str, part: str) -> str:
    """The rule for one command of a line."""
    words = part.split()
    program = os.path.basename(words[0])
    if program in DESTRUCTIVE:
        return f"{tool}({part})"
    if program in INTERPRETERS:
        # a script and its arguments may vary; code given inline (-c, -e, stdin) may not
        script = len(words) >= 2 and not words[1].startswith("-") and program not in ("eval", "exec", "env")
        return f"{tool}({words[0]} {words[1]}:*)" if script else f"{tool}({part})"
    if program in SUBCOMMANDS:
        if len(words) >= 2 and not words[1].startswith("-"):
            return f"{tool}({words[0]} {words[1]}:*)"
        return f"{tool}({part})" if len(words) >= 2 else f"{tool}({words[0]}:*)"
    return f"{tool}({words[0]}:*)"


def suggest_rules(tool: Named, content: str | None) -> list[str]:
    """The rules a person would add to allow calls like this one for the session."""
    if tool.kind == "execute" and content:
        parts = split_command(content)
        if not parts:
            return [f"{tool.name}({content})"]
        rules: list[str] = []
        for part in parts:
            if not part.split() or harmless_cd(part) is not None:
                continue
            rule = rule_for(tool.name, part)
            if rule not in rules:
                rules.append(rule)
        return rules or [f"{tool.name}({content})"]
    if tool.kind == "other" and content and content.startswith("domain:"):
        return [f"{tool.name}({content})"]  # this site, not every site
    return [tool.name]


def suggest_rule(tool: Named, content: str | None) -> str:
    """The suggested rules as one line (`--allowedTools` takes it as it is)."""
    return ", ".join(suggest_rules(tool, content))
