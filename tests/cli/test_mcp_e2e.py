"""MCP servers in a real `piton -p` process: a stdio server from `--mcp-config` whose tool the model
calls (the result reaches the next request), a server that fails beside it, and a project server
that nobody approved, which never starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI

PITON = str(Path(sys.executable).with_name("piton"))
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")


def piton(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PITON, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False
    )


def config(**servers: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": servers})


def fixture(*args: str, **env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [SERVER, *args], "env": env}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"
    ]


def test_the_model_calls_a_server_tool_and_the_result_reaches_the_next_request(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Asking.", ToolCall("mcp__fixture__echo", {"text": "ping"})), reply("Done."))
    bad = {"command": str(project / "no-such-server")}
    started = time.monotonic()
    done = piton("-p", "q", "--mcp-config", config(fixture=fixture(), broken=bad))
    assert (done.returncode, done.stdout) == (0, "Done.\n"), done.stderr
    first, second = fake_api.bodies
    names = [t["name"] for t in first["tools"]]
    assert "mcp__fixture__echo" in names and not any(n.startswith("mcp__broken") for n in names)
    [result] = tool_results(second)
    assert result["content"] in ("echo: ping", [{"type": "text", "text": "echo: ping"}])
    assert not result.get("is_error")
    [failure] = [line for line in done.stderr.splitlines() if "broken" in line]
    assert "MCP server broken failed" in failure and "not found" in failure
    assert time.monotonic() - started < 20


def test_an_unapproved_project_server_never_starts(fake_api: FakeAnthropicAPI, project: Path) -> None:
    marker = project.parent / "started"
    (project / ".mcp.json").write_text(config(planted=fixture(MCP_FIXTURE_MARKER=str(marker))))
    fake_api.add(reply("ok"))
    done = piton("-p", "q")
    assert done.returncode == 0, done.stderr
    assert "MCP server planted of .mcp.json not started" in done.stderr
    assert not any(t["name"].startswith("mcp__") for t in fake_api.bodies[0]["tools"])
    time.sleep(0.5)
    assert not marker.exists()


def test_a_project_server_starts_in_a_trusted_folder(fake_api: FakeAnthropicAPI, project: Path) -> None:
    marker = project.parent / "started"
    (project / ".mcp.json").write_text(config(planted=fixture(MCP_FIXTURE_MARKER=str(marker))))
    fake_api.add(reply("ok"))
    done = piton("-p", "q", "--trust-workspace")
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    assert "mcp__planted__echo" in [t["name"] for t in fake_api.bodies[0]["tools"]]


def test_strict_mcp_config_leaves_the_users_servers_out(fake_api: FakeAnthropicAPI, project: Path) -> None:
    home = Path.home()
    (home / ".piton").mkdir(exist_ok=True)
    (home / ".piton" / "mcp.json").write_text(config(mine=fixture()))
    fake_api.add(reply("ok"), reply("ok"))
    assert piton("-p", "q").returncode == 0
    assert piton("-p", "q", "--strict-mcp-config", "--mcp-config", config()).returncode == 0
    first, second = ([t["name"] for t in b["tools"]] for b in fake_api.bodies)
    assert "mcp__mine__echo" in first and not any(n.startswith("mcp__") for n in second)
