"""Rewinding from scripts: `--rewind-files` and `--rewind-to` as the `piton` command line runs them (in
this process), and the Agent SDK's `rewind_files` request to the installed `piton`, against the fake
API, with the real Write tool on real files."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, UserMessage

from piton.core.conversation.session import SessionStore
from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

PITON = str(Path(sys.executable).with_name("piton"))


def prompt_ids(project: Path, session_id: str) -> list[str]:
    """The uuids of the session's typed prompts: the checkpoints a script rewinds to."""
    path = SessionStore().find(session_id, project)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        line["uuid"]
        for line in lines
        if line.get("type") == "message"
        and line["message"]["role"] == "user"
        and line["message"]["content"][0]["type"] == "text"
    ]


def test_rewind_files_and_rewind_to_from_a_script(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "notes.txt").write_text("kept\n")
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "made.txt"), "content": "first\n"})),
        reply("Made."),
        reply(ToolCall("Write", {"file_path": str(project / "other.txt"), "content": "second\n"})),
        reply("Made another."),
        reply("Going on."),
    )
    first = piton_here("-p", "make a file", "--permission-mode", "acceptEdits", "--output-format", "json")
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session_id"]
    second = piton_here("-p", "another", "--resume", session, "--permission-mode", "acceptEdits")
    assert second.returncode == 0, second.stderr
    one, two = prompt_ids(project, session)

    done = piton_here("--resume", session, "--rewind-files", two)
    assert done.returncode == 0, done.stderr
    assert not (project / "other.txt").exists() and (project / "made.txt").exists()
    assert f"restored {project / 'other.txt'}" in done.stdout

    done = piton_here("--resume", session, "--rewind-to", one)
    assert done.returncode == 0, done.stderr
    assert not (project / "made.txt").exists() and (project / "notes.txt").read_text() == "kept\n"
    again = piton_here("-p", "start over", "--resume", session)
    assert again.returncode == 0, again.stderr
    assert [m["role"] for m in fake_api.bodies[-1]["messages"]] == ["user"]  # the conversation went back

    unknown = piton_here("--resume", session, "--rewind-files", "no-such-message")
    assert unknown.returncode == 1 and "no checkpoint 'no-such-message'" in unknown.stderr
    alone = piton_here("--rewind-files", one)
    assert alone.returncode == 1 and "need --resume" in alone.stderr


def test_the_agent_sdk_rewinds_files_to_a_replayed_user_message(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    target = project / "app.py"
    target.write_text("print('v1')\n")
    fake_api.add(
        reply(ToolCall("Read", {"file_path": str(target)})),
        reply(ToolCall("Write", {"file_path": str(target), "content": "print('v2')\n"})),
        reply("Updated."),
    )
    options = ClaudeAgentOptions(
        cli_path=PITON,
        cwd=str(project),
        permission_mode="acceptEdits",
        enable_file_checkpointing=True,
        extra_args={"replay-user-messages": None},
    )

    async def talk() -> list[str]:
        ids: list[str] = []
        async with ClaudeSDKClient(options) as client:
            await client.query("update app.py")
            async for message in client.receive_response():
                if isinstance(message, UserMessage) and message.uuid and isinstance(message.content, str):
                    ids.append(message.uuid)
                if isinstance(message, ResultMessage):
                    break
            assert target.read_text() == "print('v2')\n"
            await client.rewind_files(ids[0])
        return ids

    ids = asyncio.run(asyncio.wait_for(talk(), 60))
    assert len(ids) == 1
    assert target.read_text() == "print('v1')\n"
