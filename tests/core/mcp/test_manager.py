"""The MCP manager against real servers: the fixture server over stdio and HTTP (the SDK's own
MCPServer), a command that does not exist, one that never answers, one killed mid-session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from piton.core.conversation.messages import ImageBlock, TextBlock, ToolUseBlock
from piton.core.mcp.config import ServerConfig
from piton.core.mcp.manager import McpManager
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.programs import Programs
from piton.core.tools import ToolContext, ToolRegistry, ToolResult
from tests.fixtures.mcp_http import serve
from tests.helpers import CEILING_S, eventually, wait_until

SERVER = str(Path(__file__).parents[2] / "fixtures" / "mcp_server.py")
CTX = ToolContext(cwd=Path("."), session_id="test")
HANG_S = 5.0  # how long a server may take to start here: a hanging one is given up on after it


def fixture(name: str = "fixture", tag: str = "") -> ServerConfig:
    """The fixture server; `tag` marks its processes (in their environment) for `tagged`."""
    env = {"PITON_TEST_TAG": tag} if tag else {}
    return ServerConfig(name, "stdio", command=sys.executable, args=(SERVER,), env=env)


def tagged(tag: str) -> list[int]:
    """The processes whose environment carries `tag`: the servers themselves, seen from outside
    their sandbox (inside it, a server's own pid is that of its pid namespace)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if f"PITON_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def hanging() -> ServerConfig:
    script = "import sys, time; print('stuck on purpose', file=sys.stderr, flush=True); time.sleep(3600)"
    return ServerConfig("hang", "stdio", command=sys.executable, args=("-c", script))


PROJECTS: dict[int, Path] = {}  # each manager's project: what its servers may write


@contextlib.contextmanager
def running(*servers: ServerConfig, **options: Any) -> Iterator[McpManager]:
    """The servers started as a session starts them: each in its sandbox, in a project of its own."""
    project = Path(tempfile.mkdtemp(prefix="mcp-project-"))
    programs = Programs(SandboxPolicy.create("workspace-write", project))
    manager = McpManager(servers, cwd=project, programs=programs, **options)
    PROJECTS[id(manager)] = project
    manager.start()
    try:
        yield manager
    finally:
        manager.close()


async def synced(manager: McpManager) -> ToolRegistry:
    registry = ToolRegistry()
    manager.attach(registry)
    await registry.refresh()
    return registry


async def call(registry: ToolRegistry, name: str, **args: Any) -> ToolResult:
    return await registry.call(ToolUseBlock(id="toolu_1", name=name, input=args), CTX)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def shared() -> Iterator[McpManager]:
    """One fixture server for the tests that leave it as they found it."""
    with running(fixture(), connect_timeout=CEILING_S) as manager:
        yield manager


def test_tools_arrive_with_their_schema_and_read_only_hint(shared: McpManager) -> None:
    registry = asyncio.run(synced(shared))
    tools = {t.name: t for t in registry}
    assert {"mcp__fixture__echo", "mcp__fixture__picture", "mcp__fixture__big"} <= set(tools)
    echo = tools["mcp__fixture__echo"]
    assert echo.read_only and not tools["mcp__fixture__broken"].read_only
    assert echo.kind == "other"
    spec = echo.spec()
    assert spec["input_schema"]["properties"]["text"]["type"] == "string"
    assert spec["input_schema"]["required"] == ["text"] and spec["description"] == "Say the text back."


def test_results_become_text_images_json_and_errors(shared: McpManager) -> None:
    async def go() -> list[ToolResult]:
        registry = await synced(shared)
        return [
            await call(registry, "mcp__fixture__echo", text="hi"),
            await call(registry, "mcp__fixture__picture"),
            await call(registry, "mcp__fixture__stats", n=21),
            await call(registry, "mcp__fixture__broken"),
            await call(registry, "mcp__fixture__echo", text=5),  # the server's schema says string
        ]

    echo, picture, stats, broken, invalid = asyncio.run(go())
    assert (echo.content, echo.is_error) == ("echo: hi", False)
    assert isinstance(picture.content, list) and isinstance(picture.content[0], ImageBlock)
    assert picture.content[0].source.media_type == "image/png"  # type: ignore[union-attr]
    assert stats.content == '{\n  "n": 21,\n  "double": 42\n}'
    assert (broken.content, broken.is_error) == ("the widget is jammed", True)
    assert invalid.is_error and "valid string" in str(invalid.content)


def test_a_tool_call_that_takes_too_long_is_an_error_and_the_server_goes_on() -> None:
    async def go() -> tuple[ToolResult, ToolResult]:
        registry = await synced(manager)
        slow = await call(registry, "mcp__fixture__slow", seconds=3600)  # only the limit ends it
        manager.call_timeout = CEILING_S  # a quick call on a loaded machine may take longer than 0.5 s
        return slow, await call(registry, "mcp__fixture__echo", text="still here")

    with running(fixture(), connect_timeout=CEILING_S, call_timeout=0.5) as manager:
        slow, after = asyncio.run(go())
    assert slow.is_error and "MCP_TOOL_TIMEOUT" in str(slow.content)
    assert after.content == "echo: still here"


def test_a_cancelled_call_leaves_the_server_usable(shared: McpManager) -> None:
    started = PROJECTS[id(shared)] / "started"  # the server writes it: in its project

    async def go() -> ToolResult:
        registry = await synced(shared)
        task = asyncio.ensure_future(call(registry, "mcp__fixture__slow", seconds=60, started=str(started)))
        await eventually(started.exists, "start of the call")  # the server is inside the call
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await call(registry, "mcp__fixture__echo", text="again")

    assert asyncio.run(go()).content == "echo: again"


def test_failing_and_hanging_servers_are_reported_once_and_the_rest_work(tmp_path: Path) -> None:
    missing = ServerConfig("missing", "stdio", command=str(tmp_path / "no-such-command"))
    told: list[str] = []

    async def go() -> ToolResult:
        registry = await synced(manager)
        return await call(registry, "mcp__web__echo", text="fine")

    def told_both() -> bool:
        asyncio.run(synced(manager))  # the lines are told at the next sync
        return len(told) >= 2

    # the working server is served from this process: it connects at once however busy the
    # machine, well within the limit that the hanging one runs into
    with (
        serve("http") as url,
        running(ServerConfig("web", "http", url=url), missing, hanging(), connect_timeout=HANG_S) as manager,
    ):
        manager.report_to(told.append)
        result = asyncio.run(go())
        wait_until(told_both, "report of both failures")
        states = {s.config.name: s for s in manager.states()}
    assert result.content == "echo: fine"
    assert states["missing"].status == "failed" and "not found" in str(states["missing"].error)
    assert states["hang"].status == "failed"
    assert f"did not start within {HANG_S:g} s" in str(states["hang"].error)
    assert "stuck on purpose" in str(states["hang"].error)  # the tail of its stderr
    assert '"sandbox": false' in str(states["hang"].error), (
        "a server that failed in the sandbox says the way out"
    )
    assert "sandbox" not in str(states["missing"].error), "one that never started has nothing to opt out of"
    assert sorted(line.split(" failed")[0] for line in told) == ["MCP server hang", "MCP server missing"]


def test_a_server_killed_mid_session_is_started_again_at_the_next_call() -> None:
    tag = uuid.uuid4().hex

    async def go() -> tuple[list[int], ToolResult, list[int]]:
        registry = await synced(manager)
        first = tagged(tag)
        assert first, "the server's process was not found"
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        await eventually(lambda: manager.states()[0].status == "failed", "server's end noticed")
        again = await call(registry, "mcp__fixture__echo", text="back")
        return first, again, tagged(tag)

    with running(fixture(tag=tag), connect_timeout=CEILING_S) as manager:
        first, again, second = asyncio.run(go())
        [state] = manager.states()
        status = state.status
    assert again.content == "echo: back" and not again.is_error
    assert second and not set(first) & set(second) and state.restarts == 1 and status == "connected"


def test_a_server_that_exits_during_a_call_gives_an_error_then_comes_back() -> None:
    async def go() -> tuple[ToolResult, ToolResult]:
        registry = await synced(manager)
        died = await call(registry, "mcp__fixture__exit")
        return died, await call(registry, "mcp__fixture__echo", text="revived")

    with running(fixture(), connect_timeout=CEILING_S) as manager:
        died, revived = asyncio.run(go())
    assert died.is_error and "closed the connection during the call of exit" in str(died.content)
    assert revived.content == "echo: revived"


def test_closing_leaves_no_server_process_behind() -> None:
    tag = uuid.uuid4().hex
    with running(fixture("one", tag), fixture("two", tag), connect_timeout=CEILING_S) as manager:
        asyncio.run(synced(manager))
        started = tagged(tag)
        assert len(started) >= 2 and all(alive(pid) for pid in started)
    assert not any(alive(pid) for pid in started) and tagged(tag) == []


def test_a_changed_tool_list_reaches_the_registry(shared: McpManager) -> None:
    async def go() -> bool:
        registry = await synced(shared)
        grown = await call(registry, "mcp__fixture__grow")
        if grown.is_error:  # an earlier test of this worker left the server to restart at this call
            grown = await call(registry, "mcp__fixture__grow")
        assert grown.content == "grown", grown.content

        async def offered() -> bool:  # once the server's notice has come and the list is fetched
            await registry.refresh()
            return "mcp__fixture__fresh" in registry.names()

        await eventually(offered, "new tool in the registry")
        return (await call(registry, "mcp__fixture__fresh")).content == "fresh!"

    assert asyncio.run(go())


def test_a_changed_prompt_list_is_followed_and_the_new_prompt_expands(shared: McpManager) -> None:
    from piton.core.mcp.prompts import expand

    async def go() -> list[str]:
        registry = await synced(shared)
        assert "mcp__fixture__review" in [p.command for p in shared.prompts()]
        await call(registry, "mcp__fixture__more_prompts")
        await eventually(lambda: "mcp__fixture__later" in [p.command for p in shared.prompts()], "new prompt")
        blocks = await expand(shared, "/mcp__fixture__later")
        return [b.text for b in blocks or [] if isinstance(b, TextBlock)]

    assert asyncio.run(go()) == ["later prompt text"]


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_remote_servers_over_http(transport: Literal["http", "sse"]) -> None:
    async def go() -> ToolResult:
        registry = await synced(manager)
        return await call(registry, "mcp__web__echo", text="over the wire")

    with (
        serve(transport) as url,
        running(ServerConfig("web", transport, url=url), connect_timeout=CEILING_S) as manager,
    ):
        result = asyncio.run(go())
    assert result.content == "echo: over the wire"


def test_an_unreachable_http_server_fails_with_a_reason() -> None:
    dead = ServerConfig("dead", "http", url="http://127.0.0.1:9/mcp")
    with running(dead, connect_timeout=5) as manager:
        asyncio.run(manager.wait_started())
        [state] = manager.states()
    assert state.status == "failed" and state.error
