"""What `piton skills` prints: names, descriptions and paths from files never carry terminal codes."""

from __future__ import annotations

from pathlib import Path

from piton.skills.agents import discover_agent_types
from piton.skills.catalog import discover
from piton.skills.report import report


def test_escape_sequences_in_names_and_descriptions_are_shown_escaped(project: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "evil\x1b]0;pwned\x07.md").write_text('---\ndescription: "red \\e[31m text"\n---\nPrompt.\n')
    commands = project / ".claude" / "commands"
    commands.mkdir()
    (commands / "bad\nname.md").write_text("Do it.\n")
    catalog = discover(project, bundled=project / "none")
    types, warnings = discover_agent_types(project)
    lines = [text for text, _ in report(catalog, types, [*catalog.warnings, *warnings])]
    assert not any(ch in text for text in lines for ch in "\x1b\x07\n")
    assert "  evil\\x1b]0;pwned\\x07  [project]  red [31m text" in lines
    assert f"  {commands}/bad\\x0aname.md: 'bad" in "\n".join(lines)
