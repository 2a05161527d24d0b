"""MCP servers in a real `piton -p` process: a stdio server from `--mcp-config` whose tool the model
calls (the result reaches the next request), a server that fails beside it, and a project server
that nobody approved, which never starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S, piton_here

PITON = str(Path(sys.executable).with_name("piton"))
HOUR_MS = 3_600_000
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")


def piton(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PITON, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
        env={**os.environ, **env},
    )


def piton_in(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The same run in this process: the process is not what most of these tests are about."""
    return piton_here(*args, env=env)


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
    # a run held up by the failed server until the start limit would outlast the test's ceiling
    done = piton("-p", "q", "--mcp-config", config(fixture=fixture(), broken=bad), MCP_TIMEOUT=str(HOUR_MS))
    assert (done.returncode, done.stdout) == (0, "Done.\n"), done.stderr
    first, second = fake_api.bodies
    names = [t["name"] for t in first["tools"]]
    assert "mcp__fixture__echo" in names and not any(n.startswith("mcp__broken") for n in names)
    [result] = tool_results(second)
    assert result["content"] in ("echo: ping", [{"type": "text", "text": "echo: ping"}])
    assert not result.get("is_error")
    [failure] = [line for line in done.stderr.splitlines() if "broken" in line]
    assert "MCP server broken failed" in failure and "not found" in failure


def test_an_unapproved_project_server_never_starts(fake_api: FakeAnthropicAPI, project: Path) -> None:
    marker = project / "started"  # a server, sandboxed, can write only the project
    (project / ".mcp.json").write_text(config(planted=fixture(MCP_FIXTURE_MARKER=str(marker))))
    fake_api.add(reply("ok"))
    done = piton_in("-p", "q")
    assert done.returncode == 0, done.stderr
    assert "MCP server planted of .mcp.json not started" in done.stderr
    assert not any(t["name"].startswith("mcp__") for t in fake_api.bodies[0]["tools"])
    time.sleep(0.5)
    assert not marker.exists()


def test_a_project_server_starts_in_a_trusted_folder(fake_api: FakeAnthropicAPI, project: Path) -> None:
    marker = project / "started"  # a server, sandboxed, can write only the project
    (project / ".mcp.json").write_text(config(planted=fixture(MCP_FIXTURE_MARKER=str(marker))))
    fake_api.add(reply("ok"))
    done = piton_in("-p", "q", "--trust-workspace")
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    assert "mcp__planted__echo" in [t["name"] for t in fake_api.bodies[0]["tools"]]


@pytest.mark.parametrize(
    "setting", [{"enableAllProjectMcpServers": True}, {"enabledMcpjsonServers": ["planted"]}]
)
def test_a_server_the_users_settings_approve_starts_and_no_notice_says_it_was_ignored(
    fake_api: FakeAnthropicAPI, project: Path, setting: dict[str, Any]
) -> None:
    (project / ".mcp.json").write_text(config(planted=fixture()))
    (Path.home() / ".claude").mkdir(exist_ok=True)
    (Path.home() / ".claude" / "settings.json").write_text(json.dumps(setting))
    fake_api.add(reply("ok"), reply("ok"))
    done = piton_in("-p", "q")
    assert done.returncode == 0, done.stderr
    assert "mcp__planted__echo" in [t["name"] for t in fake_api.bodies[0]["tools"]]
    assert "not trusted" not in done.stderr and "ignored" not in done.stderr, done.stderr
    strict = piton_in("-p", "q", "--strict-mcp-config", "--mcp-config", config())
    assert strict.returncode == 0 and "ignored" not in strict.stderr, strict.stderr


