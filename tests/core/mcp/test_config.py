"""MCP server configuration: shapes, `${VAR}` expansion, sources and precedence, strict mode, and
which project servers may start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from piton.core.mcp.config import McpConfigError, ServerConfig, expand, load, project_servers, select
from piton.core.mcp.tool import tool_name


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


def stdio(command: str, *args: str, **env: str) -> dict[str, Any]:
    return {"command": command, "args": list(args), "env": env}


def everyone(server: ServerConfig) -> bool:
    return True


def nobody(server: ServerConfig) -> bool:
    return False


def test_expansion_with_defaults_and_missing_variables() -> None:
    missing: set[str] = set()
    env = {"TOKEN": "s3cret", "EMPTY": ""}
    assert expand("Bearer ${TOKEN}", env, missing) == "Bearer s3cret"
    assert expand("${PORT:-8080}/${EMPTY:-fallback}", env, missing) == "8080/fallback"
    assert expand("${NOPE}/x", env, missing) == "${NOPE}/x"
    assert missing == {"NOPE"}


def test_the_three_shapes_are_read_and_expanded(tmp_path: Path) -> None:
    flag = servers(
        local=stdio("${TOOLS}/srv", "--root", "${HOME_DIR:-/home}", KEY="${TOKEN}"),
        web={"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        old={"type": "sse", "url": "http://127.0.0.1:1/sse"},
    )
    env = {"TOOLS": "/opt/tools", "TOKEN": "t0k", "HOST": "example.org"}
    found = load(tmp_path, flags=[json.dumps(flag)], home=tmp_path, env=env)
    local, web, old = found.servers
    assert (local.transport, local.command, local.args, local.env) == (
        "stdio",
        "/opt/tools/srv",
        ("--root", "/home"),
        {"KEY": "t0k"},
    )
    assert (web.transport, web.url, web.headers) == (
        "http",
        "https://example.org/mcp",
        {"Authorization": "Bearer t0k"},
    )
    assert (old.transport, old.url, old.scope) == ("sse", "http://127.0.0.1:1/sse", "flag")
    assert found.warnings == []


def test_an_unset_variable_keeps_the_server_and_warns_naming_it(tmp_path: Path) -> None:
    found = load(
        tmp_path, flags=[json.dumps(servers(a=stdio("srv", "${MISSING_ONE}")))], home=tmp_path, env={}
    )
    [server] = found.servers
    assert server.args == ("${MISSING_ONE}",)
    [warning] = found.warnings
    assert "'a'" in warning and "${MISSING_ONE}" in warning


def test_malformed_entries_are_skipped_with_one_warning_each(tmp_path: Path) -> None:
    write(
        tmp_path / ".piton" / "mcp.json",
        servers(
            good=stdio("ok"),
            nocmd={"args": ["x"]},
            badtype={"type": "ws", "url": "ws://x"},
            badargs={"command": "x", "args": "not a list"},
            notobject=3,
            badurl={"type": "http", "url": "ftp://x"},
        ),
    )
    found = load(tmp_path, home=tmp_path, env={})
    assert [s.name for s in found.servers] == ["good"]
    assert len(found.warnings) == 5
    assert all(str(tmp_path / ".piton" / "mcp.json") in w for w in found.warnings)
    assert any("'badtype'" in w and "unknown" in w for w in found.warnings)


def test_a_broken_file_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("{not json")
    found = load(tmp_path, home=tmp_path, env={})
    assert found.servers == [] and "not valid JSON" in found.warnings[0]


def test_sources_and_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    write(
        home / ".claude.json",
        {
            "mcpServers": {"a": stdio("claude-user"), "b": stdio("claude-user")},
            "projects": {str(cwd): servers(c=stdio("claude-local"), d=stdio("claude-local"))},
        },
    )
    write(home / ".piton" / "mcp.json", servers(b=stdio("piton-user"), e=stdio("piton-user")))
    write(cwd / ".mcp.json", servers(c=stdio("project"), e=stdio("project"), f=stdio("project")))
    flag = json.dumps(servers(d=stdio("flag")))
    found = load(
        cwd,
        settings_servers={"a": stdio("settings"), "g": stdio("settings")},
        flags=[flag],
        home=home,
        env={},
    )
    chosen = {s.name: (s.command, s.scope) for s in select(found, approved=everyone).active}
    assert chosen == {
        "a": ("claude-user", "user"),
        "b": ("piton-user", "user"),
        "c": ("claude-local", "local"),  # local outranks project, as in Claude Code
        "d": ("flag", "flag"),
        "e": ("project", "project"),
        "f": ("project", "project"),
        "g": ("settings", "settings"),
    }


def test_claude_config_dir_holds_claude_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "cfg" / ".claude.json", servers(x=stdio("from-config-dir")))
    write(tmp_path / ".claude.json", servers(y=stdio("from-home")))
    found = load(tmp_path, home=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")})
    assert [s.name for s in found.servers] == ["x"]


def test_strict_uses_only_the_flags(tmp_path: Path) -> None:
    write(tmp_path / ".piton" / "mcp.json", servers(user=stdio("u")))
    write(tmp_path / ".mcp.json", servers(proj=stdio("p")))
    file = write(tmp_path / "extra.json", servers(filed=stdio("f")))
    found = load(
        tmp_path,
        settings_servers={"s": stdio("s")},
        flags=[str(file), json.dumps(servers(inline=stdio("i")))],
        strict=True,
        home=tmp_path,
        env={},
    )
    assert [s.name for s in found.servers] == ["filed", "inline"]


@pytest.mark.parametrize("value", ["missing.json", "{broken", '{"servers": {}}'])
def test_a_bad_mcp_config_value_stops_the_run(tmp_path: Path, value: str) -> None:
    with pytest.raises(McpConfigError, match="--mcp-config"):
        load(tmp_path, flags=[value], home=tmp_path, env={})


def test_project_servers_wait_for_approval_and_disabled_wins(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", servers(a=stdio("a"), b=stdio("b"), c=stdio("c")))
    found = load(tmp_path, home=tmp_path, env={})
    unapproved = select(found, approved=nobody)
    assert (unapproved.active, [s.name for s in unapproved.pending]) == ([], ["a", "b", "c"])
    some = select(found, approved=lambda s: s.name == "a", enabled=["b"], disabled=["a"])
    assert [s.name for s in some.active] == ["b"]
    assert [s.name for s in some.disabled] == ["a"] and [s.name for s in some.pending] == ["c"]
    every = select(found, approved=nobody, enable_all=True, disabled=["c"])
    assert [s.name for s in every.active] == ["a", "b"]


def test_an_unapproved_project_server_does_not_shadow_the_users_own(tmp_path: Path) -> None:
    write(tmp_path / ".piton" / "mcp.json", servers(github=stdio("my-github")))
    write(tmp_path / ".mcp.json", servers(github=stdio("their-github")))
    chosen = select(load(tmp_path, home=tmp_path, env={}), approved=nobody)
    assert [(s.command, s.scope) for s in chosen.active] == [("my-github", "user")]
    assert chosen.pending == []


def test_a_project_servers_grant_names_what_it_runs_and_changes_with_it(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", servers(gh=stdio("npx", "-y", "@x/server", NODE_OPTIONS="${OPTS}")))
    [server] = project_servers(tmp_path, env={"OPTS": "--require evil.js"})
    assert server.grant_where == ".mcp.json"
    assert server.grant_what == "mcp server gh: npx -y @x/server (env NODE_OPTIONS=${OPTS})"
    write(tmp_path / ".mcp.json", servers(gh=stdio("npx", "-y", "@x/other")))
    [changed] = project_servers(tmp_path, env={})
    assert changed.grant_what != server.grant_what
    write(tmp_path / ".mcp.json", servers(web={"type": "http", "url": "https://x.example/mcp"}))
    assert project_servers(tmp_path, env={})[0].grant_what == "mcp server web: http https://x.example/mcp"


def test_tool_names_follow_claude_code_and_fit_the_api() -> None:
    assert tool_name("my server", "get.issue") == "mcp__my_server__get_issue"
    long = tool_name("github", "x" * 80)
    assert len(long) == 64 and long.startswith("mcp__github__")
    assert long != tool_name("github", "x" * 79 + "y")
