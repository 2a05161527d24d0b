"""A mode the user's settings forbid stays forbidden whoever asks for it: the command line, a client
of the control protocol (the Agent SDK's `set_permission_mode`), or an agent file's
`permissionMode`. Through the real `piton` command against the scripted API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from piton.testing.script import ToolCall, reply
from tests.adversarial.conftest import PITON
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S


def _forbid_bypass() -> None:
    settings = Path(os.environ["HOME"]) / ".piton" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}}))


def _control(request_id: str, request: dict[str, Any]) -> str:
    return json.dumps({"type": "control_request", "request_id": request_id, "request": request}) + "\n"


def test_a_client_cannot_switch_to_a_mode_the_settings_forbid(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    _forbid_bypass()
    target = project / "written.txt"
    fake_api.add(reply(ToolCall("Write", {"file_path": str(target), "content": "x"})), reply("Done."))
    user = {"type": "user", "message": {"role": "user", "content": "write it"}}
    stdin = (
        _control("1", {"subtype": "initialize"})
        + _control("2", {"subtype": "set_permission_mode", "mode": "bypassPermissions"})
        + json.dumps(user)
        + "\n"
    )
    done = subprocess.run(
        [PITON, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    answer = next(
        x for x in lines if x.get("type") == "control_response" and x["response"]["request_id"] == "2"
    )
    assert answer["response"]["subtype"] == "error"
    assert "disableBypassPermissionsMode" in answer["response"]["error"]
    assert not target.exists(), "the Write ran without being allowed"
    init = next(x for x in lines if x.get("subtype") == "init")
    assert init["permissionMode"] == "default"


def test_an_agent_file_cannot_run_its_subagent_in_a_mode_the_settings_forbid(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """The user's own agent files may choose a wider mode than the session's (a project's may only
    narrow it), but not one the settings forbid."""
    _forbid_bypass()
    agents = Path(os.environ["HOME"]) / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "yolo.md").write_text(
        "---\nname: yolo\ndescription: Does anything.\npermissionMode: bypassPermissions\n---\nDo it.\n"
    )
    target = project / "written.txt"
    fake_api.add(
        reply(ToolCall("Task", {"description": "w", "prompt": "write it", "subagent_type": "yolo"})),
        reply(ToolCall("Write", {"file_path": str(target), "content": "x"})),
        reply("The subagent is done."),
        reply("Done."),
    )
    done = subprocess.run(
        [PITON, "-p", "write it through yolo"], capture_output=True, text=True, timeout=CEILING_S, check=False
    )
    assert not target.exists(), done.stdout + done.stderr
