"""Claude Code's settings files as a user has them, through the real `piton` command and real HTTP to
the fake API: deny rules, the model, `env` and hooks all take effect, and a key Piton does not apply
is named by `piton doctor`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

PITON = str(Path(sys.executable).with_name("piton"))


def piton(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return piton_here(*args, cwd=cwd)


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def tool_results(body: dict[str, Any]) -> list[str]:
    return [
        str(b["content"])
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


@pytest.mark.sandbox
def test_claude_code_deny_rules_hold_under_bypass_permissions(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(Path.home() / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(curl:*)"]}})
    write(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    (project / "keep.txt").write_text("precious")
    fake_api.add(
        reply(ToolCall("Bash", {"command": "rm keep.txt"})),
        reply(ToolCall("Bash", {"command": "curl -s http://127.0.0.1:9/"})),
        reply("could not"),
    )
    done = piton("-p", "clean up", "--permission-mode", "bypassPermissions")
    assert done.returncode == 0, done.stderr
    assert (project / "keep.txt").read_text() == "precious"
    assert "Bash(rm:*) denies it" in tool_results(fake_api.bodies[1])[-1]
    assert "Bash(curl:*) denies it" in tool_results(fake_api.bodies[2])[-1]


@pytest.mark.sandbox
def test_model_and_env_from_claude_code_settings_are_applied(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(
        Path.home() / ".claude" / "settings.json",
        {"model": "claude-opus-4-5", "env": {"DEPLOY_TARGET": "staging"}},
    )
    fake_api.add(reply(ToolCall("Bash", {"command": "printenv DEPLOY_TARGET"})), reply("done"))
    done = piton("-p", "where?", "--allowedTools", "Bash(printenv:*)")
    assert done.returncode == 0, done.stderr
    assert fake_api.bodies[0]["model"] == "claude-opus-4-5"
    assert "staging" in tool_results(fake_api.bodies[1])[-1]


def test_a_hook_in_claude_code_settings_runs_and_is_reported(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    hook = project / "context.sh"  # hooks run in the sandbox, where the rest of /tmp is private
    hook.write_text("#!/bin/sh\necho 'Release freeze until Friday'\n")
    hook.chmod(0o755)
    write(
        Path.home() / ".claude" / "settings.json",
        {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(hook)}]}]}},
    )
    fake_api.add(reply("noted"))
    done = piton("-p", "ship it", "--output-format", "stream-json", "--verbose", "--include-hook-events")
    assert done.returncode == 0, done.stderr
    first = fake_api.bodies[0]["messages"][0]["content"]
    assert [b["text"] for b in first if b["type"] == "text"][-1] == "Release freeze until Friday"
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    [event] = [line for line in lines if line.get("subtype") == "hook_response"]
    assert (event["hook_event"], event["exit_code"], event["outcome"]) == ("UserPromptSubmit", 0, "success")


def test_doctor_names_settings_piton_does_not_apply(fake_api: FakeAnthropicAPI, project: Path) -> None:
    write(Path.home() / ".claude" / "settings.json", {"apiKeyHelper": "~/bin/key.sh", "model": "opus"})
    write(project / ".claude" / "settings.json", {"spinnerTipsEnabled": False})
    done = piton("doctor", cwd=project)
    assert "setting not applied: apiKeyHelper (~/.claude/settings.json)" in done.stdout
    assert "setting not applied: spinnerTipsEnabled (.claude/settings.json)" in done.stdout
    assert (
        "~/.claude/settings.json (user)" in done.stdout and ".claude/settings.json (project)" in done.stdout
    )
