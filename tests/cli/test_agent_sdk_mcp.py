"""MCP through the real Claude Agent SDK driving the real `piton`: an in-process server of the client
(`create_sdk_mcp_server` + `@tool`) reached over the control protocol, its tool called by the model
and its result in the next request; `mcp_status` and the `system/init` line tell the servers."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    create_sdk_mcp_server,
    tool,
)

from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI

PITON = Path(sys.executable).parent / "piton"
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_an_in_process_tool_of_the_client_is_called_and_its_result_reaches_the_model(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers.", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}

    calc = create_sdk_mcp_server("calc", tools=[add])
    fixture = {"type": "stdio", "command": sys.executable, "args": [SERVER]}
    fake_api.add(reply("Adding.", ToolCall("mcp__calc__add", {"a": 2, "b": 40})), reply("It is 42."))
    options = ClaudeAgentOptions(
        cli_path=str(PITON),
        cwd=str(project),
        mcp_servers={"calc": calc, "fixture": fixture},  # type: ignore[dict-item]
        permission_mode="bypassPermissions",
    )

    async def talk() -> tuple[list[Any], dict[str, Any]]:
        async with ClaudeSDKClient(options) as client:
            await client.query("What is 2 + 40?")
            messages = [m async for m in client.receive_response()]
            status = await client.get_mcp_status()
        return messages, dict(status)

    messages, status = run(talk())
    assert calls == [{"a": 2, "b": 40}]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "It is 42.", messages
    first, second = fake_api.bodies
    assert {"mcp__calc__add", "mcp__fixture__echo"} <= {t["name"] for t in first["tools"]}
    results = [b for m in second["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert "sum is 42" in json.dumps(results)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"name": "calc", "status": "connected"} in init.data["mcp_servers"]
    assert {"name": "fixture", "status": "connected"} in init.data["mcp_servers"]
    assert "mcp__fixture__review" in init.data["slash_commands"]
    by_name = {s["name"]: s for s in status["mcpServers"]}
    assert by_name["calc"]["status"] == "connected" and by_name["calc"]["config"]["type"] == "sdk"
    assert [t["name"] for t in by_name["calc"]["tools"]] == ["add"]
    assert by_name["fixture"]["serverInfo"]["name"] == "fixture"
