"""The library (`from piton import query, Agent, AgentOptions, tool`), driven as a program would:
the real `anthropic` SDK over HTTP to the fake API, real files, the real sandbox."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, Text, ToolCall
from piton.testing.scripted import ScriptedProvider
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.helpers import CEILING_S, piton


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _all(prompt: str, options: Any) -> list[Any]:
    from piton import query

    return [m async for m in query(prompt, options=options)]


def _results(messages: list[Any]) -> list[Any]:
    from piton.api import ResultMessage

    return [m for m in messages if isinstance(m, ResultMessage)]


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]["content"]
    return [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def test_query_yields_what_stream_json_prints(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """The same script through `piton -p --output-format stream-json` and through `query()` gives
    the same lines: the CLI's output is the library's messages."""
    from piton import AgentOptions

    (project / "notes.txt").write_text("alpha\n")
    script = [
        Reply([Text("Reading it."), ToolCall("Read", {"file_path": str(project / "notes.txt")})]),
        Reply([Text("It says alpha.")]),
    ]
    fake_api.add(*script)
    cli = piton(project, "-p", "read notes.txt", "--output-format", "stream-json", "--verbose")
    assert cli.returncode == 0, cli.stderr
    printed = [json.loads(line) for line in cli.stdout.splitlines()]
    fake_api.add(*script)
    messages = _run(_all("read notes.txt", AgentOptions(cwd=project)))
    yielded = [m.to_dict() for m in messages if m.to_dict().get("subtype") != "notice"]

    def shape(line: dict[str, Any]) -> tuple[Any, ...]:
        content = line.get("message", {}).get("content")
        kinds = tuple(b["type"] for b in content) if isinstance(content, list) else ()
        return (line["type"], line.get("subtype"), kinds, line.get("tool_use_result"), line.get("result"))

    assert [shape(line) for line in yielded] == [shape(line) for line in printed]
    assert set(yielded[0]) == set(printed[0])  # the init line's keys
    assert yielded[-1]["result"] == "It says alpha." and yielded[-1]["subtype"] == "success"
    assert "alpha" in _text(_tool_results(fake_api.requests[-1].body)[0])


def test_a_custom_tool_runs_beside_the_built_ins(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton import AgentOptions, tool

    calls: list[tuple[str, int]] = []

    @tool(read_only=True)
    async def shout(word: str, times: int = 2) -> dict[str, Any]:
        """Repeat a word in capitals."""
        calls.append((word, times))
        return {"said": " ".join([word.upper()] * times)}

    @tool
    def explode(reason: str) -> str:
        raise ValueError(reason)

    fake_api.add(
        Reply([ToolCall("shout", {"word": "hi", "times": 3}), ToolCall("shout", {"times": "x"})]),
        Reply([ToolCall("explode", {"reason": "boom"})]),
        Reply([Text("done")]),
    )
    options = AgentOptions(
        cwd=project, tools=[shout, explode], allowed_tools=["explode"], builtin_tools=["Read"]
    )
    messages = _run(_all("go", options))
    first = fake_api.requests[0].body
    assert [t["name"] for t in first["tools"]][:1] == ["Read"]
    spec = next(t for t in first["tools"] if t["name"] == "shout")
    assert spec["description"] == "Repeat a word in capitals."
    assert spec["input_schema"]["required"] == ["word"]
    assert spec["input_schema"]["properties"]["times"]["type"] == "integer"
    good, bad = _tool_results(fake_api.requests[1].body)
    assert json.loads(_text(good)) == {"said": "HI HI HI"} and not good.get("is_error")
    assert bad["is_error"] and "word" in _text(bad)  # the schema refused it before it ran
    (failed,) = _tool_results(fake_api.requests[2].body)
    assert failed["is_error"] and _text(failed) == "ValueError: boom"
    assert calls == [("hi", 3)]
    assert _results(messages)[0].text == "done"
    assert _run(shout("a", 1)) == {"said": "A"}  # still callable as written


def test_can_use_tool_decides_and_edits_and_hooks_run_in_process(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    from piton import AgentOptions
    from piton.api import Allow, Deny, HookMatcher, ToolPermissionContext

    asked: list[tuple[str, str]] = []

    def can_use_tool(name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Allow | Deny:
        asked.append((name, context.tool_use_id))
        if name == "Write":
            return Allow(updated_input={**tool_input, "content": "edited by the caller\n"})
        return Deny("not today")

    seen_post: list[str] = []

    async def no_rm(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        if "rm " in hook_input["tool_input"]["command"]:
            return {"decision": "block", "reason": "rm is off limits"}
        return {}

    def after(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen_post.append(hook_input["tool_name"])
        return {
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checked by a hook"}
        }

    target = project / "out.txt"
    fake_api.add(
        Reply([ToolCall("Write", {"file_path": str(target), "content": "model text\n"})]),
        Reply([ToolCall("Bash", {"command": "rm -rf build"}), ToolCall("Bash", {"command": "echo hi > x"})]),
        Reply([Text("ok")]),
    )
    options = AgentOptions(
        cwd=project,
        can_use_tool=can_use_tool,
        hooks={
            "PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_rm])],
            "PostToolUse": [HookMatcher(matcher="Write", hooks=[after])],
        },
    )
    _run(_all("go", options))
    assert target.read_text() == "edited by the caller\n"
    (written,) = _tool_results(fake_api.requests[1].body)
    assert "checked by a hook" in json.dumps(written)
    blocked, denied = _tool_results(fake_api.requests[2].body)
    assert blocked["is_error"] and "rm is off limits" in json.dumps(blocked)
    assert denied["is_error"] and "not today" in json.dumps(denied)
    assert [name for name, _ in asked] == ["Write", "Bash"]  # the hook spared the first Bash the question
    assert seen_post == ["Write"]
    assert not (project / "x").exists()


def test_an_agent_keeps_its_history_across_turns_and_resumes_by_id(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    from piton import Agent, AgentOptions
    from piton.api import ResultMessage

    fake_api.add(Reply([Text("first answer")]), Reply([Text("second answer")]), Reply([Text("third")]))

    async def conversation() -> str:
        async with Agent(AgentOptions(cwd=project)) as agent:
            async for _ in agent.query("one"):
                pass
            texts = [m async for m in agent.query("two")]
            assert isinstance(texts[-1], ResultMessage) and texts[-1].text == "second answer"
            return agent.session_id

    session = _run(conversation())
    second = fake_api.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert "first answer" in json.dumps(second[1])

    async def later() -> None:
        async with Agent(AgentOptions(cwd=project, resume=session)) as agent:
            assert agent.session_id == session
            async for _ in agent.query("three"):
                pass

    _run(later())
    assert "second answer" in json.dumps(fake_api.requests[2].body["messages"])


def test_interrupt_ends_the_turn_with_a_result_and_the_session_goes_on(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    from piton import Agent, AgentOptions
    from piton.api import ResultMessage

    fake_api.add(
        Stall(Reply([Text("a long story " * 40)], chunk=10), after=6, seconds=30), Reply([Text("short")])
    )

    async def interrupt_once_silent(agent: Agent) -> None:
        await asyncio.to_thread(fake_api.wait_for_silence)  # the story has begun, and pauses
        await agent.interrupt()

    async def go() -> tuple[list[Any], list[Any]]:
        async with Agent(AgentOptions(cwd=project, builtin_tools=[])) as agent:
            stopper = asyncio.ensure_future(interrupt_once_silent(agent))
            first = [m async for m in agent.query("tell a story")]
            await stopper
            second = [m async for m in agent.query("shorter")]
            return first, second

    first, second = _run(go())
    end = first[-1]
    assert isinstance(end, ResultMessage) and end.subtype == "error_during_execution" and end.is_error
    assert second[-1].text == "short"
    roles = [m["role"] for m in fake_api.requests[-1].body["messages"]]
    assert roles[0] == "user" and roles[-1] == "user"  # valid for the API after the interrupt


def test_sessions_kept_in_sqlite(fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path) -> None:
    import sqlite3

    from piton import Agent, AgentOptions
    from piton.api import SqliteSessionStorage

    storage = SqliteSessionStorage(tmp_path / "db" / "sessions.db")
    fake_api.add(Reply([Text("remembered: 42")]), Reply([Text("it was 42")]), Reply([Text("forked")]))

    async def turn(options: AgentOptions, prompt: str) -> str:
        async with Agent(options) as agent:
            async for _ in agent.query(prompt):
                pass
            return agent.session_id

    first = _run(turn(AgentOptions(cwd=project, session_storage=storage), "remember 42"))
    assert [s.session_id for s in storage.sessions()] == [first]
    resumed = _run(turn(AgentOptions(cwd=project, session_storage=storage, resume=first), "what was it?"))
    assert resumed == first
    assert "remembered: 42" in json.dumps(fake_api.requests[1].body["messages"])
    forked = _run(
        turn(AgentOptions(cwd=project, session_storage=storage, resume=first, fork_session=True), "again")
    )
    assert forked != first and {s.session_id for s in storage.sessions()} == {first, forked}
    assert "it was 42" in json.dumps(fake_api.requests[2].body["messages"])
    rows = sqlite3.connect(storage.path).execute("SELECT line FROM entries WHERE session_id = ?", (first,))
    kinds = [json.loads(row[0])["type"] for row in rows]
    assert kinds.count("message") == 4 and kinds[0] == "session"
    assert not list((tmp_path / "state").rglob(f"{first}.jsonl"))  # nothing went to the files


def test_a_session_in_sqlite_is_written_by_one_process(tmp_path: Path) -> None:
    """A second writer of the same session is refused while the first lives, and takes over a claim
    whose process has gone."""
    from piton.core.conversation.session import SessionBusy
    from piton.core.conversation.storage import SqliteSessionStorage, StorageStore

    store = StorageStore(SqliteSessionStorage(tmp_path / "s.db"), root=tmp_path / "folders")
    log = store.create(tmp_path, "claude-sonnet-5-5")
    log.record("note", text="x")
    with pytest.raises(SessionBusy):
        store.open(log.session_id, tmp_path)
    loaded, fork = store.open(log.session_id, tmp_path, if_busy="fork")
    assert fork.session_id != log.session_id and "in use" in loaded.warnings[-1]
    fork.close()
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    gone = f"{__import__('os').uname().nodename}:{child.stdout.strip()}:dead"
    storage = store.storage
    assert isinstance(storage, SqliteSessionStorage)
    with storage._transaction() as db:  # a claim left by a process that died without letting go
        db.execute("UPDATE sessions SET owner = ? WHERE session_id = ?", (gone, log.session_id))
    reopened, again = store.open(log.session_id, tmp_path)
    assert again.session_id == log.session_id and reopened.warnings == []
    again.close()
    log.close()


def test_setup_failures_are_one_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from piton import AgentOptions
    from piton.api import HookMatcher, PitonError

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(PitonError, match="ANTHROPIC_API_KEY"):
        _run(_all("hi", AgentOptions(cwd=project)))
    provider = ScriptedProvider()
    with pytest.raises(PitonError, match=r"^hooks: Stop hooks cannot be Python functions"):
        _run(_all("hi", AgentOptions(cwd=project, provider=provider, hooks={"Stop": [HookMatcher()]})))
    with pytest.raises(PitonError, match=r"^no session no-such-session"):
        _run(_all("hi", AgentOptions(cwd=project, provider=provider, resume="no-such-session")))
    provider.assert_complete()


def test_an_unknown_slash_command_makes_no_turn(project: Path) -> None:
    from piton import AgentOptions

    provider = ScriptedProvider()
    messages = _run(_all("/no-such-command now", AgentOptions(cwd=project, provider=provider)))
    assert messages[-1].is_error and "no-such-command" in messages[-1].text
    assert provider.requests == []


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "library"


def _example(name: str, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
    )


def test_the_examples_run(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "README.md").write_text("one two three\nfour\n")
    fake_api.add(Reply([Text("It is a small project.")]))
    quick = _example("quickstart.py", project, "What is this?")
    assert quick.returncode == 0, quick.stderr
    assert quick.stdout.splitlines()[0] == "It is a small project."
    assert quick.stdout.splitlines()[1].startswith("[success] $0.")

    fake_api.add(Reply([ToolCall("word_count", {"path": "README.md"})]), Reply([Text("4 words... no, 4.")]))
    counted = _example("custom_tool.py", project)
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout.split("tool: ", 1)[1].split("\nanswer:")[0]) == {"lines": 2, "words": 4}

    fake_api.add(
        Reply([ToolCall("Write", {"file_path": str(project / "docs" / "notes.md"), "content": "hello\n"})]),
        Reply([Text("Wrote it.")]),
        Reply([ToolCall("Bash", {"command": "git push --force"})]),
        Reply([Text("The hook refused.")]),
    )
    guarded = _example("guarded_session.py", project)
    assert guarded.returncode == 0, guarded.stderr
    assert (project / "docs" / "notes.md").read_text() == "hello\n"
    assert "force pushes are not allowed" in json.dumps(fake_api.requests[-1].body["messages"][-1])
    assert guarded.stdout.splitlines()[-1] == "stored sessions: True"
    assert (project / "sessions.db").is_file()

    fake_api.add(
        Stall(Reply([Text("once upon a time " * 30)], chunk=8), after=5, seconds=30),
        Reply([Text("The end.")]),
    )
    stopped = _example("interrupt.py", project)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.splitlines() == [
        "first turn: error_during_execution: interrupted by the caller",
        "second turn: The end.",
    ]


def test_what_must_not_pass_silently(project: Path, tmp_path: Path) -> None:
    """A Python guard that raises refuses the call; a log that cannot be written is said; a tool
    named like a built-in is refused before any session is opened."""
    from piton import AgentOptions, tool
    from piton.api import HookMatcher, PitonError, SqliteSessionStorage, SystemMessage
    from piton.core.conversation.messages import ToolResultBlock

    def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        raise KeyError("stage")

    class FullDisk(SqliteSessionStorage):
        def append(self, project: str, session_id: str, lines: bytes) -> None:
            raise OSError(28, "No space left on device")

    provider = ScriptedProvider(
        Reply([ToolCall("Bash", {"command": "touch deployed"})]), Reply([Text("deployed?")])
    )
    options = AgentOptions(
        cwd=project,
        provider=provider,
        allowed_tools=["Bash"],
        hooks={"PreToolUse": [HookMatcher(hooks=[guard])]},
        session_storage=FullDisk(tmp_path / "full.db"),
    )
    messages = _run(_all("deploy", options))
    assert not (project / "deployed").exists()
    (result,) = provider.requests[1].messages[-1].content
    assert isinstance(result, ToolResultBlock)
    assert result.is_error and "the hook failed" in str(result.content)
    notices = [m.data["text"] for m in messages if isinstance(m, SystemMessage) and m.subtype == "notice"]
    assert any("No space left on device" in n for n in notices), notices

    @tool
    def Read(path: str) -> str:
        return ""

    @tool
    def memory(note: str) -> str:
        return ""

    storage = SqliteSessionStorage(tmp_path / "s.db")
    with pytest.raises(PitonError, match=r"^tool memory: a tool of that name is already offered$"):
        _run(
            _all(
                "hi",
                AgentOptions(
                    cwd=project, provider=ScriptedProvider(), tools=[memory], session_storage=storage
                ),
            )
        )
    with pytest.raises(PitonError, match=r"^tool Read: a tool of that name is already offered$"):
        _run(
            _all(
                "hi",
                AgentOptions(cwd=project, provider=ScriptedProvider(), tools=[Read], session_storage=storage),
            )
        )
    assert storage.sessions() == []


def test_partial_messages_start_afresh_after_an_interrupt(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton import Agent, AgentOptions
    from piton.api import StreamEvent

    fake_api.add(
        Stall(Reply([Text("a long story " * 40)], chunk=10), after=6, seconds=30), Reply([Text("short")])
    )

    async def go() -> list[Any]:
        async with Agent(AgentOptions(cwd=project, builtin_tools=[], include_partial_messages=True)) as agent:
            async for message in agent.query("tell a story"):
                if isinstance(message, StreamEvent) and message.event["type"] == "content_block_delta":
                    await agent.interrupt()
            return [m async for m in agent.query("shorter")]

    second = [m.event["type"] for m in _run(go()) if isinstance(m, StreamEvent)]
    assert second[:2] == ["message_start", "content_block_start"] and second[-1] == "message_stop"


def test_mcp_servers_given_as_options(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """A real MCP server (stdio) named in `AgentOptions.mcp_servers`: its tool is offered and called."""
    from piton import AgentOptions

    server = str(Path(__file__).parents[1] / "fixtures" / "mcp_server.py")
    fake_api.add(Reply([ToolCall("mcp__fixture__echo", {"text": "ping"})]), Reply([Text("it echoed")]))
    options = AgentOptions(
        cwd=project,
        mcp_servers={"fixture": {"command": sys.executable, "args": [server]}},
        allowed_tools=["mcp__fixture__echo"],
    )
    messages = _run(_all("echo ping", options))
    init = messages[0].to_dict()
    assert init["subtype"] == "init" and {"name": "fixture", "status": "connected"} in init["mcp_servers"]
    assert "mcp__fixture__echo" in [t["name"] for t in fake_api.requests[0].body["tools"]]
    (echoed,) = _tool_results(fake_api.requests[1].body)
    assert "ping" in _text(echoed) and not echoed.get("is_error")
    assert messages[-1].text == "it echoed"


def test_the_model_and_the_mode_change_from_the_next_turn(project: Path) -> None:
    from piton import Agent, AgentOptions

    provider = ScriptedProvider(
        Reply([Text("one")]),
        Reply([ToolCall("Write", {"file_path": str(project / "w.txt"), "content": "x"})]),
        Reply([Text("refused")]),
    )

    async def go() -> None:
        async with Agent(
            AgentOptions(cwd=project, provider=provider, permission_mode="acceptEdits")
        ) as agent:
            [m async for m in agent.query("first")]
            agent.set_model("haiku")
            agent.set_permission_mode("plan")
            [m async for m in agent.query("second")]
            with pytest.raises(ValueError, match="not a permission mode"):
                agent.set_permission_mode("yolo")

    _run(go())
    assert provider.requests[0].model != provider.requests[1].model
    assert provider.requests[1].model.startswith("claude-haiku")
    assert not (project / "w.txt").exists()  # plan mode: nothing is written
    provider.assert_complete()


def test_the_library_caller_hears_of_a_fork_and_of_damaged_rows_in_sqlite(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    """What the command line says about a stored session, the library's caller is told too
    (`Agent.notices`): a session in use goes on in a new one, and damaged rows are skipped."""
    import sqlite3

    from piton import Agent, AgentOptions
    from piton.api import SqliteSessionStorage
    from piton.core.conversation.storage import StorageStore

    storage = SqliteSessionStorage(tmp_path / "sessions.db")
    fake_api.add(Reply([Text("first")]), Reply([Text("second")]), Reply([Text("third")]))

    async def turn(options: AgentOptions, prompt: str) -> tuple[str, list[str]]:
        async with Agent(options) as agent:
            async for _ in agent.query(prompt):
                pass
            return agent.session_id, agent.notices()

    first, _ = _run(turn(AgentOptions(cwd=project, session_storage=storage), "one"))
    with sqlite3.connect(storage.path) as db:
        (project_key, seq) = db.execute(
            "SELECT project, MAX(seq) FROM entries WHERE session_id = ?", (first,)
        ).fetchone()
        db.execute("INSERT INTO entries VALUES (?, ?, ?, ?)", (project_key, first, seq + 1, b"{not json\n"))
    resumed, told = _run(turn(AgentOptions(cwd=project, session_storage=storage, resume=first), "two"))
    assert resumed == first and any("damaged" in t or "skipped" in t for t in told), told
    assert not any(".jsonl" in t for t in told), f"a notice names a file this store never writes: {told}"
    holder = StorageStore(storage).open(first, project)[1]  # another writer holds it
    assert holder.where == f"session {first} in {storage.path}"  # what its disk errors name
    try:
        forked, told = _run(turn(AgentOptions(cwd=project, session_storage=storage, resume=first), "three"))
    finally:
        holder.close()
    assert forked != first and any("in use" in t for t in told), told
