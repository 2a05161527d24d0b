"""Permission rules and the decision for one tool call: permission modes, Claude Code-style rules,
and what they say about a call (allow, ask or deny), before anyone is asked.

Rules read `Tool` or `Tool(specifier)`: `Bash(npm run test:*)` (a command prefix), `Bash(git * main)`
(a wildcard), `Read(./secrets/**)` or `Edit(/src/**)` (path globs), `WebFetch(domain:example.com)`.
A deny rule beats an ask rule beats an allow rule. A compound shell command is allowed by rules only
if every part is, and only if nothing in it is expanded (`shellsplit.py`). Deny and ask rules match
every command a line may run, through wrappers, nested shells and substitutions (`shellrun.py`); a
line that may run something they cannot be checked against asks whenever such rules exist. Without
a rule, read-only tools are allowed and the others ask; `acceptEdits`
allows file edits, `plan` allows only read-only tools (and asks about command lines that only look,
see `readonly.py`), `bypassPermissions` allows what no rule denies or asks about. The sandbox
applies whatever is decided here; the permission gate (`permissions.py`) asks when a rule says ask.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from piton.core.records import record
from piton.core.safety.globs import glob_match
from piton.core.safety.shellrun import Effect, effect
from piton.core.safety.shellsplit import exact_parts, split_command, writes_files
from piton.core.safety.suggest import harmless_cd

if TYPE_CHECKING:  # a name for type checkers only (see piton.core.mode_names)
    from piton.core.mode_names import PermissionMode


class GovernedTool(Protocol):
    """What permissions need to know of a tool: its name, the rule family it belongs to (read, edit,
    execute, other), and whether every call of it only looks."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def read_only(self) -> bool: ...


