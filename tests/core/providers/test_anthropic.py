"""The Anthropic provider over the real SDK and real HTTP, against the fake Messages API."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from piton.core.conversation.events import (
    MessageDone,
    Notice,
    StreamRetry,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
    ToolUseStart,
)
from piton.core.conversation.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.anthropic import AnthropicProvider
from piton.core.providers.anthropic_events import SSEDecoder
from piton.core.providers.body import build_params
from piton.core.providers.waits import Waits
from piton.testing.script import (
    DropStream,
    HttpError,
    MidStreamError,
    RawSSE,
    RedactedThinking,
    Thinking,
    ToolCall,
    reply,
)
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.fakes.validate import history_problem
from tests.helpers import stream_all

TOOLS = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}]


def request(model: str = "sonnet", **kwargs: Any) -> ModelRequest:
    defaults: dict[str, Any] = {"system": "You are a test.", "messages": [Message.user("hi")], "tools": TOOLS}
    return ModelRequest(model=model, **{**defaults, **kwargs})


def provider(fake: FakeAnthropicAPI, **waits: Any) -> AnthropicProvider:
    return AnthropicProvider(base_url=fake.base_url, waits=Waits(backoff_s=0.01, **waits))


def done_of(events: list[Any]) -> MessageDone:
    dones = [e for e in events if isinstance(e, MessageDone)]
    assert len(dones) == 1
    return dones[0]


def test_stream_maps_sse_events_to_typed_events(fake_api: FakeAnthropicAPI) -> None:
    call = ToolCall("Read", {"file_path": "main.py"})
    fake_api.add(reply(Thinking("Look at main first."), "I will read main.py.", call, chunk=8))
    events = stream_all(provider(fake_api), request())
    kinds = [type(e) for e in events]
    assert kinds[0] is ThinkingDelta and kinds[-1] is MessageDone
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I will read main.py."
    assert "".join(e.thinking for e in events if isinstance(e, ThinkingDelta)) == "Look at main first."
    assert [e for e in events if isinstance(e, ToolUseStart)] == [ToolUseStart(call.id, "Read")]
    assert "".join(e.partial_json for e in events if isinstance(e, ToolInputDelta)) == call.json
    done = done_of(events)
    assert done.message.content == [
        ThinkingBlock(thinking="Look at main first.", signature=Thinking("Look at main first.").signature),
        TextBlock(text="I will read main.py."),
        ToolUseBlock(id=call.id, name="Read", input={"file_path": "main.py"}),
    ]
    assert done.stop_reason == "tool_use"
    assert done.message_id.startswith("msg_")
    assert done.model == "claude-sonnet-5-5"


def test_usage_comes_from_message_start_and_the_cumulative_delta(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(
        reply(
            "ok",
            input_tokens=1200,
            output_tokens=34,
            cache_read_input_tokens=900,
            cache_creation_input_tokens=50,
        )
    )
    usage = done_of(stream_all(provider(fake_api), request())).usage
    assert (usage.input_tokens, usage.output_tokens) == (1200, 34)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (900, 50)


def test_request_carries_auth_version_and_our_parameters(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("ok"))
    stream_all(provider(fake_api), request())
    sent = fake_api.requests[0]
    assert sent.headers["x-api-key"] == "test-key" and "authorization" not in sent.headers
    assert sent.headers["anthropic-version"] == "2026-10-21"
    assert sent.headers["user-agent"].startswith("piton/")
    # nothing of a client library's own bookkeeping on the wire (a sentinel once leaked as a value)
    assert not [name for name in sent.headers if name.startswith("x-stainless")]
    body = sent.body
    assert body["model"] == "claude-sonnet-5-5"
    assert body["max_tokens"] == 32_000
    assert body["stream"] is True
    assert body["thinking"] == {"type": "adaptive"}
    assert body["tools"][0]["name"] == "Read"
    for removed in ("temperature", "top_p", "top_k"):
        assert removed not in body


def test_cache_breakpoints_sit_on_tools_system_and_the_newest_message(fake_api: FakeAnthropicAPI) -> None:
    history = [
        Message.user("first"),
        Message(role="assistant", content=[TextBlock(text="answer")]),
        Message.user("second"),
    ]
    tools = [*TOOLS, {**TOOLS[0], "name": "Write"}]
    fake_api.add(reply("ok"))
    stream_all(provider(fake_api), request(messages=history, tools=tools))
    body = fake_api.bodies[0]
    marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked == [{"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}]
    assert ["cache_control" in t for t in body["tools"]] == [False, True]
    # the history's own wire form, and the tool list, are shared and must not carry the breakpoints
    assert "cache_control" not in history[2].wire_content()[0]
    assert all("cache_control" not in t for t in tools)
    fake_api.add(reply("again"))
    stream_all(provider(fake_api), request(messages=history, tools=tools))
    assert fake_api.bodies[1] == body


def test_without_a_system_prompt_only_the_tools_and_messages_are_marked() -> None:
    params = build_params(request(system=""))
    assert "system" not in params
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sum("cache_control" in b for m in params["messages"] for b in m["content"]) == 1


def test_a_request_without_caching_carries_no_breakpoint_at_all(fake_api: FakeAnthropicAPI) -> None:
    history = [
        Message.user("first"),
        Message(role="assistant", content=[TextBlock(text="a")]),
        Message.user("b"),
    ]
    fake_api.add(reply("ok"))
    stream_all(provider(fake_api), request(messages=history, cached_upto=1, cache=False))
    assert "cache_control" not in json.dumps(fake_api.bodies[0])
    assert fake_api.bodies[0]["system"] == [{"type": "text", "text": "You are a test."}]


def test_never_more_than_four_breakpoints_even_on_long_histories() -> None:
    history = [
        Message.user(f"turn {i}") if i % 2 == 0 else Message(role="assistant", content=[TextBlock(text="ok")])
        for i in range(41)
    ]
    params = build_params(request(messages=history, cached_upto=39))
    count = sum("cache_control" in b for m in params["messages"] for b in m["content"])
    count += sum("cache_control" in t for t in params["tools"]) + sum(
        "cache_control" in b for b in params["system"]
    )
    assert count == 4


def test_older_models_get_enabled_thinking_with_a_valid_budget(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("ok"))
    events = stream_all(provider(fake_api), request(model="claude-sonnet-4-5-20250929"))
    thinking = fake_api.bodies[0]["thinking"]
    assert thinking["type"] == "enabled"
    assert 1024 <= thinking["budget_tokens"] < fake_api.bodies[0]["max_tokens"]
    assert fake_api.rejections == []
    # the SDK's end-of-life warning reaches people as a notice, once
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and "end-of-life" in notices[0]


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-5", "claude-3-7-sonnet-20250219", "claude-haiku-4-5", "claude-opus-4-1"]
)
def test_enabled_thinking_budgets_stay_within_the_api_bounds(model: str) -> None:
    params = build_params(request(model=model))
    assert params["thinking"]["type"] == "enabled"
    assert 1024 <= params["thinking"]["budget_tokens"] < params["max_tokens"]


def test_a_max_tokens_too_small_for_a_budget_sends_no_thinking() -> None:
    assert "thinking" not in build_params(request(model="claude-sonnet-4-5", max_tokens=1500))
    assert (
        build_params(request(model="claude-sonnet-4-5", max_tokens=4000))["thinking"]["budget_tokens"] == 2000
    )


def test_thinking_off_sends_no_thinking_parameter() -> None:
    assert "thinking" not in build_params(request(thinking=False))


def test_unknown_model_ids_get_safe_defaults_not_an_error(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("hello from a custom model"))
    done = done_of(stream_all(provider(fake_api), request(model="acme-coder-1")))
    assert done.message.text == "hello from a custom model"
    body = fake_api.bodies[0]
    assert (body["model"], body["max_tokens"], "thinking" in body) == ("acme-coder-1", 8_192, False)


def test_a_mid_stream_error_event_is_retried_and_the_partial_reply_discarded(
    fake_api: FakeAnthropicAPI,
) -> None:
    fake_api.add(
        reply("Hello, this part is lost", fault=MidStreamError(after=5)), reply("Hello, complete answer.")
    )
    events = stream_all(provider(fake_api), request())
    retries = [e for e in events if isinstance(e, StreamRetry)]
    assert len(retries) == 1 and "overloaded_error" in retries[0].reason
    assert done_of(events).message.text == "Hello, complete answer."
    assert len(fake_api.requests) == 2
    fake_api.assert_complete()


@pytest.mark.parametrize("clean", [True, False], ids=["ends-without-message_stop", "connection-dropped"])
def test_an_incomplete_stream_is_retried(fake_api: FakeAnthropicAPI, clean: bool) -> None:
    fake_api.add(reply("cut short", fault=DropStream(after=4, clean=clean)), reply("whole"))
    events = stream_all(provider(fake_api), request())
    assert [type(e).__name__ for e in events].count("StreamRetry") == 1
    assert done_of(events).message.text == "whole"
    fake_api.assert_complete()


def test_stream_failures_give_up_after_the_last_retry(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(*(reply("x", fault=MidStreamError(after=3)) for _ in range(3)))
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api, max_retries=2), request())
    assert err.value.kind == "overloaded"
    assert str(err.value) == (
        "API error during the reply (overloaded_error): Overloaded (failed 3 times in a row)"
    )
    assert len(fake_api.requests) == 3


def test_a_mid_stream_invalid_request_error_is_not_retried(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("x", fault=MidStreamError(after=3, error_type="invalid_request_error", message="bad")))
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api), request())
    assert err.value.kind == "invalid_request"
    assert len(fake_api.requests) == 1


@pytest.mark.parametrize(
    ("status", "error_type", "kind"),
    [
        (401, "authentication_error", "auth"),
        (403, "permission_error", "permission"),
        (400, "invalid_request_error", "invalid_request"),
        (404, "not_found_error", "not_found"),
        (413, "request_too_large", "invalid_request"),
        (422, "invalid_request_error", "invalid_request"),
        (402, "billing_error", "billing"),
    ],
)
def test_client_errors_are_not_retried_and_read_as_one_line(
    fake_api: FakeAnthropicAPI, status: int, error_type: str, kind: str
) -> None:
    fake_api.add(HttpError(status, error_type, "nope"))
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api), request())
    assert err.value.kind == kind and err.value.status == status
    assert f"API error {status}: nope" in str(err.value)
    assert "retries" not in str(err.value)  # the SDK does not retry these, and the line must not say so
    assert "\n" not in str(err.value)
    assert len(fake_api.requests) == 1


def test_a_wrong_api_key_is_an_auth_error(fake_api: FakeAnthropicAPI) -> None:
    with pytest.raises(ProviderError) as err:
        stream_all(AnthropicProvider(api_key="wrong", base_url=fake_api.base_url), request())
    assert err.value.kind == "auth"
    assert "ANTHROPIC_API_KEY" in str(err.value)


def test_rate_limits_are_retried_after_the_wait_the_api_asks_for(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(429, "rate_limit_error", "slow down", {"retry-after-ms": "20"}), reply("made it"))
    events = stream_all(provider(fake_api), request())
    assert done_of(events).message.text == "made it"
    # ours, not a client library's silent one: the same body asked for twice
    assert len(fake_api.requests) == 2 and fake_api.requests[0].body == fake_api.requests[1].body
    assert [e for e in events if isinstance(e, StreamRetry)] == [
        StreamRetry(1, 5, 0.02, "429 rate_limit_error", 429, "rate_limit_error")
    ]


def test_persistent_overload_ends_with_a_clear_error(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(
        *(HttpError(529, "overloaded_error", "Overloaded", {"retry-after-ms": "10"}) for _ in range(2))
    )
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api, max_retries=1), request())
    assert err.value.kind == "overloaded" and err.value.status == 529
    assert str(err.value) == "API error 529: Overloaded (failed 2 times in a row; try again later)"
    assert len(fake_api.requests) == 2


def test_an_unreachable_api_is_a_connection_error() -> None:
    with pytest.raises(ProviderError) as err:
        stream_all(AnthropicProvider(base_url="http://127.0.0.1:9", waits=Waits(max_retries=0)), request())
    assert err.value.kind == "connection"
    assert str(err.value).startswith("Cannot reach the API at http://127.0.0.1:9: ConnectError: ")
    assert "[Errno" in str(err.value)  # the system's reason, not the transport's summary of it


def test_a_missing_api_key_says_how_to_set_it(
    monkeypatch: pytest.MonkeyPatch, fake_api: FakeAnthropicAPI
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api), request())
    assert err.value.kind == "config"
    assert "export ANTHROPIC_API_KEY" in str(err.value)
    assert fake_api.requests == []


def test_malformed_tool_json_becomes_an_input_error_not_a_crash(fake_api: FakeAnthropicAPI) -> None:
    bad = ToolCall("Read", raw_json='{"file_path": "a.py"', id="toolu_bad")
    fake_api.add(reply(bad))
    done = done_of(stream_all(provider(fake_api), request()))
    assert done.message.tool_uses == [ToolUseBlock(id="toolu_bad", name="Read", input={})]
    assert "toolu_bad" in done.input_errors


RECORDED = """event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":2}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants the weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Okay, let's check"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" the weather."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\": \\"San Fra"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"""


