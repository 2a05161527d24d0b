"""Claude Code's print-mode flags, as programmatic clients pass them: the command line run as `piton`
runs it (in this process: the process itself is tested in test_piton_command), real HTTP to the fake
API. Each flag is accepted; each that Piton honours shows its effect in the request or the result,
and each it cannot honour yet says so in one line."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from piton.cli.command import expand_lists
from piton.core.conversation.session import SessionStore, load_session
from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S, piton_here

PITON = str(Path(sys.executable).with_name("piton"))


def piton(*args: str) -> subprocess.CompletedProcess[str]:
    return piton_here(*args)


def result_of(*args: str) -> dict[str, Any]:
    done = piton("-p", *args, "--output-format", "json")
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b for m in body["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"
    ]


def system_text(body: dict[str, Any]) -> str:
    return "\n\n".join(b["text"] for b in body.get("system", []))


def test_system_prompt_replaces_pitons_own_but_not_the_users_memory(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / "AGENTS.md").write_text("MEMORY-LINE: run the tests with make check.\n")
    fake_api.add(reply("ok"), reply("ok"))
    assert piton("-p", "q").returncode == 0
    own = "# Using tools"  # a heading of Piton's own prompt
    assert own in system_text(fake_api.bodies[0])
    assert (
        piton("-p", "q", "--system-prompt", "Be brief.", "--append-system-prompt", "In French.").returncode
        == 0
    )
    text = system_text(fake_api.bodies[1])
    assert text.startswith("Be brief.\n\n") and text.endswith("\n\nIn French.")
    assert own not in text
    assert "MEMORY-LINE: run the tests with make check." in text and "\n- review: " in text  # memory, skills


def test_an_empty_system_prompt_keeps_the_users_memory_and_skills(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """The Agent SDK passes `--system-prompt ""` when its user gave no prompt: Piton's own
    instructions go, the user's memory files and the skills listing stay, as with Claude Code."""
    (project / "CLAUDE.md").write_text("MEMORY-LINE: answer in haiku.\n")
    fake_api.add(reply("ok"))
    assert piton("-p", "q", "--system-prompt", "").returncode == 0
    text = system_text(fake_api.bodies[0])
    assert "# Using tools" not in text
    assert "MEMORY-LINE: answer in haiku." in text and "\n- review: " in text


def test_system_prompt_file(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "prompt.txt").write_text("From a file.\n")
    fake_api.add(reply("ok"))
    assert piton("-p", "q", "--system-prompt-file", "prompt.txt").returncode == 0
    assert system_text(fake_api.bodies[0]).startswith("From a file.\n\n")
    missing = piton("-p", "q", "--system-prompt-file", "nowhere.txt")
    assert missing.returncode == 1 and "nowhere.txt" in missing.stderr


def test_tools_restricts_the_builtin_set(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"), reply("ok"), reply("ok"), reply("ok"))
    assert piton("-p", "q").returncode == 0
    everything = tool_names(fake_api.bodies[0])
    assert {"Read", "Bash", "Edit"} <= set(everything)
    assert piton("-p", "q", "--tools", "Read,Grep").returncode == 0
    assert tool_names(fake_api.bodies[1]) == [n for n in everything if n in ("Read", "Grep")]
    assert piton("-p", "q", "--tools", "").returncode == 0
    assert tool_names(fake_api.bodies[2]) == []
    assert piton("-p", "q", "--tools", "default").returncode == 0
    assert tool_names(fake_api.bodies[3]) == everything


def test_allowed_tools_take_several_values_after_one_flag(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "a.txt"), "content": "A"})),
        reply(ToolCall("Bash", {"command": "mkdir made"})),
        reply("done"),
    )
    result = result_of("write the files", "--allowedTools", "Read", "Write", "Bash(mkdir:*)")
    assert result["subtype"] == "success" and result["permission_denials"] == []
    assert (project / "a.txt").read_text() == "A" and (project / "made").is_dir()


def test_expand_lists_keeps_the_prompt_and_the_rest() -> None:
    assert expand_lists(["--allowedTools", "Read", "Edit,Write", "Bash(git diff:*)", "fix it", "-p"]) == [
        *["--allowedTools", "Read", "--allowedTools", "Edit,Write", "--allowedTools", "Bash(git diff:*)"],
        *["fix it", "-p"],
    ]
    assert expand_lists(["--tools", "", "hello"]) == ["--tools", "", "hello"]
    assert expand_lists(["-p", "-r"]) == ["-p", "--resume="]
    assert expand_lists(["-r", "abc", "-p"]) == ["-r", "abc", "-p"]


def test_dont_ask_denies_what_no_rule_allows(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "touch made.txt"})), reply("could not"))
    result = result_of("make it", "--permission-mode", "dontAsk")
    assert not (project / "made.txt").exists()
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    (denied,) = tool_results(fake_api.bodies[1])
    assert denied["is_error"] and "dontAsk" in json.dumps(denied["content"])


