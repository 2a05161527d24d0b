"""The fake Messages API itself: framing, the rejections it must share with the real one, and the
faults it injects."""

from __future__ import annotations

import json
import socket
import time
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from piton.testing.script import HttpError, Thinking, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI, Hold, Malformed, NoAnswer, Reset, Stall
from tests.fakes.validate import ANY_TOOL

if TYPE_CHECKING:
    import anthropic

USER = {"role": "user", "content": "hi"}


# The SDK is imported where a test uses it: importing it takes a second and more, which every test
# process would otherwise pay while it collects the suite.
def client(fake: FakeAnthropicAPI, api_key: str = "test-key") -> anthropic.Anthropic:
    import anthropic

    from piton.core import tls

    # the fake is plain http, so its client reads no certificates, as Piton's own does: the SDK's
    # default client reads the whole bundle each time, some 30 ms of CPU for each of these clients
    plain = anthropic.DefaultHttpxClient(verify=tls.for_url(fake.base_url))
    return anthropic.Anthropic(api_key=api_key, base_url=fake.base_url, max_retries=0, http_client=plain)


def create(fake: FakeAnthropicAPI, **body: Any) -> Any:
    params: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "messages": [USER],
        "tools": [ANY_TOOL],
        **body,
    }
    with client(fake) as c:
        return c.messages.create(**params)


def test_streams_are_sse_with_event_lines_and_every_event_type(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply(Thinking("hmm"), "hello", ToolCall("Read", {"file_path": "a"})))
    payload = {"model": "claude-sonnet-5-5", "max_tokens": 100, "stream": True, "messages": [USER]}
    headers = {"authorization": "Bearer test-key", "anthropic-version": "2026-10-21"}
    response = httpx2.post(f"{fake_api.base_url}/v1/messages", json=payload, headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    names = [
        line.removeprefix("event: ") for line in response.text.splitlines() if line.startswith("event: ")
    ]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(names)
    for delta in ("text_delta", "thinking_delta", "signature_delta", "input_json_delta"):
        assert f'"type": "{delta}"' in response.text


def test_non_streaming_requests_get_a_whole_message(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(reply("hello"))
    message = create(fake_api)
    assert message.content[0].text == "hello" and message.stop_reason == "end_turn"


def rejected(fake: FakeAnthropicAPI, **body: Any) -> str:
    import anthropic

    with pytest.raises(anthropic.BadRequestError) as err:
        create(fake, **body)
    return str(err.value.api_message)


def test_a_tool_use_without_its_result_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
        {"role": "user", "content": "where is the result?"},
    ]
    assert "without `tool_result` blocks immediately after: t1" in rejected(fake_api, messages=messages)


def test_a_result_without_its_tool_use_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "x"}]},
    ]
    assert "unexpected `tool_use_id`" in rejected(fake_api, messages=messages)


def test_text_before_tool_results_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "tool_result", "tool_use_id": "t1"}],
        },
    ]
    assert "must come before any other content" in rejected(fake_api, messages=messages)


@pytest.mark.parametrize("text", ["", "  \n"])
def test_empty_text_blocks_are_a_400(fake_api: FakeAnthropicAPI, text: str) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": text}]}]
    assert "non-whitespace text" in rejected(fake_api, messages=messages)


def test_more_than_four_cache_breakpoints_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    assert "maximum of 4 blocks" in rejected(fake_api, messages=[{"role": "user", "content": [block] * 5}])


def test_a_modified_thinking_block_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    thought = Thinking("original")
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "edited", "signature": thought.signature}],
        },
        {"role": "user", "content": "go on"},
    ]
    assert "Invalid `signature`" in rejected(fake_api, messages=messages)


def test_dropping_the_thinking_block_of_a_tool_loop_is_a_400(fake_api: FakeAnthropicAPI) -> None:
    call = ToolCall("Read", {"file_path": "a"})
    fake_api.add(reply(Thinking("plan"), call))
    create(fake_api, thinking={"type": "adaptive"})
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call.id, "name": "Read", "input": call.input}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "x"}]},
    ]
    assert "must start with a thinking block" in rejected(
        fake_api, messages=messages, thinking={"type": "adaptive"}
    )


def test_thinking_budgets_outside_the_bounds_are_a_400(fake_api: FakeAnthropicAPI) -> None:
    assert "greater than or equal to 1024" in rejected(
        fake_api, thinking={"type": "enabled", "budget_tokens": 512}
    )
    too_big = {"type": "enabled", "budget_tokens": 2048}
    assert "must be greater than `thinking.budget_tokens`" in rejected(
        fake_api, thinking=too_big, max_tokens=2048
    )


def test_injected_errors_and_a_wrong_key(fake_api: FakeAnthropicAPI) -> None:
    import anthropic

    fake_api.add(HttpError(529, "overloaded_error", "Overloaded"))
    with pytest.raises(anthropic.OverloadedError):
        create(fake_api)
    with (
        pytest.raises(anthropic.AuthenticationError),
        client(fake_api, api_key="wrong") as c,
    ):
        c.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=[USER])  # type: ignore[list-item]


def test_a_request_beyond_the_script_is_flagged(fake_api: FakeAnthropicAPI) -> None:
    assert "no scripted response" in rejected(fake_api)
    assert len(fake_api.unexpected) == 1
    fake_api.unexpected.clear()  # seen and expected here


