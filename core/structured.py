"""Structured output (`--json-schema`, the Agent SDK's `output_format`): the run ends with a JSON
value that matches the user's schema.

As Claude Code does it, the model hands the value in through a `StructuredOutput` tool whose input
schema is the user's schema: tools stay usable on the way, and the value is checked before it is
taken. A turn that ends without it is sent back with a reminder; a value that does not match goes back as
the tool's error; after a few misses of either kind, the run ends in error.
"""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any

from piton.core.records import record

STRUCTURED_OUTPUT = "StructuredOutput"
MAX_MISSES = 3  # turns ended without the answer, or values that did not match, before the run fails
REMINDER = f"You must call the {STRUCTURED_OUTPUT} tool to complete this request. Call it now."


class SchemaError(ValueError):
    """A `--json-schema` that cannot be used; the message says why, in one line."""


def parse_schema(text: str) -> dict[str, Any]:
    """The schema in `text` (JSON), checked: an object schema, valid as JSON Schema."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError as Invalid

    try:
        schema = json.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaError(f"not valid JSON ({e})") from None
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise SchemaError('the schema must describe a JSON object ("type": "object")')
    try:
        Draft202012Validator.check_schema(schema)
    except Invalid as e:
        raise SchemaError(f"not a valid JSON schema ({e.message})") from None
    return {**schema, "type": "object"}


@record
class OutputSchema:
    """The schema a run's answer must match, and what this turn has given so far."""

    schema: dict[str, Any]
    answer: Any = None
    given: bool = False
    misses: int = 0
    _checker: Any = field(default=None, repr=False)

    def begin(self) -> None:
        self.answer, self.given, self.misses = None, False, 0

    def failed(self) -> bool:
        """Whether the answer was missed more often than the run allows."""
        return self.misses > MAX_MISSES

    def take(self, value: Any) -> str | None:
        """Keep `value` as the answer if it matches; else why not (for the model to correct)."""
        if self._checker is None:
            from jsonschema import Draft202012Validator

            self._checker = Draft202012Validator(self.schema)
        errors = sorted(self._checker.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            self.misses += 1
            first = errors[0]
            where = "/" + "/".join(str(p) for p in first.absolute_path)
            return f"Output does not match required schema: {where}: {first.message}"
        self.answer, self.given = value, True
        return None

    def text(self) -> str:
        """The answer as the result's text: compact JSON."""
        return json.dumps(self.answer, separators=(",", ":"), ensure_ascii=False)
