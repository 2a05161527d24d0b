"""Folding stream events: what breaks the protocol is refused by name, what is merely new is skipped."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from piton.core.conversation.messages import TextBlock
from piton.core.providers.accumulate import MalformedEvent, ReplyAccumulator
from piton.testing.script import Thinking, ToolCall, reply, sse_events


def decoded(data: dict[str, Any]) -> Any:
    """An event as the provider decodes it from the wire."""
    return json.loads(json.dumps(data), object_hook=lambda d: SimpleNamespace(**d))


def fed(*extra: dict[str, Any], after: int = 3) -> ReplyAccumulator:
    """A text reply's events with `extra` inserted after the first `after`, fed in order."""
    events = [data for _, data in sse_events(reply("hello"), "claude-sonnet-5-5", 10)]
    events[after:after] = list(extra)
    acc = ReplyAccumulator()
    for event in events:
        acc.feed(decoded(event))
    return acc


def test_a_whole_reply_folds_into_its_message() -> None:
    acc = ReplyAccumulator()
    for _, data in sse_events(reply(Thinking("hm"), "hi", ToolCall("Read", {"a": 1})), "m", 10):
        acc.feed(decoded(data))
    done = acc.done()
    assert acc.complete and [b.type for b in done.message.content] == ["thinking", "text", "tool_use"]


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"type": "content_block_delta", "index": 0}, "content_block_delta without a valid delta"),
        (
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}},
            "content_block_delta without a valid index",
        ),
        (
            {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}},
            "content_block_delta for block 7, which never started",
        ),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
            "text_delta without a valid text",
        ),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
            "text_delta without a valid text",
        ),
        (
            {"type": "content_block_delta", "index": 0, "delta": {"text": "x"}},
            "content_block_delta for block 0 without a delta type",
        ),
        (
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            },
            "input_json_delta for block 0, a text block",
        ),
        (
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start for block 0, which had started already",
        ),
        (
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "name": "Read"},
            },
            "a tool_use block without a valid id",
        ),
        ({"type": "content_block_start", "index": 1}, "content_block_start without a valid content_block"),
        ({"type": "message_delta", "usage": {"output_tokens": 3}}, "message_delta without a valid delta"),
        ({"index": 0, "delta": {}}, "an event without a type"),
    ],
)
def test_an_event_of_the_wrong_shape_is_refused_by_name(event: dict[str, Any], why: str) -> None:
    with pytest.raises(MalformedEvent) as err:
        fed(event)
    assert str(err.value) == why


def test_events_before_message_start_are_refused() -> None:
    acc = ReplyAccumulator()
    with pytest.raises(MalformedEvent, match="content_block_start before message_start"):
        acc.feed(
            decoded(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
            )
        )
    with pytest.raises(MalformedEvent, match="message_stop before message_start"):
        acc.feed(decoded({"type": "message_stop"}))


def test_what_is_only_new_is_skipped_not_refused() -> None:
    acc = fed(
        {"type": "content_block_start", "index": 5, "content_block": {"type": "server_tool_use", "id": "s"}},
        {
            "type": "content_block_delta",
            "index": 5,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
        {"type": "a_future_event", "whatever": 1},
        after=4,
    )
    assert acc.complete
    assert acc.done().message.content == [TextBlock(text="hello")]


def test_usage_counts_that_are_not_numbers_are_ignored() -> None:
    odd = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": "many"}}
    acc = fed(odd, after=-1)  # after the real message_delta, before message_stop
    assert acc.usage.output_tokens == 2  # the real count stands
