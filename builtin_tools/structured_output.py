"""StructuredOutput: how the model hands in a `--json-schema` run's answer (see
`piton.core.structured`). Its input schema is the user's schema; the value is checked against it
before the run takes it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from piton.core.structured import STRUCTURED_OUTPUT, OutputSchema
from piton.core.tools import Tool, ToolContext, ToolResult


class AnyObject(BaseModel):
    """Whatever object the model sends: the user's schema judges it."""

    model_config = ConfigDict(extra="allow")


class StructuredOutput(Tool[AnyObject]):
    name = STRUCTURED_OUTPUT
    description = (
        "Return your final answer in the structured format the user asked for. Call this tool exactly "
        "once, at the end, when the work is done; its input is the answer."
    )
    input_model = AnyObject
    read_only = True  # it changes nothing: it ends the run with its input

    def __init__(self, output: OutputSchema) -> None:
        self.output = output

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.output.schema}

    async def run(self, args: AnyObject, ctx: ToolContext) -> ToolResult:
        refused = self.output.take(dict(args.model_extra or {}))
        if refused is not None:
            return ToolResult.error(refused)
        return ToolResult("Structured output provided successfully", summary="answer given")
