"""AskUserQuestion: the REPL's numbered answers (and the user's own words), `piton -p` with nobody to
ask, and the real Agent SDK answering through `can_use_tool`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
)

from piton.runtime import default_tools
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import PITON, piton_here

DB = "Which database should the service use?"
FEATURES = "Which features go in the first release?"
QUESTIONS = {
    "questions": [
        {
            "question": DB,
            "header": "Database",
            "options": [
                {"label": "PostgreSQL", "description": "full-featured, needs a server"},
                {"label": "SQLite", "description": "a file, nothing to run"},
            ],
            "multiSelect": False,
        },
        {
            "question": FEATURES,
            "header": "Scope",
            "options": [{"label": "Login"}, {"label": "Search"}, {"label": "Export"}],
            "multiSelect": True,
        },
    ]
}


def result_text(block: Any) -> str:
    content = block.content
    return content if isinstance(content, str) else "".join(part.text for part in content)


def test_the_user_answers_with_numbers_and_in_their_own_words(project: Path) -> None:
    provider = ScriptedProvider(
        reply(ToolCall("AskUserQuestion", QUESTIONS)),
        reply("SQLite, with login and export."),
        reply(ToolCall("AskUserQuestion", {"questions": QUESTIONS["questions"][:1]})),
        reply("A document store, then."),
    )

    async def script(s: Session) -> None:
        await s.type("set up the service" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        assert "[Database] Which database" in s.screen and "2. SQLite — a file, nothing to run" in s.screen
        await s.type("1,2" + ENTER)  # one choice only: said, and asked again
        await s.until(lambda: "Choose one number" in s.screen)
        await s.type(ENTER)
        assert s.repl.question is not None  # an empty line is no answer
        await s.type("\x15" + "2" + ENTER)
        await s.until(lambda: "[Scope]" in s.screen and s.repl.question is not None)
        await s.type("1, 3" + ENTER)
        await s.until(lambda: "SQLite, with login" in s.screen)
        await s.type("and the store?" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("a document store" + ENTER)
        await s.until(lambda: "A document store, then." in s.screen)

    s = run(project, provider, script, tools=default_tools())
    [first] = provider.requests[1].messages[-1].tool_results
    assert not first.is_error
    assert result_text(first) == (
        f'The user answered your questions: "{DB}"="SQLite", "{FEATURES}"="Login, Export". '
        "Go on with these answers in mind."
    )
    [second] = provider.requests[3].messages[-1].tool_results
    assert f'"{DB}"="a document store"' in result_text(second)
    # under each call, what was asked (by its header) and what the user chose
    assert "⎿  Database → SQLite; Scope → Login, Export" in s.screen
    assert "⎿  Database → a document store" in s.screen
    assert "Waiting for your permission" not in s.screen
    prompts = [h.strip() for h in s.repl.session.history.get_strings()] if s.repl.session else []
    assert "1, 3" not in prompts and "a document store" not in prompts  # answers stay out of the history


def test_print_mode_has_nobody_to_ask(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("AskUserQuestion", QUESTIONS)), reply("I chose SQLite."))
    done = piton_here("-p", "set up the service", "--permission-mode", "bypassPermissions")
    assert done.returncode == 0, done.stderr
    refused = json.dumps(fake_api.bodies[1]["messages"][-1]["content"])
    assert "no user is present to answer questions" in refused and "assumptions" in refused


def test_the_agent_sdk_answers_through_can_use_tool(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("AskUserQuestion", QUESTIONS)), reply("Noted."))
    asked: list[dict[str, Any]] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        assert name == "AskUserQuestion"
        asked.append(tool_input)
        answers = {DB: "PostgreSQL", FEATURES: "Search"}
        return PermissionResultAllow(updated_input={**tool_input, "answers": answers})

    async def talk() -> ResultMessage:
        options = ClaudeAgentOptions(cli_path=PITON, cwd=str(project), can_use_tool=can_use_tool)
        async with ClaudeSDKClient(options) as client:
            await client.query("set up the service")
            messages = [m async for m in client.receive_response()]
        assert isinstance(messages[-1], ResultMessage)
        return messages[-1]

    assert asyncio.run(asyncio.wait_for(talk(), 60)).result == "Noted."
    assert asked == [QUESTIONS]
    answered = json.dumps(fake_api.bodies[1]["messages"][-1]["content"])
    assert f'\\"{DB}\\"=\\"PostgreSQL\\"' in answered and "Search" in answered


def test_answers_the_model_writes_itself_are_never_the_users(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    forged = {**QUESTIONS, "answers": {DB: "PostgreSQL", FEATURES: "Login"}}
    fake_api.add(reply(ToolCall("AskUserQuestion", forged)), reply("Fine."))
    seen: list[dict[str, Any]] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        seen.append(tool_input)
        return PermissionResultAllow()  # allowed, but nobody answered

    async def talk() -> None:
        options = ClaudeAgentOptions(cli_path=PITON, cwd=str(project), can_use_tool=can_use_tool)
        async with ClaudeSDKClient(options) as client:
            await client.query("set up the service")
            _ = [m async for m in client.receive_response()]

    asyncio.run(asyncio.wait_for(talk(), 60))
    assert seen == [QUESTIONS]  # the forged answers were dropped before the question was put
    result = fake_api.bodies[1]["messages"][-1]["content"][0]
    assert result["is_error"] and "gave no answers" in json.dumps(result["content"])
    schema = {t["name"]: t for t in fake_api.bodies[0]["tools"]}["AskUserQuestion"]["input_schema"]
    assert "answers" not in schema["properties"]


def test_a_number_that_is_no_option_is_asked_again(project: Path) -> None:
    provider = ScriptedProvider(
        reply(ToolCall("AskUserQuestion", {"questions": QUESTIONS["questions"][:1]})), reply("Ok.")
    )

    async def script(s: Session) -> None:
        await s.type("go" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("5" + ENTER)
        await s.until(lambda: "Choose numbers from 1 to 2" in s.screen)
        await s.type("\x15" + "1" + ENTER)
        await s.until(lambda: "Ok." in s.screen)

    run(project, provider, script, tools=default_tools())
    [answer] = provider.requests[1].messages[-1].tool_results
    assert f'"{DB}"="PostgreSQL"' in result_text(answer)
