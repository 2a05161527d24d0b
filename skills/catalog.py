"""Finding skills and custom commands, and the catalog the rest of Piton asks for them.

Skills are folders with a `SKILL.md` (YAML frontmatter and Markdown instructions, plus any files
the instructions mention); commands are single Markdown files. Where they are looked for, first
found wins for a name:

1. the project: `.piton/skills/`, `.claude/skills/`, `.piton/commands/`, `.claude/commands/` in the
   working directory and each folder above it up to the git root (nearest first);
2. the user: the same folders under `~/.piton/` and `~/.claude/` (or `$CLAUDE_CONFIG_DIR`);
3. the skills that ship with Piton.

A file that cannot be used is skipped with one warning naming it and the problem. Each skill keeps
where it came from: the `allowed-tools` of the project's skills and commands grant only what the
folder's trust covers (`granted`); the user's own and the bundled ones always grant.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import field, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

from piton.core.activation import Activation, shell_commands, skill_block
from piton.core.listing import LISTING_BUDGET, fitted, ranked
from piton.core.project.claude_home import user_config_dirs
from piton.core.project.roots import project_dirs
from piton.core.records import record
from piton.core.subagents import AgentType
from piton.skills.frontmatter import (
    FrontmatterError,
    bool_field,
    entries,
    hint_field,
    leaves_project,
    list_field,
    read,
    shown,
    text_field,
)
from piton.skills.invoke import Variables, expand, unknown_command

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_CONFIG_DIRS = (".piton", ".claude")
_INVOCATION = re.compile(r"\A/(\S+)\s*(.*)\Z", re.DOTALL)


class SkillError(LookupError):
    """A skill that cannot be invoked; the message is one line for the model or the user."""


@record(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path  # the SKILL.md, or the command's file
    kind: str = "skill"  # skill | command
    source: str = "project"  # project | user | bundled
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    argument_hint: str | None = None
    model_invocable: bool = True
    user_invocable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)  # license, metadata: kept, not used
    plugin_root: Path | None = None  # the plugin folder it came with (source "plugin")

    @property
    def directory(self) -> Path | None:
        """The skill's folder (its files are read on demand); commands have none."""
        return self.path.parent if self.kind == "skill" else None

    def activate(self, args: str) -> Activation:
        directory = str(self.directory) if self.directory is not None else None
        root = str(self.plugin_root) if self.plugin_root is not None else None
        variables = Variables(skill_dir=directory, plugin_root=root)
        text = skill_block(self.name, directory, expand(self.body, args, variables))
        commands = tuple(expand(c, args, variables, append=False) for c in shell_commands(self.body))
        # `@file` in a skill is its folder's; in a command, the project's
        return Activation(self.name, text, self.allowed_tools, self.model, directory, commands)


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def command_name(path: Path) -> str:
    """A command's name: its file's stem, after the folders between it and `commands/` joined with
    ':' (`commands/tools/security-scan.md` is `tools:security-scan`), as Claude Code names them."""
    parts = path.with_suffix("").parts
    at = len(parts) - 1 - parts[::-1].index("commands") if "commands" in parts[:-1] else len(parts) - 1
    return ":".join(parts[at + 1 :]) or path.stem


def load(path: Path, kind: str, source: str, warnings: list[str] | None = None) -> Skill:
    """One skill or command file; `FrontmatterError` says why it cannot be used. What could be
    read despite a flaw (frontmatter that is not YAML, an unusable name) loads, and `warnings`
    hears of the flaw."""
    said: list[str] = []
    meta, body = read(path, said)
    default_name = path.parent.name if kind == "skill" else command_name(path)
    name = text_field(meta, "name") or default_name
    if kind != "skill" and ":" in default_name and ":" not in name:
        # a command's folders are its namespace, as Claude Code keeps them: `sc/analyze.md` with
        # `name: analyze` is /sc:analyze, not a second /analyze
        name = f"{default_name.rsplit(':', 1)[0]}:{name}"
    if not _NAME.match(name):
        said.append(
            f"'{name}' is not a usable name (letters, digits, '-', '_', '.', ':'): loaded as {default_name}"
        )
        name = default_name
        if not _NAME.match(name):
            raise FrontmatterError(f"'{name}' is not a usable name (letters, digits, '-', '_', '.', ':')")
    if warnings is not None:
        warnings += [f"{shown(path)}: {line}" for line in said]
    description = text_field(meta, "description")
    if description is None and kind == "command":
        description = _first_line(body)
    if not description:
        raise FrontmatterError("it has no description (the frontmatter's 'description' is required)")
    if not body.strip():
        raise FrontmatterError("it has no instructions after the frontmatter")
    model = text_field(meta, "model")
    return Skill(
        name=name,
        description=description,
        body=body.strip() + "\n",
        path=path,
        kind=kind,
        source=source,
        allowed_tools=tuple(list_field(meta, "allowed-tools", "allowed_tools") or ()),
        model=None if model in (None, "inherit") else model,
        argument_hint=hint_field(meta, "argument-hint", "argument_hint"),
        # as Claude Code now: the model may run a command too, unless its file says it may not
        model_invocable=not bool_field(meta, "disable-model-invocation", False),
        user_invocable=bool_field(meta, "user-invocable", True),
        metadata={k: meta[k] for k in ("license", "metadata", "compatibility") if k in meta},
    )


