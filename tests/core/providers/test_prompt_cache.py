"""Prompt caching: the fake API's cache rules, and that Piton's breakpoints make a tool loop read
almost everything from the cache, even on turns that add more blocks than the API looks back over."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

from piton.core.context.compaction import CompactionSettings, Compactor
from piton.core.context.result_store import FileResultStore
from piton.core.conversation.events import Compacted, MessageDone
from piton.core.conversation.messages import Message, TextBlock
from piton.core.providers import ModelRequest
from piton.core.providers.anthropic import AnthropicProvider
from piton.core.providers.body import build_params
from piton.testing.script import ToolCall, reply
from tests.fakes.cache import LOOKBACK_BLOCKS, PromptCache, block_tokens
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.tools import Probe, make_agent
from tests.helpers import stream_all

EPHEMERAL = {"type": "ephemeral"}
PAGE = "x" * 5_000  # 1,250 tokens at the fake's four characters a token


def body(blocks: list[str], marks: set[int]) -> dict[str, Any]:
    content = [
        {"type": "text", "text": t, **({"cache_control": EPHEMERAL} if i in marks else {})}
        for i, t in enumerate(blocks)
    ]
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_a_repeated_prefix_is_read_and_the_new_part_written() -> None:
    cache = PromptCache()
    first = cache.apply(body([PAGE, "a"], {1}))
    assert (first.cache_read_input_tokens, first.input_tokens) == (0, 0)
    assert first.cache_creation_input_tokens == first.prompt_tokens
    second = cache.apply(body([PAGE, "a", "b" * 400], {2}))
    assert second.cache_read_input_tokens == first.prompt_tokens
    assert second.cache_creation_input_tokens == second.prompt_tokens - first.prompt_tokens


def test_short_prefixes_are_not_cached() -> None:
    cache = PromptCache()
    usage = cache.apply(body(["short"], {0}))
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    assert cache.apply(body(["short"], {0})).cache_read_input_tokens == 0


def test_the_lookback_reaches_twenty_blocks_and_no_further() -> None:
    near, far = PromptCache(), PromptCache()
    base = [PAGE, "a"]
    near.apply(body(base, {1}))
    far.apply(body(base, {1}))
    grown = base + [f"block {i}" for i in range(LOOKBACK_BLOCKS + 5)]
    assert near.apply(body(grown[: 2 + LOOKBACK_BLOCKS], {1 + LOOKBACK_BLOCKS})).cache_read_input_tokens > 0
    assert far.apply(body(grown, {len(grown) - 1})).cache_read_input_tokens == 0
    # a breakpoint where the earlier request ended finds it however far the newest one is
    assert far.apply(body(grown, {1, len(grown) - 1})).cache_read_input_tokens > 0


def test_the_breakpoint_marker_itself_is_not_part_of_the_prefix() -> None:
    cache = PromptCache()
    cache.apply(body([PAGE, "a"], {1}))
    assert cache.apply(body([PAGE, "a", "b"], {0, 2})).cache_read_input_tokens > 0


def test_the_previous_requests_end_gets_a_breakpoint_of_its_own() -> None:
    history = [
        Message.user("first"),
        Message(role="assistant", content=[TextBlock(text="one")]),
        Message.user("second"),
        Message(role="assistant", content=[TextBlock(text="two")]),
        Message.user("third"),
    ]
    request = ModelRequest(model="sonnet", system="s", messages=history, cached_upto=3)
    params = build_params(request)
    marked = [
        (i, b["text"]) for i, m in enumerate(params["messages"]) for b in m["content"] if "cache_control" in b
    ]
    assert marked == [(2, "second"), (4, "third")]
    # a point inside a merged message (two user messages in a row) is no prefix the API saw: no mark
    merged = [
        *history[:3],
        Message.user("an aside"),
        Message(role="assistant", content=[TextBlock(text="x")]),
        Message.user("y"),
    ]
    params = build_params(ModelRequest(model="sonnet", system="s", messages=merged, cached_upto=3))
    marked_texts = [b["text"] for m in params["messages"] for b in m["content"] if "cache_control" in b]
    assert marked_texts == ["y"]


def test_a_tool_loop_with_wide_turns_reads_each_earlier_request_from_the_cache() -> None:
    async def look(text: str) -> str:
        return f"{text}: " + "y" * (8_000 if text == "a" else 1_200)

    wide = [ToolCall("Look", {"text": f"f{i}"}) for i in range(12)]  # 24 blocks: past the lookback
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        fake.add(
            reply("Looking at one.", ToolCall("Look", {"text": "a"})),
            reply("Now all twelve.", *wide),
            reply("And one more.", ToolCall("Look", {"text": "b"})),
            reply("Done."),
        )
        provider = AnthropicProvider(base_url=fake.base_url, backoff_s=0.01)
        agent = make_agent(
            provider, Probe("Look", look, read_only=True), thinking=False, system_prompt="Be brief. " + PAGE
        )

        async def go() -> list[Any]:
            try:
                return [e async for e in agent.run("look around")]
            finally:
                await provider.aclose()

        events = asyncio.run(go())
        bodies = fake.bodies
    usages = [e.usage for e in events if isinstance(e, MessageDone)]
    prompts = [u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens for u in usages]
    for i in range(1, len(usages)):
        assert usages[i].cache_read_input_tokens == prompts[i - 1], f"request {i + 1} re-read request {i}"
        assert usages[i].input_tokens == 0
    # the same requests with only the newest-message breakpoint: the wide turn loses its cache hit
    replay = PromptCache()
    reads = []
    for sent in bodies:
        stripped = copy.deepcopy(sent)
        for message in stripped["messages"][:-1]:
            for block in message["content"]:
                block.pop("cache_control", None)
        reads.append(replay.apply(stripped).cache_read_input_tokens)
    assert reads[2] < prompts[1] // 2


def test_a_session_in_another_directory_reads_the_tool_definitions_from_the_cache() -> None:
    """The system prompt names the working directory; the tools are the same everywhere."""
    tools = [
        {"name": f"Tool{i}", "description": f"Tool {i}. " + "y" * 1_500, "input_schema": {"type": "object"}}
        for i in range(4)
    ]
    tool_tokens = sum(block_tokens(t) for t in tools)
    assert tool_tokens >= 1_024, "enough to be cached on its own"
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        fake.add(reply("one"), reply("two"))
        provider = AnthropicProvider(base_url=fake.base_url, backoff_s=0.01)
        usages = []
        for cwd in ("/home/me/project-a", "/home/me/project-b"):
            request = ModelRequest(
                model="sonnet",
                system=f"Working directory: {cwd}\n" + PAGE,
                messages=[Message.user("what is here?")],
                tools=tools,
            )
            usages += [e.usage for e in stream_all(provider, request) if isinstance(e, MessageDone)]
        marks = [
            sum("cache_control" in b for b in body.get("system", []))
            + sum("cache_control" in t for t in body["tools"])
            + sum("cache_control" in b for m in body["messages"] for b in m["content"])
            for body in fake.bodies
        ]
    assert usages[0].cache_read_input_tokens == 0
    assert usages[1].cache_read_input_tokens == tool_tokens, "the other directory's tools were read back"
    assert marks == [3, 3], "tools, system and the newest message (nothing sent before)"


def test_the_compaction_summary_request_writes_nothing_to_the_cache(tmp_path: Path) -> None:
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        fake.add(
            reply("Looking.", ToolCall("Look", {"text": "a"}), input_tokens=16_000),
            reply("## Summary\nLooked at a."),
            reply("Done."),
        )
        provider = AnthropicProvider(base_url=fake.base_url, backoff_s=0.01)
        agent = make_agent(provider, Probe("Look", read_only=True), context_window=20_000, thinking=False)
        agent.compactor = Compactor(CompactionSettings(), FileResultStore(tmp_path / "results"))

        async def go() -> list[Any]:
            try:
                return [e async for e in agent.run("look around " + PAGE)]
            finally:
                await provider.aclose()

        events = asyncio.run(go())
        bodies = fake.bodies
    assert any(isinstance(e, Compacted) and e.phase == "summary" for e in events)
    [summary] = [b for b in bodies if "tools" not in b]
    assert "cache_control" not in json.dumps(summary)
    assert all("cache_control" in json.dumps(b) for b in bodies if b is not summary)
