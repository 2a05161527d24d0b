"""Finding and running ripgrep for Glob and Grep.

ripgrep runs inside the read-only sandbox when one can start: it then sees only what a sandboxed
command could (credential folders are empty there, other processes' files are not there), whatever
a concurrent command does to the folders it walks. The binary is chosen once, never from a folder
the model's commands can write.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sysconfig
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from piton.core.safety.policy import SandboxPolicy, real
from piton.core.safety.sandbox import Launch, Sandbox, make_sandbox

RG_TIMEOUT_S = 60.0
_BASE_ARGS = ("--no-config", "--color=never", "--hidden", "--glob=!.git", "--null")


class RipgrepMissing(Exception):
    pass


def mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


_SYSTEM_DIRS = ("/usr/bin", "/usr/local/bin", "/bin", "/opt/homebrew/bin")


def _under(path: Path, root: Path) -> bool:
    return path == root or str(path).startswith(str(root).rstrip("/") + "/")


def _usable(candidate: Path, unsafe: tuple[Path, ...]) -> bool:
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        return False
    target = real(candidate)
    return not any(_under(target, root) for root in unsafe)


@cache
def rg_path(unsafe: tuple[Path, ...] = ()) -> str:
    """The `rg` to run: the one the ripgrep wheel put beside this Python, else the system's, else
    the first on PATH, skipping any that lies under `unsafe` (the folders the model's commands can
    write, where a planted `rg` would run with Piton's rights)."""
    scripts = [Path(sysconfig.get_path("scripts"))]
    path_dirs = [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep) if d.startswith("/")]
    for folder in (*scripts, *map(Path, _SYSTEM_DIRS), *path_dirs):
        if _usable(folder / "rg", unsafe):
            return str(real(folder / "rg"))
    raise RipgrepMissing(
        "ripgrep (rg) is not installed outside the project: pip install ripgrep, or install it from your OS"
    )


@dataclass(frozen=True, slots=True)
class RgOutput:
    code: int  # 0 matches, 1 none, 2 an error
    text: str
    error: str

    def paths(self) -> list[str]:
        """For --files and -l: rg's --null ends each path with a NUL and nothing else."""
        return [p for p in self.text.split("\0") if p]

    def records(self) -> list[tuple[str, str]]:
        """For content and -c: one (path, rest) per line; separator lines (`--`) have no path."""
        out = []
        for line in self.text.split("\n"):
            if line:
                path, sep, rest = line.partition("\0")
                out.append((path, rest) if sep else ("", line))
        return out


async def run_rg(args: list[str], cwd: Path, *, rg: str, sandbox: Sandbox | None) -> RgOutput:
    """The ripgrep at `rg` with `args` in `cwd`: inside `sandbox` (a read-only one) when given.
    Exit code 0 is matches, 1 none, 2 an error; anything else (127: the sandbox could not run it)
    is reported as 2."""
    # rg anchors globs at its working directory; from / that keeps it out of /proc and /sys
    system = ["--glob=!/proc", "--glob=!/sys"] if str(cwd) == "/" else []
    argv = [rg, *_BASE_ARGS, *system, *args]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}  # no secrets to find
    launch = sandbox.launch("exec " + shlex.join(argv), cwd) if sandbox is not None else Launch(argv, env)
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=cwd,
            env=launch.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
        )
        launch.started()
        try:
            out, err = await asyncio.wait_for(process.communicate(), RG_TIMEOUT_S)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
    finally:
        launch.close()
    code = process.returncode or 0
    error = err.decode("utf-8", "replace").strip()
    if code not in (0, 1, 2):
        code, error = 2, error or f"ripgrep exited with status {process.returncode}"
    return RgOutput(code, out.decode("utf-8", "replace"), error)


def list_files(cwd: Path, limit: int) -> list[str]:
    """The project's files as ripgrep lists them (gitignore-aware, hidden ones too, never `.git`),
    relative to `cwd` and sorted; empty when ripgrep cannot say within a few seconds."""
    import subprocess

    try:
        done = subprocess.run(
            [rg_path((real(cwd),)), "--files", "--hidden", "--glob=!.git"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, RipgrepMissing):
        return []
    return sorted(done.stdout.splitlines()[:limit])


def search_sandbox(policy: SandboxPolicy, base: Path, rg: str) -> Sandbox | None:
    """The read-only sandbox a search under `base` with the ripgrep at `rg` runs in (`base` and
    `rg`'s folder shown there even where the sandbox hides them, as under /tmp), or None: without a
    sandbox (danger-full-access, or none can start, when no command runs either) ripgrep runs as
    Piton."""
    if policy.mode == "danger-full-access":
        return None
    # `base` is a real path already: judged by its text, never resolved again, since a folder
    # swapped for a symlink meanwhile would make bwrap mount the symlink's target (a secret) there
    extra = tuple(p for p in (base, Path(rg).parent) if not any(_under(p, root) for root in policy.roots))
    sandbox = make_sandbox(replace(policy.read_only(), extra_dirs=(*policy.extra_dirs, *extra)))
    return None if sandbox.unavailable_reason() else sandbox
