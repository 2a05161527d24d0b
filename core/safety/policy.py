"""Where the model's actions may read and write: one policy for the shell sandbox and the file tools.

File tools run in-process, so they apply the policy themselves: a path is judged by its real
location (symlinks resolved, also for files that do not exist yet), writes must land inside a
writable root and outside the protected files, and credential locations are not read.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.mode_names import SANDBOX_MODES as SANDBOX_MODES
from piton.core.records import record
from piton.core.safety import gitconfig
from piton.core.safety.globs import glob_match
from piton.core.safety.realpaths import Resolver

if TYPE_CHECKING:  # the sandbox package imports this module: its limits are named, not imported
    from piton.core.mode_names import SandboxMode as SandboxMode
    from piton.core.safety.sandbox.limits import Limits


# Under every home directory: never read by the model's tools, hidden inside the shell sandbox.
# Add more with `"sandbox": {"credentialPaths": [...]}` in the settings.
CREDENTIAL_PATHS = (
    # keys and tokens
    ".ssh", ".gnupg", ".password-store", ".local/share/keyrings", ".netrc", ".git-credentials",
    ".config/git/credentials", ".vault-token", ".pgpass", ".my.cnf", ".s3cfg", ".boto",
    ".databrickscfg", ".terraformrc", ".terraform.d/credentials.tfrc.json",
    # package registries
    ".npmrc", ".yarnrc.yml", ".pypirc", ".gem/credentials", ".cargo/credentials",
    ".cargo/credentials.toml", ".m2/settings.xml", ".m2/settings-security.xml",
    ".gradle/gradle.properties", ".nuget/NuGet/NuGet.Config", ".composer/auth.json",
    # clouds, clusters and containers
    ".aws", ".azure", ".config/gcloud", ".oci", ".kube", ".docker", ".config/rclone",
    ".config/doctl", ".config/hub", ".config/gh", ".config/glab-cli", ".config/op",
    ".config/netlify", ".fly", ".config/heroku", ".wrangler",
    # assistants and their sessions
    ".claude", ".claude.json", ".config/anthropic", ".codex", ".config/openai",
    # what was typed at shells and REPLs (passwords pasted in, tokens in commands)
    ".bash_history", ".zsh_history", ".histfile", ".local/share/fish/fish_history",
    ".python_history", ".node_repl_history", ".psql_history", ".mysql_history", ".sqlite_history",
    ".irb_history", ".rediscli_history", ".lesshst",
    # browsers' cookies and saved logins
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
)  # fmt: skip
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
    # every _ENV_FILE pattern needs ".env" in the name: a search checks this for each file it lists
    if ".env" not in name.lower():
        return False
    return name not in _ENV_TEMPLATES and any(glob_match(p, name) for p in _ENV_FILE)


@cache
def other_homes() -> tuple[Path, ...]:
    """The home directories of the machine's accounts, whose credential files are as secret as
    the user's own (to root they would all be readable)."""
    try:
        import pwd

        entries = pwd.getpwall()
    except (ImportError, OSError):
        return ()
    homes = set()
    for entry in entries:
        # a home the account owns: system accounts whose "home" is /bin or /nonexistent have none
        with contextlib.suppress(OSError):
            st = os.stat(entry.pw_dir)
            if entry.pw_dir.startswith("/") and stat.S_ISDIR(st.st_mode) and st.st_uid == entry.pw_uid:
                homes.add(Path(entry.pw_dir))
    return tuple(sorted(homes))


@cache
def _credentials(
    home: Path, extra: tuple[str, ...], private: tuple[Path, ...]
) -> tuple[tuple[Path, str], ...]:
    """Each credential location of every home, with where it really leads (resolved once: these
    live outside the project, where no command of the model can move them)."""
    homes = dict.fromkeys([home, *other_homes()])
    paths = [h / p for h in homes for p in (*CREDENTIAL_PATHS, *extra)] + list(private)
    resolve = Resolver()
    return tuple((p, resolve(str(p))) for p in paths)


@cache
def _credential_keys(home: Path, extra: tuple[str, ...], private: tuple[Path, ...]) -> dict[str, Path]:
    """Every credential location and where it leads, as `_inside` compares them, each with the
    location to name."""
    found: dict[str, Path] = {}
    for path, target in _credentials(home, extra, private):
        for key in (_key(str(path)), _key(target)):
            found.setdefault(key.rstrip("/"), path)
    return found


def _ancestors(path: str) -> list[str]:
    """`path` and every folder above it, as `_inside` compares them."""
    key = _key(path).rstrip("/")
    found = [key]
    while (key := key.rpartition("/")[0]) != "":
        found.append(key)
    return found


def _unprivileged_can(st: os.stat_result, bit_user: int) -> bool:
    """Whether an owner/group/other permission bit lets this user in without root's privilege to
    override permissions (which the sandbox drops)."""
    shift = 0 if st.st_uid == os.geteuid() else 3 if st.st_gid in {os.getegid(), *os.getgroups()} else 6
    return bool(st.st_mode & (bit_user >> shift))