def _reason(e: OSError) -> str:
    return str(e.strerror or e)


def _skill_file(folder: Path) -> Path | None:
    """The SKILL.md of a skill folder; None for anything else (a stray file, a folder without one).
    OSError when the folder or its SKILL.md cannot be looked at; FrontmatterError when it is no file."""
    try:
        if not stat.S_ISDIR(folder.stat().st_mode):  # a looping link raises an OSError here
            return None
    except FileNotFoundError as e:  # it was just listed: a link to nothing
        raise FrontmatterError("it is a link to nothing") from e
    for name in ("SKILL.md", "skill.md"):
        try:
            mode = (folder / name).stat().st_mode
        except FileNotFoundError:
            if (folder / name).is_symlink():  # there, but leading nowhere: said, not skipped silently
                raise FrontmatterError(f"its {name} is a link to nothing") from None
            continue
        if not stat.S_ISREG(mode):
            raise FrontmatterError(f"its {name} is not a regular file")
        return folder / name
    return None


def markdown_files(top: Path, warnings: list[str]) -> list[Path]:
    """The `*.md` files anywhere under `top` (links to folders are not followed); a folder that
    cannot be listed is named in `warnings` and skipped, its siblings still read."""

    def unlisted(e: OSError) -> None:
        where = Path(e.filename or top)
        absent = where == top and isinstance(e, FileNotFoundError)
        if not absent:  # no commands folder is no commands, not a problem
            warnings.append(f"{shown(where)}: cannot list it ({_reason(e)}); skipped")

    found = [
        Path(folder, name)
        for folder, _dirs, names in os.walk(top, onerror=unlisted)
        for name in names
        if name.endswith(".md")
    ]
    return sorted(found)


def candidates(root: Path, warnings: list[str]) -> list[tuple[Path, str]]:
    """(file, kind) under one configuration folder, skills before commands. What cannot be looked at
    is named in `warnings` and skipped alone: one broken folder never hides its neighbours."""
    found: list[tuple[Path, str]] = []
    try:
        entries(root)  # a configuration folder that cannot be looked into is said once, not per part
    except OSError as e:
        warnings.append(f"{shown(root)}: cannot list it ({_reason(e)}); skipped")
        return found
    skills = root / "skills"
    try:
        folders = entries(skills)
    except OSError as e:
        warnings.append(f"{shown(skills)}: cannot list it ({_reason(e)}); skipped")
        folders = []
    for folder in folders:
        try:
            skill_md = _skill_file(folder)
        except OSError as e:
            warnings.append(f"{shown(folder)}: cannot read this skill folder ({_reason(e)}); skipped")
            continue
        except FrontmatterError as e:
            warnings.append(f"{shown(folder)}: {e}; skipped")
            continue
        if skill_md is not None:
            found.append((skill_md, "skill"))
    # subfolders organise commands; the name is the file's (a link or FIFO among them is said, on reading)
    found += [(p, "command") for p in markdown_files(root / "commands", warnings)]
    return found


def bundled_root() -> Path:
    return Path(str(files("piton.skills").joinpath("bundled")))


def search_roots(cwd: Path, home: Path) -> list[tuple[Path, str]]:
    """Every configuration folder to look in, highest precedence first, with its source."""
    roots = [(folder / name, "project") for folder in project_dirs(cwd) for name in _CONFIG_DIRS]
    roots += [(d, "user") for d in user_config_dirs(home) if d not in {r for r, _ in roots}]
    return roots