def test_strict_mcp_config_leaves_the_users_servers_out(fake_api: FakeAnthropicAPI, project: Path) -> None:
    home = Path.home()
    (home / ".piton").mkdir(exist_ok=True)
    (home / ".piton" / "mcp.json").write_text(config(mine=fixture()))
    fake_api.add(reply("ok"), reply("ok"))
    assert piton_in("-p", "q").returncode == 0
    assert piton_in("-p", "q", "--strict-mcp-config", "--mcp-config", config()).returncode == 0
    first, second = ([t["name"] for t in b["tools"]] for b in fake_api.bodies)
    assert "mcp__mine__echo" in first and not any(n.startswith("mcp__") for n in second)


def test_servers_in_the_projects_settings_files_start_only_once_approved(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    marker = project / "started"  # a server, sandboxed, can write only the project
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text(
        config(planted=fixture(MCP_FIXTURE_MARKER=str(marker)))
    )
    fake_api.add(reply("ok"), reply("ok"))
    refused = piton_in("-p", "q")
    assert refused.returncode == 0, refused.stderr
    assert "MCP server planted of .claude/settings.local.json not started" in refused.stderr
    time.sleep(0.3)
    assert not marker.exists()
    trusted = piton_in("-p", "q", "--trust-workspace")
    assert trusted.returncode == 0, trusted.stderr
    assert marker.exists()
    first, second = ([t["name"] for t in b["tools"]] for b in fake_api.bodies)
    assert "mcp__planted__echo" not in first and "mcp__planted__echo" in second


def user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    first = body["messages"][0]
    assert first["role"] == "user"
    return (
        [{"type": "text", "text": first["content"]}]
        if isinstance(first["content"], str)
        else first["content"]
    )


def test_a_servers_prompt_is_a_slash_command_and_init_lists_it(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Reviewed."))
    done = piton_in(
        "-p",
        "/mcp__fixture__review app.py speed and clarity",
        "--mcp-config",
        config(fixture=fixture()),
        "--output-format",
        "stream-json",
        "--verbose",
    )
    assert done.returncode == 0, done.stderr
    content = user_content(fake_api.bodies[0])
    texts = [b["text"] for b in content if b["type"] == "text"]
    assert texts[:2] == ["Review app.py, focusing on: speed and clarity.", "I will look at it."]
    assert [b["source"]["media_type"] for b in content if b["type"] == "image"] == ["image/png"]
    init = json.loads(done.stdout.splitlines()[0])
    assert init["subtype"] == "init" and "mcp__fixture__review" in init["slash_commands"]
    assert init["mcp_servers"] == [{"name": "fixture", "status": "connected"}]
    assert "mcp__fixture__echo" in init["tools"]


def test_an_unknown_mcp_prompt_is_one_line_and_no_request(fake_api: FakeAnthropicAPI, project: Path) -> None:
    done = piton_in("-p", "/mcp__fixture__nope x", "--mcp-config", config(fixture=fixture()))
    assert done.returncode == 1 and fake_api.bodies == []
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("Unknown MCP prompt /mcp__fixture__nope (/mcp lists the servers and their prompts)")
    )
    missing = piton_in("-p", "/mcp__fixture__review", "--mcp-config", config(fixture=fixture()))
    assert missing.returncode == 1 and fake_api.bodies == []
    assert "needs file, focus" in missing.stderr


def test_a_resource_mention_attaches_it_and_failures_are_one_line(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Read."))
    prompt = "see @fixture:test://greeting, @fixture:test://pixel @fixture:test://broken and @ghost:a://b"
    done = piton_in("-p", prompt, "--mcp-config", config(fixture=fixture()))
    assert (done.returncode, done.stdout) == (0, "Read.\n"), done.stderr
    content = user_content(fake_api.bodies[0])
    assert content[0]["text"] == prompt
    assert content[1]["text"] == (
        '<resource server="fixture" uri="test://greeting">\nHello from the fixture resource.\n</resource>'
    )
    assert content[3]["type"] == "image" and len(content) == 4
    warnings = [line for line in done.stderr.splitlines() if "not attached" in line]
    assert len(warnings) == 2
    assert "@fixture:test://broken" in warnings[0] and "no MCP server named ghost" in warnings[1]
