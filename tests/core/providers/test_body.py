"""The encoded request body: the same as `build_params` (plus `stream`) however the history grew,
with its breakpoints where `build_params` puts them, and without holding on to finished histories."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from piton.core.conversation.messages import (
    Base64ImageSource,
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolReferenceBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.providers import ModelRequest
from piton.core.providers.body import BodyEncoder, build_params

TOOLS = [
    {"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}},
    {"name": "Grep", "description": "Search – fast «ünïcode»", "input_schema": {"type": "object"}},
]


def decoded(encoder: BodyEncoder, request: ModelRequest) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(encoder.encode(request))
    return result


def expected(request: ModelRequest) -> dict[str, Any]:
    return {**build_params(request), "stream": True}


def request(messages: list[Message], **kwargs: Any) -> ModelRequest:
    defaults: dict[str, Any] = {"model": "sonnet", "system": "You are a test.", "tools": TOOLS}
    return ModelRequest(messages=messages, **{**defaults, **kwargs})


_IMAGE = ImageBlock(source=Base64ImageSource(media_type="image/png", data="iVBORw0KGgo="))
_texts = st.sampled_from(["hello", "", "  ", "ünïcode ✓ \u2028", 'quote " and \\ backslash', "x" * 300])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Histories of every shape `to_api_messages` must handle: same-role neighbours, empty messages,
    tool results after other blocks, thinking, images."""
    out: list[Message] = []
    pending: list[str] = []
    for n in range(draw(st.integers(0, 12))):
        role = draw(st.sampled_from(["user", "assistant"]))
        content: list[ContentBlock] = []
        if role == "assistant":
            if draw(st.booleans()):
                content.append(ThinkingBlock(thinking=draw(_texts), signature="sig"))
            content.append(TextBlock(text=draw(_texts)))
            pending = [f"t{n}_{k}" for k in range(draw(st.integers(0, 2)))]
            content += [ToolUseBlock(id=i, name="Read", input={"file_path": f"{i}.py"}) for i in pending]
        else:
            if draw(st.booleans()):
                content.append(TextBlock(text=draw(_texts)))
            content += [ToolResultBlock(tool_use_id=i, content=draw(_texts)) for i in pending]
            if draw(st.booleans()):
                content.append(_IMAGE)
            pending = []
        out.append(Message(role=role, content=content))
    return out


@settings(max_examples=150, deadline=None)
@given(
    history=histories(),
    cached_upto=st.integers(0, 13),
    cache=st.booleans(),
    system=st.sampled_from(["", "You are a test.", "ünïcode system"]),
    tools=st.booleans(),
    model=st.sampled_from(["sonnet", "claude-sonnet-4-5", "acme-coder-1"]),
)
def test_the_encoded_body_is_build_params_for_any_history(
    history: list[Message], cached_upto: int, cache: bool, system: str, tools: bool, model: str
) -> None:
    req = request(
        history,
        cached_upto=cached_upto,
        cache=cache,
        system=system,
        tools=TOOLS if tools else (),
        model=model,
    )
    assert decoded(BodyEncoder(), req) == expected(req)


@settings(max_examples=60, deadline=None)
@given(history=histories())
def test_a_history_that_grows_by_appending_encodes_as_if_from_scratch(history: list[Message]) -> None:
    encoder = BodyEncoder()
    growing: list[Message] = []
    sent = 0
    for message in history:
        growing.append(message)
        req = request(growing, cached_upto=sent)
        assert decoded(encoder, req) == expected(req)
        sent = len(growing)


def test_a_replaced_history_is_encoded_anew() -> None:
    """Compaction hands over a new list in which middle messages changed and the newest did not."""
    use = ToolUseBlock(id="t1", name="Read", input={})
    history = [
        Message.user("go"),
        Message(role="assistant", content=[use]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="a long result")]),
        Message(role="assistant", content=[TextBlock(text="done")]),
        Message.user("next"),
    ]
    encoder = BodyEncoder()
    encoder.encode(request(history))
    stubbed = [
        *history[:2],
        Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="[stub]")]),
    ]
    replaced = [*stubbed, *history[3:]]
    body = decoded(encoder, request(replaced))
    assert body == expected(request(replaced))
    assert "a long result" not in json.dumps(body)


def test_a_history_changed_in_place_is_noticed_when_its_end_changes() -> None:
    history = [Message.user("one"), Message(role="assistant", content=[TextBlock(text="two")])]
    encoder = BodyEncoder()
    encoder.encode(request(history))
    history[-1] = Message(role="assistant", content=[TextBlock(text="changed")])
    assert decoded(encoder, request(history)) == expected(request(history))
    del history[-1]
    assert decoded(encoder, request(history)) == expected(request(history))


def test_conversations_interleaved_on_one_encoder_stay_apart() -> None:
    parent = [Message.user("parent")]
    child = [Message.user("child")]
    encoder = BodyEncoder()
    for step in range(4):
        for history in (parent, child):
            history.append(Message(role="assistant", content=[TextBlock(text=f"reply {step}")]))
            history.append(Message.user(f"more {step}"))
            req = request(history, cached_upto=len(history) - 2)
            assert decoded(encoder, req) == expected(req)


def test_a_different_tool_list_is_never_served_from_the_cache() -> None:
    encoder = BodyEncoder()
    history = [Message.user("hi")]
    first = decoded(encoder, request(history, tools=[TOOLS[0]]))
    second = decoded(encoder, request(history, tools=[TOOLS[1]]))
    assert [t["name"] for t in first["tools"]] == ["Read"]
    assert [t["name"] for t in second["tools"]] == ["Grep"]


def test_a_finished_conversation_is_let_go() -> None:
    encoder = BodyEncoder()
    history = [Message.user("an old conversation")]
    encoder.encode(request(history))
    ref = weakref.ref(history[0])
    del history
    encoder.encode(request([Message.user("a new one")]))
    gc.collect()
    assert ref() is None, "the encoder must not keep a history nobody else holds"


DEFERRED = {"name": "WebFetch", "description": "Fetch a page", "input_schema": {"type": "object"}}
LOADING = [
    Message.user("read the page"),
    Message(role="assistant", content=[ToolUseBlock(id="toolu_s", name="ToolSearch", input={})]),
    Message(
        role="user",
        content=[ToolResultBlock(tool_use_id="toolu_s", content=[ToolReferenceBlock(tool_name="WebFetch")])],
    ),
]


def test_the_tools_breakpoint_goes_on_the_last_tool_that_is_not_deferred() -> None:
    tools = [TOOLS[0], {**DEFERRED, "defer_loading": True}]
    sent = decoded(BodyEncoder(), request(LOADING, tools=tools, tool_references=True))
    assert ["cache_control" in t for t in sent["tools"]] == [True, False]
    assert sent == expected(request(LOADING, tools=tools, tool_references=True))
    assert sent["messages"][-1]["content"][0]["content"] == [
        {"type": "tool_reference", "tool_name": "WebFetch"}
    ]


def test_references_a_request_cannot_carry_become_text() -> None:
    plain = [*TOOLS, DEFERRED]
    for case in (
        request(LOADING, tools=plain),  # a model without tool search: every tool, no references
        request(LOADING, tools=TOOLS, tool_references=True),  # the tool is gone
    ):
        sent = decoded(BodyEncoder(), case)
        assert sent == expected(case)
        [part] = sent["messages"][-1]["content"][0]["content"]
        assert part == {"type": "text", "text": "(The tool WebFetch was loaded here.)"}
