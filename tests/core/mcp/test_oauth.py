"""OAuth against a real protected server on 127.0.0.1 (the SDK's authorization-server routes): the
first start asks the user to open a URL, the test plays the browser, the server connects and its
tools work; the tokens are kept 0600 under the state directory and the next start reuses them."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import httpx2

from piton.core.mcp.config import ServerConfig
from piton.core.mcp.manager import McpManager
from piton.core.mcp.oauth import token_file
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.programs import Programs
from tests.fixtures.mcp_oauth import serve_with_oauth


async def connected(manager: McpManager, browser: bool) -> list[str]:
    """The server's tools once it connects; with `browser`, the URL it asks for is opened as a
    browser would (following the redirects back to Piton's listener)."""
    for _ in range(200):
        state = manager.states()[0]
        if state.status == "connected":
            return [t.name for t in manager.tools()]
        if state.status == "needs-auth" and browser:
            browser = False
            link = (state.error or "").rsplit(" ", 1)[-1]
            async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as client:
                page = await client.get(link)
            assert page.status_code == 200 and b"Piton is authorized" in page.content
        await asyncio.sleep(0.05)
    raise AssertionError(f"{state.status}: {state.error}")


def test_oauth_authorizes_once_and_reuses_the_tokens(project: Path) -> None:
    with serve_with_oauth() as (url, provider):
        config = ServerConfig("secure", "http", url=url)
        for browser in (True, False):
            programs = Programs(SandboxPolicy.create("workspace-write", project))  # http: never used
            manager = McpManager([config], cwd=project, connect_timeout=15, programs=programs)
            manager.start()
            try:
                assert "mcp__secure__echo" in asyncio.run(connected(manager, browser))
                told = manager.notices()
            finally:
                manager.close()
            if browser:
                [asked] = told
                assert asked.startswith("MCP server secure needs authentication: open this URL")
                saved = token_file(config)
                assert stat.S_IMODE(saved.stat().st_mode) == 0o600
                assert stat.S_IMODE(saved.parent.stat().st_mode) == 0o700
            else:
                assert told == []  # the saved token was enough
        assert provider.issued == 1
