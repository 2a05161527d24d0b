"""What `piton skills` and `/skills` print: every skill, command and subagent type found, where it
came from, and why any file was skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from piton.core.clip import one_line
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


def agent_notes(agent_type: AgentType, known_tools: set[str] | None) -> list[str]:
    """What of a type's definition Piton does not apply: tools it lacks, keys it ignores."""
    notes = list(agent_type.notes)
    if known_tools is not None and agent_type.tools is not None:
        missing = [
            t for t in agent_type.tools if t.split("(")[0] not in known_tools and not t.startswith("mcp__")
        ]
        if missing:
            notes.append(f"tools Piton does not have: {', '.join(missing)}")
    return notes


def agent_lines(agent_types: dict[str, AgentType], home: Path, known_tools: set[str] | None) -> list[Line]:
    """The subagent types, each with where it came from and what of it is not applied."""
    lines: list[Line] = [(f"Subagent types ({len(agent_types)})", "bold")]
    for agent_type in agent_types.values():
        about = one_line(agent_type.description, 90)
        lines.append((f"  {agent_type.name}  [{agent_type.source}]  {about}", ""))
        if agent_type.path is not None:
            lines.append((f"      {_where(agent_type.path, home)}", "dim"))
        lines += [(f"      not applied: {note}", "yellow") for note in agent_notes(agent_type, known_tools)]
    return lines


def as_json(
    catalog: Catalog, agent_types: dict[str, AgentType], warnings: list[str], known_tools: set[str]
) -> dict[str, Any]:
    """`piton skills --json`: what loaded, what was skipped and why, and what is not applied."""
    return {
        "skills": [_skill_json(s) for s in catalog.skills.values() if s.kind == "skill"],
        "commands": [_skill_json(s) for s in catalog.skills.values() if s.kind == "command"],
        "agents": [
            {
                "name": t.name,
                "source": t.source,
                "path": str(t.path) if t.path else None,
                "description": t.description,
                "tools": list(t.tools) if t.tools is not None else None,
                "not_applied": agent_notes(t, known_tools),
            }
            for t in agent_types.values()
        ],
        "shadowed": [{"path": str(loser.path), "by": str(winner.path)} for loser, winner in catalog.shadowed],
        "skipped": [_skipped(w) for w in warnings if w.endswith("; skipped")],
        "warnings": [w for w in warnings if not w.endswith("; skipped")],
    }


def _skill_json(skill: Skill) -> dict[str, Any]:
    return {
        "name": skill.name,
        "source": skill.source,
        "path": str(skill.path),
        "description": skill.description,
        "user_invocable": skill.user_invocable,
        "model_invocable": skill.model_invocable,
    }


def _skipped(warning: str) -> dict[str, str]:
    """`{"path", "reason"}` from a warning `path: reason; skipped`."""
    where, _, reason = warning.partition(": ")
    return {"path": where, "reason": reason.removesuffix("; skipped")}


def report(
    catalog: Catalog,
    agent_types: dict[str, AgentType],
    warnings: list[str],
    *,
    home: Path | None = None,
    reserved: set[str] | None = None,
    known_tools: set[str] | None = None,
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
            lines.append((f"      {one_line(skill.description, 110)}", "dim"))
            lines.append((f"      {_where(skill.path, home)}", "dim"))
    lines += agent_lines(agent_types, home, known_tools)
    for loser, winner in catalog.shadowed:
        first, unused = _where(winner.path, home), _where(loser.path, home)
        lines.append((f"{unused} is not used: {winner.name} from {first} comes first", "dim"))
    skipped = [w for w in warnings if w.endswith("; skipped")]
    noted = [w for w in warnings if not w.endswith("; skipped")]
    for title, said in (("Skipped", skipped), ("Loaded, with a warning", noted)):
        if said:
            lines.append((title, "bold yellow"))
            lines += [(f"  {w}", "yellow") for w in said]
    return [(printable(text), style) for text, style in lines]  # names come from files: no escapes
