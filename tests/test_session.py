"""One session lifecycle for every front end: `piton -p`, the control protocol the Agent SDK speaks,
the Python library and the terminal each open, start, run and close the same `Session`, so the
SessionStart and SessionEnd hooks of the user's settings fire in all four, with Claude Code's
sources and reasons, and what SessionStart prints reaches the model's first request."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, query
from claude_agent_sdk import ResultMessage as SdkResult

from piton.api import Agent, AgentOptions
from piton.api.messages import ResultMessage
from piton.testing.script import reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_agent_sdk import PITON
from tests.cli.test_repl import ENTER, Session, run
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

CONTEXT = "Remember: the release branch is frozen"


def lifecycle_hooks(project: Path) -> Path:
    """SessionStart and SessionEnd hooks in the user's settings; each appends `event:source` or
    `event:reason` to the returned log, and SessionStart prints context for the model. The hook and
    its log live in the project: hooks run in the sandbox, where the rest of /tmp is private."""
    folder = project / ".hook-files"
    folder.mkdir(exist_ok=True)
    log = folder / "lifecycle.log"
    recorder = folder / "record.py"
    recorder.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "detail = data.get('source') or data.get('reason') or ''\n"
        f"open({str(log)!r}, 'a').write(data['hook_event_name'] + ':' + detail + '\\n')\n"
        f"print({CONTEXT!r}) if data['hook_event_name'] == 'SessionStart' else None\n"
    )
    recorder.chmod(recorder.stat().st_mode | stat.S_IXUSR)
    command = f"python3 {recorder}"
    entry = [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"SessionStart": entry, "SessionEnd": entry}}))
    return log


def events(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_print_mode_starts_and_ends_the_session_and_resumes_it(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    log = lifecycle_hooks(project)
    fake_api.add(reply("First."), reply("Second."))
    done = piton_here("-p", "hi")
    assert done.returncode == 0, done.stderr
    assert CONTEXT in json.dumps(fake_api.bodies[0]["messages"])
    done = piton_here("-p", "-c", "again")
    assert done.returncode == 0, done.stderr
    assert events(log) == [
        "SessionStart:startup",
        "SessionEnd:other",
        "SessionStart:resume",
        "SessionEnd:other",
    ]


def test_print_mode_ends_the_session_when_the_prompt_makes_no_turn(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    log = lifecycle_hooks(project)
    done = piton_here("-p", "/no-such-command")
    assert done.returncode == 1 and "Unknown command: /no-such-command" in done.stderr
    assert events(log) == ["SessionStart:startup", "SessionEnd:other"] and fake_api.requests == []


def test_the_agent_sdks_control_protocol_starts_and_ends_the_session(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    log = lifecycle_hooks(project)
    fake_api.add(reply("Hello from the SDK."))

    async def go() -> list[Any]:
        options = ClaudeAgentOptions(cli_path=str(PITON), cwd=str(project))
        return [m async for m in query(prompt="hi", options=options)]

    messages = asyncio.run(asyncio.wait_for(go(), 60))
    assert isinstance(messages[-1], SdkResult) and messages[-1].result == "Hello from the SDK."
    assert CONTEXT in json.dumps(fake_api.bodies[0]["messages"])
    assert events(log) == ["SessionStart:startup", "SessionEnd:other"]


def test_the_library_starts_and_ends_the_session(project: Path, tmp_path: Path) -> None:
    log = lifecycle_hooks(project)
    provider = ScriptedProvider(reply("One."), reply("Two."))

    async def go() -> list[str]:
        async with Agent(AgentOptions(cwd=project, provider=provider)) as agent:
            assert events(log) == ["SessionStart:startup"]  # on connecting, before any turn
            answers = []
            for prompt in ("first", "second"):
                answers += [m.text async for m in agent.query(prompt) if isinstance(m, ResultMessage)]
            return answers

    assert asyncio.run(go()) == ["One.", "Two."]
    assert events(log) == ["SessionStart:startup", "SessionEnd:other"]  # once each, for two turns
    first = json.dumps([m.model_dump() for m in provider.requests[0].messages])
    assert CONTEXT in first


def test_the_terminal_starts_ends_and_clears_the_session(project: Path, tmp_path: Path) -> None:
    log = lifecycle_hooks(project)

    async def script(s: Session) -> None:
        await s.until(lambda: events(log) == ["SessionStart:startup"])
        await s.type("hello" + ENTER)
        await s.idle()
        await s.type("/clear" + ENTER)
        await s.until(lambda: len(events(log)) == 3)

    provider = ScriptedProvider(reply("hi"))
    run(project, provider, script)
    assert events(log) == [
        "SessionStart:startup",
        "SessionEnd:clear",
        "SessionStart:clear",
        "SessionEnd:prompt_input_exit",
    ]
    first = json.dumps([m.model_dump() for m in provider.requests[0].messages])
    assert CONTEXT in first
