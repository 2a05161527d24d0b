"""Hostile and broken files in a project or the user's home: Piton still starts and works, says once
which file it skipped and why, and keeps everything else.

Each family runs the real `piton skills` or `piton -p` (against the fake API): the files that once
ended the start-up with a traceback (deep YAML or JSON, a YAML alias bomb, a folder that cannot be
listed) or made it refuse (a settings value it did not know) are all here. Where a hang or the
CPU a run took is what is tested, `piton` is a process of its own; elsewhere it runs in this one.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

from piton.core.project.trust import default_store_path
from piton.testing.script import ToolCall, reply
from tests.cli.test_piton_command import piton
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

DEEP_YAML = "x: " + "[" * 600 + "]" * 600  # 1.2 kB; YAML's composer recursed once per level
DEEP_JSON = '{"permissions": {"allow": ' + "[" * 5000 + "]" * 5000 + "}}"
LAUGHS = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def doc(frontmatter: str, body: str = "Do the thing.") -> str:
    return f"---\n{frontmatter}\n---\n{body}\n"


def corpus(project: Path) -> tuple[list[str], list[Path]]:
    """Good and hostile skills, commands and agents in the project and the home folder: the names that
    must be listed, and the files (or folders) that must each be named once."""
    claude, home = project / ".claude", Path.home() / ".piton"
    write(claude / "skills" / "greet" / "SKILL.md", doc("description: Greets people."))
    write(claude / "commands" / "ship.md", doc("description: Ships it."))
    write(claude / "agents" / "reviewer.md", doc("description: Reviews diffs."))
    write(home / "skills" / "mine" / "SKILL.md", doc("description: The user's own."))
    bad = [
        write(claude / "skills" / "deep" / "SKILL.md", doc(f"description: deep\n{DEEP_YAML}")),
        write(claude / "skills" / "laughs" / "SKILL.md", doc(f"description: lol\n{LAUGHS}")),
        write(claude / "skills" / "huge" / "SKILL.md", doc("description: big\n" + "k: v\n" * 150_000)),
        write(claude / "skills" / "digits" / "SKILL.md", doc("description: " + "9" * 5000)),
        write(claude / "commands" / "deep.md", doc(f"description: deep\n{DEEP_YAML}")),
        write(claude / "agents" / "deep.md", doc(f"description: deep\n{DEEP_YAML}")),
        write(claude / "agents" / "laughs.md", doc(f"description: lol\n{LAUGHS}")),
        write(home / "skills" / "deep" / "SKILL.md", doc(f"description: deep\n{DEEP_YAML}")),
        claude / "skills" / "loop",  # a link to itself: cannot be looked into, by root either
        claude / "skills" / "fifo",  # its SKILL.md is a FIFO: reading would wait forever for a writer
    ]
    bad[-2].symlink_to("loop")
    bad[-1].mkdir()
    os.mkfifo(bad[-1] / "SKILL.md")
    return ["greet", "ship", "reviewer", "mine"], bad


def named_once(output: str, paths: list[Path]) -> None:
    for path in paths:
        lines = [line for line in output.splitlines() if f"{path}:" in line]
        assert len(lines) == 1, f"{path} should be named once: {lines}"


def test_piton_skills_lists_the_rest_and_names_each_hostile_file_once(project: Path) -> None:
    listed, bad = corpus(project)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = piton("skills")  # a FIFO read that waited for a writer would outlast the test's ceiling
    assert done.returncode == 0 and done.stderr == "", done.stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the CPU time it took, however busy the machine: far from what unbounded YAML would take
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 20
    for name in listed:
        assert re.search(rf"^  {name}  \[", done.stdout, re.MULTILINE), name
    skipped = done.stdout.split("\nSkipped\n", 1)[1]
    assert len(skipped.splitlines()) == len(bad)
    named_once(skipped, bad)
    assert "nests deeper than 32 levels" in skipped and "more than 20,000 values" in skipped


def test_print_mode_starts_and_works_beside_the_same_files(fake_api: FakeAnthropicAPI, project: Path) -> None:
    _, bad = corpus(project)
    fake_api.add(reply("Hello."))
    done = piton_here("-p", "hi")
    assert (done.returncode, done.stdout) == (0, "Hello.\n"), done.stderr
    assert len(done.stderr.splitlines()) == len(bad)
    named_once(done.stderr, bad)
    system = "\n".join(b["text"] for b in fake_api.bodies[0]["system"])
    assert "- greet: Greets people." in system and "- mine: The user's own." in system
    assert "lol" not in system and "deep" not in system.split("# Skills", 1)[1]


def test_a_skill_folder_that_cannot_be_listed_hides_only_itself(project: Path) -> None:
    """chmod 000 stops a user and not root: as root the folder is listed like any other."""
    claude = project / ".claude"
    write(claude / "skills" / "greet" / "SKILL.md", doc("description: Greets people."))
    locked = write(claude / "skills" / "locked" / "SKILL.md", doc("description: Locked away.")).parent
    write(claude / "commands" / "ship.md", doc("description: Ships it."))
    locked.chmod(0)
    try:
        done = piton("skills")
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr
    assert re.search(r"^  greet  \[", done.stdout, re.MULTILINE)
    assert re.search(r"^  ship  \[", done.stdout, re.MULTILINE)
    if os.geteuid() == 0:
        assert re.search(r"^  locked  \[", done.stdout, re.MULTILINE) and "Skipped" not in done.stdout
    else:
        assert "locked  [" not in done.stdout
        assert done.stdout.split("\nSkipped\n", 1)[1] == (
            f"  {locked}: cannot read this skill folder (Permission denied); skipped\n"
        )


SETTINGS_LEVELS = ["user", "project", "local"]


def settings_path(project: Path, level: str) -> Path:
    return {
        "user": Path.home() / ".piton" / "settings.json",
        "project": project / ".piton" / "settings.json",
        "local": project / ".piton" / "settings.local.json",
    }[level]


@pytest.mark.parametrize("level", SETTINGS_LEVELS)
def test_deep_json_in_a_settings_file_is_skipped_and_the_other_files_still_count(
    fake_api: FakeAnthropicAPI, project: Path, level: str
) -> None:
    models = {"user": "claude-haiku-5-5", "project": "claude-opus-5-5", "local": "claude-sonnet-4-6"}
    for other in SETTINGS_LEVELS:
        write(
            settings_path(project, other),
            DEEP_JSON if other == level else json.dumps({"model": models[other]}),
        )
    fake_api.add(reply("Fine."))
    done = piton_here("-p", "hi")
    assert (done.returncode, done.stdout) == (0, "Fine.\n"), done.stderr
    deep = settings_path(project, level)
    assert done.stderr == f"piton: ignored {deep}: it nests deeper than 64 levels\n"
    expected = models["local" if level != "local" else "project"]  # the last file that still counts
    assert fake_api.bodies[0]["model"] == expected


def test_a_deep_trusted_folders_store_is_named_and_nothing_is_trusted(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    store = write(default_store_path(), '{"version": 1, "folders": ' + "[" * 5000 + "]" * 5000 + "}")
    write(project / ".piton" / "settings.json", json.dumps({"permissions": {"allow": ["Bash(make:*)"]}}))
    fake_api.add(reply("Fine."), reply("Again."))
    done = piton_here("-p", "hi")
    assert (done.returncode, done.stdout) == (0, "Fine.\n"), done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("piton: this folder is not trusted, so its files grant nothing: ignored ")
    assert line.endswith(
        f"your answers about trusted folders in {store} were ignored: it nests deeper than 64 levels"
    )
    write(project / ".piton" / "settings.json", "{}")  # no grants: the store is still named, once
    done = piton_here("-p", "hi")
    assert done.returncode == 0
    assert (
        done.stderr
        == f"piton: your answers about trusted folders in {store} were ignored: it nests deeper than 64 levels\n"
    )


def test_an_unknown_sandbox_mode_in_a_file_is_read_as_read_only_and_a_bad_flag_is_refused(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    write(Path.home() / ".piton" / "settings.json", json.dumps({"sandbox": {"mode": "weird"}}))
    call = ToolCall("Write", {"file_path": "out.txt", "content": "x"})
    fake_api.add(reply(call), reply("Could not write."))
    done = piton_here("-p", "write out.txt", "--permission-mode", "acceptEdits")
    assert (done.returncode, done.stdout) == (0, "Could not write.\n"), done.stderr
    assert done.stderr == (
        "piton: unknown sandbox.mode='weird' in ~/.piton/settings.json (one of read-only, workspace-write, "
        "danger-full-access): read as 'read-only', the strictest\n"
    )
    result = tool_result(fake_api.bodies[1], call.id)
    assert result["is_error"] and "the sandbox is read-only" in json.dumps(result["content"])
    assert not (project / "out.txt").exists()
    done = piton_here("-p", "hi", "--sandbox", "weird")
    assert done.returncode == 2 and done.stderr.startswith("piton: Invalid value for '--sandbox'")
    assert len(fake_api.requests) == 2


def tool_result(body: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    blocks = [b for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
    [found] = [b for b in blocks if b["type"] == "tool_result" and b["tool_use_id"] == tool_use_id]
    return found


def test_a_missing_additional_directory_in_a_file_is_skipped_and_as_a_flag_refused(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    write(shared / "notes.txt", "SHARED-NOTES")
    dirs = {"permissions": {"additionalDirectories": ["/no/such/dir", str(shared)]}}
    write(Path.home() / ".piton" / "settings.json", json.dumps(dirs))
    call = ToolCall("Read", {"file_path": str(shared / "notes.txt")})
    fake_api.add(reply(call), reply("Read it."))
    done = piton_here("-p", "read the notes")
    assert (done.returncode, done.stdout) == (0, "Read it.\n"), done.stderr
    assert done.stderr == (
        "piton: ignored permissions.additionalDirectories entry '/no/such/dir' in ~/.piton/settings.json: "
        "not a directory\n"
    )
    assert "SHARED-NOTES" in json.dumps(tool_result(fake_api.bodies[1], call.id)["content"])
    done = piton_here("-p", "hi", "--add-dir", "/no/such/dir")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("piton: Invalid value for '--add-dir': dir '/no/such/dir' does not exist")


def test_diamond_imports_put_each_file_into_the_prompt_once(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / ".git").mkdir()
    write(project / "AGENTS.md", "AGENTS-MARKER @l1a.md @l1b.md")
    for level in (1, 2, 3):
        for side in "ab":
            below = "@c.md" if level == 3 else f"@l{level + 1}a.md @l{level + 1}b.md"
            write(project / f"l{level}{side}.md", f"L{level}{side.upper()}-MARKER {below}")
    write(project / "c.md", "C-MARKER")
    write(project / "CLAUDE.md", "See @AGENTS.md and @c.md")  # as Claude Code users often write
    fake_api.add(reply("Fine."))
    done = piton_here("-p", "hi")
    assert (done.returncode, done.stderr) == (0, "")
    system = "\n".join(b["text"] for b in fake_api.bodies[0]["system"])
    for marker in ("AGENTS", "L1A", "L2B", "L3A", "L3B", "C"):
        assert system.count(f"{marker}-MARKER") == 1, marker  # C was in it 16 times
    assert f"## {project / 'CLAUDE.md'}\nSee @AGENTS.md and @c.md" in system


def test_a_fifo_where_settings_or_memory_belong_does_not_hang_the_start(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / ".piton").mkdir()
    os.mkfifo(project / ".piton" / "settings.local.json")
    os.mkfifo(project / "notes.md")
    write(project / "AGENTS.md", "Read @notes.md first.")
    fake_api.add(reply("Fine."))
    try:
        done = piton("-p", "hi")
    except subprocess.TimeoutExpired:
        pytest.fail("piton waited for a writer to a FIFO")
    assert (done.returncode, done.stdout) == (0, "Fine.\n")
    assert (
        done.stderr
        == f"piton: ignored {project / '.piton' / 'settings.local.json'}: it is not a regular file\n"
    )


def test_a_folder_where_a_settings_file_belongs_is_one_warning_and_the_run_goes_on(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    (project / ".claude" / "settings.json").mkdir(parents=True)
    fake_api.add(reply("Fine."))
    done = piton_here("-p", "hi")
    assert (done.returncode, done.stdout) == (0, "Fine.\n"), done.stderr
    assert (
        done.stderr == f"piton: ignored {project / '.claude' / 'settings.json'}: it is not a regular file\n"
    )
