"""`run_control` in process: stream-json input and the control protocol, with the scripted provider.

A test plays the client: it writes lines into a pipe that is Piton's stdin and reads the JSON
lines Piton writes, answering Piton's own control requests as the Agent SDK would.
"""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from piton.cli.control import run_control
from piton.cli.headless import HeadlessOptions, Streams
from piton.core.options import RunOptions
from piton.testing import ScriptedProvider, ToolCall, reply
from tests.fakes.tools import Probe

TIMEOUT = 20.0


class Lines(io.TextIOBase):
    """Piton's stdout: every line must be JSON; tests wait for the ones they expect."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._partial = ""
        self._cond = threading.Condition()

    def write(self, s: str) -> int:
        with self._cond:
            self._partial += s
            *done, self._partial = self._partial.split("\n")
            self.lines.extend(json.loads(line) for line in done if line)
            self._cond.notify_all()
        return len(s)

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], start: int = 0) -> tuple[int, dict[str, Any]]:
        with self._cond:
            found: list[tuple[int, dict[str, Any]]] = []

            def seen() -> bool:
                found[:] = [(i, x) for i, x in enumerate(self.lines) if i >= start and pred(x)][:1]
                return bool(found)

            assert self._cond.wait_for(seen, TIMEOUT), f"no such line in {self.lines}"
            return found[0]


class Client:
    def __init__(self, options: HeadlessOptions, provider: ScriptedProvider, tools: list[Any]) -> None:
        read, write = os.pipe()
        self.stdin = os.fdopen(write, "w")
        self.out = Lines()
        self.err = io.StringIO()
        streams = Streams(stdin=os.fdopen(read, "r"), stdout=self.out, stderr=self.err)  # type: ignore[arg-type]
        self.code: int | None = None
        self._ids = 0

        def serve() -> None:
            self.code = run_control(options, provider=provider, tools=tools, streams=streams)

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def send(self, data: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(data) + "\n")
        self.stdin.flush()

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        request_id = f"req_{self._ids}"
        self.send({"type": "control_request", "request_id": request_id, "request": request})
        _, line = self.out.wait_for(
            lambda x: x.get("type") == "control_response" and x["response"].get("request_id") == request_id
        )
        response: dict[str, Any] = line["response"]
        return response

    def ask(self, text: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": text}, "session_id": "default"})

    def result(self, start: int = 0) -> tuple[int, dict[str, Any]]:
        return self.out.wait_for(lambda x: x.get("type") == "result", start)

    def answer(self, request_line: dict[str, Any], response: dict[str, Any]) -> None:
        self.send(
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": request_line["request_id"],
                    "response": response,
                },
            }
        )

    def close(self) -> int | None:
        self.stdin.close()
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), "piton did not end when its input closed"
        return self.code


@pytest.fixture
def start(project: Path) -> Iterator[Callable[..., Client]]:
    clients: list[Client] = []

    def make(provider: ScriptedProvider, tools: list[Any] | None = None, **options: Any) -> Client:
        fields = RunOptions.__dataclass_fields__
        run = RunOptions(cwd=project, **{k: options.pop(k) for k in list(options) if k in fields})
        headless = HeadlessOptions(run, None, "stream-json", True, input_format="stream-json", **options)
        client = Client(headless, provider, tools or [])
        clients.append(client)
        return client

    yield make
    for client in clients:
        if not client.stdin.closed:
            client.close()


def test_initialize_then_two_turns_share_one_conversation(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply("First answer."), reply("Second answer."))
    client = start(provider)
    init = client.control({"subtype": "initialize", "hooks": None})
    assert init["subtype"] == "success"
    info = init["response"]
    assert {"commands", "agents", "output_style", "models"} <= info.keys()
    assert any(m["value"] == "sonnet" for m in info["models"])
    client.ask("one?")
    end, first = client.result()
    assert (first["subtype"], first["result"]) == ("success", "First answer.")
    client.ask("two?")
    _, second = client.result(end + 1)
    assert second["result"] == "Second answer."
    assert client.close() == 0
    texts = [m.text for m in provider.requests[1].messages]
    assert texts == ["one?", "First answer.", "two?"], "the second turn sees the first"
    inits = [x for x in client.out.lines if x.get("subtype") == "init"]
    assert len(inits) == 2, "one system/init per turn"
    assert inits[0]["permissionMode"] == "default" and inits[0]["claude_code_version"]
    assert {"slash_commands", "agents", "skills", "tools"} <= inits[0].keys()


def test_interrupt_ends_the_turn_and_the_next_one_runs(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply("x" * 400), reply("After."), delay_s=0.05)
    client = start(provider)
    client.control({"subtype": "initialize"})
    client.ask("long one")
    client.out.wait_for(lambda x: x.get("subtype") == "init")
    assert client.control({"subtype": "interrupt"})["subtype"] == "success"
    end, interrupted = client.result()
    assert interrupted["subtype"] == "error_during_execution" and interrupted["is_error"]
    provider.delay_s = 0
    client.ask("again")
    _, after = client.result(end + 1)
    assert after["result"] == "After."
    client.close()
    history = [m.text for m in provider.requests[1].messages]
    assert history[0] == "long one" and "interrupted" in history[1] and history[-1] == "again"


def test_can_use_tool_allows_one_call_and_denies_another(start: Callable[..., Client]) -> None:
    act = Probe("Act")
    provider = ScriptedProvider(
        reply(ToolCall("Act", {"text": "first"})),
        reply(ToolCall("Act", {"text": "second"})),
        reply("Done."),
    )
    client = start(provider, [act], permission_prompt_tool="stdio")
    client.control({"subtype": "initialize"})
    client.ask("act twice")
    at, ask1 = client.out.wait_for(lambda x: x.get("type") == "control_request")
    assert ask1["request"]["subtype"] == "can_use_tool"
    assert ask1["request"]["tool_name"] == "Act" and ask1["request"]["input"] == {"text": "first"}
    assert ask1["request"]["tool_use_id"] and ask1["request"]["permission_suggestions"]
    client.answer(ask1, {"behavior": "allow", "updatedInput": {"text": "first"}})
    _, ask2 = client.out.wait_for(lambda x: x.get("type") == "control_request", at + 1)
    client.answer(ask2, {"behavior": "deny", "message": "not the second one"})
    _, result = client.result()
    assert result["result"] == "Done."
    assert act.log == ["start first", "end first"]
    client.close()
    [denied] = [b for b in provider.requests[2].messages[-1].tool_results if b.is_error]
    assert "not the second one" in str(denied.content)
    assert [d["tool_input"] for d in result["permission_denials"]] == [{"text": "second"}]
    user = next(x for x in client.out.lines if x.get("type") == "user")
    assert user["tool_use_result"] == "Act: first"


def test_a_pre_tool_use_hook_blocks_a_call(start: Callable[..., Client]) -> None:
    act = Probe("Act")
    provider = ScriptedProvider(reply(ToolCall("Act", {"text": "rm"})), reply("Blocked, fine."))
    client = start(provider, [act], permission_mode="bypassPermissions")
    hooks = {"PreToolUse": [{"matcher": "Act", "hookCallbackIds": ["hook_0"]}]}
    client.control({"subtype": "initialize", "hooks": hooks})
    client.ask("do it")
    _, ask = client.out.wait_for(lambda x: x.get("type") == "control_request")
    request = ask["request"]
    assert (request["subtype"], request["callback_id"]) == ("hook_callback", "hook_0")
    assert request["input"]["hook_event_name"] == "PreToolUse"
    assert request["input"]["tool_name"] == "Act" and request["input"]["tool_input"] == {"text": "rm"}
    client.answer(ask, {"decision": "block", "reason": "no removals"})
    _, result = client.result()
    assert result["result"] == "Blocked, fine."
    assert act.log == [], "a blocked call never runs"
    client.close()
    assert "no removals" in json.dumps(provider.requests[1].messages[-1].to_wire())


def test_session_start_and_end_callbacks_frame_the_session(start: Callable[..., Client]) -> None:
    """SessionStart and SessionEnd, which the Python SDK's types leave out but the TypeScript SDK
    registers: the first adds context to the first turn, the second hears the session close."""
    provider = ScriptedProvider(reply("Hello."))
    client = start(provider)
    hooks = {
        "SessionStart": [{"matcher": None, "hookCallbackIds": ["start_0"]}],
        "SessionEnd": [{"matcher": None, "hookCallbackIds": ["end_0"]}],
    }
    client.control({"subtype": "initialize", "hooks": hooks})
    client.ask("hi")
    at, ask = client.out.wait_for(lambda x: x.get("type") == "control_request")
    assert (ask["request"]["callback_id"], ask["request"]["input"]["source"]) == ("start_0", "startup")
    context = {"hookEventName": "SessionStart", "additionalContext": "CTX-ON-CALL: Ada"}
    client.answer(ask, {"hookSpecificOutput": context})
    client.result()
    client.close()  # as the SDK ends a run: its input closes, and it goes on reading
    _, end = client.out.wait_for(lambda x: x.get("type") == "control_request", at + 1)
    assert (
        end["request"]["callback_id"] == "end_0"
        and end["request"]["input"]["hook_event_name"] == "SessionEnd"
    )
    assert "SessionEnd hook" not in client.err.getvalue()  # not a failure to tell anyone about
    assert "CTX-ON-CALL: Ada" in json.dumps([m.to_wire() for m in provider.requests[0].messages])


def test_permission_mode_and_model_change_between_turns(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply("one"), reply("two"))
    client = start(provider)
    client.control({"subtype": "initialize"})
    assert client.control({"subtype": "set_permission_mode", "mode": "plan"})["subtype"] == "success"
    bad = client.control({"subtype": "set_permission_mode", "mode": "yolo"})
    assert bad["subtype"] == "error" and "yolo" in bad["error"]
    client.ask("hi")
    end, _ = client.result()
    assert client.control({"subtype": "set_model", "model": "opus"})["subtype"] == "success"
    client.ask("again")
    client.result(end + 1)
    client.close()
    inits = [x for x in client.out.lines if x.get("subtype") == "init"]
    assert inits[0]["permissionMode"] == "plan"
    assert provider.requests[0].model != "claude-opus-5-5" and provider.requests[1].model == "claude-opus-5-5"


def test_unsupported_requests_are_errors_not_crashes(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply("still here"))
    client = start(provider)
    mcp = client.control({"subtype": "mcp_message", "server_name": "x", "message": {}})
    assert mcp["subtype"] == "error" and "mcp_message goes to the client" in mcp["error"]
    assert client.control({"subtype": "frobnicate"})["subtype"] == "error"
    client.stdin.write("not json\n")
    client.ask("hi")
    assert client.result()[1]["result"] == "still here"
    assert client.close() == 0
    assert "not JSON" in client.err.getvalue()


def test_partial_messages_rebuild_the_api_stream_events(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply("Hello there."))
    client = start(provider, include_partial_messages=True)
    client.ask("hi")
    client.result()
    client.close()
    events = [x["event"] for x in client.out.lines if x.get("type") == "stream_event"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds[1] == "content_block_start" and "content_block_stop" in kinds
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "Hello there."
    streamed = [x for x in client.out.lines if x.get("type") == "stream_event"]
    assert all(x["session_id"] and x["uuid"] and x["parent_tool_use_id"] is None for x in streamed)


def test_max_turns_result_carries_errors(start: Callable[..., Client]) -> None:
    provider = ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})))
    client = start(provider, [Probe("Echo", read_only=True)], max_turns=1)
    client.ask("loop")
    _, result = client.result()
    client.close()
    assert result["subtype"] == "error_max_turns" and result["is_error"]
    assert result["errors"] and "maximum of 1 turns" in result["errors"][0]