def unprivileged_reaches(folder: str) -> bool:
    """Whether a process without root's privilege to override permissions (a sandboxed command, and
    bubblewrap itself as it builds the sandbox) can enter `folder`: every folder on the way has an
    execute bit for it. Root reaches another account's 0750 home; the sandbox does not."""
    if os.geteuid() != 0:
        return True  # the kernel already checked, for the user Piton runs as
    path = folder
    while True:
        try:
            if not _unprivileged_can(os.stat(path), stat.S_IXUSR):
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def real(path: Path) -> Path:
    """The real location of `path`: symlinks resolved as far as the path exists, `..` folded."""
    return Path(os.path.realpath(path))


_FOLD = sys.platform == "darwin"  # macOS filesystems ignore case: so must the protections


def _key(path: Path | str) -> str:
    text = str(path)
    return text.casefold() if _FOLD else text


def is_settings_dir(name: str) -> bool:
    """Whether a folder of that name holds settings files (`.claude`, `.piton`; any case on macOS)."""
    return _key(name) in SETTINGS_DIRS


def _inside(path: Path | str, root: Path | str) -> bool:
    p, r = _key(path), _key(root).rstrip("/")
    return p == r or p.startswith(r + "/")


@record(frozen=True)
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
    extra_credentials: tuple[str, ...] = ()  # more paths under each home, from the settings
    env: tuple[tuple[str, str], ...] = ()  # the settings' `env`: variables commands get as listed
    # a command left running beside the others: the guarded folders are read-only for it (`lasting`)
    lasting: bool = False
    # the resource limits of each command (the user's `sandbox.limits`); None: the defaults
    limits: Limits | None = None
    # writable folders that hold no project (the caches of the settings' programs,
    # `piton.core.safety.programs`): bound writable, never a root
    scratch: tuple[Path, ...] = ()
    # paths under /tmp a settings program's command line names, bound read-only into the sandbox's
    # own /tmp (where they would vanish otherwise): its interpreter's environment, its script
    named_in_tmp: tuple[Path, ...] = ()

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
        extra_credentials: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
        limits: Limits | None = None,
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
            extra_credentials=tuple(
                p.removeprefix("~/").strip("/") for p in extra_credentials if p.strip("~/")
            ),
            env=tuple(sorted((env or {}).items())),
            limits=limits,
        )

    def read_only(self) -> SandboxPolicy:
        return replace(self, mode="read-only")

    def left_running(self) -> SandboxPolicy:
        """The policy of a command that outlives its call (Bash `run_in_background`)."""
        return replace(self, lasting=True)

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
        return [path for path, _ in _credentials(self.home, self.extra_credentials, self.private_paths)]

    def credential_targets(self) -> list[str]:
        """Where each credential location really leads (resolved once)."""
        return [target for _, target in _credentials(self.home, self.extra_credentials, self.private_paths)]

    def check_privilege(self, path: Path, st: os.stat_result) -> None:
        """As root, refuse what the sandbox (which drops root's privilege to override permissions)
        could not read either: another user's private files, or anything under a folder it could
        not enter. For other users the kernel already says no."""
        if os.geteuid() != 0 or self.mode == "danger-full-access":
            return
        bit = stat.S_IRUSR if not stat.S_ISDIR(st.st_mode) else stat.S_IRUSR | stat.S_IXUSR
        refused = not _unprivileged_can(st, bit)
        folder = path.parent
        while not refused and folder != folder.parent:
            try:
                refused = not _unprivileged_can(os.stat(folder), stat.S_IXUSR)
            except OSError:
                break
            folder = folder.parent
        if refused:
            raise PolicyError(
                f"Cannot read {path}: only root's privilege to override file permissions could, and "
                "the model's tools and commands run without it."
            )

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
        secrets = _credential_keys(self.home, self.extra_credentials, self.private_paths)
        # one look per folder above the target, not one comparison per location
        secret = next((secrets[k] for k in _ancestors(str(target)) if k in secrets), None)
        if secret is not None:
            raise PolicyError(
                f"Cannot write {shown}: credential files and Piton's own state ({secret}) are "
                "protected from changes."
            )
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
        if any(_inside(target, p) for p in gitconfig.code_paths(self.roots, self.home)):
            raise PolicyError(
                f"Cannot write {shown}: git runs hooks from it or reads it as configuration "
                "(core.hooksPath, an include, or a hook framework's file: .husky, "
                ".pre-commit-config.yaml, lefthook), so it is protected like .git/hooks; "
                "ask the user to change it."
            )
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
        for secret, target in _credentials(self.home, self.extra_credentials, self.private_paths):
            if _inside(path, secret) or _inside(path, target):
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
        secrets = [
            target for _, target in _credentials(self.home, self.extra_credentials, self.private_paths)
        ]
        secrets = [s for s in secrets if _inside(s, root)]

        def allowed(path: str) -> bool:
            if self.read_denied and any(glob_match(pattern, path) for pattern in self.read_denied):
                return False
            if self.mode == "danger-full-access":
                return True
            hidden = _is_env_file(path.rpartition("/")[2]) or any(_inside(path, s) for s in secrets)
            return not hidden or self._excepted(path)

        def allowed_unless_env(path: str) -> bool:  # the usual case, checked for each of many files
            return not _is_env_file(path.rpartition("/")[2]) or self._excepted(path)

        plain = not self.read_denied and not secrets and self.mode != "danger-full-access"
        return allowed_unless_env if plain else allowed

    def _excepted(self, path: str) -> bool:
        return any(glob_match(pattern, path) for pattern in self.read_exceptions) or any(
            _inside(path, str(d)) for d in self.shared_dirs
        )
