"""Skills at work in a run: what loading one changes, and the bound on skills loading skills.

A skill (or custom command) enters the conversation as a user text block marked with its name.
While the run lasts, its `allowed-tools` are permitted without asking and its `model`, if any, is
the model. Each skill loaded during a run extends a chain; loading one already in the chain, or a
fourth one, is refused with the chain shown, so skills that call each other cannot loop.

Before its text is sent, an `ActivationPreparer` (`core/activation_prep`; the composition root
supplies one, `core` knows only its shape) runs the text's ``!`command` `` lines and inlines its
`@file` references, with the run's sandbox, policy and permission gate.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Protocol

from piton.core.records import record

MAX_SKILL_DEPTH = 3
SKILL_TAG = "skill"
_BLOCK = re.compile(r'\A<skill name="([^"]+)"[^>]*>')
# ``!`git status` `` after a space or at a line's start, or a fenced block opened with ```!
SHELL = re.compile(
    r"(?<!\S)!`(?P<inline>[^`\n]+)`|^```!\n(?P<block>.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE
)


@record(frozen=True)
class Activation:
    """A loaded skill: the text that enters the conversation and what it changes for the run."""

    name: str
    text: str
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    base_dir: str | None = None  # where its `@file` references are found (None: the project)
    # the ``!`…` `` commands its author wrote (arguments put in); only these may run, never one that
    # an argument's text happens to spell
    commands: tuple[str, ...] = ()


def shell_commands(text: str) -> list[str]:
    """The commands of the ``!`command` `` lines and ```! blocks in `text`, in order."""
    return [(m.group("inline") or m.group("block") or "").strip() for m in SHELL.finditer(text)]


def skill_block(name: str, directory: str | None, body: str) -> str:
    """The marked text a loaded skill puts in the conversation (compaction finds it by the mark)."""
    where = f' dir="{directory}"' if directory else ""
    note = (
        f"The skill's files are in {directory}; read them when its instructions refer to them.\n\n"
        if directory
        else ""
    )
    return f'<{SKILL_TAG} name="{name}"{where}>\n{note}{body.strip()}\n</{SKILL_TAG}>'


def skill_name(text: str) -> str | None:
    """The name in a skill block, or None for any other text."""
    match = _BLOCK.match(text)
    return match.group(1) if match else None


@record
class ActiveSkills:
    chain: list[str] = field(default_factory=list)

    def refusal(self, name: str) -> str | None:
        """Why `name` may not load now, or None."""
        shown = " → ".join([*self.chain, name])
        if name in self.chain:
            return (
                f"The skill '{name}' is already loaded in this turn (a cycle: {shown}); "
                "its instructions are above."
            )
        if len(self.chain) >= MAX_SKILL_DEPTH:
            return f"Skills may load at most {MAX_SKILL_DEPTH} skills deep in one turn ({shown})."
        return None

    def admit(self, name: str) -> None:
        self.chain.append(name)


class SkillSource(Protocol):
    """Where the Skill tool finds skills; raises `LookupError` (one line for the model) when it cannot."""

    def activate(self, name: str, args: str) -> Activation: ...
