"""The shell sandbox against the real bubblewrap: what a command must not be able to do.

Directories live under /var/tmp, not /tmp: inside the sandbox /tmp is a private tmpfs, so a test
there would pass for the wrong reason. bwrap is required: without it these tests fail.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import make_sandbox
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from tests.builtin_tools.helpers import call, context, text
from tests.helpers import CEILING_S, eventually, wait_until

pytestmark = pytest.mark.sandbox  # every test here runs commands in bubblewrap
BASH = Bash()


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="piton-sandbox-", dir="/var/tmp"))
    (root / "ws" / ".git" / "hooks").mkdir(parents=True)
    (root / "ws" / ".git" / "config").write_text("[core]\n")
    (root / "ws" / ".piton").mkdir()
    (root / "ws" / ".piton" / "settings.json").write_text("{}\n")
    (root / "outside").mkdir()
    (root / "home").mkdir()
    monkeypatch.setenv("HOME", str(root / "home"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def bash(place: Path, command: str, mode: str = "workspace-write", **policy: Any) -> tuple[str, bool]:
    result = call(BASH, context(place / "ws", mode, **policy), command=command)
    return text(result), result.is_error


def test_bwrap_is_installed_and_can_start_a_sandbox(place: Path) -> None:
    sandbox = make_sandbox(SandboxPolicy.create("workspace-write", place / "ws"))
    assert isinstance(sandbox, BwrapSandbox)
    assert sandbox.unavailable_reason() is None


def test_the_workspace_is_writable(place: Path) -> None:
    out, failed = bash(place, "echo ok > made.txt && cat made.txt")
    assert (out, failed) == ("ok", False)
    assert (place / "ws" / "made.txt").read_text() == "ok\n"


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("touch ~/pwned", "home/pwned"),
        ("touch /etc/piton-pwned", None),
        ("touch ../outside/pwned", "outside/pwned"),
        ("echo x >> .git/hooks/pre-commit", "ws/.git/hooks/pre-commit"),
        ("echo '[alias] x = !sh' >> .git/config", None),
        ('echo \'{"permissions": {"allow": ["Bash"]}}\' > .piton/settings.json', None),
    ],
)
def test_writes_outside_the_workspace_or_to_protected_files_fail(
    place: Path, command: str, target: str | None
) -> None:
    out, failed = bash(place, command)
    assert failed and "Read-only file system" in out
    if target:
        assert not (place / target).exists()
    assert not Path("/etc/piton-pwned").exists()
    assert (place / "ws" / ".git" / "config").read_text() == "[core]\n"
    assert (place / "ws" / ".piton" / "settings.json").read_text() == "{}\n"


def test_a_symlink_out_of_the_workspace_cannot_be_written_through(place: Path) -> None:
    (place / "ws" / "escape").symlink_to(place / "outside")
    out, failed = bash(place, "echo x > escape/file")
    assert failed and "Read-only file system" in out
    assert not (place / "outside" / "file").exists()


def test_tmp_is_private(place: Path) -> None:
    name = f"/tmp/piton-probe-{uuid.uuid4().hex}"
    out, failed = bash(place, f"echo inside > {name} && cat {name}")
    assert (out, failed) == ("inside", False)
    assert not Path(name).exists()


def test_read_only_mode_protects_the_workspace_too(place: Path) -> None:
    out, failed = bash(place, "touch new-file", mode="read-only")
    assert failed and "Read-only file system" in out
    assert not (place / "ws" / "new-file").exists()


def test_added_directories_are_writable(place: Path) -> None:
    out, failed = bash(place, f"echo x > {place / 'outside' / 'ok'}", extra_dirs=[place / "outside"])
    assert not failed, out
    assert (place / "outside" / "ok").exists()


def test_credentials_in_home_are_hidden(place: Path) -> None:
    (place / "home" / ".ssh").mkdir()
    (place / "home" / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (place / "home" / ".netrc").write_text("machine x password hunter2\n")
    out, _ = bash(place, "cat ~/.ssh/id_ed25519 ~/.netrc; ls -a ~/.ssh")
    assert "PRIVATE" not in out and "hunter2" not in out


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_no_network_not_even_to_this_machine(place: Path, listener: int) -> None:
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo CONNECTED"
    out, failed = bash(place, probe)
    assert failed and "CONNECTED" not in out
    out, failed = bash(place, "exec 3<>/dev/tcp/1.1.1.1/80 && echo CONNECTED")
    assert failed and "CONNECTED" not in out


def test_network_can_be_enabled_in_settings(place: Path, listener: int) -> None:
    out, failed = bash(place, f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo CONNECTED", network=True)
    assert (out, failed) == ("CONNECTED", False)  # the control: the probe above can succeed


def test_secrets_in_the_environment_do_not_reach_commands(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-leak",
        "GITHUB_TOKEN": "ghp_leak",
        "AWS_SECRET_ACCESS_KEY": "aws-leak",
        "DB_PASSWORD": "pw-leak",
        "SOME_RANDOM_VAR": "random-leak",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    out, _ = bash(place, "env")
    assert "leak" not in out
    assert "PATH=" in out and f"HOME={place / 'home'}" in out


@pytest.mark.parametrize("command", ["mount -o remount,rw /", "unshare -Ur true", "unshare -U true"])
def test_privileged_escapes_fail(place: Path, command: str) -> None:
    out, failed = bash(place, command)
    assert failed, out


def _unique_seconds() -> int:
    """A `sleep` length no other test, worker or concurrent run uses, to find its processes by:
    derived from the pid, two workers could pick the same one."""
    return 100_000 + secrets.randbelow(900_000)


def _running(marker: str) -> list[str]:
    done = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return done.stdout.split()


def _gone(marker: str) -> None:
    """Until no process runs `marker`: a killed one may take a moment to exit on a busy machine;
    one never killed (they sleep for days) runs past the test's ceiling."""
    wait_until(lambda: _running(marker) == [], f"end of every {marker!r}")


