"""Piton driven by the real TypeScript Agent SDK (`@anthropic-ai/claude-agent-sdk`, installed from
npm at the version below, without its bundled Claude Code binary), where Node is present: the
same control protocol as the Python SDK, through the other client people use."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import node_said, npm_installed

SDK = "@anthropic-ai/claude-agent-sdk@0.3.332"
SCRIPT = Path(__file__).parents[1] / "fixtures" / "ts_sdk" / "run.mjs"
PITON = Path(sys.executable).with_name("piton")


@pytest.fixture(scope="session")
def ts_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the SDK installed and the script beside it."""
    folder = npm_installed(tmp_path_factory, SDK)
    shutil.copy(SCRIPT, folder / "run.mjs")
    return folder


def test_the_typescript_sdk_gets_agents_hooks_tools_and_structured_output(
    ts_sdk: Path, fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(
            ToolCall("Task", {"description": "review", "prompt": "Look.", "subagent_type": "eco-reviewer"})
        ),
        reply("ECO-REPORT: fine."),
        reply(ToolCall("StructuredOutput", {"n": 5})),
    )
    said = node_said("run.mjs", str(PITON), str(project), cwd=ts_sdk)
    assert said["structured_output"] == {"n": 5}
    seen = said["seen"]
    assert seen[:2] == ["system/init", "UserPromptSubmit"] and seen[-1] == "result/success"
    assert {"system/task_started", "system/task_notification"} <= set(seen)
    offered = [t["name"] for t in fake_api.bodies[0]["tools"]]
    assert "WebSearch" not in json.dumps(fake_api.bodies[0]["tools"]) and "StructuredOutput" in offered
    assert fake_api.bodies[1]["system"][0]["text"].startswith("ECO-PROMPT")
