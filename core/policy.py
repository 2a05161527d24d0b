"""Where the model's actions may read and write: one policy for the shell sandbox and the file tools.

File tools run in-process, so they apply the policy themselves: a path is judged by its real
location (symlinks resolved, also for files that do not exist yet), writes must land inside a
writable root and outside the protected files, and credential locations are not read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from core.globs import glob_match

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")

# Under the home directory: never read by the model's tools, hidden inside the shell sandbox.
CREDENTIAL_PATHS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".config/anthropic",
)
# Anywhere: environment files, except the templates projects commit on purpose.
_ENV_FILE = (".env", ".env.*")
_ENV_TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist")
# Inside each writable root: what would let a command run later outside the sandbox, or widen it.
PROTECTED_IN_ROOT = (
    ".git/hooks",
    ".git/config",
    ".piton/settings.json",
    ".piton/settings.local.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
)


class PolicyError(Exception):
    """An action the policy forbids; the message is one line for the model and the user."""


def _is_env_file(name: str) -> bool:
    return (
        name.startswith(".env") and name not in _ENV_TEMPLATES and any(glob_match(p, name) for p in _ENV_FILE)
    )


def real(path: Path) -> Path:
    """The real location of `path`: symlinks resolved as far as the path exists, `..` folded."""
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    mode: SandboxMode
    workspace: Path
    extra_dirs: tuple[Path, ...] = ()
    network: bool = False
    home: Path = field(default_factory=Path.home)
    read_exceptions: tuple[str, ...] = ()  # absolute-path globs exempt from the credential rule

    @classmethod
    def create(
        cls,
        mode: SandboxMode,
        workspace: Path,
        extra_dirs: tuple[Path, ...] | list[Path] = (),
        *,
        network: bool = False,
        read_exceptions: tuple[str, ...] | list[str] = (),
    ) -> SandboxPolicy:
        return cls(
            mode=mode,
            workspace=real(workspace),
            extra_dirs=tuple(real(d) for d in extra_dirs),
            network=network,
            home=real(Path.home()),
            read_exceptions=tuple(read_exceptions),
        )

    @property
    def roots(self) -> tuple[Path, ...]:
        """The workspace and the added directories: where the shell's working directory may go."""
        return (self.workspace, *self.extra_dirs)

    def writable_roots(self) -> tuple[Path, ...]:
        if self.mode == "read-only":
            return ()
        if self.mode == "danger-full-access":
            return (Path("/"),)
        return self.roots

    def protected_paths(self) -> list[Path]:
        if self.mode == "danger-full-access":
            return []
        return [root / p for root in self.roots for p in PROTECTED_IN_ROOT]

    def credential_paths(self) -> list[Path]:
        return [self.home / p for p in CREDENTIAL_PATHS]

    def in_roots(self, path: Path) -> bool:
        return any(_inside(real(path), root) for root in self.roots)

    def check_write(self, path: Path) -> Path:
        """The real path to write `path` through, or `PolicyError` saying why not."""
        target = real(path)
        shown = f"{path}" if target == path else f"{path} (really {target})"
        if self.mode == "read-only":
            raise PolicyError(f"Cannot write {shown}: the sandbox is read-only (--sandbox read-only).")
        if not any(_inside(target, root) for root in self.writable_roots()):
            roots = ", ".join(str(r) for r in self.writable_roots())
            raise PolicyError(f"Cannot write {shown}: it is outside the writable directories ({roots}).")
        for protected in self.protected_paths():
            if _inside(target, protected):
                raise PolicyError(f"Cannot write {shown}: {protected.name} is protected from changes.")
        return target

    def check_read(self, path: Path) -> Path:
        """The real path to read `path` through, or `PolicyError` for a credential location."""
        target = real(path)
        if self.mode == "danger-full-access" or self._excepted(str(target)):
            return target
        for secret in self.credential_paths():
            if _inside(target, secret):
                raise PolicyError(f"Cannot read {path}: credential files ({secret}) are off limits.")
        if _is_env_file(target.name):
            raise PolicyError(
                f"Cannot read {path}: environment files may hold secrets. Allow it with a rule such as "
                f'"Read({target.name})" in the permissions allow list.'
            )
        return target

    def listing_filter(self, base: Path) -> Callable[[str], bool]:
        """A check for the many paths a search finds under `base`: string tests only, no system calls.
        Sound because searches report paths where they are (they do not follow symlinks)."""
        if self.mode == "danger-full-access":
            return lambda path: True
        root = str(real(base))
        secrets = [str(real(p)) for p in self.credential_paths()]
        secrets = [s for s in secrets if s == root or s.startswith(root + "/")]

        def allowed(path: str) -> bool:
            hidden = _is_env_file(path.rpartition("/")[2]) or any(
                path == s or path.startswith(s + "/") for s in secrets
            )
            return not hidden or self._excepted(path)

        return allowed

    def _excepted(self, path: str) -> bool:
        return any(glob_match(pattern, path) for pattern in self.read_exceptions)