def test_a_detached_child_dies_with_the_command(place: Path) -> None:
    seconds = _unique_seconds()
    out, failed = bash(place, f"setsid nohup sleep {seconds} >/dev/null 2>&1 & echo started")
    assert (out, failed) == ("started", False)
    _gone(f"sleep {seconds}")


def test_a_timeout_kills_the_whole_group(place: Path) -> None:
    seconds = _unique_seconds()
    result = call(
        BASH, context(place / "ws"), command=f"sleep {seconds} & sleep {seconds}; echo never", timeout=500
    )
    assert result.is_error and "timed out after 0.5 s" in text(result)
    assert "never" not in text(result)
    _gone(f"sleep {seconds}")


_TIOCSTI = (
    "import fcntl, os, termios\n"
    "for target in ('/dev/tty', 0, 1, 2):\n"
    "    try:\n"
    "        fd = os.open(target, os.O_RDWR) if isinstance(target, str) else target\n"
    "        for ch in b'echo INJECTED\\n':\n"
    "            fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))\n"
    "        print('injected via', target)\n"
    "    except OSError as e:\n"
    "        print('refused', target, e.errno)\n"
)
_HOST = """
import asyncio, os, select, shlex, sys, tty
sys.path.insert(0, {root!r})
from pathlib import Path
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox.bwrap import BwrapSandbox
tty.setraw(0)
sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", Path({ws!r})))
assert sandbox.unavailable_reason() is None, sandbox.unavailable_reason()
command = "python3 -c " + shlex.quote({code!r})
if {direct}:  # the terminal handed straight to the sandbox as stdin: --new-session must still refuse
    import subprocess
    launch = sandbox.launch(command, Path({ws!r}))
    out = subprocess.run(
        launch.argv, stdin=0, capture_output=True, text=True, env=launch.env, pass_fds=launch.pass_fds,
        preexec_fn=launch.preexec,
    ).stdout
    launch.close()
else:  # the way the Bash tool runs commands
    from piton.core.safety.shell import run_shell
    out = asyncio.run(run_shell(command, cwd=Path({ws!r}), sandbox=sandbox, timeout_s=30)).output
ready = select.select([0], [], [], 0.5)[0]
typed = os.read(0, 1000) if ready else b""
os.write(1, ("SANDBOX:" + out.replace("\\n", "|") + "TYPED:" + typed.decode() + "END").encode())
"""


