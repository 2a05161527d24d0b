"""Git worktrees for agents that work apart (Task with `isolation: "worktree"`).

A worktree is made from the repository's HEAD in Piton's cache folder, out of every sandbox's
reach: no command the model runs can plant a link where git is about to write. Piton runs the two
git commands that need the repository's own `.git` writable (`worktree add`, `worktree prune`)
itself, with hooks and fsmonitor turned off; nothing the model wrote can name a program for them
(the config files that could are guarded). Everything that reads what an agent wrote (is it
changed? its diff) runs in a read-only sandbox, as the session's own git summary does. The agent's
sandbox has the worktree as its only writable root; its changes reach the project only through
an explicit step (`MergeWorktree`), as a patch applied like any command.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from piton.core.conversation.session import project_key
from piton.core.records import record
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import make_sandbox

_HARDENED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
_TIMEOUT_S = 60.0


class WorktreeError(Exception):
    """A worktree that cannot be made or read; the message says why, in one line."""


@record(frozen=True)
class Worktree:
    path: Path
    repository: Path  # the top folder of the repository it was made from
    base: str  # the commit it started from


def worktree_home(repository: Path) -> Path:
    """Where the worktrees of one repository go: Piton's cache, never a folder the model writes."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "piton" / "worktrees" / project_key(repository)


def git_program(project: Path) -> str:
    """The `git` to run outside the sandbox: found on PATH, but never in a folder of the project or
    a relative entry (the model writes there: a planted `git` would run unconfined)."""
    inside = project.resolve()
    folders = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if os.path.isabs(entry) and not Path(entry).resolve().is_relative_to(inside)
    ]
    found = shutil.which("git", path=os.pathsep.join(folders))
    if found is None:
        raise WorktreeError("git is not installed (outside the project)")
    return found


def _git(cwd: Path, *args: str) -> str:
    """Piton's own git command (hooks and fsmonitor off), outside the sandbox; its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(
            [git_program(cwd), *_HARDENED, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WorktreeError(f"git could not run: {e}") from e
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise WorktreeError(said[-1] if said else f"git {args[0]} failed")
    return done.stdout.strip()


def create(project: Path, name: str) -> Worktree:
    """A worktree of `project`'s repository at its HEAD (uncommitted changes are not in it)."""
    try:
        top = Path(_git(project, "rev-parse", "--show-toplevel"))
        base = _git(top, "rev-parse", "--verify", "HEAD^{commit}")
    except WorktreeError as e:
        raise WorktreeError(f"{project} is not a git repository with a commit ({e})") from e
    home = worktree_home(top)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = home / name
    _git(top, "worktree", "add", "--detach", str(folder), base)
    return Worktree(folder, top, base)


def remove(worktree: Worktree) -> None:
    """The worktree gone, and git's record of it (a folder removed, then pruned: no checks that read
    what the agent wrote)."""
    shutil.rmtree(worktree.path, ignore_errors=True)
    with contextlib.suppress(WorktreeError):  # the folder is gone; git forgets it at its next prune
        _git(worktree.repository, "worktree", "prune")


def diff_script(worktree: Worktree) -> str:
    """A bash line that prints the worktree's changes since its base as one binary patch: changed
    files, and new ones git does not ignore. It only reads (the patch goes to standard output)."""
    path, base = shlex.quote(str(worktree.path)), shlex.quote(worktree.base)
    new_file = 'git diff --binary --no-index -- /dev/null "$1" || [ $? -eq 1 ]'
    return (
        f"( cd {path} && git {' '.join(_HARDENED)} diff --binary {base} -- . && "
        f"git ls-files -z --others --exclude-standard | xargs -0 -r -n1 sh -c {shlex.quote(new_file)} _ )"
    )


def seen(policy: SandboxPolicy, *paths: Path) -> SandboxPolicy:
    """`policy` with `paths` visible (read-only) in its sandbox: elsewhere they are (the machine's
    folders are), but under /tmp only what is bound is, the sandbox's /tmp being its own."""
    tmp = tuple(p for p in paths if p.is_relative_to("/tmp") and p not in policy.named_in_tmp)
    return replace(policy, named_in_tmp=(*policy.named_in_tmp, *tmp))


def changes(worktree: Worktree, policy: SandboxPolicy) -> str:
    """The worktree's patch, read in a read-only sandbox ('' when nothing changed)."""
    reading = seen(replace(policy, workspace=worktree.path, extra_dirs=()), worktree.repository).read_only()
    sandbox = make_sandbox(reading) if policy.mode != "danger-full-access" else None
    script = diff_script(worktree)
    if sandbox is not None and (reason := sandbox.unavailable_reason()) is not None:
        raise WorktreeError(f"the worktree cannot be read: {reason}")
    launch = sandbox.launch(script, worktree.path) if sandbox is not None else None
    argv = launch.argv if launch is not None else ["/bin/bash", "-c", script]
    try:
        done = subprocess.run(
            argv,
            cwd=worktree.path,
            env=launch.env if launch is not None else None,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            pass_fds=launch.pass_fds if launch is not None else (),
            preexec_fn=launch.preexec if launch is not None else None,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WorktreeError(f"the worktree's changes cannot be read: {e}") from e
    finally:
        if launch is not None:
            launch.close()
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise WorktreeError(said[-1] if said else "the worktree's changes cannot be read")
    return done.stdout
