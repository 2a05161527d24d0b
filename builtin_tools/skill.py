"""Skill: the model loads a skill's instructions into the conversation (the second level of progressive
disclosure; the first is the listing in the system prompt, the third the skill's own files)."""

from __future__ import annotations

from pydantic import Field

from piton.core.activation import SkillSource
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult


class SkillInput(ToolInput):
    skill: str = Field(description='The name of the skill, as listed (for example "review").')
    args: str | None = Field(default=None, description="Arguments for the skill, if it takes any.")


class Skill(Tool[SkillInput]):
    name = "Skill"
    description = (
        "Loads a skill: instructions for a particular kind of task, listed by name and description in "
        "the system prompt. When the user's request matches a skill's description, load it first and "
        "follow its instructions; they arrive right after this call's result. Do not load a skill that "
        "is already loaded in this conversation."
    )
    input_model = SkillInput
    read_only = True  # loading instructions changes nothing; what they lead to is checked call by call

    def __init__(self, source: SkillSource) -> None:
        self.source = source

    async def run(self, args: SkillInput, ctx: ToolContext) -> ToolResult:
        try:
            activation = self.source.activate(args.skill.strip().removeprefix("/"), args.args or "")
        except LookupError as e:
            return ToolResult.error(str(e.args[0]) if e.args else str(e))
        return ToolResult(
            f"Loaded the skill '{activation.name}'; its instructions follow.",
            summary=f"loaded {activation.name}",
            activation=activation,
        )
