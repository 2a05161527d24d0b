"""`piton -p` in process: output formats, prompt reading and error lines, with the scripted provider."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from piton.cli.headless import HeadlessOptions, Streams, read_prompt, run_headless
from piton.core.conversation.session import SessionStore
from piton.core.options import RunOptions
from piton.core.providers import ProviderError
from piton.core.subagents import AGENT_TOOLS, SCHEDULE_TOOLS
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Boom, Probe
from tests.helpers import wait_until


def run(
    provider: ScriptedProvider,
    prompt: str | None = "hi",
    *,
    fmt: str = "text",
    verbose: bool = False,
    **run_options: Any,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    options = HeadlessOptions(RunOptions(cwd=Path.cwd(), **run_options), prompt, fmt, verbose)
    streams = Streams(stdin=None, stdout=out, stderr=err)
    code = run_headless(
        options, provider=provider, tools=[Probe("Echo", read_only=True), Boom()], streams=streams
    )
    return code, out.getvalue(), err.getvalue()


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_text_mode_prints_only_the_final_answer(project: Path) -> None:
    provider = ScriptedProvider(
        reply("Let me look.", ToolCall("Echo", {"text": "x"})), reply("main.py prints hi.")
    )
    code, out, err = run(provider)
    assert (code, out, err) == (0, "main.py prints hi.\n", "")
    assert provider.closed, "the provider is closed on the loop that used it"


def test_json_mode_prints_one_result_object(project: Path) -> None:
    provider = ScriptedProvider(reply("The answer.", input_tokens=1000, output_tokens=20))
    code, out, _ = run(provider, fmt="json")
    [result] = lines(out)
    assert code == 0
    assert {k: result[k] for k in ("type", "subtype", "is_error", "result", "num_turns")} == {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "The answer.",
        "num_turns": 1,
    }
    assert result["usage"] == {
        "input_tokens": 1000,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 20,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
    }
    assert result["total_cost_usd"] == pytest.approx((1000 * 3 + 20 * 15) / 1e6)
    assert isinstance(result["duration_ms"], int) and isinstance(result["duration_api_ms"], int)
    assert result["session_id"] == SessionStore().latest(project)


def test_stream_json_emits_init_assistant_user_and_result_lines(project: Path) -> None:
    call = ToolCall("Echo", {"text": "x"})
    provider = ScriptedProvider(reply(call), reply("done"))
    code, out, _ = run(provider, fmt="stream-json", verbose=True)
    events = lines(out)
    assert [(e["type"], e.get("subtype")) for e in events] == [
        ("system", "init"),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("result", "success"),
    ]
    init = events[0]
    assert (
        init["cwd"] == str(project)
        and init["model"] == "claude-sonnet-5-5"
        and init["tools"]
        == [
            "Echo",
            "Boom",
            "Skill",
            "Task",
            *AGENT_TOOLS,
            *SCHEDULE_TOOLS,
        ]
    )
    assert len({e["session_id"] for e in events}) == 1
    assert events[1]["message"]["content"] == [
        {"type": "tool_use", "id": call.id, "name": "Echo", "input": {"text": "x"}}
    ]
    assert events[1]["message"]["role"] == "assistant" and events[1]["parent_tool_use_id"] is None
    assert events[2]["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": call.id, "content": "Echo: x"}
    ]
    assert code == 0


def test_verbose_text_mode_shows_tool_calls_on_stderr(project: Path) -> None:
    calls = (ToolCall("Echo", {"text": "src/app.py"}), ToolCall("Boom", {"text": "now"}))
    code, out, err = run(ScriptedProvider(reply(*calls), reply("ok")), verbose=True, allowed_tools=["Boom"])
    assert (code, out) == (0, "ok\n")
    assert err.splitlines() == [
        "● Echo(src/app.py)",
        "● Boom(now)",
        "  ⎿ Boom failed: RuntimeError: boom: now",
    ]


def test_an_api_error_is_one_line_on_stderr_and_exit_1(project: Path) -> None:
    provider = ScriptedProvider(
        ProviderError("API error 401: invalid x-api-key (check ANTHROPIC_API_KEY)", kind="auth")
    )
    code, out, err = run(provider)
    assert (code, out) == (1, "")
    assert err == "piton: API error 401: invalid x-api-key (check ANTHROPIC_API_KEY)\n"


def test_an_api_error_in_json_mode_is_an_error_result(project: Path) -> None:
    provider = ScriptedProvider(ProviderError("API error 400: bad", kind="invalid_request"))
    code, out, _ = run(provider, fmt="json")
    [result] = lines(out)
    assert code == 1
    assert (result["subtype"], result["is_error"], result["errors"]) == (
        "error_during_execution",
        True,
        ["API error 400: bad"],
    )


def test_max_turns_is_an_error_max_turns_result(project: Path) -> None:
    provider = ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})))
    code, out, _ = run(provider, fmt="json", max_turns=1)
    assert code == 1
    assert lines(out)[0]["subtype"] == "error_max_turns"


def test_a_bug_is_one_line_without_verbose_and_a_trace_with_it(project: Path) -> None:
    def broken(_: object) -> Any:
        raise KeyError("unexpected")

    code, _, err = run(ScriptedProvider(broken))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("piton: internal error: KeyError")
    code, _, err = run(ScriptedProvider(broken), verbose=True)
    assert code == 1 and "Traceback (most recent call last)" in err


def test_no_prompt_is_a_clear_error(project: Path) -> None:
    code, _, err = run(ScriptedProvider(), prompt="   ")
    assert (code, err) == (1, "piton: no prompt: pass one as an argument or on standard input\n")


def test_an_unknown_session_to_resume_is_a_clear_error(project: Path) -> None:
    code, _, err = run(ScriptedProvider(), resume="does-not-exist")
    assert code == 1 and err.startswith("piton: no session does-not-exist")


def test_continue_without_an_earlier_session_starts_a_new_one(project: Path) -> None:
    code, out, err = run(ScriptedProvider(reply("fresh")), continue_latest=True)
    assert (code, out) == (0, "fresh\n")
    assert "no earlier session in this directory" in err


def test_broken_settings_are_reported_and_ignored(project: Path) -> None:
    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text("{oops")
    code, out, err = run(ScriptedProvider(reply("fine")))
    assert (code, out) == (0, "fine\n")
    assert "ignored" in err and "settings.json" in err


def _pipe(text: str) -> io.TextIOWrapper:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, text.encode())
    os.close(write_fd)
    return open(read_fd, encoding="utf-8")


def test_prompt_comes_from_piped_stdin() -> None:
    """Byte for byte: a harness checks the transcript's first message against what it piped."""
    with _pipe("summarise README.md\n") as stdin:
        assert read_prompt(None, stdin) == "summarise README.md\n"
    with _pipe("  \n") as stdin:
        assert read_prompt(None, stdin) == ""


