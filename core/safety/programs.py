"""The programs Piton starts because a settings file names them: hooks, MCP stdio servers and the
statusLine command. Each runs in a sandbox like Bash's, so that none of them can run what the model
wrote with the user's whole power: a formatter hook resolves `black` or `prettier` inside the project,
and an approved project hook or server names a script there, all files the sandboxed model may write.

What each gets, starting from the session's own sandbox policy:

- the network, which servers and `npx` need;
- a hook runs like a Bash command that can write: the project writable, its guarded places (git's
  hooks and config, the settings files) read-only, the session's command lock held alone around
  the hooks of one event, the guard's snapshot taken before and restored after;
- a server runs like a command left running: the guarded folders read-only as a whole (it runs
  beside everything else, so nothing can be snapshotted around it);
- the statusLine command only looks: a read-only sandbox;
- the user's home read-only with the credential places hidden, a private `/tmp`, and one writable
  cache folder of Piton's own for package runners (`npx`, `uvx`, `pip`);
- the caller's environment minus every variable named like a secret (Piton's API key above all),
  plus what the entry itself lists (a server's `env`, the settings' `env`) as written.

An entry runs unconfined only when the user's own settings say `"sandbox": false` on it (a project's
file cannot: the model could have written it), or when the session has no sandbox at all
(`--sandbox danger-full-access`). A sandbox that cannot start is the program's failure, with the
reason: never a silent fallback to running it unconfined.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Literal

from piton.core.safety import guard
from piton.core.safety.lasting import GuardError, LastingGuard, hold
from piton.core.safety.lock import CommandLock
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import Launch, Sandbox, make_sandbox
from piton.core.safety.sandbox.base import SECRET_NAME

Kind = Literal["hook", "server", "status"]
OPT_OUT_HINT = 'add "sandbox": false to its entry in your user settings to run it unconfined'
FIRST_NOTICE = (
    "hooks, MCP servers and the status line run in a sandbox (the project writable, your home "
    f"read-only, credentials hidden, the network on); {OPT_OUT_HINT} (said once)"
)


def first_time(state: Path) -> str | None:
    """`FIRST_NOTICE` the first time programs run sandboxed for this user (a marker in Piton's
    state folder remembers it was said), else None."""
    marker = state / "told-programs-sandboxed"
    if marker.exists():
        return None
    with contextlib.suppress(OSError):  # a state folder that cannot be written: said again next time
        marker.touch()
    return FIRST_NOTICE


def cache_dir() -> Path:
    """The one folder the settings' programs may write outside the project: package runners' caches.
    Only sandboxed programs use it, so what one leaves there never runs outside a sandbox."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "piton" / "programs"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return Path(xdg if os.path.isabs(xdg) else Path.home() / ".cache") / "piton" / "programs"


def program_env(environ: Mapping[str, str], listed: Mapping[str, str], cache: Path) -> dict[str, str]:
    """What a sandboxed program's environment holds: `environ` without variables named like secrets,
    the caches pointed at `cache`, then `listed` (the entry's own `env`) as written."""
    env = {k: v for k, v in environ.items() if not SECRET_NAME.search(k)}
    env |= {
        "XDG_CACHE_HOME": str(cache),
        "npm_config_cache": str(cache / "npm"),
        "UV_CACHE_DIR": str(cache / "uv"),
        "PIP_CACHE_DIR": str(cache / "pip"),
    }
    return env | dict(listed)


