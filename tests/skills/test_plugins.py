"""Plugins in Claude Code's layout: a real `piton -p` process loading the fixture plugin with
`--plugin-dir` (its command, agent, hook and MCP server reach the run), an untrusted project's
`enabledPlugins` that loads nothing, and Claude Code's own installed plugins read as they are."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from piton.core.project.settings import load_settings
from piton.skills.catalog import Catalog
from piton.skills.plugins import load_plugins, read_plugin
from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

PITON = str(Path(sys.executable).with_name("piton"))
FIXTURE = Path(__file__).parents[1] / "fixtures" / "plugins" / "fixture-plugin"


def piton(*args: str) -> subprocess.CompletedProcess[str]:
    return piton_here(*args)


def user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def test_a_plugin_dir_brings_its_command_agent_hook_and_mcp_server(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any
) -> None:
    marker = project / "hook-ran"  # a hook, sandboxed, can write only the project
    monkeypatch.setenv("PLUGIN_HOOK_MARKER", str(marker))
    monkeypatch.setenv("PLUGIN_PYTHON", sys.executable)
    fake_api.add(reply(ToolCall("Bash", {"command": "true"})), reply("Hello, Ada."))
    done = piton("-p", "/fixture-plugin:hello Ada", "--plugin-dir", str(FIXTURE), "--allowedTools", "Bash")
    assert done.returncode == 0, done.stderr
    first = fake_api.bodies[0]
    assert "Say hello to Ada" in user_text(first)
    tools = {t["name"]: t for t in first["tools"]}
    assert "fixture-plugin:reviewer" in tools["Task"]["description"]
    assert "mcp__plugin_fixture-plugin_tools__echo" in tools
    assert marker.read_text() == "ran\n"  # the PreToolUse hook, its ${CLAUDE_PLUGIN_ROOT} expanded


def test_an_untrusted_projects_enabled_plugin_loads_nothing(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any
) -> None:
    marker = project / "hook-ran"  # a hook, sandboxed, can write only the project
    monkeypatch.setenv("PLUGIN_HOOK_MARKER", str(marker))
    _claude_install(Path.home())
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"fixture-plugin@m": True}})
    )
    fake_api.add(reply(ToolCall("Bash", {"command": "true"})), reply("done"))
    done = piton("-p", "q", "--allowedTools", "Bash")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "fixture-plugin" not in json.dumps(fake_api.bodies[0]["tools"])
    assert "plugin fixture-plugin@m" in done.stderr  # named in the trust notice
    assert "setting not applied: enabledPlugins" not in done.stderr


def test_doctor_reports_a_projects_plugin_as_a_trusted_run_would_load_it(project: Path) -> None:
    _claude_install(Path.home())
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"fixture-plugin@m": True}})
    )
    untrusted = piton("doctor").stdout
    assert "plugin fixture-plugin@m: enabled by the project; loads once you trust the folder" in untrusted
    trusted = piton("doctor", "--trust-workspace").stdout
    assert "loads once you trust the folder" not in trusted and "plugin fixture-plugin" in trusted


def _claude_install(home: Path, plugin_id: str = "fixture-plugin@m") -> Path:
    """The plugin as Claude Code installs it: `plugins/cache/…` and `installed_plugins.json` (v2)."""
    root = home / ".claude" / "plugins"
    dest = root / "cache" / "m" / "fixture-plugin" / "1.2.0"
    shutil.copytree(FIXTURE, dest)
    entry = {"scope": "user", "installPath": str(dest), "version": "1.2.0"}
    (root / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {plugin_id: [entry]}}))
    return dest


def test_claude_codes_installed_and_enabled_plugins_load(project: Path) -> None:
    home = Path.home()
    dest = _claude_install(home)
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"fixture-plugin@m": True}})
    )
    catalog = Catalog()
    loaded = load_plugins(project, load_settings(project), None, catalog=catalog)
    assert [(p.name, p.root, p.origin) for p in loaded.plugins] == [("fixture-plugin", dest, "user")]
    assert {"fixture-plugin:hello", "fixture-plugin:tidy"} <= set(catalog.skills)
    assert catalog.get("hello") is catalog.skills["fixture-plugin:hello"]  # the short name, unambiguous
    assert [a.name for a in loaded.agents] == ["fixture-plugin:reviewer"]
    [hook] = loaded.hooks
    assert hook.command == f"sh {dest}/scripts/x.sh" and hook.trusted
    [server] = loaded.servers
    assert server.name == "plugin:fixture-plugin:tools" and server.args == (f"{dest}/../../mcp_server.py",)


def test_a_disabled_or_uninstalled_plugin_does_not_load(project: Path) -> None:
    home = Path.home()
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"gone@m": True}}))
    loaded = load_plugins(project, load_settings(project), None)
    assert not loaded.plugins and "gone@m is enabled" in loaded.warnings[0]
    _claude_install(home)
    (home / ".piton").mkdir()
    (home / ".piton" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"fixture-plugin@m": False}})
    )
    assert not load_plugins(project, load_settings(project), None).plugins


def test_a_manifest_names_its_own_folders_and_inline_servers(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".claude-plugin").mkdir(parents=True)
    (root / "extra").mkdir()
    (root / "extra" / "go.md").write_text("---\ndescription: Go\n---\nGo now.\n")
    manifest = {
        "name": "p",
        "commands": ["./extra/go.md"],
        "mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/s"}},
    }
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    catalog = Catalog()
    loaded = load_plugins(tmp_path, load_settings(tmp_path), None, [root], catalog)
    assert "p:go" in catalog.skills and loaded.servers[0].command == f"{root}/s"
    assert read_plugin(FIXTURE).version == "1.2.0"
