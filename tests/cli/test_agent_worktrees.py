"""Agents in worktrees of their own (Task `isolation: "worktree"`), in `piton -p` against the fake API
with the real sandbox and git: two agents write the same file name apart, the project is untouched
until one's changes are merged, the other's then refuse to apply whole and are dropped; an agent
that changes nothing leaves no worktree; and an agent cannot write the project from its worktree."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, ToolCall, reply
from tests.cli.test_background_agents import Router, background, notifications, texts
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

pytestmark = pytest.mark.sandbox

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture
def repository(project: Path) -> Path:
    (project / "README.md").write_text("demo\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run([*GIT, *argv], cwd=project, check=True)
    return project


def worktrees_of(repository: Path) -> list[str]:
    listed = subprocess.run(["git", "worktree", "list"], cwd=repository, capture_output=True, text=True)
    return listed.stdout.splitlines()[1:]  # the first line is the repository's own folder


def writer(text: str) -> Callable[[dict[str, Any]], Reply]:
    """An agent that writes notes.txt in its folder, then reports."""

    def answer(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return reply(ToolCall("Write", {"file_path": "notes.txt", "content": text}))
        return reply(f"wrote {text.strip()}")

    return answer


def test_two_agents_in_worktrees_write_the_same_file_apart_and_one_is_merged(
    fake_api: FakeAnthropicAPI, repository: Path
) -> None:
    def parent(body: dict[str, Any]) -> Reply:
        step, heard = len(router.parent_bodies), notifications(body)
        if step == 1:
            return reply(*(background(k, f"TASK-{k}: write", isolation="worktree") for k in "AB"))
        if len(heard) < 2:
            return reply("waiting")
        if '"name": "MergeWorktree"' not in texts(body):
            merges = [ToolCall("MergeWorktree", {"agent": k, "action": "apply"}) for k in "AB"]
            return reply(*merges)
        if "Dropped" not in texts(body):
            return reply(ToolCall("MergeWorktree", {"agent": "B", "action": "discard"}))
        return reply("merged A")

    router = Router(parent, {})
    agents = {"TASK-A": writer("from A\n"), "TASK-B": writer("from B\n")}

    def route(body: dict[str, Any]) -> Reply:
        for key, answer in agents.items():
            if key in json.dumps(body["messages"][0]):
                assert (repository / "notes.txt").exists() is False, "the project is untouched meanwhile"
                return answer(body)
        return router(body)

    fake_api.add(*[route] * 14)
    done = piton_here("-p", "PARENT: two writers", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "merged A\n"), done.stderr
    assert (repository / "notes.txt").read_text() == "from A\n"
    merged = json.dumps(router.parent_bodies[-2]["messages"][-1])
    assert "Applied the changes of A" in merged and "Nothing was applied" in merged
    assert "notes.txt: already exists in working directory" in merged, "B's patch refused whole"
    assert worktrees_of(repository) == [], "both worktrees are gone: one merged, one dropped"
    reports = texts(router.parent_bodies[2])
    assert "are in the worktree" in reports and "MergeWorktree with agent" in reports


def test_an_agent_in_a_worktree_cannot_write_the_project_and_one_that_changed_nothing_leaves_none(
    fake_api: FakeAnthropicAPI, repository: Path
) -> None:
    outside = str(repository / "README.md")

    def agent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return reply(ToolCall("Bash", {"command": f"echo changed > {outside}; pwd"}))
        return reply("tried")

    def parent(body: dict[str, Any]) -> Reply:
        if len(router.parent_bodies) == 1:
            return reply(
                ToolCall("Task", {"description": "try", "prompt": "TASK-T: try", "isolation": "worktree"})
            )
        return reply("done")

    router = Router(parent, {"TASK-T": lambda: reply("unused")})
    router.agents = {}

    def route(body: dict[str, Any]) -> Reply:
        if "TASK-T" in json.dumps(body["messages"][0]):
            router.agent_bodies.setdefault("TASK-T", []).append(body)
            return agent(body)
        return router(body)

    fake_api.add(*[route] * 4)
    done = piton_here("-p", "PARENT: try", "--dangerously-skip-permissions")
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert (repository / "README.md").read_text() == "demo\n"
    ran = texts(router.agent_bodies["TASK-T"][-1])
    assert "Read-only file system" in ran and "/piton/worktrees/" in ran, (
        "it ran in its worktree, the project read-only"
    )
    assert "It changed no file; its worktree was removed." in texts(router.parent_bodies[-1])
    assert worktrees_of(repository) == []


@pytest.mark.parametrize("action", ["apply", "discard"])
def test_the_session_works_in_a_worktree_and_leaves_it(
    fake_api: FakeAnthropicAPI, repository: Path, action: str
) -> None:
    fake_api.add(
        reply(ToolCall("EnterWorktree", {"name": "try-it"})),
        reply(
            ToolCall("Write", {"file_path": "notes.txt", "content": "tried\n"}),
            ToolCall("Bash", {"command": "pwd"}),
        ),
        reply(ToolCall("ExitWorktree", {"action": action})),
        reply(ToolCall("Bash", {"command": "pwd"})),
        reply("done"),
    )
    done = piton_here(
        "-p", "try it apart", "--permission-mode", "acceptEdits", "--allowedTools", "Bash(pwd:*)"
    )
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    results = [
        b["content"] for b in fake_api.bodies[2]["messages"][-1]["content"] if b["type"] == "tool_result"
    ]
    assert any("/piton/worktrees/" in r and r.strip().endswith("try-it") for r in results), results
    assert not (repository / "notes.txt").exists() or action == "apply"
    left = json.dumps(fake_api.bodies[3]["messages"][-1])
    assert ("Applied the worktree's changes" in left) == (action == "apply")
    assert (repository / "notes.txt").exists() == (action == "apply")
    assert str(repository) in json.dumps(fake_api.bodies[4]["messages"][-1]), "back in the project"
    assert worktrees_of(repository) == []
