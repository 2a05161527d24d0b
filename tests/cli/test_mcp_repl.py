"""MCP prompts and resources in the terminal, with the fixture server over stdio: a prompt runs as
`/mcp__fixture__review`, is completed and listed by /help; `@fixture:` completes the server's
resources and attaches one; an unknown prompt is one line and sends nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from piton.cli.completion import PitonCompleter
from piton.core.conversation.messages import ImageBlock, TextBlock
from piton.testing.script import reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run

SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")
CONFIG = json.dumps({"mcpServers": {"fixture": {"command": sys.executable, "args": [SERVER]}}})


def test_prompts_and_resources_at_the_prompt(project: Path) -> None:
    provider = ScriptedProvider(reply("Reviewed."), reply("Greeted."))
    offered: dict[str, list[str]] = {}

    async def script(s: Session) -> None:
        runtime = s.repl.runtime
        assert runtime is not None and runtime.mcp is not None
        await runtime.mcp.wait_started()
        completer = PitonCompleter(s.repl.command_names, s.repl.mentionable)
        for typed in ("/mcp__fix", "see @fixture:test://g"):
            found = completer.get_completions(Document(typed), CompleteEvent())
            offered[typed] = [c.text for c in found]
        for line in (
            "/mcp__fixture__nope",
            "/help",
            "/mcp__fixture__review app.py speed",
            "hi @fixture:test://greeting",
        ):
            await s.type(line + ENTER)
            await s.idle()
        await s.until(lambda: len(s.history) == 4)

    s = run(project, provider, script, mcp_config=[CONFIG])
    assert offered == {
        "/mcp__fix": ["/mcp__fixture__review"],
        "see @fixture:test://g": ["fixture:test://greeting"],
    }
    assert "Unknown MCP prompt /mcp__fixture__nope" in s.screen
    assert "/mcp__fixture__review <file> <focus>" in s.screen
    review, _, greeting, _ = s.history
    texts = [b.text for b in review.content if isinstance(b, TextBlock)]
    assert texts == ["Review app.py, focusing on: speed.", "I will look at it."]
    assert any(isinstance(b, ImageBlock) for b in review.content)
    assert greeting.content[0].text == "hi @fixture:test://greeting"
    assert "Hello from the fixture resource." in greeting.content[1].text
    assert len(provider.requests) == 2
