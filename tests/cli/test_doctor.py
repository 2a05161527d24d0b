"""`piton doctor` through the installed command: the API asked about the model over real HTTP (the
fake API), where the key comes from, skills skipped, and MCP servers started once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

PITON = str(Path(sys.executable).with_name("piton"))
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")


def doctor(project: Path) -> subprocess.CompletedProcess[str]:
    return piton_here("doctor", cwd=project)


def line(done: subprocess.CompletedProcess[str], start: str) -> str:
    [found] = [text for text in done.stdout.splitlines() if text[2:].startswith(start)]
    return found


def test_the_api_answers_for_the_model_with_the_key_from_the_environment(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    done = doctor(project)
    assert line(done, "Piton ").startswith("✓") and f"Python {sys.version.split()[0]}" in done.stdout
    assert line(done, "credentials") == "✓ credentials: ANTHROPIC_API_KEY from the environment"
    api = line(done, "API")
    assert api.startswith(f"✓ API: {fake_api.base_url} answers; model claude-sonnet-5-5"), api
    [asked] = [r for r in fake_api.requests if r.path.startswith("/v1/models/")]
    key = asked.headers.get("x-api-key") or asked.headers["authorization"].removeprefix("Bearer ")
    assert asked.path == "/v1/models/claude-sonnet-5-5" and key == fake_api.api_key
    assert "MCP server" not in done.stdout  # none configured: no line


def test_a_refused_key_and_an_unknown_model_are_broken(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    done = doctor(project)
    assert done.returncode == 1
    assert "✗ API" in done.stdout and "401" in done.stdout and "check ANTHROPIC_API_KEY" in done.stdout

    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_api.api_key)
    monkeypatch.setenv("ANTHROPIC_MODEL", "gpt-nine")
    done = doctor(project)
    assert done.returncode == 1
    api = line(done, "API")
    assert api.startswith("✗") and "model gpt-nine" in api and "404" in api and "ANTHROPIC_BASE_URL" in api


def test_an_endpoint_that_refuses_connections_is_named(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    done = doctor(project)
    assert done.returncode == 1
    assert "✗ API" in done.stdout and "cannot reach http://127.0.0.1:9" in done.stdout


def test_a_key_from_the_settings_env_is_said_and_used(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"env": {"ANTHROPIC_API_KEY": fake_api.api_key}}))
    done = doctor(project)
    assert line(done, "credentials") == "✓ credentials: ANTHROPIC_API_KEY from the settings' env"
    assert line(done, "API").startswith("✓")


def test_without_credentials_the_api_is_not_asked(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    done = doctor(project)
    assert done.returncode == 1 and line(done, "credentials").startswith("✗ credentials: none")
    assert "not checked (no credentials)" in line(done, "API")


def test_skipped_skill_files_and_mcp_servers_are_reported(fake_api: FakeAnthropicAPI, project: Path) -> None:
    skills = project / ".claude" / "skills"
    (skills / "good").mkdir(parents=True)
    (skills / "good" / "SKILL.md").write_text("---\ndescription: fine\n---\nbody\n")
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    servers = {
        "good": {"command": sys.executable, "args": [SERVER]},
        "missing": {"command": str(project / "no-such-server")},
    }
    (Path.home() / ".piton").mkdir()
    (Path.home() / ".piton" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    done = doctor(project)
    assert "(1 from the project, 3 bundled)" in line(done, "skills and commands")
    assert "! 1 skill, command or agent file(s) skipped" in done.stdout
    assert line(done, "MCP server good").startswith("✓") and "Connected" in done.stdout
    missing = line(done, "MCP server missing")
    assert missing.startswith("!") and "Failed" in missing