@pytest.mark.parametrize("direct", [False, True], ids=["bash-tool", "tty-as-stdin"])
def test_commands_cannot_inject_keystrokes_into_the_terminal(place: Path, direct: bool) -> None:
    import pty

    root = str(Path(__file__).resolve().parents[3])
    host = _HOST.format(root=root, ws=str(place / "ws"), code=_TIOCSTI, direct=direct)
    pid, terminal = pty.fork()
    if pid == 0:  # the child runs with the pseudo-terminal as its controlling terminal, like a user's shell
        # this interpreter: it finds bubblewrap where Piton does (the bundled wheel beside it)
        os.execv(sys.executable, [sys.executable, "-c", host])
    output = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.waitpid(pid, 0)
    report = output.decode(errors="replace")
    assert "SANDBOX:" in report and "END" in report, report
    assert "injected via" not in report and "INJECTED" not in report.split("TYPED:")[1], report
    assert "refused" in report


def test_paths_with_spaces_quotes_newlines_and_dashes(place: Path) -> None:
    odd = place / "ws" / "a dir 'with' \"quotes\"\nand a newline"
    odd.mkdir()
    (odd / "--flag-like").write_text("content\n")
    ctx = context(place / "ws")
    first = call(BASH, ctx, command=f"cd {shlex.quote(odd.name)} && cat -- --flag-like")
    assert text(first) == "content"
    assert text(call(BASH, ctx, command="pwd")) == str(odd)  # the odd directory carried over
    assert text(call(BASH, ctx, command="mkdir -- --dash-dir && cd -- --dash-dir && pwd")) == str(
        odd / "--dash-dir"
    )


