"""Attacks through an editor's files (`piton acp`). An editor that offers `fs/*` opens a path by
name, following links, outside the sandbox. Whatever writes the project meanwhile (a command of
another session, an MCP server) could swap a folder on that path for a link to the user's keys
between Piton's check and the editor's read. So Piton never asks the editor for a file: here one
session swaps `docs` for a link to ~/.ssh over and over while another reads `docs/id_rsa`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from piton.testing.script import ToolCall, reply
from tests.acp.client import Editor, connected, first, folder, text
from tests.adversarial.conftest import SECRET
from tests.fakes.fake_api import FakeAnthropicAPI

pytestmark = pytest.mark.sandbox
READS = 24  # a read checked while `docs` is a folder, then asked of the editor, is likely among them

# `docs` is a folder with a harmless file, then a link to ~/.ssh, over and over
_SWAP = "while :; do rm -rf docs; ln -s {ssh} docs; rm -f docs; mkdir docs; echo decoy > docs/id_rsa; done"


def test_a_folder_another_session_swaps_for_a_link_never_reaches_the_editor(
    fake_api: FakeAnthropicAPI, project: Path, home: Path
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "id_rsa").write_text("decoy\n")
    swap = _SWAP.format(ssh=home / ".ssh")
    fake_api.add(reply(ToolCall("Bash", {"command": swap, "run_in_background": True})))
    fake_api.add(reply("Swapping."))
    fake_api.add(reply(*(ToolCall("Read", {"file_path": "docs/id_rsa"}) for _ in range(READS))))
    fake_api.add(
        reply(
            *(
                ToolCall("Edit", {"file_path": "docs/id_rsa", "old_string": "decoy", "new_string": "x"})
                for _ in range(4)
            )
        )
    )
    fake_api.add(reply("Done."))
    editor = Editor(answer=first("allow_always"), buffers={})

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            swapping = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await conn.prompt(session_id=swapping.session_id, prompt=[text("swap")])
            reading = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await asyncio.wait_for(conn.prompt(session_id=reading.session_id, prompt=[text("read")]), 120)

    asyncio.run(scenario())
    assert SECRET not in json.dumps(fake_api.bodies)
    assert SECRET in (home / ".ssh" / "id_rsa").read_text()  # the key was not written either
    assert (editor.reads, editor.written) == ([], {})
    results = [b for b in fake_api.bodies[3]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert len(results) == READS
