"""What `piton skills` and `/skills` print: every skill, command and subagent type found, where it
came from, and why any file was skipped."""

from __future__ import annotations

from pathlib import Path

from piton.core.subagents import AgentType
from piton.skills.catalog import Catalog, Skill
from piton.skills.frontmatter import printable

Line = tuple[str, str]  # (text, style)


def _where(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def _how(skill: Skill) -> str:
    if not skill.user_invocable:
        return "model only"
    if not skill.model_invocable:
        return f"/{skill.name} only"
    return f"/{skill.name} or model"


def report(
    catalog: Catalog,
    agent_types: dict[str, AgentType],
    warnings: list[str],
    *,
    home: Path | None = None,
    reserved: set[str] | None = None,
) -> list[Line]:
    """`reserved` are built-in command names, which hide a skill or command of the same name."""
    home = home if home is not None else Path.home()
    reserved = reserved or set()
    lines: list[Line] = []
    for kind, title in (("skill", "Skills"), ("command", "Custom commands")):
        found = [s for s in catalog.skills.values() if s.kind == kind]
        lines.append((f"{title} ({len(found)})", "bold"))
        for skill in found:
            hidden = " — hidden by the built-in command" if skill.name in reserved else ""
            lines.append((f"  {skill.name}  [{skill.source}, {_how(skill)}]{hidden}", ""))
            lines.append((f"      {skill.description[:110]}", "dim"))
            lines.append((f"      {_where(skill.path, home)}", "dim"))
    lines.append((f"Subagent types ({len(agent_types)})", "bold"))
    for agent_type in agent_types.values():
        lines.append((f"  {agent_type.name}  [{agent_type.source}]  {agent_type.description[:90]}", ""))
    for loser, winner in catalog.shadowed:
        first, unused = _where(winner.path, home), _where(loser.path, home)
        lines.append((f"{unused} is not used: {winner.name} from {first} comes first", "dim"))
    if warnings:
        lines.append(("Skipped", "bold yellow"))
        lines += [(f"  {w}", "yellow") for w in warnings]
    return [(printable(text), style) for text, style in lines]  # names come from files: no escapes
