"""The Linux sandbox: bubblewrap with a hardened argv.

Every flag has a reason: `--cap-drop ALL` stops a root caller from remounting / read-write,
`--new-session` stops TIOCSTI keystroke injection into the user's terminal, `--disable-userns`
stops nested namespaces that could regain capabilities, `--unshare-pid` with `--die-with-parent`
takes every process down with the command, and `--clearenv` keeps Piton's secrets out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from piton.core.safety.guard import GUARDED_DIRS, protected_paths
from piton.core.safety.policy import SandboxPolicy, real
from piton.core.safety.sandbox.base import BASH, OPT_OUT, command_env

_PROBE_TIMEOUT_S = 10.0
_probe_results: dict[str, str | None] = {}  # per bwrap binary, for the life of the process


def _install_hint() -> str:
    return (
        "install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install "
        f"bubblewrap; Arch: sudo pacman -S bubblewrap) {OPT_OUT}"
    )


class BwrapSandbox:
    name = "bwrap"

    def __init__(self, policy: SandboxPolicy, executable: str | None = None) -> None:
        self.policy = policy
        self.executable = executable or shutil.which("bwrap") or ""

    def unavailable_reason(self) -> str | None:
        if not self.executable or not os.access(self.executable, os.X_OK):
            return f"the shell sandbox cannot start: bubblewrap (bwrap) is not installed; {_install_hint()}"
        if self.executable not in _probe_results:
            _probe_results[self.executable] = self._probe()
        return _probe_results[self.executable]

    def _probe(self) -> str | None:
        """Start one empty sandbox: user namespaces may be off even where bwrap is installed."""
        argv = [*self._base_args(), "--", "/bin/true"]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=_PROBE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the shell sandbox cannot start: bwrap failed to run ({e}); {OPT_OUT}"
        if done.returncode != 0:
            detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return (
                f"the shell sandbox cannot start: bwrap says '{detail}'. User namespaces may be disabled "
                f"(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces); {OPT_OUT}"
            )
        return None

    def _base_args(self) -> list[str]:
        args = [
            self.executable,
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--cap-drop", "ALL",
            "--disable-userns",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]  # fmt: skip
        if not self.policy.network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        if not self.policy.network:
            # sockets on disk (docker, D-Bus, systemd) are network too; they live under /run
            for run in ("/run", "/var/run"):
                if os.path.isdir(run) and not os.path.islink(run):
                    args += ["--tmpfs", run]
        return args

    def _mounts(self) -> list[str]:
        args: list[str] = []
        writable = self.policy.writable_roots()
        for root in self.policy.roots:
            # bound even when read-only: a project under /tmp would vanish under the private /tmp
            args += ["--bind" if root in writable else "--ro-bind", str(root), str(root)]
            if root not in writable:
                continue
            for name in GUARDED_DIRS:
                folder = root / name
                if folder.is_dir() and not folder.is_symlink():
                    args += [
                        "--bind",
                        str(folder),
                        str(folder),
                    ]  # a mount point cannot be renamed or replaced
        for path in protected_paths(self.policy):
            target = real(path)
            if os.path.lexists(path) and target.exists():
                args += ["--ro-bind", str(target), str(target)]
        for secret in map(real, self.policy.credential_paths()):
            if secret.is_dir():
                args += ["--tmpfs", str(secret)]
            elif secret.exists():
                args += ["--ro-bind", "/dev/null", str(secret)]
        for shared in self.policy.shared_dirs:  # after the secrets they sit in, so they show through
            if shared.is_dir():
                args += ["--ro-bind", str(shared), str(shared)]
        return args

    def command(self, script: str, cwd: Path) -> list[str]:
        env: list[str] = ["--clearenv"]
        for key, value in command_env(os.environ, self.policy).items():
            env += ["--setenv", key, value]
        return [*self._base_args(), *self._mounts(), *env, "--chdir", str(cwd), "--", *BASH, script]

    def env(self) -> dict[str, str] | None:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # for bwrap itself; the command's is in argv