def named_in_tmp(script: str, cwd: Path) -> tuple[Path, ...]:
    """What a command line names under /tmp, which the sandbox's own /tmp would hide: each word that
    is an existing path there (relative words from `cwd`), and for a program inside a Python
    virtual environment, the whole environment (its packages)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)  # `a;b` is three words
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return ()
    found: list[Path] = []
    for word in (w for w in words if "/" in w):
        # `a/b/../x` needs `a/b` as well as `a/x`: the kernel walks through it
        for path in {Path(os.path.abspath(cwd / word)), Path(os.path.abspath(cwd / word.split("/..")[0]))}:
            if path != Path("/tmp") and path.is_relative_to("/tmp") and _bindable(path):
                venv = next((p for p in path.parents if (p / "pyvenv.cfg").is_file()), None)
                found.append(venv if venv is not None and venv != Path("/tmp") else path)
    return tuple(sorted(set(found)))


def _bindable(path: Path) -> bool:
    """There, and not a socket (an X server's or an agent's stays hidden)."""
    try:
        return not stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def program_policy(
    session: SandboxPolicy, kind: Kind, env: Mapping[str, str], cache: Path, named: tuple[Path, ...] = ()
) -> SandboxPolicy:
    """The sandbox policy a program of `kind` runs under in a session under `session`; `named`:
    what its command line names under /tmp."""
    policy = replace(
        session, network=True, env=tuple(sorted(env.items())), scratch=(cache,), named_in_tmp=named
    )
    if kind == "status" or policy.mode == "read-only":
        return policy.read_only()
    return policy.left_running() if kind == "server" else policy


class Programs:
    """Starts one session's settings programs, each in the sandbox its kind gets (see the module's
    docstring). `lock` is the session's command lock (hooks hold it alone); `make` builds a sandbox
    for a policy (the platform's, unless a test gives another)."""

    def __init__(
        self,
        policy: SandboxPolicy,
        lock: CommandLock | None = None,
        make: Callable[[SandboxPolicy], Sandbox] = make_sandbox,
        cache: Path | None = None,
    ) -> None:
        self.policy = policy
        self.lock = lock or CommandLock()
        self.make = make
        self.cache = cache or cache_dir()
        self.servers_guard = LastingGuard()  # sweeps what the servers plant below the roots

    async def watch_servers(self) -> None:
        """Before the session's servers start: know the settings files below the roots and the
        hook frameworks' files as they are, so that `servers_guard.sweep()` removes those a server
        plants while it runs (it cannot be snapshotted around, as a command left running cannot)."""
        if not self.confining or self.policy.mode != "workspace-write":
            return
        policy = program_policy(self.policy, "server", {}, self.cache)
        with contextlib.suppress(GuardError):  # each server's launch says it, and does not start
            await self.servers_guard.start(policy, idle=lambda: False)

    @property
    def confining(self) -> bool:
        """Whether programs run sandboxed at all (not under `--sandbox danger-full-access`)."""
        return self.policy.mode != "danger-full-access"

    def launch(
        self,
        kind: Kind,
        script: str,
        cwd: Path,
        inherited: Mapping[str, str],
        listed: Mapping[str, str],
        *,
        opted_out: bool = False,
    ) -> Launch | str:
        """How to run shell `script` as a program of `kind` (a server's: its argv, quoted) with the
        environment it `inherited` and the variables its entry `listed`: a `Launch`, or why it
        cannot start (its sandbox cannot). Unconfined, it gets both whole, as Claude Code gives them."""
        # a server's line is its argv, quoted: run as it is, with no shell left waiting above it
        line = f"exec {script}" if kind == "server" else script
        if opted_out or not self.confining:
            return Launch(["/bin/sh", "-c", line], {**inherited, **listed})
        with contextlib.suppress(OSError):  # a home that cannot be written: it runs without a cache
            os.makedirs(self.cache, mode=0o700, exist_ok=True)
        env = program_env(inherited, listed, self.cache)
        policy = program_policy(self.policy, kind, env, self.cache, named_in_tmp(script, cwd))
        if kind == "server":
            try:
                hold(policy)  # the guarded folders it may not change exist, so they can be held
            except GuardError as e:
                return str(e)
        sandbox = self.make(policy)
        reason = sandbox.unavailable_reason()
        if reason is not None:
            return reason
        return sandbox.launch(line if kind == "server" else "exec /bin/sh -c " + shlex.quote(line), cwd)

    @asynccontextmanager
    async def guarded(self) -> AsyncIterator[list[str]]:
        """Around hooks that run together: the command lock held alone and the guarded places
        snapshotted, then restored; the list receives what the restore did."""
        notes: list[str] = []
        writes = self.confining and self.policy.mode == "workspace-write"
        async with self.lock.exclusive():
            if writes:
                guard.prepare(self.policy)
            before = guard.snapshot(self.policy) if writes else guard.Snapshot()
            try:
                yield notes
            finally:
                notes += guard.restore(before)