def test_an_odd_workspace_path_is_bound_correctly(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(tempfile.mkdtemp(prefix="piton sandbox 'odd' ", dir="/var/tmp"))
    try:
        ws = root / '--ws "x"'
        ws.mkdir()
        result = call(BASH, context(ws), command="echo hi > f && pwd")
        assert text(result) == str(ws) and (ws / "f").read_text() == "hi\n"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_without_bwrap_bash_refuses_and_says_what_to_do(place: Path) -> None:
    ctx = context(place / "ws")
    ctx.sandbox = BwrapSandbox(ctx.policy, executable=str(place / "no-such-bwrap"))  # type: ignore[arg-type]
    result = call(BASH, ctx, command="touch ran-anyway")
    assert result.is_error
    assert "install bubblewrap" in text(result) and "--sandbox danger-full-access" in text(result)
    assert not (place / "ws" / "ran-anyway").exists()


def test_when_namespaces_are_off_bash_refuses_with_the_reason(place: Path) -> None:
    fake = place / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    ctx = context(place / "ws")
    ctx.sandbox = BwrapSandbox(ctx.policy, executable=str(fake))  # type: ignore[arg-type]
    result = call(BASH, ctx, command="touch ran-anyway")
    assert result.is_error and "No permissions to creating new namespace" in text(result)
    assert "User namespaces may be disabled" in text(result)
    assert not (place / "ws" / "ran-anyway").exists()


def test_full_access_runs_unconfined_only_when_asked(place: Path) -> None:
    out, failed = bash(place, f"touch {place / 'outside' / 'allowed'}", mode="danger-full-access")
    assert not failed, out
    assert (place / "outside" / "allowed").exists()


def test_a_project_under_tmp_is_visible_in_every_mode(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("visible\n")
    for mode in ("workspace-write", "read-only"):
        result = call(BASH, context(tmp_path, mode), command="cat data.txt")
        assert (text(result), result.is_error) == ("visible", False), mode


@pytest.mark.parametrize("folder", [".git", ".piton"])
def test_folders_holding_protected_files_cannot_be_swapped(place: Path, folder: str) -> None:
    out, failed = bash(place, f"mv {folder} {folder}.old")
    assert failed and "busy" in out.lower(), out
    assert (place / "ws" / folder).is_dir() and not (place / "ws" / f"{folder}.old").exists()


@pytest.mark.parametrize(
    "created",
    [".piton/settings.local.json", ".claude/settings.json", ".git/commondir"],
)
def test_protected_files_a_command_creates_are_removed(place: Path, created: str) -> None:
    out, _ = bash(place, f"mkdir -p $(dirname {created}) && echo '{{}}' > {created} && echo made")
    assert out.startswith("made") and f"Removed {place / 'ws' / created}" in out
    assert not (place / "ws" / created).exists()


def test_a_repository_the_command_creates_is_left_alone(place: Path) -> None:
    fresh = place / "ws" / "fresh"
    out, failed = bash(place, "git init -q fresh && cd fresh && git config user.name x && echo ok")
    assert (out.splitlines()[0], failed) == ("ok", False)
    assert (fresh / ".git" / "config").is_file()


def test_a_symlinked_git_folder_is_not_followed(place: Path) -> None:
    shutil.rmtree(place / "ws" / ".git")
    (place / "ws" / ".git").symlink_to(place / "outside")
    out, failed = bash(place, "echo fine")
    assert (out, failed) == ("fine", False)
    assert not (place / "outside" / "hooks").exists()


def _folder_under_run() -> Path:
    """A folder under /run this user may create a socket in: the session's runtime folder where
    there is one, else the world-writable lock folder (only root may write /run itself)."""
    candidates = [os.environ.get("XDG_RUNTIME_DIR", ""), f"/run/user/{os.getuid()}", "/run/lock", "/run"]
    for folder in candidates:
        if (folder == "/run" or folder.startswith("/run/")) and os.access(folder, os.W_OK | os.X_OK):
            return Path(folder)
    pytest.fail(f"no folder under /run is writable by uid {os.getuid()} (tried {', '.join(candidates[1:])})")


def test_sockets_under_run_are_out_of_reach(place: Path) -> None:
    path = _folder_under_run() / f"piton-test-{uuid.uuid4().hex[:8]}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    probe = f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('CONNECTED')\""
    try:
        outside = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, check=False)
        assert outside.stdout.strip() == "CONNECTED"  # the control: outside the sandbox it is reachable
        for network in (False, True):  # D-Bus there could start a process outside the sandbox
            out, failed = bash(place, probe, network=network)
            assert failed and "CONNECTED" not in out, network
    finally:
        server.close()
        path.unlink()


def test_startup_git_never_runs_a_repositorys_programs(place: Path) -> None:
    from piton.core.project.system_prompt import git_summary

    ws = place / "ws"
    marker = place / "outside" / "fsmonitor-ran"
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "config", "core.fsmonitor", f"touch {marker}; false"], cwd=ws, check=True)
    (ws / "tracked.txt").write_text("x\n")
    subprocess.run(["git", "-c", "core.fsmonitor=false", "add", "."], cwd=ws, check=True)
    sandbox = make_sandbox(SandboxPolicy.create("read-only", ws))
    for runner in (sandbox, None):  # in the read-only sandbox, and bare (git's own switches off)
        summary = git_summary(ws, runner)
        assert "tracked.txt" in summary
        assert not marker.exists()
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=False)
    assert marker.exists()  # the control: a plain `git status` does run it


@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
def test_an_interrupt_kills_the_command_and_its_children(place: Path, mode: str) -> None:
    import asyncio

    from piton.core.conversation.messages import ToolUseBlock
    from piton.core.tools import ToolRegistry

    seconds = _unique_seconds()
    ctx = context(place / "ws", mode)

    async def interrupted() -> None:
        block = ToolUseBlock(id="t", name="Bash", input={"command": f"sleep {seconds} & sleep {seconds}"})
        task = asyncio.create_task(ToolRegistry([BASH]).call(block, ctx))
        # until both sleeps run (the shell's own command line names them too: not counted)
        await eventually(lambda: len(_running(f"^sleep {seconds}$")) == 2, "start of both sleeps")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    _gone(f"sleep {seconds}")


