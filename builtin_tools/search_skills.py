"""SearchSkills: the model finds skills, commands and subagent types the system prompt had no room
to list (large collections hold hundreds; the listings are kept within a share of the window)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

# (kind, name, description) of each match, best first: what the session's catalogs answer
Finder = Callable[[str], list[tuple[str, str, str]]]
MAX_MATCHES = 15


class SearchSkillsInput(ToolInput):
    query: str = Field(
        description="Words to look for in the names and descriptions, e.g. 'terraform review'."
    )


class SearchSkills(Tool[SearchSkillsInput]):
    name = "SearchSkills"
    description = (
        "Searches the skills, custom commands and subagent types by name and description, including "
        "those the lists in the system prompt and the Task tool had no room for. Load a skill or "
        "command it finds with the Skill tool; start a subagent type it finds with the Task tool."
    )
    input_model = SearchSkillsInput
    read_only = True

    def __init__(self, find: Finder) -> None:
        self.find = find

    async def run(self, args: SearchSkillsInput, ctx: ToolContext) -> ToolResult:
        found = self.find(args.query)
        if not found:
            return ToolResult(f"Nothing matches {args.query!r}.", summary="no match")
        shown = found[:MAX_MATCHES]
        lines = [f"- [{kind}] {name}: {description}" for kind, name, description in shown]
        if len(found) > len(shown):
            lines.append(f"… and {len(found) - len(shown)} more; narrow the query to see them.")
        return ToolResult("\n".join(lines), summary=f"{len(found)} found")
