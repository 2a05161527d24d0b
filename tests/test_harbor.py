"""Harbor's run of Claude Code, with Piton in its place: the exact command line and environment
Harbor uses (the instruction on stdin, stream-json teed into a log, `IS_SANDBOX=1`,
`CLAUDE_CONFIG_DIR`), run by bash against the fake API; then the transcript Piton wrote in Claude
Code's format, and the ATIF trajectory and totals built from it."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from piton.core.conversation.claude_transcript import project_slug
from piton.harbor_run import (
    LOG_NAME,
    RunFlags,
    install_script,
    package_spec,
    run_command,
    run_env,
    setup_command,
)
from piton.runtime import MACHINE_SANDBOX_NOTICE
from piton.testing.script import ToolCall, reply
from piton.trajectory import build, context_totals
from tests.adversarial.conftest import piton
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S

PITON = str(Path(sys.executable).with_name("piton"))
INSTRUCTION = 'Fix the failing test in /app; "quotes", $HOME and `ticks` stay as they are.\n'


def harbor_exec(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """As Harbor's environment runs a command: `bash -c "set -o pipefail; <command>"`, no stdin."""
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )


def transcript_lines(sessions: Path, cwd: Path) -> tuple[Path, list[dict[str, Any]]]:
    [path] = (sessions / "projects" / project_slug(cwd)).glob("*.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def run_task(
    fake_api: FakeAnthropicAPI, tmp_path: Path, flags: RunFlags, *, resume: bool = False
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    app = tmp_path / "app"
    logs = tmp_path / "logs" / "agent"
    app.mkdir(exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    sessions = (logs / "sessions").as_posix()
    env = run_env({**os.environ, "ANTHROPIC_BASE_URL": fake_api.base_url}, sessions, flags)
    assert harbor_exec(setup_command(sessions), app, env).returncode == 0
    variable = "PITON_INSTRUCTION_0123ABCD"
    command = run_command(variable, logs.as_posix(), flags, resume=resume, piton=PITON)
    done = harbor_exec(command, app, {**env, variable: INSTRUCTION})
    return app, logs, done


def test_the_command_line_is_harbors_for_claude_code() -> None:
    flags = RunFlags(effort="high", max_turns=30, max_budget_usd=2.5)
    command = run_command("PITON_INSTRUCTION_X", "/logs/agent", flags)
    assert command.endswith(
        'printf "%s" "$piton_instruction_x" | piton --verbose --output-format=stream-json --effort high '
        "--max-turns 30 --max-budget-usd 2.5 --permission-mode=bypassPermissions --print 2>&1 "
        f"| tee /logs/agent/{LOG_NAME}"
    )
    assert "$PITON_INSTRUCTION_X" in command and "unset PITON_INSTRUCTION_X" in command
    shown = RunFlags(thinking_display="summarized", disable_web_search=True)
    assert shown.argv() == ["--thinking-display", "summarized", "--disallowedTools", "WebSearch,WebFetch"]
    env = run_env({"ANTHROPIC_API_KEY": "k", "HOME": "/root"}, "/logs/agent/sessions", RunFlags(model="m"))
    assert env == {
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_MODEL": "m",
        "IS_SANDBOX": "1",
        "CLAUDE_CONFIG_DIR": "/logs/agent/sessions",
    }


def test_install_script_pins_what_it_installs() -> None:
    assert package_spec("0.2.0") == "piton-code==0.2.0"
    assert package_spec(None, "/installed-agent/piton_code-0.2.0-py3-none-any.whl").endswith(".whl")
    with pytest.raises(ValueError, match="not a version"):
        package_spec("1; rm -rf /")
    script = install_script(package_spec("0.2.0"))
    assert "pip install -q --disable-pip-version-check piton-code==0.2.0" in script
    checked = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_a_task_runs_and_leaves_a_transcript_harbor_can_read(
    fake_api: FakeAnthropicAPI, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"  # the machine is the sandbox: a command may write anywhere
    fake_api.add(
        reply(
            ToolCall("Bash", {"command": f"echo fixed > answer.txt && echo also > {outside} && echo done"})
        ),
        reply("Fixed."),
    )
    flags = RunFlags(
        effort="high",
        max_budget_usd=5.0,
        max_turns=10,
        thinking_display="summarized",
        disable_web_search=True,
    )
    app, logs, done = run_task(fake_api, tmp_path, flags)
    assert done.returncode == 0, done.stdout + done.stderr
    first = fake_api.bodies[0]
    assert first["thinking"]["display"] == "summarized" and '"WebSearch"' not in json.dumps(first["tools"])
    assert (app / "answer.txt").read_text() == "fixed\n" and outside.read_text() == "also\n"
    assert fake_api.bodies[0]["output_config"] == {"effort": "high"}
    # the log: stream-json lines, and the one notice stderr added
    log = (logs / LOG_NAME).read_text().splitlines()
    assert [line for line in log if not line.startswith("{")] == [f"piton: {MACHINE_SANDBOX_NOTICE}"]
    events = [json.loads(line) for line in log if line.startswith("{")]
    result = events[-1]
    assert (result["type"], result["subtype"], result["result"]) == ("result", "success", "Fixed.")
    assert done.stdout.splitlines() == log  # what tee printed is what it kept
    # the transcript, in Claude Code's format, where Harbor looks
    path, lines = transcript_lines(logs / "sessions", app)
    assert path.stem == result["session_id"]
    assert [(line["type"], line["message"]["role"]) for line in lines] == [
        ("user", "user"),
        ("assistant", "assistant"),
        ("user", "user"),
        ("assistant", "assistant"),
    ]
    assert lines[0]["message"]["content"] == INSTRUCTION  # the prompt, byte for byte, as a string
    assert lines[0]["parentUuid"] is None
    assert all(line["parentUuid"] == before["uuid"] for before, line in itertools.pairwise(lines))
    assert all(line["sessionId"] == path.stem and line["cwd"] == str(app) for line in lines)
    assert [line["timestamp"] for line in lines] == sorted(line["timestamp"] for line in lines)
    assert all(line["timestamp"].endswith("Z") for line in lines)
    usage = [line["message"]["usage"] for line in lines if line["type"] == "assistant"]
    assert sum(u["output_tokens"] for u in usage) == result["usage"]["output_tokens"]
    # the trajectory built from it
    trajectory = build(logs / "sessions", logs / LOG_NAME, "claude-sonnet-5-5")
    assert trajectory is not None
    steps = trajectory["steps"]
    assert [s["source"] for s in steps] == ["user", "agent", "agent"]
    assert [s["step_id"] for s in steps] == [1, 2, 3]
    assert steps[0]["message"] == INSTRUCTION
    [call] = steps[1]["tool_calls"]
    assert call["function_name"] == "Bash" and "answer.txt" in call["arguments"]["command"]
    assert steps[1]["observation"]["results"][0]["source_call_id"] == call["tool_call_id"]
    assert "done" in steps[1]["observation"]["results"][0]["content"]
    assert steps[2]["message"] == "Fixed."
    totals = context_totals(trajectory)
    assert totals["cost_usd"] == pytest.approx(result["total_cost_usd"])
    assert totals["n_output_tokens"] == result["usage"]["output_tokens"]
    assert totals["n_input_tokens"] == (
        result["usage"]["input_tokens"]
        + result["usage"]["cache_read_input_tokens"]
        + result["usage"]["cache_creation_input_tokens"]
    )
    assert trajectory["session_id"] == result["session_id"] and trajectory["agent"]["name"] == "piton"


def test_a_continued_task_goes_on_in_the_same_transcript(fake_api: FakeAnthropicAPI, tmp_path: Path) -> None:
    """Harbor's multi-step tasks pass `--continue`: the new lines chain to the old, none repeats."""
    fake_api.add(reply("First."), reply("Second."))
    _, logs, first = run_task(fake_api, tmp_path, RunFlags())
    assert first.returncode == 0, first.stdout
    app, logs, second = run_task(fake_api, tmp_path, RunFlags(), resume=True)
    assert second.returncode == 0, second.stdout
    _, lines = transcript_lines(logs / "sessions", app)
    assert [line["message"]["content"] for line in lines if line["type"] == "user"] == [
        INSTRUCTION,
        INSTRUCTION,
    ]
    assert len(lines) == 4 and len({line["uuid"] for line in lines}) == 4
    assert lines[2]["parentUuid"] == lines[1]["uuid"]
    assert "First." in json.dumps(fake_api.bodies[1]["messages"])


def test_a_subagents_lines_are_the_sessions_sidechain(fake_api: FakeAnthropicAPI, tmp_path: Path) -> None:
    fake_api.add(
        reply(
            ToolCall("Task", {"description": "look", "prompt": "List the files.", "subagent_type": "Explore"})
        ),
        reply("Nothing here."),
        reply("The subagent found nothing."),
    )
    app, logs, done = run_task(fake_api, tmp_path, RunFlags())
    assert done.returncode == 0, done.stdout
    path, _ = transcript_lines(logs / "sessions", app)
    [side] = (path.with_suffix("") / "subagents").glob("*.jsonl")
    lines = [json.loads(line) for line in side.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant"]
    assert all(line["isSidechain"] and line["sessionId"] == path.stem for line in lines)
    assert lines[0]["agentId"] == side.stem
    trajectory = build(logs / "sessions", logs / LOG_NAME)
    assert trajectory is not None
    sidechain = [s for s in trajectory["steps"] if s.get("extra", {}).get("is_sidechain")]
    assert [s["message"] for s in sidechain] == ["Nothing here."]


def test_skills_under_the_config_dir_are_the_users(
    fake_api: FakeAnthropicAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "sessions"
    skill = config / "skills" / "triage" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Triage a failing build.\n---\nRead the log first.\n")
    (config / "CLAUDE.md").write_text("Answer in haiku.\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "p"
    project.mkdir()
    fake_api.add(reply("ok"))
    done = piton("-p", "/triage now", "--output-format", "stream-json", "--verbose", cwd=project)
    assert done.returncode == 0, done.stderr
    init = json.loads(done.stdout.splitlines()[0])
    assert "triage" in init["skills"] and "triage" in init["slash_commands"]
    sent = json.dumps(fake_api.bodies[0])
    assert "Read the log first." in sent and "Answer in haiku." in sent


def test_is_sandbox_comes_from_the_users_environment_and_a_flag_overrides_it(
    fake_api: FakeAnthropicAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    target = tmp_path / "written-outside"
    command = {"command": f"touch {target}"}
    fake_api.add(reply(ToolCall("Bash", command)), reply("ok"), reply(ToolCall("Bash", command)), reply("ok"))
    monkeypatch.setenv("IS_SANDBOX", "1")

    def go(*flags: str) -> subprocess.CompletedProcess[str]:
        return piton("-p", "go", "--permission-mode", "bypassPermissions", *flags, cwd=project)

    done = go("--sandbox", "workspace-write")
    assert done.returncode == 0 and not target.exists()
    assert MACHINE_SANDBOX_NOTICE not in done.stderr
    done = go()
    assert done.returncode == 0 and target.exists()
    assert done.stderr.count(MACHINE_SANDBOX_NOTICE) == 1 and MACHINE_SANDBOX_NOTICE not in done.stdout
