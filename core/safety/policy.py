"""Where the model's actions may read and write: one policy for the shell sandbox and the file tools.

File tools run in-process, so they apply the policy themselves: a path is judged by its real
location (symlinks resolved, also for files that do not exist yet), writes must land inside a
writable root and outside the protected files, and credential locations are not read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from piton.core.safety.globs import glob_match

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")

# Under the home directory: never read by the model's tools, hidden inside the shell sandbox.
CREDENTIAL_PATHS = (
    ".ssh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/git/credentials",
    ".claude",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".config/anthropic",
    ".claude.json",
)
# Anywhere: environment files, except the templates projects commit on purpose.
_ENV_FILE = (".env", ".env.*", ".envrc", "*.env")
_ENV_TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist")
# Never read by the file tools: another process's environment is where API keys live.
SYSTEM_PATHS = ("/proc", "/sys")
# Settings files: whoever can write them can grant permissions, at whatever depth they lie.
SETTINGS_FILES = ("settings.json", "settings.local.json")
SETTINGS_DIRS = (".piton", ".claude")


class PolicyError(Exception):
    """An action the policy forbids; the message is one line for the model and the user."""


def _is_env_file(name: str) -> bool:
    return name not in _ENV_TEMPLATES and any(glob_match(p, name) for p in _ENV_FILE)


def real(path: Path) -> Path:
    """The real location of `path`: symlinks resolved as far as the path exists, `..` folded."""
    return Path(os.path.realpath(path))


_FOLD = sys.platform == "darwin"  # macOS filesystems ignore case: so must the protections


def _key(path: Path | str) -> str:
    text = str(path)
    return text.casefold() if _FOLD else text


def _inside(path: Path | str, root: Path | str) -> bool:
    p, r = _key(path), _key(root).rstrip("/")
    return p == r or p.startswith(r + "/")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    mode: SandboxMode
    workspace: Path
    extra_dirs: tuple[Path, ...] = ()
    network: bool = False
    home: Path = field(default_factory=Path.home)
    read_exceptions: tuple[str, ...] = ()  # absolute-path globs exempt from the credential rule
    read_denied: tuple[str, ...] = ()  # absolute-path globs never read (the permissions' Read deny rules)
    private_paths: tuple[Path, ...] = ()  # more credential-like places (Piton's own session store...)
    # folders inside credential locations that stay readable, and visible in the sandbox (skills
    # under ~/.claude/skills, whose files their instructions refer to)
    shared_dirs: tuple[Path, ...] = ()

    @classmethod
    def create(
        cls,
        mode: SandboxMode,
        workspace: Path,
        extra_dirs: tuple[Path, ...] | list[Path] = (),
        *,
        network: bool = False,
        read_exceptions: tuple[str, ...] | list[str] = (),
        read_denied: tuple[str, ...] | list[str] = (),
        private_paths: tuple[Path, ...] | list[Path] = (),
        shared_dirs: tuple[Path, ...] | list[Path] = (),
    ) -> SandboxPolicy:
        return cls(
            mode=mode,
            workspace=real(workspace),
            extra_dirs=tuple(real(d) for d in extra_dirs),
            network=network,
            home=real(Path.home()),
            read_exceptions=tuple(read_exceptions),
            read_denied=tuple(read_denied),
            private_paths=tuple(private_paths),
            shared_dirs=tuple(real(d) for d in shared_dirs),
        )

    def read_only(self) -> SandboxPolicy:
        return replace(self, mode="read-only")

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

    def credential_paths(self) -> list[Path]:
        return [self.home / p for p in CREDENTIAL_PATHS] + list(self.private_paths)

    def in_roots(self, path: Path) -> bool:
        target = real(path)
        return any(_inside(target, root) for root in self.roots)

    def check_write(self, path: Path) -> Path:
        """The real path to write `path` through, or `PolicyError` saying why not."""
        target = real(path)
        shown = f"{path}" if target == path else f"{path} (really {target})"
        if self.mode == "read-only":
            raise PolicyError(f"Cannot write {shown}: the sandbox is read-only (--sandbox read-only).")
        if not any(_inside(target, root) for root in self.writable_roots()):
            roots = ", ".join(str(r) for r in self.writable_roots())
            raise PolicyError(f"Cannot write {shown}: it is outside the writable directories ({roots}).")
        if self.mode == "danger-full-access":
            return target
        if any(_key(part) == ".git" for part in target.parts):
            raise PolicyError(
                f"Cannot write {shown}: files inside .git belong to git; use git commands in Bash."
            )
        lexical = Path(os.path.abspath(path))
        settings = [real(root / d / f) for root in self.roots for d in SETTINGS_DIRS for f in SETTINGS_FILES]
        if any(
            _key(p.parent.name) in SETTINGS_DIRS and _key(p.name) in SETTINGS_FILES for p in (lexical, target)
        ) or any(_key(target) == _key(s) for s in settings):
            raise PolicyError(f"Cannot write {shown}: settings files are protected from changes.")
        return target

    def check_read(self, path: Path) -> Path:
        """The real path to read `path` through, or `PolicyError` saying why not. Both the path as
        given and where it leads are judged: a symlink at a credential location leads elsewhere."""
        target = real(path)
        reason = self._read_refusal(str(target)) or self._read_refusal(os.path.abspath(path))
        if reason:
            raise PolicyError(f"Cannot read {path}: {reason}")
        return target

    def _read_refusal(self, path: str) -> str | None:
        if any(_inside(path, system) for system in SYSTEM_PATHS):
            return "process and kernel files (/proc, /sys) are off limits."
        if any(glob_match(pattern, path) for pattern in self.read_denied):
            return "a permission rule denies reading it."
        if self.mode == "danger-full-access" or self._excepted(path):
            return None
        for secret in self.credential_paths():
            if _inside(path, secret) or _inside(path, real(secret)):
                return f"credential files ({secret}) are off limits."
        name = path.rpartition("/")[2]
        if _is_env_file(name):
            return (
                "environment files may hold secrets. Allow it with a rule such as "
                f'"Read({name})" in the permissions allow list.'
            )
        return None

    def listing_filter(self, base: Path) -> Callable[[str], bool]:
        """A check for the many paths a search finds under `base`: string tests only, no system calls.
        Sound because searches report paths where they are (they do not follow symlinks)."""
        root = str(real(base))
        secrets = [str(real(p)) for p in self.credential_paths()]
        secrets = [s for s in secrets if _inside(s, root)]

        def allowed(path: str) -> bool:
            if self.read_denied and any(glob_match(pattern, path) for pattern in self.read_denied):
                return False
            if self.mode == "danger-full-access":
                return True
            hidden = _is_env_file(path.rpartition("/")[2]) or any(_inside(path, s) for s in secrets)
            return not hidden or self._excepted(path)

        return allowed

    def _excepted(self, path: str) -> bool:
        return any(glob_match(pattern, path) for pattern in self.read_exceptions) or any(
            _inside(path, str(d)) for d in self.shared_dirs
        )