def test_piped_stdin_is_appended_to_a_prompt_argument() -> None:
    with _pipe("line 1\nline 2\n") as stdin:
        assert read_prompt("explain this log", stdin) == "explain this log\n\nline 1\nline 2"


def test_a_terminal_devnull_or_closed_stdin_is_not_read() -> None:
    controller, terminal = os.openpty()
    try:
        os.write(controller, b"typed at the terminal\n\x04")  # a wrong read would return it, not hang
        with open(terminal, encoding="utf-8", closefd=False) as tty:
            assert read_prompt("hi", tty) == "hi"
    finally:
        os.close(controller)
        os.close(terminal)
    with open(os.devnull, encoding="utf-8") as devnull:
        assert read_prompt("hi", devnull) == "hi"
    assert read_prompt("hi", None) == "hi"


def test_a_slow_pipe_is_waited_for_with_a_note_on_stderr() -> None:
    read_fd, write_fd = os.pipe()
    err = io.StringIO()

    def late_writer() -> None:  # the data comes once Piton has said it waits for it
        wait_until(lambda: "waiting" in err.getvalue(), "note on stderr")
        os.write(write_fd, b"late data")
        os.close(write_fd)

    writer = threading.Thread(target=late_writer)
    writer.start()
    with open(read_fd, encoding="utf-8") as stdin:
        assert read_prompt("q", stdin, err, patience_s=0.05) == "q\n\nlate data"
    writer.join()
    assert err.getvalue() == "piton: waiting for standard input to end (pass < /dev/null to give none)\n"


def test_verbose_mode_shows_the_diff_of_each_write(project: Path) -> None:
    from piton.builtin_tools.write import Write

    out, err = io.StringIO(), io.StringIO()
    provider = ScriptedProvider(
        reply(ToolCall("Write", {"file_path": "hello.py", "content": "print('hi')\n"})), reply("ok")
    )
    options = HeadlessOptions(RunOptions(cwd=project, permission_mode="acceptEdits"), "go", "text", True)
    code = run_headless(
        options, provider=provider, tools=[Write()], streams=Streams(stdin=None, stdout=out, stderr=err)
    )
    assert code == 0
    assert err.getvalue().splitlines() == [
        "● Write(hello.py)",
        "    --- /dev/null",
        "    +++ b/hello.py",
        "    @@ -0,0 +1 @@",
        "    +print('hi')",
    ]


def test_verbose_text_mode_reports_a_compaction_on_stderr(project: Path) -> None:
    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text('{"contextWindow": 20000}')

    def steps() -> ScriptedProvider:
        return ScriptedProvider(
            reply("Looking.", ToolCall("Echo", {"text": "x"}), input_tokens=16_000),
            reply("## Summary\nLooked."),
            reply("Done."),
        )

    code, out, err = run(steps(), verbose=True)
    assert (code, out) == (0, "Done.\n")
    [line] = [x for x in err.splitlines() if "compacted" in x]
    assert line.startswith("piton: compacted the conversation (auto, earlier part summarised): 16,")
    code, out, err = run(steps())
    assert (code, out, err) == (0, "Done.\n", ""), "without --verbose, only the answer"
