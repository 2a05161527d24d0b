"""Tool search in a real `piton -p` process against the fake API: the first request carries only the
tools most turns use, a deferred tool is found, loaded and called, the cached prefix survives its
loading, and whatever waits behind ToolSearch (MCP tools included) stays reachable and listed.

The rest of the suite turns tool search off (its scripts call every tool directly); these tests run
with `ENABLE_TOOL_SEARCH` unset, as a user's run would."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Thinking, ToolCall, reply
from tests.cli.test_mcp_e2e import config, fixture
from tests.fakes.cache import PromptCache
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

NOTEBOOK = {
    "cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": ["print(1)"], "outputs": []}],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
FIRST_REQUEST_BYTES = 14_000


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.delenv("ENABLE_TOOL_SEARCH")  # the default: on
        yield fake
        assert not fake.unexpected and not fake.rejections, fake.rejections


def names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["tools"]]


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]


def test_a_deferred_tool_is_found_loaded_and_called(api: FakeAnthropicAPI, project: Path) -> None:
    notebook = project / "analysis.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    edit = {"notebook_path": str(notebook), "cell_id": "c1", "new_source": "print(2)"}
    api.add(
        reply(
            Thinking("Read it, and find a tool for notebooks."),
            ToolCall("Read", {"file_path": "analysis.ipynb"}),
            ToolCall("ToolSearch", {"query": "jupyter notebook cell"}),
        ),
        reply(Thinking("NotebookEdit is loaded."), ToolCall("NotebookEdit", edit)),
        reply(Thinking("Done."), "The cell prints 2 now."),
    )
    done = piton_here("-p", "make the cell print 2", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "The cell prints 2 now.\n"), done.stderr
    assert json.loads(notebook.read_text())["cells"][0]["source"] in ("print(2)", ["print(2)"])

    first, second, third = api.bodies
    assert int(api.requests[0].headers["content-length"]) <= FIRST_REQUEST_BYTES
    assert "ToolSearch" in names(first) and "NotebookEdit" not in names(first) and len(names(first)) <= 12
    assert results(second)[1]["content"] == [{"type": "tool_reference", "tool_name": "NotebookEdit"}]
    [loaded] = [t for t in second["tools"] if t["name"] == "NotebookEdit"]
    assert loaded["defer_loading"] is True and "cache_control" not in loaded
    assert [t for t in second["tools"] if not t.get("defer_loading")] == first["tools"]
    assert not results(third)[0].get("is_error")
    # loading the tool left the prefix alone: each request reads back all of the one before
    cache = PromptCache()
    usages = [cache.apply(body) for body in api.bodies]
    for before, after in itertools.pairwise(usages):
        assert after.cache_read_input_tokens == before.prompt_tokens


def test_a_deferred_tool_called_before_it_is_loaded_is_told_how_to_load_it(
    api: FakeAnthropicAPI, project: Path
) -> None:
    fetch = {"url": "https://example.com", "prompt": "What is it?"}
    api.add(
        reply(Thinking("Fetch it."), ToolCall("WebFetch", fetch)),
        reply(Thinking("Load it first."), ToolCall("ToolSearch", {"query": "select:WebFetch"})),
        reply(Thinking("Loaded."), "WebFetch is ready."),
    )
    done = piton_here("-p", "what is example.com?")
    assert done.returncode == 0, done.stderr
    [refused] = results(api.bodies[1])
    assert refused["is_error"] and 'query "select:WebFetch"' in refused["content"]
    assert {"name": "WebFetch", "defer_loading": True}.items() <= {
        **next(t for t in api.bodies[2]["tools"] if t["name"] == "WebFetch")
    }.items()


def test_init_lists_every_tool_and_plan_mode_sends_exit_plan_mode_up_front(
    api: FakeAnthropicAPI, project: Path
) -> None:
    api.add(reply("A plan needs a task."))
    done = piton_here("-p", "hi", "--permission-mode", "plan", "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0, done.stderr
    init = json.loads(done.stdout.splitlines()[0])
    assert {"NotebookEdit", "WebFetch", "AskUserQuestion", "memory", "ExitPlanMode", "ToolSearch"} <= set(
        init["tools"]
    )
    [body] = api.bodies
    assert "ExitPlanMode" in names(body) and not any(t.get("defer_loading") for t in body["tools"])
    search = next(t for t in body["tools"] if t["name"] == "ToolSearch")
    assert "ExitPlanMode" not in search["description"] and "NotebookEdit" in search["description"]


@pytest.mark.parametrize("setting", [None, "false"])
def test_without_tool_search_every_tool_is_sent(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    """Unset, at an address other than Anthropic's own (a proxy may drop `tool_reference` blocks); or
    turned off."""
    if setting is not None:
        monkeypatch.setenv("ENABLE_TOOL_SEARCH", setting)
    fake_api.add(reply("hi"))
    assert piton_here("-p", "hi").returncode == 0
    [body] = fake_api.bodies
    assert "ToolSearch" not in names(body) and {"NotebookEdit", "WebFetch", "memory"} <= set(names(body))
    assert not any(t.get("defer_loading") for t in body["tools"])


def test_a_subagent_searches_its_own_tools(api: FakeAnthropicAPI, project: Path) -> None:
    task = {"description": "Look around", "prompt": "List the files.", "subagent_type": "general-purpose"}
    api.add(reply(ToolCall("Task", task)), reply("Nothing here."), reply("The folder is empty."))
    done = piton_here("-p", "what is here?")
    assert done.returncode == 0, done.stderr
    main, sub, _ = api.bodies
    assert "Task" in names(main) and "Task" not in names(sub)
    assert "ToolSearch" in names(sub) and "NotebookEdit" not in names(sub)


def test_mcp_tools_wait_behind_tool_search_unless_their_server_is_always_loaded(
    api: FakeAnthropicAPI, project: Path
) -> None:
    servers = config(fixture=fixture(), pinned={**fixture(), "alwaysLoad": True})
    api.add(
        reply(Thinking("Load echo."), ToolCall("ToolSearch", {"query": "+fixture echo"})),
        reply(Thinking("Call it."), ToolCall("mcp__fixture__echo", {"text": "ping"})),
        reply(Thinking("Done."), "It said ping."),
    )
    done = piton_here("-p", "ping it", "--mcp-config", servers)
    assert done.returncode == 0, done.stderr
    first, second, third = api.bodies
    assert "mcp__pinned__echo" in names(first) and "mcp__fixture__echo" not in names(first)
    search = next(t for t in first["tools"] if t["name"] == "ToolSearch")
    assert "mcp__fixture__* (10 tools)" in search["description"]
    assert {"type": "tool_reference", "tool_name": "mcp__fixture__echo"} in results(second)[0]["content"]
    assert "echo: ping" in json.dumps(results(third))


def test_auto_sends_a_few_mcp_tools_up_front(
    api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auto`: deferred only past 10% of the window, far beyond one small server and the built-ins."""
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "auto")
    api.add(reply("ok"))
    done = piton_here("-p", "hi", "--mcp-config", config(fixture=fixture()))
    assert done.returncode == 0, done.stderr
    [body] = api.bodies
    assert "mcp__fixture__echo" in names(body) and "ToolSearch" not in names(body)


def test_a_session_resumed_without_tool_search_sends_its_references_as_text(
    api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add(reply(ToolCall("ToolSearch", {"query": "select:WebFetch"})), reply("Loaded."), reply("Again."))
    assert piton_here("-p", "load WebFetch").returncode == 0
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "false")
    done = piton_here("-c", "-p", "and now?")
    assert (done.returncode, done.stdout) == (0, "Again.\n"), done.stderr
    resumed = api.bodies[-1]
    assert "WebFetch" in names(resumed) and not any(t.get("defer_loading") for t in resumed["tools"])
    [loaded] = [b for m in resumed["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert loaded["content"] == [{"type": "text", "text": "(The tool WebFetch was loaded here.)"}]
