"""The `piton` command, end to end: real HTTP to the fake API. What the process itself does (its
output streams, standard input, signals, a reader that goes away, exit codes) runs the installed
command; what an option does runs the same routing in this process (`piton_here`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from piton import __version__
from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import INTERRUPTED_REQUEST
from piton.core.conversation.session import SessionStore, load_session
from piton.core.subagents import AGENT_TOOLS, SCHEDULE_TOOLS
from piton.testing.script import HttpError, MidStreamError, Thinking, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI, Hold, Stall
from tests.helpers import CEILING_S, piton_here

PITON = str(Path(sys.executable).with_name("piton"))


def piton(
    *args: str, stdin: str | None = None, timeout: float = CEILING_S, **popen: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PITON, *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **popen,
    )


def user_texts(body: dict[str, Any]) -> list[str]:
    return [
        b["text"]
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "text"
    ]


def test_version_is_printed(project: Path) -> None:
    done = piton("--version")
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, f"piton {__version__}", "")


def test_print_answers_on_stdout(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(Thinking("Short question."), "main.py prints hello."))
    done = piton("-p", "explain what main.py does")
    assert (done.returncode, done.stdout, done.stderr) == (0, "main.py prints hello.\n", "")
    body = fake_api.bodies[0]
    assert user_texts(body) == ["explain what main.py does"]
    assert body["model"] == "claude-sonnet-5-5" and body["thinking"] == {"type": "adaptive"}
    assert f"Working directory: {project}" in body["system"][0]["text"]


def test_prompt_from_stdin(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("It is a README."))
    done = piton("-p", stdin="summarise README.md\n")
    assert done.stdout == "It is a README.\n"
    assert user_texts(fake_api.bodies[0]) == ["summarise README.md\n"]  # as it was piped


def test_json_output_is_one_result_object(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Answer.", input_tokens=2000, output_tokens=40))
    done = piton("-p", "q", "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 0 and done.stdout.count("\n") == 1
    assert (result["type"], result["subtype"], result["is_error"], result["result"]) == (
        "result",
        "success",
        False,
        "Answer.",
    )
    assert result["usage"]["input_tokens"] == 2000 and result["usage"]["output_tokens"] == 40
    assert result["total_cost_usd"] > 0 and result["num_turns"] == 1
    assert (SessionStore().project_dir(project) / f"{result['session_id']}.jsonl").is_file()


def test_stream_json_lines(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(Thinking("Easy one."), "Done."))
    done = piton("-p", "say done", "--output-format", "stream-json", "--verbose")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["type"], e.get("subtype")) for e in events]
    assert kinds == [
        ("system", "init"),
        ("system", "thinking_tokens"),
        ("assistant", None),
        ("assistant", None),
        ("result", "success"),
    ]
    assert events[0]["cwd"] == str(project)
    assert [b["type"] for e in events[2:4] for b in e["message"]["content"]] == ["thinking", "text"]
    assert [e["message"]["stop_reason"] for e in events[2:4]] == [None, None]  # as Claude Code's
    assert events[-1]["result"] == "Done." and events[-1]["num_turns"] == 1
    assert done.returncode == 0


def test_continue_and_resume_carry_the_conversation(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("First answer."), reply("Second answer."), reply("Third answer."))
    first = json.loads(piton_here("-p", "first question", "--output-format", "json").stdout)
    second = json.loads(
        piton_here("-p", "and now the tests?", "--continue", "--output-format", "json").stdout
    )
    assert second["session_id"] == first["session_id"]
    assert user_texts(fake_api.bodies[1]) == ["first question", "and now the tests?"]
    assert fake_api.bodies[1]["messages"][1]["content"][0]["text"] == "First answer."
    third = piton_here("-p", "third", "--resume", first["session_id"])
    assert third.stdout == "Third answer.\n"
    assert user_texts(fake_api.bodies[2]) == ["first question", "and now the tests?", "third"]


def test_resume_survives_a_corrupt_last_line(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("One."), reply("Two."))
    session_id = json.loads(piton_here("-p", "one", "--output-format", "json").stdout)["session_id"]
    path = SessionStore().project_dir(project) / f"{session_id}.jsonl"
    with path.open("a") as f:
        f.write('{"schema_version": 1, "type": "message", "mess')
    done = piton_here("-p", "two", "--resume", session_id)
    assert done.returncode == 0 and done.stdout == "Two.\n"
    assert "last line is corrupt" in done.stderr
    assert user_texts(fake_api.bodies[1]) == ["one", "two"]


def test_flags_reach_the_request(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"))
    piton_here(
        "-p", "q", "--model", "opus", "--thinking", "off", "--append-system-prompt", "Answer in French."
    )
    body = fake_api.bodies[0]
    assert body["model"] == "claude-opus-5-5"
    assert "thinking" not in body
    assert body["system"][0]["text"].endswith("Answer in French.")


def test_a_mid_stream_error_is_retried_without_duplicating_output(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Partial answer that is lost", fault=MidStreamError(after=6)), reply("Whole answer."))
    done = piton_here("-p", "q", "--verbose")
    assert (done.returncode, done.stdout) == (0, "Whole answer.\n")
    assert "retrying" in done.stderr and "overloaded_error" in done.stderr
    assert len(fake_api.requests) == 2


def test_an_auth_error_is_one_line_and_exit_1(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(HttpError(401, "authentication_error", "invalid x-api-key"))
    done = piton_here("-p", "q")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "piton: API error 401: invalid x-api-key (check ANTHROPIC_API_KEY)\n"
    assert len(fake_api.requests) == 1


def test_a_missing_api_key_says_what_to_do(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    done = piton("-p", "q")
    assert done.returncode == 1
    assert done.stderr.startswith("piton: ANTHROPIC_API_KEY is not set.") and done.stderr.count("\n") == 1
    assert fake_api.requests == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_mid_answer_exits_130_and_leaves_a_valid_session(
    fake_api: FakeAnthropicAPI, project: Path, sig: signal.Signals
) -> None:
    fake_api.add(Stall(reply("word " * 400, chunk=5), after=20, seconds=CEILING_S))
    proc = subprocess.Popen(
        [PITON, "-p", "write a long answer"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fake_api.wait_for_silence()  # well into the stream, which goes no further until the signal
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=CEILING_S)
    assert proc.returncode == 128 + sig  # as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM
    assert out == "" and "interrupted" in err and "Traceback" not in err
    session_id = SessionStore().latest(project)
    assert session_id is not None
    loaded = load_session(SessionStore().project_dir(project) / f"{session_id}.jsonl", session_id)
    assert loaded.warnings == [] and is_valid(loaded.messages)
    assert [m.text for m in loaded.messages] == ["write a long answer", INTERRUPTED_REQUEST]


def test_without_print_the_missing_repl_is_explained(project: Path) -> None:
    done = piton_here("hello")
    assert done.returncode == 2 and "use piton -p" in done.stderr


def test_a_reader_that_goes_away_ends_the_run_quietly(fake_api: FakeAnthropicAPI, project: Path) -> None:
    # the reply waits for the reader to be gone before it goes on to the next line
    fake_api.add(Hold(reply("a slow answer"), marks=("a",)))
    proc = subprocess.Popen(
        [PITON, "-p", "q", "--output-format", "stream-json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    fake_api.resume()
    err = proc.stderr.read()
    proc.wait(timeout=CEILING_S)
    assert json.loads(first)["subtype"] == "init"
    assert proc.returncode == 141
    assert err == ""


def test_model_comes_from_the_environment_and_a_resumed_session_keeps_its_own(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any
) -> None:
    fake_api.add(reply("one"), reply("two"), reply("three"))
    monkeypatch.setenv("ANTHROPIC_MODEL", "haiku")
    piton_here("-p", "first")
    monkeypatch.delenv("ANTHROPIC_MODEL")
    piton_here("-p", "second", "--model", "opus")
    piton_here("-p", "third", "--continue")
    assert [b["model"] for b in fake_api.bodies] == ["claude-haiku-5-5", "claude-opus-5-5", "claude-opus-5-5"]


def test_an_auth_token_works_without_an_api_key(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "test-key")
    fake_api.add(reply("hello"))
    done = piton_here("-p", "q")
    assert (done.returncode, done.stdout) == (0, "hello\n")
    assert fake_api.requests[0].headers["authorization"] == "Bearer test-key"


def test_a_deprecated_model_works_with_a_notice(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("still here"))
    done = piton_here("-p", "q", "--model", "claude-sonnet-4-5-20250929")
    assert (done.returncode, done.stdout) == (0, "still here\n")
    assert done.stderr.count("\n") == 1 and "end-of-life" in done.stderr
    assert fake_api.bodies[0]["thinking"]["type"] == "enabled"


def test_a_non_retryable_error_mid_stream_is_one_line(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply("x", fault=MidStreamError(after=3, error_type="invalid_request_error", message="bad input"))
    )
    done = piton_here("-p", "q")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "piton: API error during the reply (invalid_request_error): bad input\n"
    assert len(fake_api.requests) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "q", "--output-format", "xml"], "Invalid value for '--output-format'"),
        (["-p", "q", "--max-turns", "0"], "Invalid value for '--max-turns'"),
        (["-p", "q", "--thinking", "maybe"], "Invalid value for '--thinking'"),
        (["--frobnicate"], "No such option: --frobnicate"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(project: Path, args: list[str], message: str) -> None:
    done = piton_here(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"piton: {message}") and done.stderr.count("\n") == 1
    assert done.stderr.endswith("(piton --help lists the options)\n")


def test_no_api_key_creates_no_session(fake_api: FakeAnthropicAPI, project: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    piton_here("-p", "q")
    assert SessionStore().latest(project) is None


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]


def test_a_tool_loop_with_the_built_in_tools(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "main.py").write_text("print('hello')\n")
    call = ToolCall("Read", {"file_path": "main.py"})
    fake_api.add(reply(Thinking("Read it first."), call), reply("It prints hello."))
    done = piton("-p", "what does main.py do?", "--output-format", "stream-json", "--verbose")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    # one assistant line per content block (thinking, then the call), as Claude Code streams them;
    # the thinking's estimated size before it
    assert [e["type"] for e in events if e.get("subtype") != "thinking_tokens"] == [
        "system",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "result",
    ]
    assert [e["estimated_tokens"] for e in events if e.get("subtype") == "thinking_tokens"] == [4]
    events = [e for e in events if e.get("subtype") != "thinking_tokens"]
    assert [b["type"] for e in events[1:3] for b in e["message"]["content"]] == ["thinking", "tool_use"]
    assert events[1]["message"]["id"] == events[2]["message"]["id"]
    assert events[0]["tools"] == [
        "Bash",
        "BashOutput",
        "KillShell",
        "Glob",
        "Grep",
        "Read",
        "Edit",
        "Write",
        "NotebookEdit",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "AskUserQuestion",
        "ExitPlanMode",
        "memory",
        "Skill",
        "Task",
        *AGENT_TOOLS,
        *SCHEDULE_TOOLS,
    ]
    assert events[3]["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": call.id, "content": "     1\tprint('hello')"}
    ]
    assert events[-1]["result"] == "It prints hello." and events[-1]["num_turns"] == 2
    assert fake_api.rejections == []  # tools defined, thinking block returned intact
    assert {t["name"] for t in fake_api.bodies[0]["tools"]} == set(events[0]["tools"])


def test_headless_runs_refuse_what_would_need_asking_and_report_it(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    call = ToolCall("Bash", {"command": "touch made-by-bash"})
    fake_api.add(reply(call), reply("I was not allowed."))
    result = json.loads(piton_here("-p", "make a file", "--output-format", "json").stdout)
    [refusal] = tool_results(fake_api.bodies[1])
    assert refusal["is_error"] and "nobody can approve it in a non-interactive run" in refusal["content"]
    assert '--allowedTools "Bash(touch:*)"' in refusal["content"]
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": call.id, "tool_input": {"command": "touch made-by-bash"}}
    ]
    assert not (project / "made-by-bash").exists()


@pytest.mark.sandbox
def test_allowed_tools_and_permission_modes_open_the_way(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Bash", {"command": "echo hi && pwd"})),
        reply("done"),
        reply(ToolCall("Write", {"file_path": "w.txt", "content": "written\n"})),
        reply("done"),
    )
    piton_here("-p", "go", "--allowedTools", "Bash(echo:*),Bash(pwd)")
    assert tool_results(fake_api.bodies[1])[0]["content"] == f"hi\n{project}"
    piton_here("-p", "go", "--permission-mode", "acceptEdits")
    assert (project / "w.txt").read_text() == "written\n"


@pytest.mark.sandbox
def test_plan_mode_and_a_read_only_sandbox_hold(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": "x.txt", "content": "x"})),
        reply("ok"),
        reply(ToolCall("Bash", {"command": "touch y.txt"})),
        reply("ok"),
    )
    piton_here("-p", "go", "--permission-mode", "plan", "--allowedTools", "Write")
    assert "plan mode allows only read-only tools" in tool_results(fake_api.bodies[1])[0]["content"]
    piton_here("-p", "go", "--sandbox", "read-only", "--permission-mode", "bypassPermissions")
    assert "Read-only file system" in tool_results(fake_api.bodies[3])[0]["content"]
    assert not (project / "x.txt").exists() and not (project / "y.txt").exists()


@pytest.mark.sandbox
def test_a_huge_tool_result_is_previewed_and_kept_whole(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "seq 1 400000"})), reply("many numbers"))
    done = piton_here("-p", "count", "--allowedTools", "Bash(seq:*)", "--output-format", "json")
    session_id = json.loads(done.stdout)["session_id"]
    [result] = tool_results(fake_api.bodies[1])
    assert len(result["content"]) < 25_000 and result["content"].startswith("1\n2\n3\n")
    assert result["content"].endswith("399999\n400000")  # the tail survives the cut
    log = SessionStore().project_dir(project) / f"{session_id}.jsonl"
    [handle] = [json.loads(line) for line in log.read_text().splitlines() if '"tool_result_handle"' in line]
    assert Path(handle["path"]).read_text().splitlines()[-1] == "400000"
    assert handle["path"] in result["content"]


def test_max_turns_stops_a_tool_loop(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "a.txt").write_text("a\n")
    fake_api.add(reply(ToolCall("Read", {"file_path": "a.txt"})))
    done = piton_here("-p", "q", "--max-turns", "1", "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["subtype"] == "error_max_turns" and result["num_turns"] == 1


def test_bad_permission_flags_are_one_line(project: Path) -> None:
    done = piton_here("-p", "q", "--allowedTools", "Bash(")
    assert done.returncode == 1 and done.stderr.startswith("piton: not a permission rule")
    done = piton_here("-p", "q", "--add-dir", "/no/such/dir")
    assert done.returncode == 2 and "'--add-dir': dir '/no/such/dir' does not exist" in done.stderr


def test_a_short_pdf_read_reaches_the_api_as_a_document(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from tests.fakes.pdf import pdf

    data = pdf(["Quarterly summary", "Revenue table"])
    (project / "q3.pdf").write_bytes(data)
    fake_api.add(reply(ToolCall("Read", {"file_path": "q3.pdf"})), reply("Revenue is up."))
    done = piton_here("-p", "what does q3.pdf say?")
    assert done.returncode == 0, done.stderr
    assert fake_api.rejections == []
    [result] = tool_results(fake_api.bodies[-1])
    document = result["content"][-1]
    assert document["type"] == "document" and document["source"]["media_type"] == "application/pdf"
    import base64

    assert base64.b64decode(document["source"]["data"]) == data
    session_id = SessionStore().latest(project)
    assert session_id is not None
    resumed = load_session(SessionStore().project_dir(project) / f"{session_id}.jsonl", session_id)
    assert is_valid(resumed.messages)  # the session log keeps it, and a resumed session can send it
    assert any(
        b.type == "document"
        for m in resumed.messages
        for r in m.content
        if r.type == "tool_result"
        for b in (r.content if isinstance(r.content, list) else [])
    )
