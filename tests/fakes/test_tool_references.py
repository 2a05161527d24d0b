"""The fake API's deferred tools, as the tool search documentation describes them: what it refuses,
which calls the model could make, and what a loaded definition does to the cached prefix."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from piton.testing.script import ToolCall, reply
from tests.fakes.cache import PromptCache
from tests.fakes.fake_api import FakeAnthropicAPI

HEADERS = {"authorization": "Bearer test-key", "anthropic-version": "2026-10-21"}
READ = {"name": "Read", "description": "Reads a file. " * 400, "input_schema": {"type": "object"}}
FETCH = {
    "name": "WebFetch",
    "description": "Fetches a web page and answers a question about it.",
    "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}},
    "defer_loading": True,
}
SEARCH = {"name": "ToolSearch", "description": "Loads deferred tools.", "input_schema": {"type": "object"}}


def loading(*names: str) -> list[dict[str, Any]]:
    """A conversation in which ToolSearch loaded `names`."""
    return [
        {"role": "user", "content": "read the docs page"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_s", "name": "ToolSearch", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_s",
                    "content": [{"type": "tool_reference", "tool_name": n} for n in names],
                }
            ],
        },
    ]


def post(
    fake: FakeAnthropicAPI, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> httpx2.Response:
    body = {"model": "claude-sonnet-5-5", "max_tokens": 100, "messages": messages, "tools": tools}
    return httpx2.post(f"{fake.base_url}/v1/messages", json=body, headers=HEADERS)


def test_the_model_calls_a_deferred_tool_only_once_a_reference_loaded_it(fake_api: FakeAnthropicAPI) -> None:
    call = {"url": "https://docs.python.org"}
    fake_api.add(reply(ToolCall("WebFetch", call)), reply(ToolCall("WebFetch", call)))
    refused = post(fake_api, [{"role": "user", "content": "read it"}], [READ, SEARCH, FETCH])
    assert refused.status_code == 400 and "cannot call WebFetch" in refused.json()["error"]["message"]
    done = post(fake_api, loading("WebFetch"), [READ, SEARCH, FETCH])
    assert done.status_code == 200, done.text
    assert done.json()["content"][0]["name"] == "WebFetch"


@pytest.mark.parametrize(
    ("tools", "names", "message"),
    [
        ([{**READ, "defer_loading": True}, FETCH], ("WebFetch",), "All tools cannot be deferred"),
        (
            [READ, {**FETCH, "cache_control": {"type": "ephemeral"}}],
            ("WebFetch",),
            "cannot also carry cache_control",
        ),
        ([READ, SEARCH], ("WebFetch",), "Tool reference 'WebFetch' not found in available tools"),
    ],
)
def test_requests_the_api_refuses_are_refused(
    fake_api: FakeAnthropicAPI, tools: list[dict[str, Any]], names: tuple[str, ...], message: str
) -> None:
    response = post(fake_api, loading(*names), tools)
    assert response.status_code == 400 and message in response.json()["error"]["message"]
    assert fake_api.rejections == [response.json()["error"]["message"]]


def test_a_loaded_definition_leaves_the_cached_prefix_as_it_was() -> None:
    cache = PromptCache()
    marked = {**SEARCH, "cache_control": {"type": "ephemeral"}}
    written = cache.apply({"model": "m", "tools": [READ, marked], "messages": loading()[:1]})
    then: dict[str, Any] = {"model": "m", "tools": [READ, FETCH, marked], "messages": loading("WebFetch")}
    then["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    usage = cache.apply(then)
    assert usage.cache_read_input_tokens == written.cache_creation_input_tokens > 1_024
    # the reference counts as the definition it loads, where it is
    bare = {**then, "tools": [READ, {**FETCH, "description": "x"}, marked]}
    assert PromptCache().apply(bare).prompt_tokens < PromptCache().apply(then).prompt_tokens


def test_adding_a_definition_up_front_instead_changes_the_prefix() -> None:
    cache = PromptCache()
    marked = {**SEARCH, "cache_control": {"type": "ephemeral"}}
    cache.apply({"model": "m", "tools": [READ, marked], "messages": loading()[:1]})
    eager = {k: v for k, v in FETCH.items() if k != "defer_loading"}
    usage = cache.apply({"model": "m", "tools": [READ, eager, marked], "messages": loading()[:1]})
    assert usage.cache_read_input_tokens == 0