def test_a_recorded_stream_replays_into_the_same_reply(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(RawSSE(RECORDED))
    done = done_of(stream_all(provider(fake_api), request()))
    assert done.message.content == [
        ThinkingBlock(
            thinking="The user wants the weather.",
            signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        ),
        TextBlock(text="Okay, let's check the weather."),
        ToolUseBlock(
            id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather", input={"location": "San Francisco, CA"}
        ),
    ]
    assert (done.usage.input_tokens, done.usage.cache_read_input_tokens, done.usage.output_tokens) == (
        472,
        2048,
        89,
    )
    assert done.stop_reason == "tool_use"


def test_the_stream_framing_of_other_servers_reads_the_same(fake_api: FakeAnthropicAPI) -> None:
    """CRLF line ends, comment lines, a field without its space, a data line split in two: all server
    -sent events as the standard frames them (a proxy or gateway may re-frame the API's)."""
    framed = RECORDED.replace("event: ping\n", ": keep-alive\nevent:ping\n")
    framed = framed.replace('data: {"type":"message_stop"}', 'data: {"type":\ndata: "message_stop"}')
    fake_api.add(RawSSE(": hello\n\n" + framed.replace("\n", "\r\n")))
    done = done_of(stream_all(provider(fake_api), request()))
    assert [type(b) for b in done.message.content] == [ThinkingBlock, TextBlock, ToolUseBlock]
    assert done.stop_reason == "tool_use"


def test_a_reply_that_never_finishes_ends_at_its_overall_limit(fake_api: FakeAnthropicAPI) -> None:
    """Pings keep a stream alive but never finish it: the reply's own limit ends the wait, in one line
    that names the setting, and the same wait is not started again."""
    fake_api.add(Stall(reply("never"), after=2, seconds=30, ping_every=0.02), reply("unused"))
    with pytest.raises(ProviderError) as caught:
        stream_all(provider(fake_api, reply_s=0.4), request())
    assert (
        str(caught.value)
        == "The API's reply did not finish within 0.4 s (PITON_REPLY_TIMEOUT_MS sets the limit)"
    )
    assert caught.value.kind == "timeout" and len(fake_api.requests) == 1


def test_the_overall_limit_is_read_from_the_environment() -> None:
    waits, problems = Waits.from_env({"PITON_REPLY_TIMEOUT_MS": "90000"})
    assert (waits.reply_s, problems) == (90.0, [])
    _, problems = Waits.from_env({"PITON_REPLY_TIMEOUT_MS": "soon"})
    assert problems == [
        "PITON_REPLY_TIMEOUT_MS='soon' is not a number of milliseconds (more than 0); using 1800000"
    ]


def test_retries_back_off_doubling_with_jitter(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(*(reply("x", fault=DropStream(after=3)) for _ in range(2)), reply("ok"))
    events = stream_all(provider(fake_api), request())
    first, second = (e.delay_s for e in events if isinstance(e, StreamRetry))
    assert 0.01 <= first <= 0.0125
    assert 0.02 <= second <= 0.025


def test_a_garbled_event_is_retried_like_a_dropped_stream(fake_api: FakeAnthropicAPI) -> None:
    head = RECORDED.split("event: content_block_start")[0]
    fake_api.add(RawSSE(head + "event: content_block_start\ndata: {not json\n\n"), reply("clean"))
    events = stream_all(provider(fake_api), request())
    assert done_of(events).message.text == "clean"
    assert "JSONDecodeError" in next(e for e in events if isinstance(e, StreamRetry)).reason


def test_redacted_thinking_is_kept_as_sent(fake_api: FakeAnthropicAPI) -> None:
    redacted = RedactedThinking()
    fake_api.add(reply(redacted, "answer"))
    done = done_of(stream_all(provider(fake_api), request()))
    assert done.message.content == [RedactedThinkingBlock(data=redacted.data), TextBlock(text="answer")]


def test_the_moving_breakpoint_lands_on_the_newest_tool_result() -> None:
    history = [
        Message.user("go"),
        Message(
            role="assistant",
            content=[
                ToolUseBlock(id="t1", name="Read", input={}),
                ToolUseBlock(id="t2", name="Read", input={}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(tool_use_id="t1", content="a"),
                ToolResultBlock(tool_use_id="t2", content="b"),
            ],
        ),
    ]
    params = build_params(request(messages=history))
    last = params["messages"][-1]["content"]
    assert [("cache_control" in b, b["tool_use_id"]) for b in last] == [(False, "t1"), (True, "t2")]
    assert history_problem(params["messages"]) is None


def test_api_time_counts_the_wait_on_the_api_not_the_reader(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("one two three four", chunk=4, delay_s=0.03))  # 4 events before the first text

    async def slow_reader() -> tuple[list[Any], float]:
        p = provider(fake_api)
        events = []
        started = time.monotonic()
        try:
            async for event in p.stream(request()):
                events.append(event)
                if isinstance(event, TextDelta):
                    await asyncio.sleep(0.1)  # a reader taking its time (a terminal drawing)
        finally:
            await p.aclose()
        return events, time.monotonic() - started

    events, wall = asyncio.run(slow_reader())
    api = done_of(events).api_seconds
    assert api >= 0.12, "at least the wait for the first text"
    assert api < wall - 0.4, "the reader's half second is not the API's"


def test_a_failed_request_reports_the_time_it_waited(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("x", fault=MidStreamError(after=3), delay_s=0.05))
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api, max_retries=0), request())
    assert err.value.api_seconds >= 0.15


def test_a_404_from_another_endpoint_names_it(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(404, "not_found_error", "Not Found"))
    with pytest.raises(ProviderError) as err:
        stream_all(provider(fake_api), request())
    assert f"(from {fake_api.base_url}" in str(err.value) and "ANTHROPIC_BASE_URL" in str(err.value)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_events_decode_the_same_however_the_network_cuts_the_body(newline: str) -> None:
    """A chunk may end anywhere (inside a field, between the CR and LF of a line end): the events are
    those of the whole body at once, in order, for every line ending the standard allows."""
    body = RECORDED.replace("\n", newline).encode()
    whole = SSEDecoder().feed(body)
    assert [event for event, _ in whole][:3] == ["message_start", "ping", "content_block_start"]
    for cut in range(1, len(body)):
        decoder = SSEDecoder()
        assert decoder.feed(body[:cut]) + decoder.feed(body[cut:]) == whole, cut
    decoder = SSEDecoder()
    assert [e for i in range(len(body)) for e in decoder.feed(body[i : i + 1])] == whole


def test_a_gateway_refusing_tool_search_is_told_how_to_turn_it_off(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(
        HttpError(400, "invalid_request_error", "messages.1.content.0: unknown type 'tool_reference'")
    )
    with pytest.raises(ProviderError) as caught:
        stream_all(provider(fake_api), request())
    assert str(caught.value) == (
        "API error 400: messages.1.content.0: unknown type 'tool_reference'"
        " (a gateway without tool search: set ENABLE_TOOL_SEARCH=false)"
    )
