"""What every shell sandbox shares: the `Sandbox` protocol, the environment commands get, and the
two trivial sandboxes (none at all, and one that cannot start).

A fresh sandboxed process runs each command. The environment inside is rebuilt from an allowlist,
so API keys and other secrets in Piton's own environment never reach a command.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Protocol

from piton.core.records import record
from piton.core.safety.policy import SandboxPolicy

_PASSED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION",
    "NVM_DIR", "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME",
)  # fmt: skip
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_FIXED = {
    "TMPDIR": "/tmp",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",  # never wait for a password nobody can type
}


def command_env(environ: Mapping[str, str], policy: SandboxPolicy) -> dict[str, str]:
    """The environment a sandboxed command sees: the allowlist, minus anything named like a secret,
    and what the settings' `env` lists (a value written there is given as written, on purpose)."""
    env = {k: environ[k] for k in _PASSED if k in environ and not SECRET_NAME.search(k)}
    env.setdefault("LANG", "C.UTF-8")
    env.update(policy.env)
    env.update(_FIXED)
    env["PITON_SANDBOX"] = policy.mode
    return env


@record
class Launch:
    """How to start one sandboxed command: the argv and its environment, the file descriptors the
    sandbox reads (handed to the child with `pass_fds`), and what is undone once it has ended (the
    command's cgroup removed). `close()` exactly once, after the process has exited (or failed to
    start); `started()` may close the descriptors earlier."""

    argv: list[str]
    env: dict[str, str] | None = None  # None: the launcher's own environment
    pass_fds: tuple[int, ...] = ()
    # runs in the child between fork and exec. None from every sandbox here: a preexec_fn makes
    # Python fork the whole process instead of using vfork (the cgroup is entered by the argv)
    preexec: Callable[[], None] | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def started(self) -> None:
        """The child has its own copies of the descriptors: close ours."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def close(self) -> None:
        self.started()
        for cleanup in self.cleanups:
            cleanup()
        self.cleanups = []


class Sandbox(Protocol):
    name: str

    def unavailable_reason(self) -> str | None:
        """None when commands can run; otherwise why not, and what the user can do about it."""
        ...

    def describe(self) -> str:
        """What confines commands, for /status: `bubblewrap 0.8.0 (/usr/bin/bwrap, system)`."""
        ...

    def launch(self, script: str, cwd: Path) -> Launch:
        """How to run bash `script` in the sandbox with `cwd` as its working directory, with every
        protection (the seccomp filter, the resource limits). Commands the model or the user
        writes run this way (`piton.core.safety.shell.run_shell`)."""
        ...


BASH = ("/bin/bash", "--noprofile", "--norc", "-c")
OPT_OUT = "or run with --sandbox danger-full-access to run commands without a sandbox"


class NoSandbox:
    """Commands run as the user, unconfined: only when the user asked for danger-full-access."""

    name = "none"

    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy

    def unavailable_reason(self) -> str | None:
        return None

    def describe(self) -> str:
        return "none (commands run unconfined)"

    def launch(self, script: str, cwd: Path) -> Launch:
        return Launch([*BASH, script], command_env(os.environ, self.policy))


class Unavailable:
    name = "unavailable"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable_reason(self) -> str | None:
        return self.reason

    def describe(self) -> str:
        return "unavailable"

    def launch(self, script: str, cwd: Path) -> Launch:
        raise RuntimeError(self.reason)
