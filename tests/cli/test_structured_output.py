"""`--json-schema` (the Agent SDK's `output_format`): the model hands its answer in through the
StructuredOutput tool, checked against the schema, and the result carries it, as with Claude Code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from piton.testing.script import ToolCall, reply
from tests.cli.test_agent_sdk import PITON, collect, run
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def result_line(stdout: str) -> dict[str, Any]:
    last: dict[str, Any] = json.loads(stdout.splitlines()[-1])
    assert last["type"] == "result"
    return last


def sent(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def test_the_answer_is_checked_and_ends_the_run(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "n.txt").write_text("7\n")
    fake_api.add(
        reply(ToolCall("Read", {"file_path": "n.txt"})),  # tools stay usable on the way
        reply(ToolCall("StructuredOutput", {"n": "seven"})),
        reply(ToolCall("StructuredOutput", {"n": 7})),
    )
    done = piton_here(
        "-p", "the number", "--json-schema", json.dumps(SCHEMA), "--output-format", "stream-json", "--verbose"
    )
    assert done.returncode == 0, done.stderr
    result = result_line(done.stdout)
    assert (result["subtype"], result["is_error"], result["terminal_reason"]) == (
        "success",
        False,
        "completed",
    )
    assert result["structured_output"] == {"n": 7} and result["result"] == '{"n":7}'
    assert len(fake_api.bodies) == 3  # no request after the answer
    tool = next(t for t in fake_api.bodies[0]["tools"] if t["name"] == "StructuredOutput")
    assert tool["input_schema"] == SCHEMA
    assert "Output does not match required schema: /n: 'seven' is not of type 'integer'" in sent(
        fake_api.bodies[2]
    )


def test_a_run_that_never_answers_is_reminded_then_fails(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Seven."), reply("Still seven."), reply("7"), reply("Really, 7."))
    done = piton_here("-p", "the number", "--json-schema", json.dumps(SCHEMA), "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 1
    assert result["subtype"] == "error_max_structured_output_retries" and result["is_error"]
    assert result["terminal_reason"] == "structured_output_retry_exhausted"
    assert "structured_output" not in result and len(fake_api.bodies) == 4
    assert sent(fake_api.bodies[1]).count("You must call the StructuredOutput tool") == 1


def test_a_schema_that_cannot_be_used_is_one_line(project: Path) -> None:
    for schema, said in (
        ("{not json", "not valid JSON"),
        ('{"type": "array"}', "must describe a JSON object"),
    ):
        done = piton_here("-p", "q", "--json-schema", schema)
        assert (
            done.returncode == 1 and done.stderr.startswith("piton: --json-schema: ") and said in done.stderr
        )
        assert done.stderr.count("\n") == 1


def test_the_agent_sdks_output_format_gets_structured_output(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("StructuredOutput", {"n": 42})))
    options = ClaudeAgentOptions(
        cli_path=str(PITON), cwd=str(project), output_format={"type": "json_schema", "schema": SCHEMA}
    )
    messages = run(collect(query(prompt="the answer", options=options)))
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.structured_output == {"n": 42}


def test_the_library_takes_an_output_schema(fake_api: FakeAnthropicAPI, project: Path) -> None:
    import asyncio

    from piton import AgentOptions
    from piton import query as piton_query
    from piton.api import ResultMessage as LibraryResult

    fake_api.add(reply(ToolCall("StructuredOutput", {"n": 3})))

    async def ask() -> list[Any]:
        return [
            m
            async for m in piton_query("the answer", options=AgentOptions(cwd=project, output_schema=SCHEMA))
        ]

    result = asyncio.run(ask())[-1]
    assert isinstance(result, LibraryResult) and result.structured_output == {"n": 3}
    with pytest.raises(ValueError, match="must describe a JSON object"):
        AgentOptions(cwd=project, output_schema={"type": "string"}).run_options()


def test_only_the_main_agent_gives_the_answer_and_stop_hooks_still_run(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(
            ToolCall("Task", {"description": "look", "prompt": "Look.", "subagent_type": "general-purpose"})
        ),
        reply("The subagent looked."),
        reply(ToolCall("StructuredOutput", {"n": 1})),
        reply(ToolCall("StructuredOutput", {"n": 2})),  # after the Stop hook sent it back
    )
    hook = project / "stop.sh"
    hook.write_text(
        '#!/bin/sh\ncat > /dev/null\n[ -e "$0.seen" ] && exit 0\ntouch "$0.seen"\necho "check it" >&2\nexit 2\n'
    )
    hook.chmod(0o755)
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}
    done = piton_here(
        "-p",
        "n",
        "--json-schema",
        json.dumps(SCHEMA),
        "--output-format",
        "json",
        "--settings",
        json.dumps(settings),
        "--trust-workspace",
    )
    result = json.loads(done.stdout)
    assert result["structured_output"] == {"n": 2}, done.stderr
    subagent_tools = [t["name"] for t in fake_api.bodies[1]["tools"]]
    assert "StructuredOutput" not in subagent_tools and "StructuredOutput" in json.dumps(
        fake_api.bodies[0]["tools"]
    )
    assert "check it" in sent(fake_api.bodies[3])


def test_values_that_never_match_end_the_run(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(*(reply(ToolCall("StructuredOutput", {"n": f"no {i}"})) for i in range(6)))
    done = piton_here("-p", "n", "--json-schema", json.dumps(SCHEMA), "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["subtype"] == "error_max_structured_output_retries"
    assert len(fake_api.bodies) == 4  # four values that did not match, then no more requests