@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
def test_an_interrupt_while_a_command_starts_leaves_nothing_running(place: Path, mode: str) -> None:
    """Esc at any moment of a command's start: while it is being started, asyncio would kill the
    shell alone, and what it had started ran on (and the call waited for it)."""
    import asyncio

    from piton.core.conversation.messages import ToolUseBlock
    from piton.core.tools import ToolRegistry

    seconds = _unique_seconds()
    ctx = context(place / "ws", mode)

    async def interrupted(after_s: float) -> None:
        block = ToolUseBlock(id="t", name="Bash", input={"command": f"sleep {seconds} & sleep {seconds}"})
        task = asyncio.create_task(ToolRegistry([BASH]).call(block, ctx))
        await asyncio.sleep(after_s)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, CEILING_S)

    async def many() -> None:
        for i in range(150):  # moments from the call's start to well after the shell runs
            await interrupted((i % 50) * 0.0004)

    asyncio.run(many())
    _gone(f"sleep {seconds}")


def test_a_symlink_made_where_a_guarded_folder_was_missing_is_removed_not_followed(place: Path) -> None:
    victim = place / "outside" / "victim"
    victim.mkdir()
    (victim / "settings.json").write_text("{}\n")
    out, _ = bash(place, f"ln -s {victim} .claude && echo linked")
    assert out.startswith("linked") and f"Removed {place / 'ws' / '.claude'}" in out
    assert not os.path.lexists(place / "ws" / ".claude")
    assert (victim / "settings.json").read_text() == "{}\n"  # what the link pointed to is untouched


def _separate_git_dir(place: Path, link: bool) -> Path:
    ws = place / "ws"
    shutil.rmtree(ws / ".git")
    gitdir = place / "ws" / "gitdir"
    subprocess.run(["git", "init", "-q", "--separate-git-dir", str(gitdir), str(ws)], check=True)
    if link:
        (ws / ".git").unlink()
        (ws / ".git").symlink_to(gitdir)
    return gitdir


def test_a_symlinked_git_folder_cannot_be_swapped(place: Path) -> None:
    gitdir = _separate_git_dir(place, link=True)
    command = "rm .git && cp -r gitdir .git && git config -f .git/config core.fsmonitor 'touch PWNED' && echo swapped"
    out, _ = bash(place, command)
    assert f"Restored {place / 'ws' / '.git'} -> {gitdir}" in out
    assert os.readlink(place / "ws" / ".git") == str(gitdir)
    assert "fsmonitor" not in (gitdir / "config").read_text()


def test_a_symlinked_hooks_folder_cannot_be_swapped(place: Path) -> None:
    tracked = place / "ws" / "githooks"
    tracked.mkdir()
    shutil.rmtree(place / "ws" / ".git" / "hooks")
    (place / "ws" / ".git" / "hooks").symlink_to(tracked)
    out, _ = bash(place, "rm .git/hooks && mkdir .git/hooks && echo 'touch PWNED' > .git/hooks/pre-commit")
    assert "Restored" in out and os.readlink(place / "ws" / ".git" / "hooks") == str(tracked)
    assert not (tracked / "pre-commit").exists()


def test_a_gitfile_and_the_directory_it_names_are_protected(place: Path) -> None:
    gitdir = _separate_git_dir(place, link=False)
    assert (place / "ws" / ".git").read_text().startswith("gitdir:")
    out, failed = bash(place, "echo 'gitdir: evil' > .git")
    assert failed and "Read-only file system" in out
    out, failed = bash(place, "git config core.fsmonitor 'touch PWNED'")
    assert failed
    assert "fsmonitor" not in (gitdir / "config").read_text()
