from __future__ import annotations

import pydantic
import pytest

from piton.core.conversation.messages import (
    Base64ImageSource,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

WIRE_ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}},
    ],
}


def test_blocks_parse_by_their_type_discriminator() -> None:
    message = Message.model_validate(WIRE_ASSISTANT)
    assert [type(b) for b in message.content] == [
        ThinkingBlock,
        RedactedThinkingBlock,
        TextBlock,
        ToolUseBlock,
    ]
    assert message.tool_uses[0].input == {"file_path": "a.py"}
    assert message.text == "Let me look."


def test_wire_form_is_exactly_what_came_in() -> None:
    assert Message.model_validate(WIRE_ASSISTANT).to_wire() == WIRE_ASSISTANT


def test_unknown_block_type_is_rejected() -> None:
    with pytest.raises(pydantic.ValidationError):
        Message.model_validate({"role": "user", "content": [{"type": "video", "url": "x"}]})


def test_wire_form_drops_empty_and_blank_text_blocks() -> None:
    message = Message(
        role="assistant", content=[TextBlock(text=""), TextBlock(text="  \n"), TextBlock(text="ok")]
    )
    assert message.wire_content() == [{"type": "text", "text": "ok"}]


def test_wire_form_has_no_null_fields_and_no_false_is_error() -> None:
    result = ToolResultBlock(tool_use_id="toolu_1", content="done")
    wire = Message(role="user", content=[result]).wire_content()
    assert wire == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}]
    error = ToolResultBlock(tool_use_id="toolu_2", content="boom", is_error=True)
    assert Message(role="user", content=[error]).wire_content()[0]["is_error"] is True


def test_tool_result_with_empty_content_omits_it_and_drops_blank_parts() -> None:
    empty = ToolResultBlock(tool_use_id="t1", content="")
    parts = ToolResultBlock(tool_use_id="t2", content=[TextBlock(text=""), TextBlock(text="kept")])
    wire = Message(role="user", content=[empty, parts]).wire_content()
    assert wire == [
        {"type": "tool_result", "tool_use_id": "t1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "kept"}]},
    ]


def test_image_blocks_serialise_with_their_source() -> None:
    image = ImageBlock(source=Base64ImageSource(media_type="image/png", data="iVBORw0KGgo="))
    assert Message(role="user", content=[image]).wire_content() == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    ]


def test_messages_are_frozen_so_thinking_goes_back_unmodified() -> None:
    block = ThinkingBlock(thinking="x", signature="sig")
    with pytest.raises(pydantic.ValidationError):
        block.thinking = "changed"  # type: ignore[misc]


def test_round_trip_through_json_keeps_every_field() -> None:
    message = Message.model_validate(WIRE_ASSISTANT)
    again = Message.model_validate_json(message.model_dump_json())
    assert again == message
