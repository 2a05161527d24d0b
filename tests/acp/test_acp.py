"""`piton acp` driven by the protocol's official Python client over a real pipe, against the fake
Messages API: what an editor sees of a turn, its questions, its modes, its sessions."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema

from piton.core.conversation.messages import INTERRUPTED_TOOL_RESULT
from piton.testing.script import HttpError, Thinking, ToolCall, reply
from tests.acp.client import Editor, connected, first, folder, text
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.images import png

CEILING_S = 60.0
SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")


def run(work: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(work, CEILING_S))


def user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def test_a_turn_streams_thoughts_words_and_a_command_the_editor_allowed(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(Thinking("Let me look."), "Running it.", ToolCall("Bash", {"command": "echo hi there"}))
    )
    fake_api.add(reply("It said hi."))
    editor = Editor(answer=first("allow_once"))

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            assert session.modes is not None and session.modes.current_mode_id == "default"
            done = await conn.prompt(session_id=session.session_id, prompt=[text("say hi")])
            assert done.stop_reason == "end_turn"
            assert done.usage is not None and done.usage.output_tokens > 0 and done.usage.input_tokens > 0

    run(scenario())
    assert editor.text("agent_thought_chunk") == "Let me look."
    assert editor.text() == "Running it.It said hi."
    [(call, options)] = editor.questions
    assert call.title == "Bash(echo hi there)" and call.kind == "execute"
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    assert options[1].name == "Allow for this session: Bash(echo:*)"  # the rule the session would get
    [started] = editor.of("tool_call")
    assert (started.kind, started.status) == ("execute", "pending")
    *_, last = [u for u in editor.of("tool_call_update") if u.tool_call_id == started.tool_call_id]
    assert last.status == "completed"
    assert last.content[0].content.text == "```console\nhi there\n```"


def test_allowed_for_the_session_is_not_asked_again_and_a_rejection_reaches_the_model(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "echo one"})))
    fake_api.add(reply(ToolCall("Bash", {"command": "echo one"})))
    fake_api.add(reply(ToolCall("Bash", {"command": "touch made"})))
    fake_api.add(reply("Stopped."))
    answers = iter(["allow_always", "reject_once"])
    editor = Editor(answer=lambda _, options: first(next(answers))(_, options))

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text("go")])
            assert done.stop_reason == "end_turn"

    run(scenario())
    assert [call.title for call, _ in editor.questions] == ["Bash(echo one)", "Bash(touch made)"]
    assert not (project / "made").exists()
    refused = [b for b in user_blocks(fake_api.bodies[3]) if b["type"] == "tool_result"]
    assert refused[0]["is_error"] and "refused" in json.dumps(refused[0]["content"])
    statuses = [u.status for u in editor.of("tool_call_update") if u.status in ("completed", "failed")]
    assert statuses == ["completed", "completed", "failed"]


def test_an_edit_is_a_diff_at_its_line_and_a_read_says_where_it_looks(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    fake_api.add(reply(ToolCall("Read", {"file_path": "notes.txt", "offset": 2})))
    fake_api.add(
        reply(ToolCall("Edit", {"file_path": "notes.txt", "old_string": "three", "new_string": "3"}))
    )
    fake_api.add(reply("Edited."))
    editor = Editor(answer=first("allow_once"))

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text("edit")])

    run(scenario())
    assert (project / "notes.txt").read_text() == "one\ntwo\n3\n"
    where = str(project.resolve() / "notes.txt")
    read, edit = (u for u in editor.of("tool_call_update") if u.status == "in_progress")
    assert (read.kind, read.locations[0].path, read.locations[0].line) == ("read", where, 2)
    assert edit.kind == "edit" and edit.title == "Edit(notes.txt)"
    [done] = [u for u in editor.of("tool_call_update") if u.tool_call_id == edit.tool_call_id and u.content]
    assert done.content is not None and done.locations is not None
    [diff] = done.content
    assert isinstance(diff, schema.FileEditToolCallContent)
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", where, "three", "3")
    assert done.locations[0].line == 3  # where the change is, past the hunk's context
    [(asked, _)] = editor.questions  # the edit was asked about, with what it would change
    assert asked.kind == "edit" and asked.content is not None
    [preview] = asked.content
    assert isinstance(preview, schema.ContentToolCallContent) and isinstance(
        preview.content, schema.TextContentBlock
    )
    assert "-three" in preview.content.text


def test_cancel_stops_a_running_command_and_the_next_prompt_goes_on(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "touch started && sleep 30 && touch late"})))
    fake_api.add(reply("Still here."))
    editor = Editor(answer=first("allow_once"))

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text("wait")]))
            await editor.asked.wait()
            while not (project / "started").exists():  # noqa: ASYNC110 (a file in the sandbox: no event)
                await asyncio.sleep(0.02)
            await conn.cancel(session_id=session.session_id)
            assert (await turn).stop_reason == "cancelled"
            again = await conn.prompt(session_id=session.session_id, prompt=[text("and now?")])
            assert again.stop_reason == "end_turn"

    run(scenario())
    assert not (project / "late").exists()
    assert editor.text().endswith("Still here.")
    # reopened, the cut call is shown failed, and Piton's note of the interruption is not the user's
    later = Editor()

    async def reopen() -> None:
        async with connected(later) as (conn, _):
            [saved] = (await conn.list_sessions(cwd=folder(project))).sessions
            await conn.load_session(cwd=folder(project), session_id=saved.session_id, mcp_servers=[])

    run(reopen())
    assert later.text("user_message_chunk") == "waitand now?"
    assert [u.status for u in later.of("tool_call_update")][-1] == "failed"
    # the history the API got next is whole: the cut call has its result, then the interruption
    second = fake_api.bodies[1]["messages"]
    results = [
        b for m in second for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(results) == 1


def test_a_session_loaded_in_a_new_process_replays_its_conversation(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    fake_api.add(reply("Reading.", ToolCall("Read", {"file_path": "a.txt"})))
    fake_api.add(reply("It says alpha."))
    fake_api.add(reply("You asked about a.txt."))
    first_editor, second_editor = Editor(), Editor()
    ids: list[str] = []

    async def before() -> None:
        async with connected(first_editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            ids.append(session.session_id)
            await conn.prompt(session_id=session.session_id, prompt=[text("what is in a.txt?")])
            listed = await conn.list_sessions(cwd=folder(project))
            assert [s.session_id for s in listed.sessions] == ids
            assert listed.sessions[0].title == "what is in a.txt?"

    async def after() -> None:
        async with connected(second_editor) as (conn, _):
            loaded = await conn.load_session(cwd=folder(project), session_id=ids[0], mcp_servers=[])
            assert loaded.modes is not None
            replayed = list(second_editor.updates)  # all of it before the answer, as the protocol asks
            done = await conn.prompt(session_id=ids[0], prompt=[text("what did I ask?")])
            assert done.stop_reason == "end_turn"
            kinds = [u.session_update for u in replayed]
            assert kinds[:5] == [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "tool_call_update",
            ]
            assert replayed[0].content.text == "what is in a.txt?"
            assert replayed[4].status == "completed"
            assert kinds[5] == "agent_message_chunk" and replayed[5].content.text == "It says alpha."
            # a session this process writes cannot be loaded by another: it would need a new id
            async with connected(Editor()) as (other, _):
                with pytest.raises(RequestError) as busy:
                    await other.load_session(cwd=folder(project), session_id=ids[0], mcp_servers=[])
                assert "in use" in json.dumps(busy.value.to_error_obj())

    run(before())
    run(after())
    assert len(fake_api.bodies[2]["messages"]) == 5  # the whole conversation went on


def test_plan_mode_from_the_editor_and_the_plan_approved_there(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("Write", {"file_path": "plan-time.txt", "content": "x"})))
    fake_api.add(reply(ToolCall("ExitPlanMode", {"plan": "1. write the file"})))
    fake_api.add(reply(ToolCall("Write", {"file_path": "after.txt", "content": "y\n"})))
    fake_api.add(reply("Written."))
    editor = Editor(answer=first("allow_always"))  # "Yes, and accept edits without asking"

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            assert session.modes is not None
            offered = [m.id for m in session.modes.available_modes]
            assert offered == ["default", "acceptEdits", "plan", "bypassPermissions"]
            await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            with pytest.raises(RequestError):
                await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            done = await conn.prompt(session_id=session.session_id, prompt=[text("plan it")])
            assert done.stop_reason == "end_turn"

    run(scenario())
    assert not (project / "plan-time.txt").exists()  # plan mode changes nothing
    assert (project / "after.txt").read_text() == "y\n"
    [(plan, options)] = editor.questions  # the second Write was not asked: edits are accepted now
    assert plan.kind == "switch_mode" and options[0].name.startswith("Yes, and accept edits")
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["acceptEdits"]


def test_an_mcp_server_the_editor_passes_is_started_and_its_tool_called(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("mcp__editors__echo", {"text": "ping"})))
    fake_api.add(reply("Echoed."))
    editor = Editor(answer=first("allow_once"))
    server = schema.McpServerStdio(name="editors", command=sys.executable, args=[SERVER], env=[])

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[server])
            await conn.prompt(session_id=session.session_id, prompt=[text("echo")])

    run(scenario())
    assert "mcp__editors__echo" in [t["name"] for t in fake_api.bodies[0]["tools"]]
    [result] = [b for b in user_blocks(fake_api.bodies[1]) if b["type"] == "tool_result"]
    assert "echo: ping" in json.dumps(result["content"]) and not result.get("is_error")
    assert editor.of("tool_call")[0].title == "mcp__editors__echo"


def test_images_files_and_selections_become_the_user_message(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / "src.py").write_text("print('linked')\n")
    fake_api.add(reply("Seen."))
    editor = Editor()
    picture = base64.b64encode(png()).decode()
    prompt: list[Any] = [
        text("look at"),
        schema.ResourceContentBlock(
            type="resource_link", uri=(project / "src.py").resolve().as_uri(), name="src.py"
        ),
        text("and this selection"),
        schema.EmbeddedResourceContentBlock(
            type="resource",
            resource=schema.TextResourceContents(
                uri="file:///elsewhere/buffer.py#L1-2", text="x = 1  # unsaved"
            ),
        ),
        schema.ImageContentBlock(type="image", data=picture, mime_type="image/png"),
        schema.AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav"),
    ]

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=prompt)

    run(scenario())
    blocks = user_blocks(fake_api.bodies[0])
    words = json.dumps(blocks)
    assert "look at @src.py" in words and "print('linked')" in words  # the linked file, attached
    assert "x = 1  # unsaved" in words and "file:///elsewhere/buffer.py#L1-2" in words
    [image] = [b for b in blocks if b["type"] == "image"]
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": picture}
    assert "audio is not sent" in editor.text()


def test_todos_become_the_plan_and_questions_are_asked_one_by_one(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing"},
    ]
    question = {
        "question": "Which database?",
        "header": "DB",
        "options": [{"label": "Postgres"}, {"label": "SQLite"}],
        "multiSelect": False,
    }
    fake_api.add(
        reply(ToolCall("TodoWrite", {"todos": todos}), ToolCall("AskUserQuestion", {"questions": [question]}))
    )
    fake_api.add(reply("SQLite it is."))
    editor = Editor(answer=lambda call, options: options[1].option_id)

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text("plan")])

    run(scenario())
    [plan] = editor.of("plan")
    assert [(e.content, e.status) for e in plan.entries] == [
        ("Read the code", "completed"),
        ("Fix the bug", "in_progress"),
    ]
    [(asked, options)] = editor.questions
    assert asked.title == "Which database?" and [o.name for o in options] == ["Postgres", "SQLite"]
    answer = [b for b in user_blocks(fake_api.bodies[1]) if b["type"] == "tool_result"][-1]
    assert '"Which database?"="SQLite"' in str(answer["content"])


def test_errors_are_protocol_errors_and_the_agent_lives_on(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Fine."))
    editor = Editor()

    async def scenario() -> None:
        async with connected(editor) as (conn, process):
            with pytest.raises(RequestError) as unknown:
                await conn.prompt(session_id="no-such-session", prompt=[text("hi")])
            assert "no such session" in json.dumps(unknown.value.to_error_obj())
            with pytest.raises(RequestError):
                await conn.new_session(cwd="relative/path", mcp_servers=[])
            with pytest.raises(RequestError):
                await conn.load_session(cwd=folder(project), session_id="not-a-session", mcp_servers=[])
            assert process.stdin is not None
            process.stdin.write(
                b'this is not json\n{"jsonrpc": "2.0", "id": 99, "method": "session/prompt"}\n'
            )
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[text("still there?")])
            assert done.stop_reason == "end_turn"

    run(scenario())
    assert editor.text() == "Fine."


def test_without_an_api_key_a_session_asks_for_authentication(project: Path) -> None:
    editor = Editor()

    async def scenario() -> None:
        async with connected(editor, env={"ANTHROPIC_API_KEY": ""}) as (conn, _):
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=folder(project), mcp_servers=[])
            error = refused.value.to_error_obj()
            assert error["code"] == -32000 and "ANTHROPIC_API_KEY" in json.dumps(error)
            with pytest.raises(RequestError):
                await conn.authenticate(method_id="anthropic-api-key")
        # a model served elsewhere needs no Anthropic key
        async with connected(editor, "--model", "ollama:qwen3", env={"ANTHROPIC_API_KEY": ""}) as (conn, _):
            assert await conn.authenticate(method_id="anthropic-api-key") is not None

    run(scenario())


def test_initialize_says_what_piton_can_do(project: Path) -> None:
    async def scenario() -> None:
        from acp import PROTOCOL_VERSION
        from acp.stdio import spawn_agent_process

        from tests.helpers import PITON

        async with spawn_agent_process(Editor().as_client(), PITON, "acp") as (conn, _):
            hello = await conn.initialize(protocol_version=PROTOCOL_VERSION + 5)
            assert hello.protocol_version == PROTOCOL_VERSION  # the newest both speak
            caps = hello.agent_capabilities
            assert caps is not None and caps.load_session and caps.prompt_capabilities is not None
            assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
            assert caps.mcp_capabilities is not None and caps.mcp_capabilities.http
            assert hello.agent_info is not None and hello.agent_info.name == "piton"
            [method] = hello.auth_methods or []
            assert method.id == "anthropic-api-key"

    run(scenario())


def test_requests_from_a_file_get_their_replies_in_a_file(project: Path, tmp_path: Path) -> None:
    """`piton acp < requests.jsonl > replies.jsonl`: a file cannot be waited on as a pipe is, and
    each line still gets its reply, in the file, with no traceback."""
    import subprocess

    from acp import PROTOCOL_VERSION

    from tests.helpers import CEILING_S, PITON

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "relative", "mcpServers": []}},
    ]
    requests, replies = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with requests.open("rb") as given, replies.open("wb") as taken:
        done = subprocess.run(
            [PITON, "acp"], stdin=given, stdout=taken, stderr=subprocess.PIPE, cwd=project, timeout=CEILING_S
        )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    answers = {a["id"]: a for a in map(json.loads, replies.read_text().splitlines())}
    assert answers[1]["result"]["protocolVersion"] == PROTOCOL_VERSION
    assert answers[2]["error"]["data"] == {"cwd": "relative", "reason": "not an absolute path to a folder"}


def test_an_editor_that_ends_its_agent_ends_the_agents_commands(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "touch started && sleep 30 && touch late"})))
    editor = Editor(answer=first("allow_once"))
    ids: list[str] = []

    async def scenario() -> None:
        async with connected(editor) as (conn, process):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            ids.append(session.session_id)
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text("wait")]))
            await editor.asked.wait()
            while not (project / "started").exists():  # noqa: ASYNC110 (a file in the sandbox: no event)
                await asyncio.sleep(0.02)
            process.terminate()  # as an editor closing its window does
            assert await process.wait() == 0
            turn.cancel()

    run(scenario())
    # the session was closed as the terminal closes one: its log says the call was cut short
    from piton.core.conversation.session import SessionStore

    saved = SessionStore().find(ids[0], project.resolve()).read_text()
    assert INTERRUPTED_TOOL_RESULT in saved
    assert not (project / "late").exists()


def test_reads_and_edits_are_the_disks_even_when_the_editor_offers_its_buffers(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """An editor opens a path by name, following links, outside the sandbox: whatever else writes
    the project meanwhile (another session's command, an MCP server) could swap a folder on it for
    a link to the user's keys. So Piton never asks the editor for a file: its own tools read and
    write through their no-follow path, and the editor sees the change on disk."""
    notes = project / "notes.txt"
    notes.write_text("on disk\n")
    where = str(notes.resolve())
    fake_api.add(reply(ToolCall("Read", {"file_path": "notes.txt"})))
    fake_api.add(
        reply(ToolCall("Edit", {"file_path": "notes.txt", "old_string": "on", "new_string": "edited on"}))
    )
    fake_api.add(reply("Done."))
    editor = Editor(answer=first("allow_always"), buffers={where: "unsaved line\n"})

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[text("edit")])

    run(scenario())
    [read] = [b for b in user_blocks(fake_api.bodies[1]) if b["type"] == "tool_result"]
    assert "on disk" in json.dumps(read["content"])
    assert notes.read_text() == "edited on disk\n"
    assert (editor.reads, editor.written) == ([], {})


def test_stop_reasons_and_a_failed_request_as_a_protocol_error(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Cut", stop_reason="max_tokens"))
    fake_api.add(reply("I can't help with that.", stop_reason="refusal"))
    fake_api.add(
        HttpError(400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum")
    )
    fake_api.add(reply("Back."))
    editor = Editor()

    async def scenario() -> None:
        async with connected(editor) as (conn, _):
            session = await conn.new_session(cwd=folder(project), mcp_servers=[])
            cut = await conn.prompt(session_id=session.session_id, prompt=[text("a long answer")])
            assert cut.stop_reason == "max_tokens"
            refused = await conn.prompt(session_id=session.session_id, prompt=[text("something bad")])
            assert refused.stop_reason == "refusal"
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session.session_id, prompt=[text("again")])
            assert "prompt is too long" in json.dumps(failed.value.to_error_obj())
            again = await conn.prompt(session_id=session.session_id, prompt=[text("and now?")])
            assert again.stop_reason == "end_turn"

    run(scenario())
    assert editor.text().endswith("Back.")
    # the history stayed valid for the API: the third request holds the first two prompts and answers
    roles = [m["role"] for m in fake_api.bodies[3]["messages"]]
    assert roles[0] == "user" and roles[-1] == "user" and all(a != b for a, b in itertools.pairwise(roles))
