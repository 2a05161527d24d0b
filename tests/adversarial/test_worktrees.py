"""Attacks through agent worktrees (Task `isolation: "worktree"`). Piton runs `git worktree add`
itself, outside any sandbox, so nothing the repository holds may run then: a hook (a
`post-checkout` the model could not plant, but a repository may bring) stays silent. Inside its
worktree the agent cannot repoint the worktree's `.git` file at a git directory of its own (whose
config would name programs for the git commands that read its changes), and cannot write the
project or Piton's cache where the worktrees live.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, ToolCall, reply
from tests.adversarial.conftest import piton
from tests.fakes.fake_api import FakeAnthropicAPI

pytestmark = pytest.mark.sandbox
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def repository(project: Path) -> None:
    (project / "README.md").write_text("demo\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run([*GIT, *argv], cwd=project, check=True)


def test_no_hook_runs_when_piton_makes_a_worktree_and_the_agent_cannot_repoint_it(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    repository(project)
    ran = project.parent / "hook-ran"
    hook = project / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    evil = project.parent / "evil-gitdir"
    attacks = " ; ".join(
        [
            f"echo 'gitdir: {evil}' > .git",  # its gitfile, to a directory whose config it writes
            f"touch {project}/planted",  # the project, from the worktree
            "touch ~/.cache/piton/worktrees/planted",  # where Piton makes worktrees
            "cat .git",
        ]
    )

    def route(body: dict[str, Any]) -> Reply:
        first = json.dumps(body["messages"][0])
        if "TASK-W" in first:
            return (
                reply(ToolCall("Bash", {"command": attacks})) if len(body["messages"]) == 1 else reply("ok")
            )
        if len(body["messages"]) == 1:
            task = {"description": "w", "prompt": "TASK-W: go", "isolation": "worktree"}
            return reply(ToolCall("Task", task))
        return reply("done")

    fake_api.add(*[route] * 4)
    done = piton("-p", "go", "--dangerously-skip-permissions", cwd=project)
    assert done.returncode == 0, done.stderr
    assert not ran.exists(), "the repository's hook ran while Piton made the worktree"
    assert not (project / "planted").exists()
    cache = Path.home() / ".cache" / "piton" / "worktrees"
    assert not (cache / "planted").exists()
    said = json.dumps(fake_api.bodies[2]["messages"])
    assert said.count("Read-only file system") >= 2 and "gitdir: " in said
    assert f"gitdir: {evil}" not in said.split("cat .git")[-1], (
        "the gitfile still names the real git directory"
    )


def test_a_git_planted_in_the_project_on_path_is_not_what_piton_runs_outside_the_sandbox(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository(project)
    ran = project.parent / "planted-git-ran"
    planted = project / "bin" / "git"
    planted.parent.mkdir()
    planted.write_text(f'#!/bin/sh\ntouch {ran}\nexec /usr/bin/env -i PATH=/usr/bin:/bin git "$@"\n')
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted.parent}:{os.environ['PATH']}")  # a project tool folder first

    def route(body: dict[str, Any]) -> Reply:
        if "TASK-W" in json.dumps(body["messages"][0]):
            return reply("nothing to do")
        if len(body["messages"]) == 1:
            return reply(
                ToolCall("Task", {"description": "w", "prompt": "TASK-W: go", "isolation": "worktree"})
            )
        return reply("done")

    fake_api.add(*[route] * 3)
    done = piton("-p", "go", cwd=project)
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    assert "changed no file; its worktree was removed" in json.dumps(fake_api.bodies[-1]["messages"])
    assert not ran.exists(), "Piton ran the project's git outside the sandbox"
