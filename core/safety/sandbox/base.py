"""What every shell sandbox shares: the `Sandbox` protocol, the environment commands get, and the
two trivial sandboxes (none at all, and one that cannot start).

A fresh sandboxed process runs each command. The environment inside is rebuilt from an allowlist,
so API keys and other secrets in Piton's own environment never reach a command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from piton.core.safety.policy import SandboxPolicy

_PASSED = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION",
    "NVM_DIR", "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME",
)  # fmt: skip
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
_FIXED = {
    "TMPDIR": "/tmp",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",  # never wait for a password nobody can type
}


def command_env(environ: Mapping[str, str], policy: SandboxPolicy) -> dict[str, str]:
    """The environment a sandboxed command sees: the allowlist, minus anything named like a secret."""
    env = {k: environ[k] for k in _PASSED if k in environ and not _SECRET_NAME.search(k)}
    env.setdefault("LANG", "C.UTF-8")
    env.update(_FIXED)
    env["PITON_SANDBOX"] = policy.mode
    return env


class Sandbox(Protocol):
    name: str

    def unavailable_reason(self) -> str | None:
        """None when commands can run; otherwise why not, and what the user can do about it."""
        ...

    def command(self, script: str, cwd: Path) -> list[str]:
        """The argv that runs bash `script` in the sandbox with `cwd` as its working directory."""
        ...

    def env(self) -> dict[str, str] | None:
        """The environment for the launched argv (None when the argv sets it itself)."""
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

    def command(self, script: str, cwd: Path) -> list[str]:
        return [*BASH, script]

    def env(self) -> dict[str, str] | None:
        return command_env(os.environ, self.policy)


class Unavailable:
    name = "unavailable"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def unavailable_reason(self) -> str | None:
        return self.reason

    def command(self, script: str, cwd: Path) -> list[str]:
        raise RuntimeError(self.reason)

    def env(self) -> dict[str, str] | None:
        return None
