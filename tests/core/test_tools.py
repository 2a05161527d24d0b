"""The tool contract's schemas: what every request carries of each tool is what the model needs, and
the input model still takes what the schema no longer spells out."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from piton.core.tools import Tool, ToolContext, ToolResult, lean_schema


class Issue(BaseModel):
    title: str = Field(description="A field named title is the tool's, not pydantic's.")
    labels: list[str] | None = None


class FileInput(BaseModel):
    file_path: str = Field(description="The file.")
    limit: int | None = Field(None, ge=1, description="How many lines.")
    mode: Literal["a", "b"] = "a"
    issue: Issue | None = None
    nullable: str | None = Field(description="Required, and may be null.")
    options: dict[str, Any] = Field(default={"title": "kept"})


class FileTool(Tool[FileInput]):
    name = "FileTool"
    description = "A file tool."
    input_model = FileInput

    async def run(self, args: FileInput, ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


def test_titles_and_null_branches_of_optional_fields_are_left_out() -> None:
    schema = FileTool().spec()["input_schema"]
    properties = schema["properties"]
    assert "title" not in schema
    assert properties["file_path"] == {"description": "The file.", "type": "string"}
    assert properties["limit"] == {"minimum": 1, "type": "integer", "description": "How many lines."}
    assert properties["mode"] == {"default": "a", "enum": ["a", "b"], "type": "string"}
    assert properties["issue"] == {"$ref": "#/$defs/Issue"}
    # a property named title, a default holding one, and a required field that may be null stay
    assert "title" in schema["$defs"]["Issue"]["properties"]
    assert properties["options"]["default"] == {"title": "kept"}
    assert {"type": "null"} in properties["nullable"]["anyOf"]
    assert schema["required"] == ["file_path", "nullable"]


def test_the_input_model_still_takes_null_and_omission() -> None:
    both = [{"file_path": "a", "nullable": None}, {"file_path": "a", "limit": None, "nullable": "x"}]
    assert [FileInput.model_validate(b).limit for b in both] == [None, None]


def test_a_schema_that_is_not_pydantics_passes_through() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string", "title": "Title"}}}
    assert lean_schema(schema) == {"type": "object", "properties": {"title": {"type": "string"}}}
    assert lean_schema(True) is True


def test_each_spec_is_a_copy_of_its_own() -> None:
    # the schema is made once a process (an editor's agent opens many sessions); a tool that trims
    # its own spec, as AskUserQuestion does, must not trim the next session's
    first = FileTool().spec()
    first["input_schema"]["properties"].clear()
    second = FileTool().spec()
    assert set(second["input_schema"]["properties"]) == set(FileInput.model_fields)
    assert second["input_schema"] == lean_schema(FileInput.model_json_schema(by_alias=True))
