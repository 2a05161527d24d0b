"""The macOS sandbox: `sandbox-exec` with a deny-by-default profile.

Paths never go into the profile text; they are passed as `-D` parameters, so a directory name
with quotes or parentheses cannot change the profile's meaning.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from core.policy import SandboxPolicy, real
from core.sandbox import BASH, OPT_OUT, command_env

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

_BASE = """(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow iokit-open)
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper"))
(allow file-ioctl (literal "/dev/null") (literal "/dev/zero"))
"""


def profile(policy: SandboxPolicy) -> tuple[str, dict[str, str]]:
    """The profile text and its `-D` parameters. Later rules win in SBPL, so denials come last."""
    params: dict[str, str] = {"TMP": "/private/tmp", "VAR_TMP": "/private/var/folders"}
    writes = ['(subpath (param "TMP"))', '(subpath (param "VAR_TMP"))']
    for i, root in enumerate(policy.writable_roots()):
        params[f"WRITABLE_{i}"] = str(root)
        writes.append(f'(subpath (param "WRITABLE_{i}"))')
    rules = [_BASE, f"(allow file-write* {' '.join(writes)})"]
    for i, path in enumerate(policy.protected_paths()):
        params[f"PROTECTED_{i}"] = str(real(path))
        rules.append(f'(deny file-write* (subpath (param "PROTECTED_{i}")))')
    for i, secret in enumerate(policy.credential_paths()):
        params[f"SECRET_{i}"] = str(real(secret))
        rules.append(f'(deny file-read* file-write* (subpath (param "SECRET_{i}")))')
    if policy.network:
        rules.append("(allow network*)")
    else:
        rules.append('(allow network* (remote unix-socket (path-regex #"^/private/var/run/")))')
    return "\n".join(rules) + "\n", params


class SeatbeltSandbox:
    name = "seatbelt"

    def __init__(self, policy: SandboxPolicy, executable: str = SANDBOX_EXEC) -> None:
        self.policy = policy
        self.executable = executable if os.path.exists(executable) else (shutil.which("sandbox-exec") or "")

    def unavailable_reason(self) -> str | None:
        if not self.executable:
            return f"the shell sandbox cannot start: sandbox-exec was not found; {OPT_OUT}"
        return None

    def command(self, script: str, cwd: Path) -> list[str]:
        text, params = profile(self.policy)
        defines = [arg for key, value in params.items() for arg in ("-D", f"{key}={value}")]
        return [self.executable, "-p", text, *defines, *BASH, script]

    def env(self) -> dict[str, str] | None:
        return command_env(os.environ, self.policy)
