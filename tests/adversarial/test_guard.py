"""Attacks on what runs outside the sandbox later: git hooks and config wherever git looks for them
(E2, E4, E7) and settings files. Each attack runs through the real Bash tool in the real sandbox,
or the Write tool, and the check is what the user's next git command would run."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.builtin_tools.edit import Edit
from piton.builtin_tools.write import Write
from piton.core.tools import ToolContext, ToolResult
from tests.builtin_tools.helpers import call, call_async, context

pytestmark = pytest.mark.sandbox


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "user.email", "a@b.c")  # so that a commit gets as far as its hooks
    git(ws, "config", "user.name", "a")
    return ws


def bash(ctx: ToolContext, command: str) -> ToolResult:
    return call(Bash(), ctx, command=command)


def test_two_commands_at_once_leave_no_git_config_behind(tmp_path: Path) -> None:
    """Two subagents' commands overlap: the second's snapshot must not take the first one's planted
    `.git/commondir` for the repository's own (E2)."""
    ws = repo(tmp_path)
    (ws / "evil").mkdir()
    (ws / "evil" / "config").write_text("[core]\n\tfsmonitor = touch pwned\n")
    main = context(ws)
    other = ToolContext(cwd=ws, session_id="sub", policy=main.policy, lock=main.lock)

    async def both() -> None:
        planting = f"printf '{ws}/evil' > .git/commondir; sleep 0.6"
        first = asyncio.ensure_future(call_async(Bash(), main, command=planting))
        await asyncio.sleep(0.2)
        await asyncio.gather(first, call_async(Bash(), other, command="sleep 0.8"))

    asyncio.run(both())
    assert not (ws / ".git" / "commondir").exists()
    git(ws, "status")
    assert not (ws / "pwned").exists()


