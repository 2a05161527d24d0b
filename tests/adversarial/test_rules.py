"""Permission rules hold for what a line really runs (issue 10: P1, P4, P2), through `piton -p`.

P1: a prefix allow rule (`Bash(git status:*)`) never covers a line with an expansion, which bash may
evaluate as code (`"${_@P}"` runs the value of `$_` as a prompt string). P4: a deny rule
(`Bash(rm:*)`, `Bash(git push:*)`) sees the command through wrappers, nested shells and
substitutions, and a line whose commands cannot be read asks, which a `-p` run refuses; both hold in
`bypassPermissions`, which runs whatever no rule stops. Every line is first run by bash itself to
show that it does what it is meant to. P2: an Explore subagent's shell asks as the main agent's
does; its read-only sandbox is no consent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import ToolCall, reply
from tests.adversarial.conftest import SECRET, piton
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S

pytestmark = pytest.mark.sandbox

# Each removes the file {f}: run by bash, the control test shows it.
RM_VARIANTS = [
    "timeout .5 rm {f}",
    "timeout --sig KILL 5 rm {f}",
    "env -S 'rm {f}'",
    "bash -c -- 'rm {f}'",
    "echo rm {f} | bash",
    "trap 'rm {f}' EXIT",
    "stdbuf -o0 rm {f}",
    "setsid -w rm {f}",
    "flock {f}.lock rm {f}",
    "flock {f}.lock -c 'rm {f}'",
    "script -q -c 'rm {f}' /dev/null",
    "nice -n 5 rm {f}",
    "ionice -c 3 rm {f}",
    "chrt -o 0 rm {f}",
    "taskset -c 0 rm {f}",
    "echo {f} | xargs rm",
    "find . -name {f} -exec rm {{}} +",
    "command rm {f}",
    "exec rm {f}",
    "/bin/rm {f}",
    "\\rm {f}",
    "r''m {f}",
    '"rm" {f}',
    "$(echo rm) {f}",
    "eval 'rm {f}'",
    "sh -c 'rm {f}'",
    "dash -c 'rm {f}'",
    "f(){{ rm {f}; }}; f",
    "echo 'a[$(rm {f})]' >/dev/null; (( _ ))",
    "printf -v 'a[$(rm {f})]' y",
]
PUSH_VARIANTS = [
    "git -C . push",
    "git -c push.default=current push",
    "git --git-dir=.git push",
    "git --no-pager push",
]


def results(body: dict[str, Any]) -> dict[str, str]:
    """The tool results the request `body` carries back, by tool_use id."""
    blocks = body["messages"][-1]["content"]
    return {b["tool_use_id"]: json.dumps(b) for b in blocks if b["type"] == "tool_result"}


def bash(command: str, cwd: Path) -> None:
    subprocess.run(
        ["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=CEILING_S
    )


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=CEILING_S, check=True
    )
    return done.stdout


def test_a_prefix_allow_rule_covers_no_expansion(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    lines = {
        "x": "git status '$(touch x)'; git status \"${_@P}\"",  # the reported sample
        "y": "git status 'a[$(touch y)]' >/dev/null; git status $[_]",  # arithmetic on $_
        "z": 'git status "$(touch z)"',
    }
    control = tmp_path / "control"
    control.mkdir()
    for name, line in lines.items():
        bash(line, control)
        assert (control / name).exists(), f"bash runs the hidden command of {line!r}"
    git("init", "-q", cwd=project)
    calls = [ToolCall("Bash", {"command": line}) for line in lines.values()]
    plain = ToolCall("Bash", {"command": "git status --short"})
    fake_api.add(reply(*calls, plain), reply("done"))
    done = piton("-p", "status?", "--allowedTools", "Bash(git status:*)", cwd=project)
    assert done.returncode == 0, done.stderr
    seen = results(fake_api.bodies[1])
    for call in calls:
        assert "nobody can approve it" in seen[call.id], call.input["command"]
    assert "did not permit" not in seen[plain.id], "the rule still allows the plain command"
    assert not [name for name in lines if (project / name).exists()]


def test_a_deny_rule_sees_rm_however_it_is_run(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    control = tmp_path / "control"
    control.mkdir()
    lines = {f"target{n:02d}": variant.format(f=f"target{n:02d}") for n, variant in enumerate(RM_VARIANTS)}
    for name, line in lines.items():
        (control / name).write_text("keep me\n")
        bash(line, control)
        assert not (control / name).exists(), f"bash removes the file with {line!r}"
        (project / name).write_text("keep me\n")
    calls = [ToolCall("Bash", {"command": line}) for line in lines.values()]
    harmless = ToolCall("Bash", {"command": "echo rm target00 && grep -c keep target00"})
    fake_api.add(reply(*calls, harmless), reply("done"))
    args = ("--permission-mode", "bypassPermissions", "--disallowedTools", "Bash(rm:*)")
    done = piton("-p", "clean up", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    seen = results(fake_api.bodies[1])
    slipped = [
        line for (name, line), call in zip(lines.items(), calls, strict=True) if not (project / name).exists()
    ]
    assert slipped == [], "removed despite the deny rule"
    for call in calls:
        assert "did not permit" in seen[call.id], call.input["command"]
    assert "rm target00" in seen[harmless.id] and "did not permit" not in seen[harmless.id]


def test_a_deny_rule_for_git_push_sees_through_git_options(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    def repository(place: Path) -> Path:
        place.mkdir(exist_ok=True)
        git("init", "-q", "--bare", "remote.git", cwd=place)
        git("init", "-q", cwd=place)
        (place / "a.txt").write_text("a\n")
        git("add", "a.txt", cwd=place)
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a", cwd=place)
        return place

    lines = [f"{variant} remote.git HEAD:refs/heads/b{n}" for n, variant in enumerate(PUSH_VARIANTS)]
    control = repository(tmp_path / "control")
    for line in lines:
        bash(line, control)
    assert git("--git-dir", "remote.git", "show-ref", cwd=control).count("refs/heads/b") == len(lines)
    repository(project)
    calls = [ToolCall("Bash", {"command": line}) for line in lines]
    fake_api.add(reply(*calls), reply("done"))
    args = ("--permission-mode", "bypassPermissions", "--disallowedTools", "Bash(git push:*)")
    assert piton("-p", "publish", *args, cwd=project).returncode == 0
    seen = results(fake_api.bodies[1])
    assert all("the rule Bash(git push:*) denies it" in seen[c.id] for c in calls), seen
    refs = subprocess.run(
        ["git", "--git-dir", "remote.git", "show-ref"], cwd=project, capture_output=True, text=True
    )
    assert refs.stdout == ""


@pytest.mark.parametrize("mode", ["default", "plan"])
def test_an_explore_subagents_shell_asks_before_it_reads_env(
    fake_api: FakeAnthropicAPI, project: Path, mode: str
) -> None:
    (project / ".env").write_text(f"API_KEY={SECRET}\n")
    task = ToolCall(
        "Task", {"description": "find", "prompt": "Find the API key.", "subagent_type": "Explore"}
    )
    look = ToolCall("Bash", {"command": "cat .env"})
    spawn = ToolCall("Bash", {"command": "for i in 1 2 3; do sleep 30 & done; echo started"})
    fake_api.add(reply(task), reply(look, spawn), reply("I could not read it."), reply("Not found."))
    done = piton("-p", "what is the API key?", "--permission-mode", mode, cwd=project)
    assert done.returncode == 0, done.stderr
    seen = results(fake_api.bodies[2])
    assert "nobody can approve it" in seen[look.id], "a line that only looks is still asked about"
    refused = "plan mode allows only read-only" if mode == "plan" else "nobody can approve it"
    assert refused in seen[spawn.id] and "did not permit" in seen[spawn.id], "refused, so never run"
    assert SECRET not in json.dumps(fake_api.bodies) and SECRET not in done.stdout


def test_a_brace_allow_rule_covers_only_what_each_alternative_names(
    fake_api: FakeAnthropicAPI, tmp_path: Path
) -> None:
    """`Write({src,lib}/*)` allows a file directly in src/ or lib/, never one deeper: every
    alternative of the group is matched to the end of the path (it once held for the last alone)."""
    project = tmp_path / "project"
    (project / "src" / "web").mkdir(parents=True)
    fake_api.add(
        reply("Writing.", ToolCall("Write", {"file_path": str(project / "src" / "ok.py"), "content": "1\n"})),
        reply(
            "And deeper.",
            ToolCall("Write", {"file_path": str(project / "src" / "web" / "app.py"), "content": "2\n"}),
        ),
        reply("Done."),
    )
    done = piton("-p", "write them", "--allowedTools", "Write({src,lib}/*)", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / "src" / "ok.py").read_text() == "1\n"
    assert not (project / "src" / "web" / "app.py").exists()
    results = [b for m in fake_api.bodies[-1]["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert not results[0].get("is_error") and results[1].get("is_error")