def test_dangerously_skip_permissions_allows(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("Bash", {"command": "touch made.txt"})), reply("made"))
    result = result_of("make it", "--dangerously-skip-permissions")
    assert result["permission_denials"] == [] and (project / "made.txt").exists()


def test_auto_mode_runs_as_default_with_a_note(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"))
    done = piton("-p", "q", "--permission-mode", "auto")
    assert done.returncode == 0 and "auto" in done.stderr


def test_session_id_names_the_new_session(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"))
    chosen = str(uuid.uuid4())
    assert result_of("q", "--session-id", chosen)["session_id"] == chosen
    assert (SessionStore().project_dir(project) / f"{chosen}.jsonl").is_file()
    again = piton("-p", "q", "--session-id", chosen)
    assert again.returncode == 1 and "exists" in again.stderr
    bad = piton("-p", "q", "--session-id", "not-a-uuid")
    assert bad.returncode == 1 and "UUID" in bad.stderr


def test_fork_session_goes_on_in_a_new_session_with_the_same_history(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("First."), reply("Forked."))
    first = result_of("one")["session_id"]
    forked = result_of("two", "--resume", first, "--fork-session")["session_id"]
    assert forked != first
    assert [m["role"] for m in fake_api.bodies[1]["messages"]] == ["user", "assistant", "user"]
    store = SessionStore()
    original = load_session(store.find(first, project), first)
    assert len(original.messages) == 2  # the fork's turn stays out of the session it came from
    fork = load_session(store.find(forked, project), forked)
    assert fork.messages[:2] == original.messages and len(fork.messages) == 4


def test_max_budget_stops_the_run(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("Glob", {"pattern": "*"}), input_tokens=100_000))
    result = result_of("look", "--max-budget-usd", "0.0001")
    assert (result["subtype"], result["is_error"]) == ("error_max_budget_usd", True)
    assert result["total_cost_usd"] > 0.0001 and len(fake_api.bodies) == 1


def test_a_token_budget_stops_the_run_with_its_own_subtype(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("Glob", {"pattern": "*"}), input_tokens=5_000))
    result = result_of("look", "--max-budget-tokens", "1000")
    assert (result["subtype"], result["is_error"]) == ("error_max_budget_tokens", True)
    assert (
        "1,000 tokens" in result["errors"][0] if result.get("errors") else "1,000 tokens" in result["result"]
    )
    assert len(fake_api.bodies) == 1  # stopped before the second request