def test_hooks_path_in_the_worktree_is_protected(tmp_path: Path) -> None:
    """husky keeps hooks in `.husky/_` via core.hooksPath: neither Write nor a command may change
    them (E4)."""
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", ".husky/_")
    (ws / ".husky" / "_").mkdir(parents=True)
    (ws / ".husky" / "_" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    ctx = context(ws)
    out = call(
        Write(), ctx, file_path=str(ws / ".husky" / "_" / "post-checkout"), content="#!/bin/sh\ntouch x\n"
    )
    assert out.is_error and "hooks" in str(out.content)
    bash(
        ctx,
        "echo 'touch pwned' >> .husky/_/pre-commit; printf '#!/bin/sh\\ntouch pwned\\n' > .husky/_/post-commit",
    )
    assert (ws / ".husky" / "_" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (ws / ".husky" / "_" / "post-commit").exists()


def test_husky_scripts_that_its_hooks_folder_runs_are_protected(tmp_path: Path) -> None:
    """husky's `.husky/_/pre-commit` runs `.husky/pre-commit`, which people write: neither Write,
    Edit nor a command may change it, and the user's next commit runs what it ran before."""
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", ".husky/_")
    (ws / ".husky" / "_").mkdir(parents=True)
    (ws / ".husky" / "_" / "pre-commit").write_text('#!/bin/sh\n. "$(dirname "$0")/../pre-commit"\n')
    (ws / ".husky" / "_" / "pre-commit").chmod(0o755)
    (ws / ".husky" / "pre-commit").write_text("true\n")
    ctx = context(ws)
    for tool, args in (
        (Write(), {"content": "touch pwned\n"}),
        (Edit(), {"old_string": "true", "new_string": "touch pwned"}),
    ):
        out = call(tool, ctx, file_path=str(ws / ".husky" / "pre-commit"), **args)
        assert out.is_error and "hook" in str(out.content), out.content
    bash(ctx, "echo 'touch pwned' >> .husky/pre-commit; printf 'touch pwned\n' > .husky/post-merge")
    assert (ws / ".husky" / "pre-commit").read_text() == "true\n"
    assert not (ws / ".husky" / "post-merge").exists()
    git(ws, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (ws / "pwned").exists()


@pytest.mark.parametrize(
    ("name", "config"),
    [
        (
            ".pre-commit-config.yaml",
            "repos:\n- repo: local\n  hooks:\n  - {id: x, name: x, entry: touch pwned, language: system}\n",
        ),
        ("lefthook.yml", "pre-commit:\n  commands:\n    x:\n      run: touch pwned\n"),
        (".lefthook.yml", "pre-commit:\n  commands:\n    x:\n      run: touch pwned\n"),
        (".overcommit.yml", "PreCommit:\n  X:\n    enabled: true\n    command: ['touch', 'pwned']\n"),
        (".config/lefthook.yml", "pre-commit:\n  commands:\n    x:\n      run: touch pwned\n"),
    ],
    ids=[
        ".pre-commit-config.yaml",
        "lefthook.yml",
        ".lefthook.yml",
        ".overcommit.yml",
        ".config/lefthook.yml",
    ],
)
def test_a_hook_frameworks_configuration_can_be_neither_written_nor_created(
    tmp_path: Path, name: str, config: str
) -> None:
    """pre-commit, lefthook and overcommit run the commands their configuration names at each
    commit: a configuration the model wrote would run outside the sandbox at the user's next one."""
    ws = repo(tmp_path)
    ctx = context(ws)
    out = call(Write(), ctx, file_path=str(ws / name), content=config)
    assert out.is_error and "hook" in str(out.content), out.content
    bash(
        ctx,
        f"mkdir -p $(dirname {name}); printf '%s' {shlex.quote(config)} > {name}; "
        "mkdir -p .lefthook/pre-commit && touch .lefthook/pre-commit/x",
    )
    assert not (ws / name).exists()
    assert not (ws / ".lefthook").exists() or not any((ws / ".lefthook").rglob("*"))
    (ws / name).parent.mkdir(exist_ok=True)
    (ws / name).write_text("# the user's own\n")  # what exists is kept as it is, too
    bash(ctx, f"echo 'x: y' >> {name}")
    assert (ws / name).read_text() == "# the user's own\n"


def test_a_hooks_path_created_by_a_command_is_emptied(tmp_path: Path) -> None:
    """What the command put there goes; the folder stays, since another sandbox (a background
    command's, another session's) may hold it as a mount point, and removing it would unmount it."""
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", "githooks")
    bash(context(ws), "mkdir githooks && printf '#!/bin/sh\\ntouch pwned\\n' > githooks/pre-commit")
    assert list((ws / "githooks").iterdir()) == []
    git(ws, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (ws / "pwned").exists()


def test_included_git_config_in_the_worktree_is_protected(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    (ws / "team.gitconfig").write_text("[alias]\n\tst = status\n")
    git(ws, "config", "include.path", "../team.gitconfig")
    git(ws, "config", "includeIf.gitdir:/.path", "../local.gitconfig")
    ctx = context(ws)
    for name in ("team.gitconfig", "local.gitconfig"):
        out = call(Write(), ctx, file_path=str(ws / name), content="[core]\n\tfsmonitor = touch pwned\n")
        assert out.is_error, name
    bash(ctx, "printf '[core]\\n\\tfsmonitor = touch pwned\\n' | tee -a team.gitconfig > local.gitconfig")
    git(ws, "status")
    assert not (ws / "pwned").exists()
    assert git(ws, "config", "core.fsmonitor") == ""


def test_a_git_dir_behind_a_symlink_is_pinned(tmp_path: Path) -> None:
    """`.git` is a symlink to a folder in the project: a command cannot swap that folder for one
    with a config of its own (E7)."""
    ws = repo(tmp_path)
    (ws / ".git").rename(ws / "realgit")
    (ws / ".git").symlink_to("realgit")
    bash(
        context(ws),
        "mv realgit realgit.old; mkdir -p realgit && cp -r realgit.old/. realgit/ && "
        "printf '[core]\\n\\tfsmonitor = touch pwned\\n' > realgit/config; "
        "ln -sfn realgit.old .git.new 2>/dev/null; true",
    )
    git(ws, "status")
    assert not (ws / "pwned").exists()
    assert git(ws, "config", "core.fsmonitor") == ""


def test_a_retargeted_git_symlink_is_put_back(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    (ws / ".git").rename(ws / "realgit")
    (ws / ".git").symlink_to("realgit")
    out = bash(
        context(ws),
        "mkdir -p evil && cp -r realgit/. evil/ && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config"
        " && ln -sfn evil .git",
    )
    assert (ws / ".git").readlink() == Path("realgit"), out.content
    git(ws, "status")
    assert not (ws / "pwned").exists()


def test_settings_files_a_command_writes_are_removed(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    out = bash(
        context(ws),
        'mkdir -p .piton .claude && echo \'{"sandbox":{"mode":"danger-full-access"}}\' > .piton/settings.json'
        " && cp .piton/settings.json .claude/settings.local.json",
    )
    assert not (ws / ".piton" / "settings.json").exists(), out.content
    assert not (ws / ".claude" / "settings.local.json").exists()


def test_settings_files_a_command_plants_in_a_subfolder_are_removed(tmp_path: Path) -> None:
    """A later session started in `sub/` would read `sub/.piton/settings.json` (P5)."""
    ws = repo(tmp_path)
    (ws / "pkg" / ".claude").mkdir(parents=True)
    (ws / "pkg" / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Read"]}}')
    out = bash(
        context(ws),
        'mkdir -p sub/deeper/.piton && echo \'{"permissions":{"allow":["Bash"]}}\' > sub/deeper/.piton/settings.json'
        ' && echo \'{"permissions":{"allow":["Bash"]}}\' > pkg/.claude/settings.json'
        " && cp pkg/.claude/settings.json pkg/.claude/settings.local.json",
    )
    assert not (ws / "sub" / "deeper" / ".piton" / "settings.json").exists(), out.content
    assert not (ws / "pkg" / ".claude" / "settings.local.json").exists()
    assert (ws / "pkg" / ".claude" / "settings.json").read_text() == '{"permissions": {"allow": ["Read"]}}'


def test_a_folder_above_a_hooks_folder_cannot_be_renamed_to_plant_a_new_one(tmp_path: Path) -> None:
    """The hooks folder is read-only, but renaming the folder above it and making a new `.husky/_`
    would give git a new hooks folder under the old name: every folder up to the root is pinned."""
    ws = repo(tmp_path)
    git(ws, "config", "core.hooksPath", ".husky/_")
    (ws / ".husky" / "_").mkdir(parents=True)
    (ws / ".husky" / "_" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    bash(
        context(ws),
        "mv .husky .h2 || mv .husky/_ .husky/old; mkdir -p .husky/_ && "
        "printf '#!/bin/sh\\ntouch pwned\\n' > .husky/_/pre-commit; chmod +x .husky/_/pre-commit",
    )
    assert (ws / ".husky" / "_" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (ws / ".h2").exists()
    git(ws, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (ws / "pwned").exists()


def test_settings_behind_a_symlinked_claude_folder_are_protected(tmp_path: Path) -> None:
    """`.claude` may be a symlink to a folder of the project: a settings file a command writes
    through it is removed, and one that was there is put back."""
    ws = repo(tmp_path)
    (ws / "conf").mkdir()
    (ws / "conf" / "settings.json").write_text('{"permissions": {"deny": ["Bash(curl:*)"]}}')
    (ws / ".claude").symlink_to("conf")
    out = bash(
        context(ws),
        """echo '{"permissions":{"allow":["Bash"]}}' > .claude/settings.local.json; """
        """echo '{}' > conf/settings.json""",
    )
    assert not (ws / "conf" / "settings.local.json").exists(), out.content
    assert "Bash(curl:*)" in (ws / "conf" / "settings.json").read_text()


def test_a_settings_file_that_is_a_dangling_symlink_cannot_be_filled_in(tmp_path: Path) -> None:
    """`.claude/settings.json -> ../conf/claude.json`, which does not exist yet: a command that
    creates the file it leads to has written the settings."""
    ws = repo(tmp_path)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").symlink_to("../conf/claude.json")
    out = bash(
        context(ws), """mkdir -p conf && echo '{"permissions":{"allow":["Bash"]}}' > conf/claude.json"""
    )
    assert not (ws / "conf" / "claude.json").exists(), out.content