def test_tool_blocks_without_tools_defined_are_a_400(fake_api: FakeAnthropicAPI) -> None:
    messages = [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    assert "must define tools" in rejected(fake_api, messages=messages, tools=[])


def test_null_fields_are_a_400(fake_api: FakeAnthropicAPI) -> None:
    block = {"type": "text", "text": "hi", "citations": None}
    assert "citations: Input should be a valid value, not null" in rejected(
        fake_api, messages=[{"role": "user", "content": [block]}]
    )


@pytest.mark.parametrize("param", ["temperature", "top_p", "top_k", "frobnicate"])
def test_parameters_this_api_version_does_not_take_are_a_400(fake_api: FakeAnthropicAPI, param: str) -> None:
    payload = {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [USER], param: 0.5}
    headers = {"authorization": "Bearer test-key", "anthropic-version": "2026-10-21"}
    response = httpx2.post(f"{fake_api.base_url}/v1/messages", json=payload, headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == f"{param}: Extra inputs are not permitted"


# -- faults ----------------------------------------------------------------------------------------

HEADERS = {"authorization": "Bearer test-key", "anthropic-version": "2026-10-21"}
PAYLOAD = {"model": "claude-sonnet-5-5", "max_tokens": 100, "stream": True, "messages": [USER]}


def event_names(lines: list[str]) -> list[str]:
    return [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]


def test_http_errors_carry_a_json_body_and_the_retry_headers_given(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(
        HttpError(429, "rate_limit_error", "slow down", {"retry-after": "3600", "retry-after-ms": "5"})
    )
    response = httpx2.post(f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS)
    assert response.status_code == 429
    assert (response.headers["retry-after"], response.headers["retry-after-ms"]) == ("3600", "5")
    assert response.json() == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


def test_a_stall_keeps_the_connection_open_and_silent_then_finishes(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Stall(reply("hello"), after=2, seconds=0.4))
    started = time.monotonic()
    seen: list[tuple[float, str]] = []
    with httpx2.stream("POST", f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                seen.append((time.monotonic() - started, line.removeprefix("event: ")))
    names = [name for _, name in seen]
    assert names[:2] == ["message_start", "ping"] and names[-1] == "message_stop"
    assert seen[2][0] - seen[1][0] >= 0.35, "silence between the second and the third event"


def test_a_stall_may_ping_while_silent(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Stall(reply("hello"), after=2, seconds=1.0, ping_every=0.1))
    with httpx2.stream("POST", f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS) as response:
        names = event_names(list(response.iter_lines()))
    # about ten; fewer when a loaded machine wakes the server late, never more than one per 0.1 s
    assert 1 <= names[2:].count("ping") <= 10 and names[-1] == "message_stop"


def _said(line: str) -> str:
    """The text a line of the stream adds to the answer."""
    data = json.loads(line.removeprefix("data: ")) if line.startswith("data: ") else {}
    return str(data.get("delta", {}).get("text", "")) if data.get("type") == "content_block_delta" else ""


def test_a_hold_pauses_the_reply_at_each_mark_until_the_test_resumes_it(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Hold(reply("one two three four", chunk=4), marks=("two", "four")))
    said = ""
    with httpx2.stream("POST", f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS) as response:
        lines = response.iter_lines()
        for held, mark in enumerate(("two", "four"), start=1):
            fake_api.wait_for_silence(held)
            while mark not in said:  # all sent before the pause
                said += _said(next(lines))
            assert fake_api.moments.silences == held  # and nothing more until resumed
            fake_api.resume()
        rest = event_names(list(lines))
    assert said == "one two three four" and rest[-1] == "message_stop"


def test_a_request_never_answered_sends_not_even_headers(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(NoAnswer())
    with pytest.raises(httpx2.ReadTimeout):
        httpx2.post(f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS, timeout=0.3)
    assert len(fake_api.requests) == 1  # it was read, and recorded


def test_stopping_the_server_ends_every_silence_at_once() -> None:
    fake = FakeAnthropicAPI().start()
    fake.add(NoAnswer(seconds=60), Stall(reply("x"), after=2, seconds=60))
    assert fake._server is not None
    host, port = fake._server.server_address[:2]
    assert isinstance(host, str), host
    sockets = [socket.create_connection((host, port)) for _ in range(2)]
    body = json.dumps(PAYLOAD).encode()
    head = "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
    for sock in sockets:
        sock.sendall(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
    fake.wait_for_silence(2)
    started = time.monotonic()
    fake.stop()  # joins the silent handlers, and fails if one outlives it
    assert time.monotonic() - started < 30  # not the 60 s the silences were to last
    for sock in sockets:
        sock.close()


def test_a_reset_is_a_tcp_reset_after_the_events_sent(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Reset(reply("hello"), after=3))
    lines: list[str] = []
    with (
        pytest.raises(httpx2.ReadError, match="reset"),
        httpx2.stream("POST", f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS) as response,
    ):
        lines.extend(response.iter_lines())
    assert event_names(lines) == ["message_start", "ping", "content_block_start"]


def test_a_malformed_event_is_valid_json_of_the_wrong_shape(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Malformed(reply("hello"), after=3))
    response = httpx2.post(f"{fake_api.base_url}/v1/messages", json=PAYLOAD, headers=HEADERS)
    data = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert data[3] == {"type": "content_block_delta", "index": 0}  # no delta
    assert data[-1] == {"type": "message_stop"}  # the rest follows as usual