def test_a_tool_timeout_from_the_settings_stops_the_call(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text('{"toolTimeouts": {"Bash": 1}}')
    # a command the limit did not stop would outlast the test's ceiling
    fake_api.add(reply(ToolCall("Bash", {"command": "sleep 3600"})), reply("It was stopped."))
    result = result_of("wait", "--allowedTools", "Bash")
    assert result["result"] == "It was stopped."
    [stopped] = [b for b in fake_api.bodies[-1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert stopped["is_error"] and "stopped after 1 s (toolTimeouts" in str(stopped["content"])


def test_settings_json_and_sources(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"), reply("ok"), reply("ok"))
    assert piton("-p", "q", "--settings", '{"model": "haiku"}').returncode == 0
    assert fake_api.bodies[0]["model"] == "claude-haiku-5-5"
    (project / ".piton").mkdir()
    (project / ".piton" / "settings.json").write_text('{"model": "opus"}')
    (project / "extra.json").write_text('{"model": "haiku"}')
    assert piton("-p", "q", "--settings", "extra.json").returncode == 0  # above the files
    assert fake_api.bodies[1]["model"] == "claude-haiku-5-5"
    assert piton("-p", "q", "--setting-sources", "user").returncode == 0  # the project's file left out
    assert fake_api.bodies[2]["model"] != "claude-opus-5-5"
    broken = piton("-p", "q", "--settings", "{not json")
    assert broken.returncode == 1 and "--settings" in broken.stderr


def test_thinking_values_and_budget(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"), reply("ok"), reply("ok"))
    assert piton("-p", "q", "--thinking", "disabled").returncode == 0
    assert "thinking" not in fake_api.bodies[0]
    assert piton("-p", "q", "--thinking", "adaptive").returncode == 0
    assert "thinking" in fake_api.bodies[1]
    assert piton("-p", "q", "--max-thinking-tokens", "0").returncode == 0
    assert "thinking" not in fake_api.bodies[2]


def test_agents_flag_adds_a_subagent_type(fake_api: FakeAnthropicAPI, project: Path) -> None:
    agents = {"reviewer": {"description": "Reviews diffs", "prompt": "You review code.", "tools": ["Read"]}}
    fake_api.add(
        reply(ToolCall("Task", {"description": "review", "prompt": "look", "subagent_type": "reviewer"})),
        reply("looks fine"),
        reply("done"),
    )
    assert piton("-p", "review", "--agents", json.dumps(agents)).returncode == 0
    task = next(t for t in fake_api.bodies[0]["tools"] if t["name"] == "Task")
    assert "reviewer" in json.dumps(task)
    sub = fake_api.bodies[1]
    assert sub["system"][0]["text"].startswith("You review code.") and tool_names(sub) == ["Read"]
    bad = piton("-p", "q", "--agents", "[1]")
    assert bad.returncode == 1 and "--agents" in bad.stderr


def test_effort_goes_to_models_that_take_it(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """`--effort` is the API's `output_config.effort`; a model without effort levels is asked
    without it (the API would refuse the request), and the run says so once."""
    fake_api.add(reply("ok"), reply("ok"), reply("ok"))
    assert piton("-p", "q", "--effort", "high").returncode == 0
    assert fake_api.bodies[0]["output_config"] == {"effort": "high"}
    done = piton("-p", "q", "--effort", "low", "--model", "claude-sonnet-4-5")
    assert done.returncode == 0, done.stderr
    assert "output_config" not in fake_api.bodies[1]
    assert done.stderr.count("--effort low: claude-sonnet-4-5 takes no effort level; ignored") == 1
    assert piton("-p", "q").returncode == 0
    assert "output_config" not in fake_api.bodies[2]
    assert piton("-p", "q", "--effort", "huge").returncode == 2


@pytest.mark.parametrize(
    ("flags", "note"),
    [
        (["--max-thinking-tokens", "4000"], "--max-thinking-tokens: a set budget is not supported yet"),
    ],
)
def test_flags_without_a_counterpart_say_so_once(
    fake_api: FakeAnthropicAPI, project: Path, flags: list[str], note: str
) -> None:
    fake_api.add(reply("ok"))
    done = piton("-p", "q", *flags)
    assert (done.returncode, done.stdout) == (0, "ok\n")
    assert [line for line in done.stderr.splitlines() if "not supported" in line] == [
        f"piton: {note}" + _rest(note)
    ]


def _rest(note: str) -> str:
    return {
        "--max-thinking-tokens: a set budget is not supported yet": "; thinking is on with Piton's own budget",
    }[note]


def test_sdk_style_flags_are_accepted_together(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """The options the Agent SDK and Harbor pass for an ordinary run."""
    fake_api.add(reply("ok"))
    done = piton(
        *["-p", "q", "--output-format", "stream-json", "--verbose", "--system-prompt", ""],
        *[
            "--permission-prompt-tool",
            "stdio",
            "--include-partial-messages",
            "--setting-sources",
            "user,project",
        ],
        *[
            "--allowedTools",
            "Read,Edit",
            "--disallowedTools",
            "Bash",
            "--max-turns",
            "3",
            "--model",
            "sonnet",
        ],
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success"


def test_disallowed_tools_are_not_offered_but_a_rule_on_some_calls_keeps_the_tool(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """Harbor passes `--disallowedTools WebSearch,WebFetch`: the model must not see them (deferred
    or not), while `Bash(rm:*)` refuses some commands and keeps Bash. A settings deny rule naming
    a whole tool does the same."""
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"deny": ["NotebookEdit"]}}))
    fake_api.add(reply("ok"), reply("ok"))
    assert piton("-p", "q").returncode == 0
    offered = json.dumps(fake_api.bodies[0]["tools"])
    assert '"WebSearch"' in offered and '"WebFetch"' in offered and '"NotebookEdit"' not in offered
    done = piton("-p", "q", "--disallowedTools", "WebSearch,WebFetch", "--disallowedTools", "Bash(rm:*)")
    assert done.returncode == 0, done.stderr
    offered = json.dumps(fake_api.bodies[1]["tools"])
    assert '"WebSearch"' not in offered and '"WebFetch"' not in offered
    assert "Bash" in tool_names(fake_api.bodies[1]) and "Read" in tool_names(fake_api.bodies[1])


def test_thinking_display_reaches_the_request(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """Harbor's `thinking_display` passes `--thinking-display summarized`."""
    fake_api.add(reply("ok"), reply("ok"))
    assert piton("-p", "q", "--thinking-display", "summarized").returncode == 0
    assert fake_api.bodies[0]["thinking"]["display"] == "summarized"
    assert piton("-p", "q").returncode == 0
    assert "display" not in fake_api.bodies[1]["thinking"]  # the API's own default
    wrong = piton("-p", "q", "--thinking-display", "full")
    assert wrong.returncode == 2 and "summarized" in wrong.stderr and "Traceback" not in wrong.stderr


def test_resume_without_an_id_is_an_error_in_print_mode(project: Path) -> None:
    done = piton("-p", "q", "--resume")
    assert done.returncode == 1 and "--resume needs a session id" in done.stderr


def test_stream_json_input_needs_no_prompt(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """Handed to the control protocol, which reads the user's messages from stdin."""
    fake_api.add(reply("hello"))
    message = {"type": "user", "message": {"role": "user", "content": "hi"}}
    done = subprocess.run(
        [PITON, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        input=json.dumps(message) + "\n",
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "no prompt" not in done.stderr
    assert fake_api.bodies and json.loads(done.stdout.splitlines()[-1])["type"] == "result"
