"""MCP servers in a built session: their tools reach the agent's requests and its subagents, a
large result is stored and previewed like any tool's, and closing the session stops the servers."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

from piton.core.conversation.messages import TextBlock, ToolResultBlock
from piton.core.options import RunOptions
from piton.runtime import build_runtime
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.helpers import CEILING_S, collect

SERVER = str(Path(__file__).parents[2] / "fixtures" / "mcp_server.py")
CONFIG = json.dumps({"mcpServers": {"fixture": {"command": sys.executable, "args": [SERVER]}}})


def test_a_two_megabyte_result_is_stored_and_previewed(project: Path) -> None:
    provider = ScriptedProvider(reply(ToolCall("mcp__fixture__big", {})), reply("Seen."))
    runtime = build_runtime(
        RunOptions(cwd=project, mcp_config=[CONFIG], permission_mode="bypassPermissions"), provider
    )
    try:
        collect(runtime.agent.run("go"))
        assert runtime.mcp is not None
        [state] = runtime.mcp.states()
        running = state.status  # a copy: close() changes the state's status
        assert running == "connected"
    finally:
        runtime.close()
    assert state.status == "stopped"
    first, _ = provider.requests
    assert "mcp__fixture__big" in [t["name"] for t in first.tools]
    [result] = [b for m in runtime.agent.history for b in m.content if isinstance(b, ToolResultBlock)]
    if isinstance(result.content, str):
        text = result.content
    else:
        assert isinstance(result.content[0], TextBlock), result.content
        text = result.content[0].text
    assert len(text) < 30_000 and "left out of 2,220,000" in text  # 30,000 lines of 74
    saved = re.search(r"saved as tr_\w+ at (\S+\.txt):", text)
    assert saved is not None and Path(saved.group(1)).stat().st_size == 2_220_000


def test_subagents_get_the_servers_tools(project: Path) -> None:
    provider = ScriptedProvider(
        reply(ToolCall("Task", {"description": "d", "prompt": "p", "subagent_type": "general-purpose"})),
        reply(ToolCall("mcp__fixture__echo", {"text": "from below"})),
        reply("sub done"),
        reply("main done"),
    )
    runtime = build_runtime(RunOptions(cwd=project, mcp_config=[CONFIG]), provider)
    try:
        collect(runtime.agent.run("go"))
    finally:
        runtime.close()
    sub_second = provider.requests[2]
    assert "mcp__fixture__echo" in [t["name"] for t in provider.requests[1].tools]
    results = [b for m in sub_second.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert results[-1].content == "echo: from below"


def test_no_servers_no_sdk(project: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from piton.core.options import RunOptions;"
        "from piton.runtime import build_runtime; from piton.testing.scripted import ScriptedProvider;"
        "r = build_runtime(RunOptions(cwd=Path.cwd()), ScriptedProvider()); "
        "print(r.mcp is None, 'mcp' in sys.modules)"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=CEILING_S
    )
    assert done.stdout.split() == ["True", "False"]
    assert asyncio is not None
