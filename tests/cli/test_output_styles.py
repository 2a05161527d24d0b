"""Output styles: the files people already have (`.claude/output-styles`), the built-in ones, the
`outputStyle` setting, and `/output-style` in the REPL, through the `piton` command line (run in this
process where only what it sends is looked at), the installed `piton` and the real SDK."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from piton.skills.output_styles import discover_output_styles
from piton.skills.plugins import read_plugin
from piton.testing.script import reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.fakes.held import HeldProvider
from tests.helpers import PITON, piton_here

CODING = "Understand before you change"  # a line of the coding instructions
BREVITY = "Be direct and brief"
PIRATE = "---\nname: Pirate\ndescription: Talks like a pirate\n---\nAnswer like a pirate, matey.\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def system_text(body: dict[str, Any]) -> str:
    system = body["system"]
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


def test_styles_are_found_where_claude_code_keeps_them(project: Path) -> None:
    write(project / ".claude/output-styles/pirate.md", PIRATE)
    write(project / ".piton/output-styles/terse.md", "---\nkeep-coding-instructions: true\n---\nBe terse.\n")
    write(Path.home() / ".claude/output-styles/pirate.md", "---\nname: Pirate\n---\nThe user's, shadowed.\n")
    write(Path.home() / ".claude/output-styles/mentor.md", "---\ndescription: Teaches\n---\nTeach.\n")
    write(project / ".claude/output-styles/broken.md", "---\nkeep-coding-instructions: maybe\n---\nx\n")
    write(project / ".claude/output-styles/empty.md", "---\nname: Empty\n---\n")
    write(project / ".claude/output-styles/default.md", "---\nname: default\n---\nHijack.\n")
    plugin = project / "plug"
    write(plugin / ".claude-plugin/plugin.json", '{"name": "plug"}')
    write(plugin / "output-styles/reviewer.md", "Review everything.\n")

    styles, warnings = discover_output_styles(project, plugins=[read_plugin(plugin)])
    assert styles["pirate"].prompt == "Answer like a pirate, matey." and styles["pirate"].source == "project"
    assert styles["pirate"].description == "Talks like a pirate" and not styles["pirate"].keep_coding
    assert styles["terse"].keep_coding and styles["terse"].name == "terse"  # named after its file
    assert styles["mentor"].source == "user" and styles["reviewer"].source == "plugin"
    assert styles["default"].prompt == "" and styles["default"].source == "builtin"
    assert {"explanatory", "learning", "concise", "proactive"} <= styles.keys()
    assert len(warnings) == 3, warnings
    assert any("broken.md" in w and "true or false" in w for w in warnings)
    assert any("empty.md" in w and "no instructions" in w for w in warnings)
    assert any("default.md" in w and "cannot be redefined" in w for w in warnings)


def test_a_style_from_the_settings_shapes_the_system_prompt(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(project / ".claude/output-styles/pirate.md", PIRATE)
    write(project / ".claude/settings.json", json.dumps({"outputStyle": "pirate"}))
    fake_api.add(reply("Arr."))
    done = piton_here("-p", "hello", "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0, done.stderr
    init = json.loads(done.stdout.splitlines()[0])
    assert init["output_style"] == "Pirate"
    system = system_text(fake_api.bodies[0])
    assert system.rstrip().endswith("# Output style: Pirate\nAnswer like a pirate, matey.")
    assert CODING not in system and BREVITY not in system  # a file's style replaces both
    assert "Piton, an assistant" in system and "Read a file before you edit it" in system  # tools stay
    reminder = fake_api.bodies[0]["messages"][0]["content"][-1]["text"]
    assert reminder.startswith("<system-reminder>") and "'Pirate' is active" in reminder
    assert "outputStyle" not in done.stderr  # applied: not named among the keys Piton ignores


def test_a_built_in_style_keeps_the_coding_instructions(fake_api: FakeAnthropicAPI, project: Path) -> None:
    write(project / ".piton/settings.local.json", json.dumps({"outputStyle": "explanatory"}))
    fake_api.add(reply("Done."), reply("Done."))
    assert piton_here("-p", "hello").returncode == 0
    system = system_text(fake_api.bodies[0])
    assert "# Output style: Explanatory" in system and "★ Insight" in system
    assert CODING in system and BREVITY not in system

    (project / ".piton/settings.local.json").write_text(json.dumps({"outputStyle": "Nonesuch"}))
    done = piton_here("-p", "hello")
    assert done.returncode == 0
    assert "outputStyle 'Nonesuch': no such output style" in done.stderr and "using Default" in done.stderr
    system = system_text(fake_api.bodies[1])
    assert "Output style" not in system and CODING in system and BREVITY in system
    assert "system-reminder" not in json.dumps(fake_api.bodies[1]["messages"])


def test_the_agent_sdk_sees_the_style_and_the_ones_available(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(project / ".claude/output-styles/pirate.md", PIRATE)
    write(project / ".claude/settings.json", json.dumps({"outputStyle": "Pirate"}))

    async def talk(options: ClaudeAgentOptions) -> dict[str, Any]:
        async with ClaudeSDKClient(options) as client:
            info = await client.get_server_info()
        assert info is not None
        return info

    # the preset keeps Piton's own prompt, so the style applies to it
    preset = ClaudeAgentOptions(
        cli_path=PITON, cwd=str(project), system_prompt={"type": "preset", "preset": "claude_code"}
    )
    info = asyncio.run(asyncio.wait_for(talk(preset), 60))
    assert info["output_style"] == "Pirate"
    assert {"default", "Pirate", "Explanatory", "Learning"} <= set(info["available_output_styles"])
    # the SDK's default sends a prompt of its own (empty), which no style is added to: said as such
    plain = ClaudeAgentOptions(cli_path=PITON, cwd=str(project))
    assert asyncio.run(asyncio.wait_for(talk(plain), 60))["output_style"] == "default"


def test_output_style_in_the_repl_switches_and_saves_it(project: Path) -> None:
    write(project / ".claude/output-styles/pirate.md", PIRATE)
    provider = ScriptedProvider(reply("Plain answer."), reply("Arr, answer."))

    async def script(s: Session) -> None:
        await s.type("first" + ENTER)
        await s.until(lambda: "Plain answer." in s.screen)
        session = s.repl.runtime.log.session_id if s.repl.runtime else None
        await s.type("/output-style" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        assert "● 1. Default" in s.screen and "Pirate [project] — Talks like a pirate" in s.screen
        await s.type("2" + ENTER)
        await s.until(lambda: "Output style: Pirate" in s.screen)
        assert s.repl.runtime is not None and s.repl.runtime.log.session_id == session
        await s.type("/output-style nonesuch" + ENTER)
        await s.until(lambda: "no style named 'nonesuch'" in s.screen)
        await s.type("second" + ENTER)
        await s.until(lambda: "Arr, answer." in s.screen)

    s = run(project, provider, script)
    first, second = provider.requests
    assert "Output style" not in first.system and "# Output style: Pirate" in second.system
    assert next(m.text for m in second.messages if m.role == "user") == "first"  # the same conversation
    saved = json.loads((project / ".piton/settings.local.json").read_text())
    assert saved == {"outputStyle": "Pirate"}
    assert "Resumed" not in s.screen


def test_doctor_names_the_style_and_an_unknown_one(project: Path) -> None:
    write(project / ".claude/output-styles/pirate.md", PIRATE)
    settings = write(project / ".claude/settings.json", json.dumps({"outputStyle": "pirate"}))
    assert "✓ output style: Pirate (project); 6 available" in piton_here("doctor").stdout
    settings.write_text(json.dumps({"outputStyle": "Nonesuch"}))
    out = piton_here("doctor").stdout
    assert "✓ output style: Default; 6 available" in out and "! outputStyle 'Nonesuch': no such" in out


def test_a_style_file_name_cannot_reach_the_terminal_and_lenient_frontmatter_loads(project: Path) -> None:
    write(project / ".claude/output-styles/\x1b]0;pwned\x07.md", "Be evil.\n")
    write(
        project / ".claude/output-styles/teacher.md",
        "---\ndescription: Use when: learning\nkeep-coding-instructions: true\n---\nTeach.\n",
    )
    styles, warnings = discover_output_styles(project)
    assert all("\x1b" not in s.name for s in styles.values())
    assert any("control characters" in w and "\\x1b" in w for w in warnings)
    assert styles["teacher"].keep_coding  # YAML that does not parse is read line by line, true and all


def test_the_resume_list_shows_what_was_typed_not_the_style_reminder(project: Path) -> None:
    from piton.core.conversation.session import SessionStore

    write(project / ".piton/settings.json", json.dumps({"outputStyle": "Concise"}))
    provider = ScriptedProvider(reply("Done."))

    async def script(s: Session) -> None:
        await s.type("fix the failing test" + ENTER)
        await s.until(lambda: "Done." in s.screen)

    run(project, provider, script)
    [summary] = SessionStore().recent(project)
    assert summary.first_prompt == "fix the failing test"


def test_output_style_waits_for_the_turn_and_keeps_the_sessions_cost(project: Path) -> None:
    provider = HeldProvider(reply("slow " * 200, chunk=5), reply("Next."))

    async def script(s: Session) -> None:
        await s.type("write a lot" + ENTER)
        await s.until(lambda: provider.holding)
        await s.type("/output-style concise" + ENTER)
        await s.until(lambda: "change the style once the turn is over" in s.screen)
        provider.release()
        await s.idle()
        assert "Interrupted" not in s.screen  # the turn ran to its end
        cost = s.repl.totals.cost_usd
        assert cost > 0
        await s.type("/output-style concise" + ENTER)
        await s.until(lambda: "Output style: Concise" in s.screen)
        assert s.repl.totals.cost_usd == cost  # the same session goes on: its cost with it

    run(project, provider, script)
