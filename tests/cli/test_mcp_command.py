"""`piton mcp …` (add, add-json, list, get, remove), by the function the command calls (in this
process; the installed command routes to it, once through a real process), and `/mcp` in the REPL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, drive
from tests.helpers import CEILING_S, piton_here

PITON = str(Path(sys.executable).with_name("piton"))
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")


def mcp(*args: str) -> subprocess.CompletedProcess[str]:
    return piton_here("mcp", *args)


def mcp_command(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed `piton mcp`, in a process of its own."""
    return subprocess.run(
        [PITON, "mcp", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )


def piton_file() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path.home() / ".piton" / "mcp.json").read_text())
    return data


def test_add_in_each_scope_with_claude_codes_syntax(project: Path) -> None:
    assert mcp_command("add", "fx", "-e", "TOKEN=abc", "--", sys.executable, SERVER, "--flag").returncode == 0
    assert mcp("add", "-s", "user", "np", "npx", "-y", "@x/server").returncode == 0
    done = mcp(
        "add",
        "--transport",
        "http",
        "-s",
        "project",
        "web",
        "https://x.example/mcp",
        "-H",
        "Authorization: Bearer t",
    )
    assert done.returncode == 0, done.stderr
    data = piton_file()
    assert data["projects"][str(project)]["mcpServers"]["fx"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": [SERVER, "--flag"],
        "env": {"TOKEN": "abc"},
    }
    assert data["mcpServers"]["np"]["args"] == ["-y", "@x/server"]
    assert (Path.home() / ".piton" / "mcp.json").stat().st_mode & 0o077 == 0
    shared = json.loads((project / ".mcp.json").read_text())
    assert shared["mcpServers"]["web"] == {
        "type": "http",
        "url": "https://x.example/mcp",
        "headers": {"Authorization": "Bearer t"},
    }
    assert not (Path.home() / ".claude.json").exists()


def test_add_refuses_a_duplicate_and_a_bad_entry(project: Path) -> None:
    assert mcp("add", "fx", "--", "srv").returncode == 0
    again = mcp("add", "fx", "--", "other")
    assert again.returncode == 1 and "already exists in local scope" in again.stderr
    bad = mcp("add-json", "j", '{"type": "http"}')
    assert bad.returncode == 1 and '"url" is missing' in bad.stderr
    assert mcp("add", "bad name", "--", "x").returncode == 1


def test_list_get_and_remove(project: Path) -> None:
    entry = json.dumps({"command": sys.executable, "args": [SERVER]})
    assert mcp("add-json", "good", entry).returncode == 0
    assert mcp("add", "missing", "--", str(project / "nope")).returncode == 0
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": {"command": "x"}}}))
    listed = mcp("list")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split(":")[0]: line for line in listed.stdout.splitlines() if ": " in line}
    assert "✓ Connected" in lines["good"]
    assert "✗ Failed" in lines["missing"] and "not found" in lines["missing"]
    assert "Needs approval" in lines["planted"]
    got = mcp("get", "good")
    assert "Status: ✓ Connected" in got.stdout and f"Command: {sys.executable}" in got.stdout
    assert "Tools: 10" in got.stdout
    removed = mcp("remove", "good")
    assert removed.returncode == 0 and "Removed MCP server good from local scope" in removed.stdout
    assert "good" not in piton_file()["projects"][str(project)]["mcpServers"]
    assert mcp("remove", "good").returncode == 1


def test_the_mcp_command_in_the_repl_shows_servers_tools_and_errors(project: Path) -> None:
    config = {
        "mcpServers": {
            "fixture": {"command": sys.executable, "args": [SERVER]},
            "gone": {"command": str(project / "nope")},
        }
    }
    provider = ScriptedProvider(reply(ToolCall("mcp__fixture__echo", {"text": "x"})), reply("done"))

    async def script(s: Session) -> None:
        await s.type("hello" + ENTER)
        await s.idle()
        await s.type("/mcp" + ENTER)
        await s.until(lambda: "tools: echo (read-only)" in s.screen)

    session = asyncio.run(drive(project, provider, script, mcp_config=[json.dumps(config)]))
    screen = session.screen
    assert "fixture (flag, stdio): ✓ Connected" in screen
    assert "gone (flag, stdio): ✗ Failed" in screen and "command not found" in screen
    assert "piton: MCP server gone failed: command not found" in screen  # told once, as it happened
    assert screen.count("MCP server gone failed") == 1
    assert session.history[-2].content[0].content == "echo: x"