@record
class Catalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    shadowed: list[tuple[Skill, Skill]] = field(default_factory=list)  # (hidden, the one used)
    # the project's skills and commands (by file) whose allowed-tools the folder's trust covers
    granted: set[Path] = field(default_factory=set)

    def add(self, skill: Skill) -> None:
        winner = self.skills.get(skill.name)
        if winner is not None:
            self.shadowed.append((skill, winner))
        else:
            self.skills[skill.name] = skill

    def get(self, name: str) -> Skill | None:
        """By name; a plugin's `plugin:name` also by its short name when no other has it."""
        name = name.removeprefix("/")
        found = self.skills.get(name)
        if found is None and ":" not in name:
            named = [
                s
                for key, s in self.skills.items()
                if key.endswith(":" + name) and (s.plugin_root or s.kind == "command")
            ]
            found = named[0] if len(named) == 1 else None
        return found

    def for_model(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.model_invocable]

    def for_user(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.user_invocable]

    def granting(self) -> list[Skill]:
        """The project's skills and commands that name allowed-tools: what trusting the folder grants."""
        return [s for s in self.skills.values() if s.source == "project" and s.allowed_tools]

    def grants(self, skill: Skill) -> bool:
        """Whether `skill`'s allowed-tools take effect when it loads."""
        return skill.source != "project" or skill.path in self.granted

    def _activate(self, skill: Skill, args: str) -> Activation:
        activation = skill.activate(args)
        return activation if self.grants(skill) else replace(activation, allowed_tools=())

    def activate(self, name: str, args: str) -> Activation:
        """For the Skill tool: the model may load only what is listed to it."""
        skill = self.get(name)
        if skill is None or not skill.model_invocable:
            listed = ", ".join(s.name for s in self.for_model()) or "none"
            hint = " (only the user may start it, with /" + name + ")" if skill is not None else ""
            raise SkillError(f"There is no skill '{name}' for you to load{hint}. Available: {listed}.")
        return self._activate(skill, args)

    def invocation(self, line: str) -> Activation | None:
        """The activation for a typed `/name args`, if `name` is a skill or command the user may start."""
        found = self.typed(line)
        return self._activate(*found) if found is not None else None

    def typed(self, line: str) -> tuple[Skill, str] | None:
        """The skill or command a typed `/name args` starts, and its arguments. `/tools scan` is
        `/tools:scan` when only that exists, as Claude Code reads it."""
        match = _INVOCATION.match(line)
        if match is None:
            return None
        name, args = match.group(1), match.group(2).rstrip()  # a piped line ends with its newline
        skill = self.get(name)
        if skill is None and args:
            first, _, rest = args.partition(" ")
            skill, args = self.get(f"{name}:{first}"), rest.strip()
        if skill is None or not skill.user_invocable:
            return None
        return skill, args

    def unknown(self, line: str) -> str | None:
        """`Unknown command: /x` (with the nearest name) for a `/x` line that names no skill or command,
        None for any other line: text, a path such as `/usr/bin/env`, a known name, an MCP prompt."""
        return unknown_command(line, self.typed(line) is not None, [s.name for s in self.for_user()])

    def prompt_section(self, budget: int = LISTING_BUDGET) -> str:
        """What the system prompt says about skills: how to use them, and the listing."""
        listing = self.listing(budget)
        if not listing:
            return ""
        return (
            "# Skills\n"
            "Skills are instructions for particular tasks, loaded when needed. When a request matches a "
            "skill's description, load it with the Skill tool before doing the task, then follow it. "
            "The user can also start one by typing /name.\n"
            f"{listing}"
        )

    def listing(self, budget: int = LISTING_BUDGET) -> str:
        """The model-invocable skills, a line each, within `budget` characters."""
        lines = fitted([(s.name, s.description) for s in self.for_model()], budget)
        return "\n".join(lines)

    def left_out(self, budget: int = LISTING_BUDGET) -> int:
        """How many skills the listing has no room for."""
        return len(self.for_model()) - len(
            fitted([(s.name, s.description) for s in self.for_model()], budget, tail=False)
        )

    def search(self, query: str) -> list[tuple[str, str, str]]:
        """(kind, name, description) of the skills and commands whose names and descriptions hold the
        query's words, the most matches first."""
        return ranked(query, [(s.kind, s.name, s.description) for s in self.for_model()])


def discover(cwd: Path, home: Path | None = None, *, bundled: Path | None = None) -> Catalog:
    home = home if home is not None else Path.home()
    catalog = Catalog()
    for root, source in search_roots(cwd, home):
        for path, kind in candidates(root, catalog.warnings):
            if source == "project" and (why := leaves_project(path, root)):
                catalog.warnings.append(why)
                continue
            _add(catalog, path, kind, source)
    bundled = bundled if bundled is not None else bundled_root()
    for folder in entries(bundled) if bundled.is_dir() else []:
        if (folder / "SKILL.md").is_file():
            _add(catalog, folder / "SKILL.md", "skill", "bundled")
    return catalog


def _add(catalog: Catalog, path: Path, kind: str, source: str) -> None:
    try:
        catalog.add(load(path, kind, source, catalog.warnings))
    except FrontmatterError as e:
        catalog.warnings.append(f"{shown(path)}: {e}; skipped")


def with_skills(agent_type: AgentType, catalog: Catalog) -> AgentType:
    """A type whose `skills` are loaded into its prompt when it starts (as Claude Code's are); a
    skill that is not there is a note in the listings, not an error."""
    if not agent_type.skills:
        return agent_type
    texts, notes = [], list(agent_type.notes)
    for name in agent_type.skills:
        skill = catalog.get(name)
        if skill is None:
            notes.append(f"skill {name!r} not found")
            continue
        texts.append(skill_block(skill.name, str(skill.directory) if skill.directory else None, skill.body))
    prompt = "\n\n".join([agent_type.prompt, *texts])
    return replace(agent_type, prompt=prompt, notes=tuple(notes))