Behavior = Literal["allow", "ask", "deny"]
_RULE = re.compile(r"^\s*([A-Za-z0-9_.:*-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)
# A rule named after one tool covers its whole family: Edit rules govern every tool that edits files.
_FAMILY = {"edit": "Edit", "read": "Read"}


@record(frozen=True)
class Rule:
    tool: str
    specifier: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        m = _RULE.match(text)
        if m is None or (m.group(2) is not None and not m.group(2).strip()):
            raise ValueError(f"not a permission rule: {text!r} (expected Tool or Tool(specifier))")
        spec = m.group(2)
        tool = "Task" if m.group(1) == "Agent" else m.group(1)  # Claude Code's name for the same tool
        return cls(tool, spec.strip() if spec is not None else None)

    def __str__(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"


@record(frozen=True)
class Decision:
    behavior: Behavior
    reason: str
    rule: Rule | None = None
    default: bool = False  # the question asked when no rule and no mode decides (a skill may waive it)
    # an allow that runs the call with this input instead (a client's or a hook's edit of it)
    updated_input: dict[str, Any] | None = None
    mode: PermissionMode | None = None  # an allow that moves the session to this mode (a plan approved)


def _command_matches(spec: str, command: str) -> bool:
    if spec.endswith(":*"):
        prefix = spec[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in spec:
        return fnmatch.fnmatchcase(command, spec)
    return command == " ".join(spec.split())


def _runs(spec: str, runs: Effect) -> bool:
    """Whether a line surely runs a command `spec` matches (a prefix also matches a command that goes
    on with words not known here: `rm $x` for `rm:*`)."""
    return any(_command_matches(spec, c) for c in runs.commands) or (
        spec.endswith(":*") and any(_command_matches(spec, c) for c in runs.open)
    )


def _may_run(spec: str, start: str) -> bool:
    """Whether a command that begins with the words `start` and goes on with unknown ones may match
    `spec` (`git $x` may be `git push`)."""
    pattern = spec[:-2] if spec.endswith(":*") else spec
    literal = " ".join(pattern.split("*", 1)[0].split())
    if "*" in pattern:
        return start.startswith(literal) or literal.startswith(start + " ")
    return literal == start or literal.startswith(start + " ")


def _names_server(rule: str, tool: str) -> bool:
    """Claude Code's server rules: `mcp__github` and `mcp__github__*` name every tool of that MCP
    server (`mcp__github__create_issue`), and no tool of another (`mcp__git` is not `mcp__github`)."""
    if not rule.startswith("mcp__"):
        return False
    server = rule.removesuffix("__*")
    return server.count("__") == 1 and len(server) > 5 and tool.startswith(server + "__")


BYPASS_REFUSED = "bypassPermissions is disabled by the settings (disableBypassPermissionsMode)"


class ModeRefused(ValueError):
    """A change to a permission mode the settings forbid."""


@record
class Permissions:
    mode: PermissionMode = "default"
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    project: Path = field(default_factory=Path.cwd)
    home: Path = field(default_factory=Path.home)
    # `permissions.disableBypassPermissionsMode: "disable"` in any settings file
    bypass_disabled: bool = False

    def __post_init__(self) -> None:
        if self.mode == "bypassPermissions" and self.bypass_disabled:
            raise ModeRefused(BYPASS_REFUSED)

    def __setattr__(self, name: str, value: object) -> None:
        # the one narrowing every change of mode goes through, whoever asks for it: a client's
        # control request, the library, a permission answer, a reopened session
        if name == "mode" and value == "bypassPermissions" and getattr(self, "bypass_disabled", False):
            raise ModeRefused(BYPASS_REFUSED)
        object.__setattr__(self, name, value)

    def allows_mode(self, mode: str) -> bool:
        return not (mode == "bypassPermissions" and self.bypass_disabled)

    @classmethod
    def from_texts(
        cls,
        mode: PermissionMode,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        *,
        project: Path,
        home: Path | None = None,
        bypass_disabled: bool = False,
    ) -> Permissions:
        """Raises ValueError naming the first malformed rule."""
        return cls(
            mode,
            [Rule.parse(t) for t in allow],
            [Rule.parse(t) for t in ask],
            [Rule.parse(t) for t in deny],
            project,
            home or Path.home(),
            bypass_disabled,
        )

    def path_pattern(self, spec: str) -> str:
        """A path specifier as an absolute glob: `//abs`, `~/in-home`, `/in-project`, `./` or bare
        relative to the project; a pattern without a slash matches that name at any depth."""
        if spec.startswith("//"):
            return spec[1:]
        if spec.startswith("~/"):
            return f"{self.home}/{spec[2:]}"
        if spec.startswith("/"):
            return f"{self.project}{spec}"
        if "/" not in spec:
            return f"**/{spec}"
        return f"{self.project}/{spec.removeprefix('./')}"

    def _matches(self, rule: Rule, tool: GovernedTool, content: str | None, part: str | None = None) -> bool:
        family = _FAMILY.get(tool.kind)
        if rule.tool != tool.name and rule.tool != family and not _names_server(rule.tool, tool.name):
            return False
        if rule.specifier is None:
            return True
        if content is None:
            return False
        if tool.kind == "execute":
            return part is not None and _command_matches(rule.specifier, part)
        if tool.kind in _FAMILY:
            return glob_match(self.path_pattern(rule.specifier), content)
        return fnmatch.fnmatchcase(content, rule.specifier)

    def _first(
        self, rules: Sequence[Rule], tool: GovernedTool, content: str | None, runs: Effect | None
    ) -> Rule | None:
        """The first rule that matches the call or, for a command line, a command it surely runs."""
        for rule in rules:
            if tool.kind == "execute" and rule.specifier is not None:
                if runs is not None and rule.tool == tool.name and _runs(rule.specifier, runs):
                    return rule
            elif self._matches(rule, tool, content):
                return rule
        return None

    def _unsure(self, tool: GovernedTool, runs: Effect) -> bool:
        """Whether command deny or ask rules exist and the line may run something they cannot be
        checked against: a command not known here, or one whose unknown words may make it match."""
        rules = (*self.deny, *self.ask)
        specs = [r.specifier for r in rules if r.tool == tool.name and r.specifier is not None]
        return bool(specs) and (
            not runs.complete or any(_may_run(s, start) for s in specs for start in runs.open)
        )

    def _allowed_by_rules(
        self, tool: GovernedTool, content: str | None, parts: list[str] | None
    ) -> Rule | None:
        if tool.kind != "execute":
            return self._first(self.allow, tool, content, None)
        bare = next((r for r in self.allow if r.specifier is None and self._matches(r, tool, content)), None)
        if bare is not None:
            return bare
        scanned = exact_parts(content) if content is not None else None
        if not parts or scanned is None or any(writes_files(p) for p in scanned):
            # unsplittable, empty, or writing files by redirection: no prefix rule can vouch for it
            return None
        # a `cd` into a folder below the working one changes nothing by itself: it needs no rule
        kept = [p for p in parts if harmless_cd(p) is None]
        matched = [next((r for r in self.allow if self._matches(r, tool, content, p)), None) for p in kept]
        return matched[0] if matched and all(matched) else None

    def withholds(self, tool: GovernedTool) -> bool:
        """Whether a deny rule names all of `tool` (`WebSearch`, `mcp__github`), not some calls of
        it (`Bash(rm:*)`): then it is not offered to the model at all."""
        return any(rule.specifier is None and self._matches(rule, tool, None) for rule in self.deny)

    def names(self, tool: str, content: str) -> bool:
        """Whether an allow rule names exactly this content of `tool` (`WebFetch(domain:localhost)`):
        not the tool alone, and not a pattern (`domain:*` allows every site, not the machine's own
        services): what only a rule written for it may open."""
        return any(r.tool == tool and r.specifier == content for r in self.allow)

    def decide(self, tool: GovernedTool, content: str | None, *, looks: bool = False) -> Decision:
        """The decision for calling `tool` on `content` (its command or absolute path, if any).
        `looks` says that this call of a tool that may change things only looks (a Bash line the
        tool classified, see `readonly.py`): plan mode then asks about it instead of refusing it.
        It never spares a question: only a tool that always just reads goes unasked."""
        parts = runs = None
        if tool.kind == "execute" and content is not None:
            parts, runs = split_command(content), effect(content)
        if rule := self._first(self.deny, tool, content, runs):
            return Decision("deny", f"the rule {rule} denies it", rule)
        if tool.kind == "question":  # only the user can answer it, in any mode
            return Decision("ask", "a question for the user")
        if tool.kind == "plan":  # the end of plan mode: a question to the user, whatever else says
            if self.mode != "plan":
                return Decision("deny", "not in plan mode: there is no plan to approve; go on with the task")
            return Decision("ask", "the plan needs the user's approval")
        if self.mode == "plan" and not (tool.read_only or looks):
            return Decision("deny", "plan mode allows only read-only tools and commands")
        if runs is not None and self._unsure(tool, runs):
            return Decision(
                "ask", "the command cannot be checked part by part against the deny and ask rules"
            )
        if rule := self._first(self.ask, tool, content, runs):
            return Decision("ask", f"the rule {rule} asks first", rule)
        if self.mode == "bypassPermissions":
            return Decision("allow", "bypassPermissions mode")
        if rule := self._allowed_by_rules(tool, content, parts):
            return Decision("allow", f"the rule {rule} allows it", rule)
        if tool.read_only:
            return Decision("allow", "read-only tool")
        if self.mode == "acceptEdits" and tool.kind == "edit":
            return Decision("allow", "acceptEdits mode")
        return Decision("ask", f"{tool.name} needs permission", default=True)
