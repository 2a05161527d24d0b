"""Claude Code's command hooks from the settings files, run for real (`sh -c` scripts) around a run
of the scripted model: they block, rewrite input, add context, keep the agent going, stop the run,
and a hook that hangs or prints garbage is reported while the session goes on."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from piton.cli.headless import HeadlessOptions, Streams, run_headless
from piton.core.conversation.messages import Message, TextBlock, ToolResultBlock
from piton.core.options import RunOptions
from piton.core.safety.programs import FIRST_NOTICE
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Probe


@pytest.fixture
def files(project: Path) -> Path:
    """Where the hook scripts and what they write live: in the project, since hooks run in the
    sandbox (the project writable, the rest of /tmp, where the tests' folders are, private)."""
    folder = project / ".hook-files"
    folder.mkdir()
    return folder


def script(folder: Path, name: str, body: str) -> str:
    """An executable hook script; returns the command that runs it."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def user_hooks(hooks: dict[str, Any], **more: Any) -> None:
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **more}))


def on(event: str, command: str, matcher: str = "", timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        hook["timeout"] = timeout
    return {event: [{"matcher": matcher, "hooks": [hook]}]}


def run(
    provider: ScriptedProvider, tools: list[Any], prompt: str = "go", fmt: str = "stream-json", **kw: Any
) -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    options = HeadlessOptions(RunOptions(cwd=Path.cwd(), **kw), prompt, fmt, include_hook_events=True)
    code = run_headless(
        options, provider=provider, tools=tools, streams=Streams(stdin=None, stdout=out, stderr=err)
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()] if fmt != "text" else []
    return code, lines, err.getvalue()


def results(message: Message) -> list[str]:
    out = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content = block.content
            out.append(content if isinstance(content, str) else " ".join(b.text for b in content))  # type: ignore[union-attr]
    return out


def texts(message: Message) -> list[str]:
    return [b.text for b in message.content if isinstance(b, TextBlock)]


def test_pre_tool_use_exit_2_blocks_the_call_and_the_model_reads_why(project: Path, files: Path) -> None:
    seen = files / "seen.json"
    guard = script(files, "guard.sh", f'cat > {seen}\necho "no deploys on Friday" >&2\nexit 2\n')
    user_hooks(on("PreToolUse", guard, matcher="Deploy|Other"))
    deploy = Probe("Deploy")
    provider = ScriptedProvider(reply(ToolCall("Deploy", {"text": "prod"})), reply("ok"))
    code, lines, _ = run(provider, [deploy], permission_mode="bypassPermissions")
    assert code == 0 and deploy.log == [], "the hook's exit 2 refused the call under bypassPermissions"
    [result] = results(provider.requests[1].messages[-1])
    assert "no deploys on Friday" in result
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "Deploy"
    assert payload["tool_input"] == {"text": "prod"} and payload["cwd"] == str(project)
    assert payload["permission_mode"] == "bypassPermissions" and payload["session_id"]
    assert Path(payload["transcript_path"]).is_file()
    [hook_line] = [line for line in lines if line.get("subtype") == "hook_response"]
    assert (hook_line["hook_event"], hook_line["exit_code"], hook_line["outcome"]) == (
        "PreToolUse",
        2,
        "blocked",
    )


def test_a_matcher_that_does_not_name_the_tool_leaves_it_alone(project: Path, files: Path) -> None:
    guard = script(files, "guard.sh", "exit 2\n")
    user_hooks(on("PreToolUse", guard, matcher="Bash"))
    echo = Probe("Echo", read_only=True)
    run(ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})), reply("ok")), [echo])
    assert echo.log == ["start x", "end x"]


def test_pre_tool_use_rewrites_the_input_and_allows_without_a_question(project: Path, files: Path) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "safe",
            "updatedInput": {"text": "staging"},
        }
    }
    hook = script(files, "rewrite.sh", f"cat >/dev/null\necho '{json.dumps(answer)}'\n")
    user_hooks(on("PreToolUse", hook, matcher="mcp__.*|Deploy"))
    deploy = Probe("Deploy")  # not read-only: without the hook, -p would refuse it
    run(ScriptedProvider(reply(ToolCall("Deploy", {"text": "prod"})), reply("ok")), [deploy])
    assert deploy.log == ["start staging", "end staging"]


def test_a_hooks_allow_never_beats_a_deny_rule(project: Path, files: Path) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "allow"}}
    hook = script(files, "allow.sh", f"echo '{json.dumps(answer)}'\n")
    user_hooks(on("PreToolUse", hook), permissions={"deny": ["Deploy"]})
    deploy = Probe("Deploy")
    run(ScriptedProvider(reply(ToolCall("Deploy", {"text": "prod"})), reply("ok")), [deploy])
    assert deploy.log == []


def test_post_tool_use_feedback_and_context_reach_the_model(project: Path, files: Path) -> None:
    seen = files / "post.json"
    answer = {
        "decision": "block",
        "reason": "lint failed: missing semicolon",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "style guide: use tabs"},
    }
    hook = script(files, "post.sh", f"cat > {seen}\necho '{json.dumps(answer)}'\n")
    user_hooks(on("PostToolUse", hook, matcher="Echo"))
    provider = ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})), reply("ok"))
    run(provider, [Probe("Echo", read_only=True)])
    [result] = results(provider.requests[1].messages[-1])
    assert "Echo: x" in result and "lint failed: missing semicolon" in result and "use tabs" in result
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PostToolUse" and payload["tool_response"] == "Echo: x"


def test_user_prompt_submit_adds_context_or_blocks_the_prompt(project: Path, files: Path) -> None:
    hook = script(
        files,
        "prompt.sh",
        'input=$(cat)\ncase "$input" in *secret*) echo "prompts may not name secrets" >&2; exit 2;; esac\n'
        'echo "Current sprint: billing"\n',
    )
    user_hooks(on("UserPromptSubmit", hook))
    provider = ScriptedProvider(reply("ok"))
    code, _, _ = run(provider, [], prompt="plan the work")
    assert code == 0 and texts(provider.requests[0].messages[0]) == [
        "plan the work",
        "Current sprint: billing",
    ]

    blocked = ScriptedProvider()
    code, lines, _ = run(blocked, [], prompt="print the secret")
    assert code == 1 and blocked.requests == [], "a blocked prompt is never sent"
    assert "prompts may not name secrets" in lines[-1]["result"] and lines[-1]["is_error"] is True


def test_a_stop_hook_keeps_the_agent_going_once_then_lets_it_stop(project: Path, files: Path) -> None:
    hook = script(
        files,
        "stop.sh",
        'input=$(cat)\ncase "$input" in *\'"stop_hook_active": true\'*) exit 0;; esac\n'
        'echo "run the tests before you stop" >&2\nexit 2\n',
    )
    user_hooks(on("Stop", hook))
    provider = ScriptedProvider(reply("done early"), reply("tests pass; done"))
    code, lines, _ = run(provider, [])
    assert code == 0 and lines[-1]["result"] == "tests pass; done"
    assert "run the tests before you stop" in texts(provider.requests[1].messages[-1])[0]


def test_continue_false_stops_the_run_with_its_reason(project: Path, files: Path) -> None:
    answer = {"continue": False, "stopReason": "budget review needed"}
    hook = script(files, "halt.sh", f"echo '{json.dumps(answer)}'\n")
    user_hooks(on("PostToolUse", hook))
    provider = ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})))
    code, lines, _ = run(provider, [Probe("Echo", read_only=True)])
    assert code == 0 and lines[-1]["result"] == "budget review needed"
    assert len(provider.requests) == 1, "no request after the hook stopped the run"


def test_a_hanging_hook_is_stopped_at_its_timeout_and_garbage_is_reported(project: Path, files: Path) -> None:
    hang = script(files, "hang.sh", "sleep 30\n")
    garbage = script(files, "garbage.sh", "echo '{not json'\n")
    crash = script(files, "crash.sh", "echo 'Traceback: boom' >&2\nexit 1\n")
    hooks = {
        "PreToolUse": [
            {"matcher": "Echo", "hooks": [{"type": "command", "command": hang, "timeout": 1}]},
            {"matcher": "Echo", "hooks": [{"type": "command", "command": garbage}]},
            {"matcher": "Echo", "hooks": [{"type": "command", "command": crash}]},
        ]
    }
    user_hooks(hooks)
    echo = Probe("Echo", read_only=True)
    code, _, err = run(ScriptedProvider(reply(ToolCall("Echo", {"text": "x"})), reply("ok")), [echo])
    assert code == 0 and echo.log == ["start x", "end x"], "the call ran: no hook refused it"
    assert "timed out after 1 s" in err
    assert "not a JSON object" in err
    assert "failed (exit 1): Traceback: boom" in err


def test_hooks_of_one_event_run_side_by_side(project: Path, files: Path) -> None:
    # each waits for the other's mark: run one after the other, both would time out
    a = script(
        files,
        "a.sh",
        f"touch {files}/a; for i in $(seq 100); do [ -e {files}/b ] && exit 0; sleep 0.1; done; exit 1\n",
    )
    b = script(
        files,
        "b.sh",
        f"touch {files}/b; for i in $(seq 100); do [ -e {files}/a ] && exit 0; sleep 0.1; done; exit 1\n",
    )
    hooks = {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": a}, {"type": "command", "command": b}]}
        ]
    }
    user_hooks(hooks)
    code, lines, err = run(ScriptedProvider(reply("ok")), [])
    outcomes = [line["exit_code"] for line in lines if line.get("subtype") == "hook_response"]
    assert (code, outcomes) == (0, [0, 0])
    assert err in ("", f"piton: {FIRST_NOTICE}\n"), err  # at most the one line that says hooks are sandboxed


def test_session_start_context_and_session_end_run(project: Path, files: Path) -> None:
    ended = files / "ended.json"
    start = script(files, "start.sh", "echo 'Branch policy: never push to main'\n")
    end = script(files, "end.sh", f"cat > {ended}\n")
    user_hooks({**on("SessionStart", start, matcher="startup"), **on("SessionEnd", end)})
    provider = ScriptedProvider(reply("ok"))
    run(provider, [])
    seen = [t for m in provider.requests[0].messages for t in texts(m)]
    assert "Branch policy: never push to main" in seen
    assert json.loads(ended.read_text())["hook_event_name"] == "SessionEnd"


def test_project_hooks_run_only_in_a_trusted_folder(project: Path, files: Path) -> None:
    marker = files / "ran"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": on("UserPromptSubmit", f"touch {marker}")}))
    code, _, err = run(ScriptedProvider(reply("ok")), [])
    assert code == 0 and not marker.exists(), "a project file must not run a command outside the sandbox"
    assert "not trusted" in err
    run(ScriptedProvider(reply("ok")), [], trust_workspace=True)
    assert marker.exists()


def test_the_settings_env_reaches_hooks_and_claude_project_dir_is_set(project: Path, files: Path) -> None:
    seen = files / "env"
    hook = script(files, "env.sh", f'echo "$TEAM $CLAUDE_PROJECT_DIR" > {seen}\n')
    user_hooks(on("UserPromptSubmit", hook), env={"TEAM": "billing"})
    run(ScriptedProvider(reply("ok")), [])
    assert seen.read_text().strip() == f"billing {project}"


def test_disable_all_hooks_in_a_project_file_cannot_switch_off_the_users_guard(
    project: Path, files: Path
) -> None:
    guard = script(files, "guard.sh", "echo 'guarded' >&2; exit 2\n")
    user_hooks(on("PreToolUse", guard))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    deploy = Probe("Deploy")
    run(
        ScriptedProvider(reply(ToolCall("Deploy", {"text": "x"})), reply("ok")),
        [deploy],
        trust_workspace=True,
    )
    assert deploy.log == []


def test_a_stop_hook_that_never_lets_go_is_ended(project: Path, files: Path) -> None:
    from piton.core.turn_rules import MAX_KEPT_GOING

    hook = script(files, "stubborn.sh", "cat >/dev/null\necho 'not yet' >&2\nexit 2\n")
    user_hooks(on("Stop", hook))
    provider = ScriptedProvider(*(reply(f"try {i}") for i in range(MAX_KEPT_GOING + 1)))
    code, lines, err = run(provider, [])
    assert code == 0 and lines[-1]["result"] == f"try {MAX_KEPT_GOING}"
    assert f"kept the agent going {MAX_KEPT_GOING} times" in err
    provider.assert_complete()


def test_a_subagents_end_is_a_subagent_stop_and_its_calls_pass_the_hooks(project: Path, files: Path) -> None:
    events = files / "events"
    record = script(files, "record.sh", f"cat >> {events}; echo >> {events}\n")
    guard = script(files, "guard.sh", "echo 'not in subagents either' >&2; exit 2\n")
    user_hooks(
        {**on("SubagentStop", record), **on("Stop", record), **on("PreToolUse", guard, matcher="Deploy")}
    )
    deploy = Probe("Deploy")
    task = {"description": "look", "prompt": "deploy it", "subagent_type": "general-purpose"}
    provider = ScriptedProvider(
        reply(ToolCall("Task", task)),
        reply(ToolCall("Deploy", {"text": "prod"})),
        reply("sub done"),
        reply("ok"),
    )
    code, _, _ = run(provider, [deploy], permission_mode="bypassPermissions")
    assert code == 0 and deploy.log == []
    seen = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [e["hook_event_name"] for e in seen] == ["SubagentStop", "Stop"]
    assert seen[0]["agent_id"] and seen[0]["stop_hook_active"] is False


def test_pre_compact_runs_before_a_compaction(project: Path, files: Path) -> None:
    import asyncio

    from piton.runtime import Parts, build_runtime

    seen = files / "compact.json"
    user_hooks(on("PreCompact", script(files, "pre.sh", f"cat > {seen}\n"), matcher="manual"))
    provider = ScriptedProvider(reply("first answer"), reply("A summary of the work."))
    runtime = build_runtime(RunOptions(cwd=project), provider, parts=Parts(tools=[]))

    async def go() -> None:
        [_ async for _ in runtime.agent.run("hello")]
        [_ async for _ in runtime.agent.compact("keep the numbers")]

    asyncio.run(go())
    payload = json.loads(seen.read_text())
    assert (payload["hook_event_name"], payload["trigger"], payload["custom_instructions"]) == (
        "PreCompact",
        "manual",
        "keep the numbers",
    )
