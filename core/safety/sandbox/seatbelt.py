"""The macOS sandbox: `sandbox-exec` with a deny-by-default profile.

Paths never go into the profile text; they are passed as `-D` parameters, so a directory name
with quotes or parentheses cannot change the profile's meaning.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from piton.core.safety.guarded import GUARDED_DIRS, protected_paths
from piton.core.safety.policy import SandboxPolicy, real
from piton.core.safety.sandbox import limits as _limits
from piton.core.safety.sandbox.base import BASH, OPT_OUT, Launch, command_env
from piton.core.safety.sandbox.limits import Limits

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# any case: macOS file systems ignore it
_DEEP_SETTINGS = "".join(
    f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in r"/\.(claude|piton)/settings(\.local)?\.json$"
)

_BASE = """(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow iokit-open)
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper"))
(allow file-ioctl (literal "/dev/null") (literal "/dev/zero"))
"""
# Only the system services ordinary command-line programs need: an unrestricted mach-lookup would let
# a command ask launchd or LaunchServices (`open`, `osascript`) to start programs outside the sandbox.
_MACH_SERVICES = (
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.DirectoryService.libinfo_v1",
    "com.apple.system.notification_center",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.diagnosticd",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
    "com.apple.bsd.dirhelper",
    "com.apple.FSEvents",
)


def profile(policy: SandboxPolicy, private_tmp: str) -> tuple[str, dict[str, str]]:
    """The profile text and its `-D` parameters. Later rules win in SBPL, so denials come last.
    `private_tmp` is this sandbox's own temporary directory (macOS has no mount namespace to give
    each command a private /tmp)."""
    params: dict[str, str] = {"PRIVATE_TMP": private_tmp}
    writes = ['(subpath (param "PRIVATE_TMP"))']
    for i, root in enumerate([*policy.writable_roots(), *policy.scratch]):
        params[f"WRITABLE_{i}"] = str(root)
        writes.append(f'(subpath (param "WRITABLE_{i}"))')
    services = " ".join(f'(global-name "{name}")' for name in _MACH_SERVICES)
    rules = [_BASE, f"(allow mach-lookup {services})", f"(allow file-write* {' '.join(writes)})"]
    for i, path in enumerate(protected_paths(policy)):
        params[f"PROTECTED_{i}"] = str(real(path))
        rules.append(f'(deny file-write* (subpath (param "PROTECTED_{i}")))')
    if policy.lasting and policy.mode == "workspace-write":
        # a command left running cannot be snapshotted around: the guarded folders, present or not,
        # and settings files at any depth are out of its reach
        for i, root in enumerate(policy.roots):
            for j, name in enumerate(GUARDED_DIRS):
                params[f"GUARDED_{i}_{j}"] = str(root / name)
                rules.append(f'(deny file-write* (subpath (param "GUARDED_{i}_{j}")))')
        rules.append(f'(deny file-write* (regex #"{_DEEP_SETTINGS}"))')
    for i, secret in enumerate(policy.credential_paths()):
        params[f"SECRET_{i}"] = str(real(secret))
        rules.append(f'(deny file-read* file-write* (subpath (param "SECRET_{i}")))')
    for i, shared in enumerate(policy.shared_dirs):  # later rules win: readable inside a secret folder
        params[f"SHARED_{i}"] = str(shared)
        rules.append(f'(allow file-read* (subpath (param "SHARED_{i}")))')
    if policy.network:
        rules.append("(allow network*)")
    return "\n".join(rules) + "\n", params


class SeatbeltSandbox:
    name = "seatbelt"

    def __init__(
        self, policy: SandboxPolicy, executable: str = SANDBOX_EXEC, limits: Limits | None = None
    ) -> None:
        self.policy = policy
        # only the file size applies here: macOS counts processes per user, across the machine,
        # ignores RLIMIT_DATA, and has no cgroups or private tmpfs
        self.limits = Limits(None, None, (limits or policy.limits or Limits()).file_size, None)
        self.executable = executable if os.path.exists(executable) else (shutil.which("sandbox-exec") or "")
        self._tmp: str | None = None

    def unavailable_reason(self) -> str | None:
        if not self.executable:
            return f"the shell sandbox cannot start: sandbox-exec was not found; {OPT_OUT}"
        return None

    def private_tmp(self) -> str:
        if self._tmp is None:
            self._tmp = str(real(Path(tempfile.mkdtemp(prefix="piton-sandbox-"))))
            atexit.register(shutil.rmtree, self._tmp, True)
        return self._tmp

    def describe(self) -> str:
        return f"sandbox-exec ({self.executable})" if self.executable else "sandbox-exec (not found)"

    def launch(self, script: str, cwd: Path) -> Launch:
        return Launch(self.command(script, cwd), self._env())

    def command(self, script: str, cwd: Path) -> list[str]:
        text, params = profile(self.policy, self.private_tmp())
        defines = [arg for key, value in params.items() for arg in ("-D", f"{key}={value}")]
        return [self.executable, "-p", text, *defines, *BASH, _limits.ulimit_prefix(self.limits) + script]

    def _env(self) -> dict[str, str]:
        return {**command_env(os.environ, self.policy), "TMPDIR": self.private_tmp()}
