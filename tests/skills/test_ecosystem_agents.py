"""Subagent collections, listings and memory as real public collections lay them out: agents in
category subfolders, frontmatter keys Claude Code honours, hundreds of agents and skills within a
budget the model can search past, and the memory patterns people use (a CLAUDE.md that is just
`@AGENTS.md`, `.claude/rules/`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from piton.core.options import RunOptions
from piton.core.subagents import tools_for
from piton.factory import subagent_mode
from piton.runtime import Parts, build_runtime
from piton.skills.agents import agent_types_from_data, discover_agent_types
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Probe

PITON = str(Path(sys.executable).with_name("piton"))


def agent(path: Path, name: str, description: str, body: str = "You review code.", **meta: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = "".join(f"{k}: {v}\n" for k, v in meta.items())
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
    return path


def test_agents_in_category_subfolders_are_found_and_a_readme_is_not_an_agent(project: Path) -> None:
    root = project / ".claude" / "agents" / "categories"
    agent(
        root / "01-core" / "backend-developer.md",
        "backend-developer",
        "Builds APIs",
        tools="Read, Write, Bash",
    )
    agent(
        root / "02-lang" / "python-pro.md", "python-pro", "Python expert", tools="Read, WebFetch, WebSearch"
    )
    (root / "README.md").write_text("# The collection\nNo frontmatter here.\n")
    types, warnings = discover_agent_types(project)
    assert {"backend-developer", "python-pro"} <= set(types) and warnings == []
    assert types["python-pro"].path == root / "02-lang" / "python-pro.md"


def test_an_agent_of_a_name_already_taken_is_reported_not_dropped_silently(project: Path) -> None:
    """Large collections ship the same agent in two folders: the second is said to be unused."""
    root = project / ".claude" / "agents"
    first = agent(root / "01-core" / "reviewer.md", "reviewer", "Reviews, first")
    again = agent(root / "09-misc" / "reviewer.md", "reviewer", "Reviews, again")
    types, warnings = discover_agent_types(project)
    assert types["reviewer"].description == "Reviews, first"
    assert warnings == [f"{again}: agent reviewer is not used: the one in {first} comes first"]


def test_agent_frontmatter_is_honoured_where_it_maps_and_named_where_it_does_not(project: Path) -> None:
    root = project / ".claude" / "agents"
    agent(
        root / "auditor.md",
        "auditor",
        "Audits",
        disallowedTools="Bash, Write",
        permissionMode="plan",
        hooks="{}",
    )
    agent(root / "yolo.md", "yolo", "Does anything", permissionMode="bypassPermissions")
    agent(root / "web.md", "web", "Reads the web", tools="Read, WebFetch, mcp__github")
    types, _ = discover_agent_types(project)
    tools = [Probe("Read", read_only=True), Probe("Bash"), Probe("Write"), Probe("mcp__github__list_issues")]
    assert [t.name for t in tools_for(types["auditor"], tools)] == ["Read", "mcp__github__list_issues"]
    assert [t.name for t in tools_for(types["web"], tools)] == ["Read", "mcp__github__list_issues"]
    assert subagent_mode("default", types["auditor"]) == "plan", "a project's type may narrow"
    assert subagent_mode("default", types["yolo"]) == "default", "and never widen"
    user_yolo = agent(
        Path.home() / ".claude" / "agents" / "mine.md", "mine", "Mine", permissionMode="acceptEdits"
    )
    assert subagent_mode("default", discover_agent_types(project)[0]["mine"]) == "acceptEdits", user_yolo
    # an Agent SDK client's own types are the user's too (they come from the program that runs Piton)
    spec = {"fast": {"description": "Quick.", "prompt": "Be quick.", "permissionMode": "acceptEdits"}}
    assert subagent_mode("default", agent_types_from_data(spec, "sdk")["fast"]) == "acceptEdits"

    from piton.skills.report import agent_notes

    assert agent_notes(types["web"], {"Read", "Bash"}) == ["tools Piton does not have: WebFetch"]
    assert agent_notes(types["auditor"], {"Read"}) == ["'hooks' is not applied"]


def test_an_agents_skills_are_loaded_into_its_prompt(project: Path) -> None:
    skill = project / ".claude" / "skills" / "house-style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: house-style\ndescription: Our style\n---\nAlways use tabs.\n")
    agent(project / ".claude" / "agents" / "writer.md", "writer", "Writes", skills="house-style, missing-one")
    provider = ScriptedProvider(
        reply(ToolCall("Task", {"description": "w", "prompt": "write", "subagent_type": "writer"})),
        reply("written"),
        reply("ok"),
    )
    runtime = build_runtime(RunOptions(cwd=project), provider, parts=Parts(tools=[]))
    assert runtime.agent_types["writer"].notes == ("skill 'missing-one' not found",)

    import asyncio

    async def go() -> None:
        [_ async for _ in runtime.agent.run("go")]

    asyncio.run(go())
    assert "Always use tabs." in provider.requests[1].system


def test_hundreds_of_agents_and_skills_stay_within_budget_and_the_model_can_search_them(
    project: Path,
) -> None:
    for i in range(383):
        agent(
            project / ".claude" / "agents" / f"cat-{i % 9}" / f"agent-{i:03d}.md",
            f"agent-{i:03d}",
            f"Expert {i}. " + "y" * 1_200,
        )
    for i in range(183):
        folder = project / ".claude" / "skills" / f"skill-{i:03d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:03d}\ndescription: Skill {i}. " + "z" * 300 + "\n---\nDo it.\n"
        )
    (project / ".claude" / "agents" / "cat-0" / "terraform-reviewer.md").write_text(
        "---\nname: terraform-reviewer\ndescription: Reviews Terraform plans for drift\n---\nReview.\n"
    )
    provider = ScriptedProvider(
        reply(ToolCall("SearchSkills", {"query": "terraform drift"})), reply("found it")
    )
    runtime = build_runtime(RunOptions(cwd=project), provider, parts=Parts(tools=[]))
    task = next(t for t in runtime.agent.tools if t.name == "Task")
    from piton.core.listing import listing_budget

    budget = listing_budget(runtime.agent.context_window())
    assert budget < 383 * 1_200, "the collection is larger than its budget"
    assert len(task.description) < budget + 1_000, "the Task tool's agent list has a budget"
    assert len(runtime.agent.config.system_prompt) < budget + 15_000, "so does the skills listing"
    assert any("no room for" in n and "SearchSkills" in n for n in runtime.notices)

    import asyncio

    async def go() -> None:
        [_ async for _ in runtime.agent.run("find a terraform reviewer")]

    asyncio.run(go())
    [result] = [b for b in provider.requests[1].messages[-1].content if b.type == "tool_result"]
    assert "[agent] terraform-reviewer: Reviews Terraform plans for drift" in str(result.content)


def test_a_claude_md_that_only_imports_agents_md_loads_it_once_and_rules_load(project: Path) -> None:
    (project / "AGENTS.md").write_text("# Conventions\nUse tabs.\n")
    (project / "CLAUDE.md").write_text("@AGENTS.md\n")
    rules = project / ".claude" / "rules"
    rules.mkdir(parents=True)
    (rules / "testing.md").write_text("Run pytest with -x.\n")
    (rules / "frontend.md").write_text(
        '---\npaths:\n  - "src/**/*.tsx"\n  - src/**/*.ts\n---\nUse hooks, not classes.\n'
    )
    (project / "CLAUDE.local.md").write_text("My sandbox URL is http://localhost:3000\n")
    from piton.core.project.memory import load_memory

    section = load_memory(project).prompt_section()
    assert section.count("Use tabs.") == 1 and "CLAUDE.md\n@AGENTS.md" not in section
    assert "Run pytest with -x." in section and "localhost:3000" in section
    assert "applies only when working on files matching: src/**/*.tsx, src/**/*.ts" in section
    assert "paths:" not in section


def test_piton_skills_json_counts_what_loaded_and_why_the_rest_was_skipped(project: Path) -> None:
    agent(project / ".claude" / "agents" / "a" / "one.md", "one", "First", tools="Read, WebSearch, MultiEdit")
    (project / ".claude" / "agents" / "broken.md").write_text("---\nname: broken\n---\nno description\n")
    folder = project / ".claude" / "skills" / "tidy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidies\n---\nTidy up.\n")
    done = subprocess.run(
        [PITON, "skills", "--json"], cwd=project, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [s["name"] for s in data["skills"] if s["source"] == "project"] == ["tidy"]
    [one] = [a for a in data["agents"] if a["name"] == "one"]
    assert one["not_applied"] == ["tools Piton does not have: MultiEdit"]
    [skipped] = data["skipped"]
    assert skipped["path"].endswith("broken.md") and "description" in skipped["reason"]
