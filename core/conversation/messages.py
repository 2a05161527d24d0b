"""Messages API content blocks and messages: the one internal format, shaped as the wire format.

Blocks are frozen so that what the model sent (thinking signatures above all) goes back unmodified.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

INTERRUPTED_TOOL_RESULT = "Interrupted by the user: this tool call did not finish."
# a call a loaded session has no result for: why it never got one (a kill, a crash) is not known
UNFINISHED_TOOL_RESULT = "This tool call did not finish: the session ended before its result was saved."
INTERRUPTED_REQUEST = "[Request interrupted by the user]"
# what a crash of Piton's own leaves in the history: labelled for what it was, not as the user's doing
FAILED_TOOL_RESULT = "This tool call did not finish: Piton failed while running it ({reason})."
FAILED_REQUEST = "[Request ended by an internal error of Piton: {reason}]"
# the JSON the SDK would write (compact, UTF-8 as is): request bodies are built from these fragments
encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def valid_text(text: str) -> str:
    """`text` as valid Unicode: a lone surrogate (a stray byte of a file read with surrogateescape,
    or a `\\ud800` escape the model wrote) becomes U+FFFD. Such text cannot be encoded as UTF-8,
    so it would break the session log and every later request."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # through UTF-16, a high and low surrogate side by side become the character they stand for
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def valid_data(value: Any) -> Any:
    """A JSON value (a tool call's input) with every string, keys included, made `valid_text`."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(k) if isinstance(k, str) else k: valid_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_data(v) for v in value]
    return value


Text = Annotated[str, AfterValidator(valid_text)]


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: Text


class ThinkingBlock(_Block):
    type: Literal["thinking"] = "thinking"
    thinking: Text
    signature: str


class RedactedThinkingBlock(_Block):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(_Block):
    type: Literal["tool_use"] = "tool_use"
    id: Text
    name: Text
    input: Annotated[dict[str, Any], AfterValidator(valid_data)]


class Base64ImageSource(_Block):
    type: Literal["base64"] = "base64"
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    data: str


class URLImageSource(_Block):
    type: Literal["url"] = "url"
    url: str


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    source: Annotated[Base64ImageSource | URLImageSource, Field(discriminator="type")]


class Base64PDFSource(_Block):
    type: Literal["base64"] = "base64"
    media_type: Literal["application/pdf"] = "application/pdf"
    data: str


class DocumentBlock(_Block):
    """A PDF the model reads itself, text and page images (Read of a small PDF)."""

    type: Literal["document"] = "document"
    source: Base64PDFSource
    title: str | None = None


class ToolReferenceBlock(_Block):
    """A deferred tool loaded by a tool result (ToolSearch's): the API shows the model the tool's
    definition in its place, which must then be in the request's tools."""

    type: Literal["tool_reference"] = "tool_reference"
    tool_name: str


ToolResultContent = Annotated[
    TextBlock | ImageBlock | DocumentBlock | ToolReferenceBlock, Field(discriminator="type")
]


class ToolResultBlock(_Block):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: Text
    content: Text | list[ToolResultContent]
    is_error: bool = False


ContentBlock = Annotated[
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ImageBlock
    | DocumentBlock
    | ToolResultBlock,
    Field(discriminator="type"),
]


def _blank(text: str) -> bool:
    return not text.strip()


def _wire_block(block: _Block) -> dict[str, Any] | None:
    """One block as the API accepts it, or None when the API would reject it as empty."""
    if isinstance(block, TextBlock):
        return None if _blank(block.text) else {"type": "text", "text": block.text}
    if isinstance(block, ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
        if isinstance(block.content, str):
            if not _blank(block.content):
                out["content"] = block.content
        else:
            parts = [p for p in (_wire_block(c) for c in block.content) if p is not None]
            if parts:
                out["content"] = parts
        if block.is_error:
            out["is_error"] = True
        return out
    return block.model_dump(mode="json", exclude_none=True)


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    role: Literal["user", "assistant"]
    content: list[ContentBlock]
    _wire: list[dict[str, Any]] | None = PrivateAttr(default=None)
    _wire_json: list[bytes] | None = PrivateAttr(default=None)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=[TextBlock(text=text)])

    @property
    def text(self) -> str:
        """The message's visible text (text blocks joined), without thinking or tool blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    @property
    def tool_references(self) -> list[str]:
        """The tools this message's results load (`tool_reference` blocks), by name."""
        return [
            part.tool_name
            for block in self.content
            if isinstance(block, ToolResultBlock) and not isinstance(block.content, str)
            for part in block.content
            if isinstance(part, ToolReferenceBlock)
        ]

    def wire_content(self) -> list[dict[str, Any]]:
        """Content blocks as the API accepts them; computed once, since messages never change."""
        if self._wire is None:
            self._wire = [w for w in (_wire_block(b) for b in self.content) if w is not None]
        return self._wire

    def wire_json(self) -> list[bytes]:
        """`wire_content()` block by block as UTF-8 JSON; encoded once, so a request carrying a long
        history encodes only what is new."""
        if self._wire_json is None:
            self._wire_json = [encode_json(block).encode() for block in self.wire_content()]
        return self._wire_json

    def to_wire(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.wire_content()}

    def __eq__(self, other: object) -> bool:
        # pydantic compares private attributes too; the wire cache must not make equal messages differ
        if not isinstance(other, Message):
            return NotImplemented
        return self.role == other.role and self.content == other.content

    # content is a list, so a message cannot be hashed
    __hash__ = None  # type: ignore[assignment]
