"""Skills, commands, subagents and project memory from the `piton` command: a real process and the
real SDK against the fake API, with real files in the project and the (isolated) home folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def add_skill(root: Path, name: str, description: str, body: str, extra: str = "") -> Path:
    return write(
        root / ".claude" / "skills" / name / "SKILL.md",
        f"---\ndescription: {description}\n{extra}---\n{body}\n",
    )


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in body["system"])


def last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = body["messages"][-1]["content"]
    return content


def lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_skill_is_listed_up_front_and_its_body_loads_only_when_invoked(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    add_skill(project, "greet", "Greets people by name.", "GREET-BODY: greet $ARGUMENTS warmly.")
    fake_api.add(reply("Hi."), reply("Hello, Ada Lovelace!"))
    assert piton_here("-p", "hello").returncode == 0
    first = fake_api.bodies[0]
    assert "- greet: Greets people by name." in system_text(first)
    assert "GREET-BODY" not in json.dumps(first)

    done = piton_here("-p", "/greet Ada Lovelace")
    assert (done.returncode, done.stdout) == (0, "Hello, Ada Lovelace!\n")
    typed, loaded = last_user(fake_api.bodies[1])
    assert typed == {"type": "text", "text": "/greet Ada Lovelace"}
    assert loaded["text"].startswith(f'<skill name="greet" dir="{project / ".claude" / "skills" / "greet"}">')
    assert "GREET-BODY: greet Ada Lovelace warmly." in loaded["text"]


def test_the_model_loads_a_skill_with_the_skill_tool(fake_api: FakeAnthropicAPI, project: Path) -> None:
    add_skill(project, "greet", "Greets people by name.", "GREET-BODY: greet $0 warmly.")
    call = ToolCall("Skill", {"skill": "greet", "args": "Bob"})
    fake_api.add(reply(call), reply("Hello Bob!"))
    done = piton_here("-p", "say hello to Bob", "--output-format", "json")
    assert json.loads(done.stdout)["metrics"]["skill_activations"] == 1
    result, loaded = last_user(fake_api.bodies[1])
    assert result == {
        "type": "tool_result",
        "tool_use_id": call.id,
        "content": "Loaded the skill 'greet'; its instructions follow.",
    }
    assert loaded["type"] == "text" and "GREET-BODY: greet Bob warmly." in loaded["text"]


@pytest.mark.sandbox
def test_allowed_tools_skip_the_question_while_the_skills_turn_runs(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    add_skill(
        project, "stamp", "Stamps the project.", "Run touch stamped.txt.", "allowed-tools: Bash(touch:*)\n"
    )
    fake_api.add(reply(ToolCall("Bash", {"command": "touch stamped.txt"})), reply("Stamped."))
    # a project skill's allowed-tools grant in a trusted folder (tests/adversarial/test_trust.py: not elsewhere)
    done = piton_here("-p", "/stamp", "--output-format", "json", "--trust-workspace")
    assert json.loads(done.stdout)["permission_denials"] == []
    assert (project / "stamped.txt").exists()
    # the next turn has no skill: the same command needs permission again (and -p cannot give it)
    fake_api.add(reply(ToolCall("Bash", {"command": "touch again.txt"})), reply("Could not."))
    done = piton_here("-p", "--continue", "stamp again", "--output-format", "json", "--trust-workspace")
    assert [d["tool_name"] for d in json.loads(done.stdout)["permission_denials"]] == ["Bash"]
    assert not (project / "again.txt").exists()


def test_skills_loading_each_other_in_a_cycle_are_refused(fake_api: FakeAnthropicAPI, project: Path) -> None:
    add_skill(project, "alpha", "First step.", "Then load the skill beta.")
    add_skill(project, "beta", "Second step.", "Then load the skill alpha.")
    third = ToolCall("Skill", {"skill": "alpha"})
    fake_api.add(
        reply(ToolCall("Skill", {"skill": "alpha"})),
        reply(ToolCall("Skill", {"skill": "beta"})),
        reply(third),
        reply("I stopped the loop."),
    )
    assert piton_here("-p", "go").returncode == 0
    [refused] = last_user(fake_api.bodies[3])
    assert refused["tool_use_id"] == third.id and refused["is_error"] is True
    assert "a cycle: alpha → beta → alpha" in refused["content"]


def test_a_claude_commands_file_works_as_a_slash_command(fake_api: FakeAnthropicAPI, project: Path) -> None:
    write(
        project / ".claude" / "commands" / "deploy.md",
        "---\ndescription: Deploy\ndisable-model-invocation: true\n---\nDeploy to $0 with care.\n",
    )
    fake_api.add(reply("Deploying."))
    assert piton_here("-p", "/deploy staging now").returncode == 0
    typed, loaded = last_user(fake_api.bodies[0])
    assert typed["text"] == "/deploy staging now"
    assert "Deploy to staging with care." in loaded["text"]
    assert "- deploy" not in system_text(fake_api.bodies[0]), "this one is not offered to the model"


def test_agents_md_and_its_imports_are_in_the_system_prompt(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(project / "AGENTS.md", "Always run `make check`.\n@docs/rules.md\n")
    write(project / "docs" / "rules.md", "RULE-7: no global state.")
    fake_api.add(reply("ok"))
    assert piton_here("-p", "hi").returncode == 0
    system = system_text(fake_api.bodies[0])
    assert f"## {project / 'AGENTS.md'}" in system
    assert "Always run `make check`.\nRULE-7: no global state." in system


def test_a_task_runs_a_subagent_that_returns_only_its_report(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    task = ToolCall(
        "Task",
        {
            "description": "find the parser",
            "prompt": "Find the parser entry point.",
            "subagent_type": "Explore",
        },
    )
    look = ToolCall("Glob", {"pattern": "**/*.py"})
    (project / "parse.py").write_text("def parse(): ...\n")
    fake_api.add(
        reply("Let me delegate.", task),
        reply("Searching.", look),  # the subagent's turns
        reply("The parser starts in parse.py:1."),
        reply("It is in parse.py."),
    )
    done = piton_here("-p", "where is the parser?", "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0, done.stderr
    _, sub1, _, back = fake_api.bodies
    assert [t["name"] for t in sub1["tools"]] == ["Bash", "Glob", "Grep", "Read"]
    assert system_text(sub1).startswith("You are an exploration subagent of Piton")
    assert sub1["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Find the parser entry point.",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        }
    ]
    [result] = last_user(back)
    assert result["tool_use_id"] == task.id and "is_error" not in result
    assert result["content"].startswith("The parser starts in parse.py:1.\n\n(subagent agent-")
    assert look.id not in json.dumps(back), "the subagent's own calls stay out of the parent's context"
    events = lines(done.stdout)
    tagged = [e for e in events if e.get("parent_tool_use_id") == task.id]
    # a line per content block: the subagent's text, its call, the result, its report
    assert [e["type"] for e in tagged] == ["assistant", "assistant", "user", "assistant"]
    assert tagged[1]["message"]["content"][0]["id"] == look.id
    # the subagent's life, as Claude Code's task_* lines tell it
    tasks = [e for e in events if e["type"] == "system" and e["subtype"].startswith("task_")]
    assert [e["subtype"] for e in tasks] == ["task_started", "task_updated", "task_notification"]
    started, updated, told = tasks
    assert (started["tool_use_id"], started["subagent_type"]) == (task.id, task.input["subagent_type"])
    assert started["prompt"] == task.input["prompt"] and started["task_id"] == told["task_id"]
    assert updated["patch"]["status"] == "completed" and told["status"] == "completed"
    assert told["summary"] == "The parser starts in parse.py:1." and told["usage"]["tool_uses"] == 1
    assert (
        Path(told["output_file"]).name == f"{told['task_id']}.jsonl" and Path(told["output_file"]).is_file()
    )
    assert events.index(started) < events.index(tagged[0]) and events.index(told) > events.index(tagged[-1])
    session = events[-1]["session_id"]
    [transcript] = (Path.home() / ".state").rglob(f"{session}/subagents/agent-*.jsonl")
    assert transcript.read_text().count('"type": "message"') == 4


def test_two_tasks_in_one_turn_run_at_the_same_time(fake_api: FakeAnthropicAPI, project: Path) -> None:
    both = threading.Barrier(2, timeout=50)  # within the 60 s Piton waits for an answer

    def subagent(body: dict[str, Any]) -> Reply:
        task = body["messages"][0]["content"][0]["text"]
        try:
            both.wait()  # returns only when the other subagent's request has arrived too
        except threading.BrokenBarrierError:
            return reply(f"SEQUENTIAL {task}")
        return reply(f"report for {task}")

    calls = [ToolCall("Task", {"description": f"part {n}", "prompt": f"part {n}"}) for n in (1, 2)]
    fake_api.add(reply(*calls), subagent, subagent, reply("Both done."))
    done = piton_here("-p", "do both parts")
    assert (done.returncode, done.stdout) == (0, "Both done.\n")
    results = last_user(fake_api.bodies[-1])
    assert [r["tool_use_id"] for r in results] == [c.id for c in calls]
    assert [r["content"].split("\n")[0] for r in results] == ["report for part 1", "report for part 2"]


def test_a_subagent_that_hits_its_turn_limit_is_an_error_the_parent_sees(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(
        project / ".claude" / "agents" / "tiny.md",
        "---\nname: tiny\ndescription: Does one step.\ntools: Glob\nmaxTurns: 1\n---\nYou do one step.\n",
    )
    task = ToolCall("Task", {"description": "one step", "prompt": "List the files.", "subagent_type": "tiny"})
    fake_api.add(reply(task), reply("Listing.", ToolCall("Glob", {"pattern": "*"})), reply("It gave up."))
    assert piton_here("-p", "go").returncode == 0
    parent, sub, back = fake_api.bodies
    assert "- tiny: Does one step." in json.dumps(parent["tools"])
    assert [t["name"] for t in sub["tools"]] == ["Glob"]
    [result] = last_user(back)
    assert result["is_error"] is True
    assert (
        "The tiny subagent did not finish: Stopped after reaching the maximum of 1 turns."
        in result["content"]
    )
    assert "Its last words: Listing." in result["content"]


@pytest.mark.sandbox
def test_a_user_skills_files_are_readable_and_its_scripts_run_while_credentials_stay_hidden(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    claude = Path.home() / ".claude"
    folder = claude / "skills" / "changelog"
    write(claude / ".credentials.json", '{"token": "SECRET-TOKEN"}')
    write(
        folder / "scripts" / "collect.py",
        "import pathlib\n"
        "print('collected', 3)\n"
        "try:\n"
        "    print(pathlib.Path.home().joinpath('.claude/.credentials.json').read_text())\n"
        "except OSError:\n"
        "    print('credentials hidden')\n",
    )
    write(folder / "reference" / "style.md", "STYLE-GUIDE-TEXT")
    write(
        folder / "SKILL.md",
        "---\ndescription: Update the changelog.\nallowed-tools: Bash(python3:*)\n---\n"
        "Run `python3 ${CLAUDE_SKILL_DIR}/scripts/collect.py`, then follow reference/style.md.\n",
    )
    fake_api.add(
        reply(ToolCall("Bash", {"command": f"python3 {folder}/scripts/collect.py"})),
        reply(ToolCall("Read", {"file_path": str(folder / "reference" / "style.md")})),
        reply(ToolCall("Read", {"file_path": str(claude / ".credentials.json")})),
        reply("Done."),
    )
    done = piton_here("-p", "/changelog", "--output-format", "json")
    assert json.loads(done.stdout)["permission_denials"] == []
    ran, read, secret = (last_user(body)[0] for body in fake_api.bodies[1:])
    assert f"python3 {folder}/scripts/collect.py" in json.dumps(fake_api.bodies[0])
    assert "collected 3" in ran["content"] and "credentials hidden" in ran["content"]
    assert "STYLE-GUIDE-TEXT" in read["content"]
    assert secret["is_error"] is True and "credential files" in secret["content"]
    assert "SECRET-TOKEN" not in json.dumps(fake_api.bodies)


def test_piton_skills_lists_what_was_found_and_what_was_skipped(project: Path) -> None:
    add_skill(project, "greet", "Greets people by name.", "Greet.")
    write(project / ".claude" / "skills" / "broken" / "SKILL.md", "---\nname: broken\n---\nno description\n")
    write(project / ".claude" / "commands" / "deploy.md", "Deploy it.\n")
    write(project / ".claude" / "agents" / "reviewer.md", "---\ndescription: Reviews code.\n---\nReview.\n")
    done = piton_here("skills")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "greet  [project, /greet or model]" in out and "init  [bundled, /init only]" in out
    assert "deploy  [project, /deploy or model]" in out
    assert "reviewer  [project]  Reviews code." in out and "Explore  [built-in]" in out
    assert f"{project}/.claude/skills/broken/SKILL.md: it has no description" in out


def test_init_is_a_bundled_command(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Here is a draft."))
    assert piton_here("-p", "/init focus on the tests").returncode == 0
    _, loaded = last_user(fake_api.bodies[0])
    assert (
        loaded["text"].startswith('<skill name="init"')
        and "# Write AGENTS.md for this project" in loaded["text"]
    )
    assert "Notes from the user: focus on the tests" in loaded["text"]
    assert "- init:" not in system_text(fake_api.bodies[0]), "the model is not offered /init"
