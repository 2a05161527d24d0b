"""The places git configuration says code runs from: `core.hooksPath` and the files `include.path`
and `includeIf.*.path` pull in, and the files of the git-hook frameworks (husky, pre-commit,
lefthook, overcommit). Each inside the project is as dangerous as `.git/hooks`: whoever writes it
runs code at the user's next commit or `git status`. So the guard protects them too.

A small reader of git's config syntax, erring towards protecting too much: every `includeIf` is
followed whatever its condition, and an unreadable file simply adds nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import field
from pathlib import Path

from piton.core.records import record
from piton.core.safety.realpaths import Resolver

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_MAX_DEPTH = 10
# What the git-hook frameworks people use run at a commit, wherever their hook is installed (or will
# be): husky's scripts, pre-commit's and lefthook's configurations (which name commands) and
# lefthook's script folders, overcommit's configuration. Protected like .git/hooks, present or not.
HOOK_FRAMEWORK_DIRS = (".husky", ".lefthook", ".lefthook-local")
HOOK_FRAMEWORK_FILES = (
    ".pre-commit-config.yaml",
    ".pre-commit-config.yml",
    *(
        f"{where}{name}.{ext}"
        for where in ("", ".", ".config/")  # lefthook also reads .config/lefthook.yml
        for name in ("lefthook", "lefthook-local")
        for ext in ("yml", "yaml", "json", "jsonc", "toml")
    ),
    ".overcommit.yml",
)


@record
class CodePaths:
    hooks: list[Path] = field(default_factory=list)  # core.hooksPath values, as given
    includes: list[Path] = field(default_factory=list)  # every config file read beyond the first


def _value(raw: str) -> str:
    """A value as git reads it: quotes removed, escapes applied, a comment cut off."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def _entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for each setting; section is `name` or `name.subsection` in lower case
    except for the subsection."""
    entries: list[tuple[str, str, str]] = []
    section = ""
    lines = text.replace("\\\r\n", "").replace("\\\n", "").splitlines()
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if header := _SECTION.match(stripped):
            name, sub = header.group(1).lower(), header.group(2)
            section = f"{name}.{sub}" if sub is not None else name
            stripped = stripped[header.end() :].strip()
            if not stripped:
                continue
        if key := _KEY.match(stripped):
            entries.append((section, key.group(1).lower(), _value(key.group(2) or "true")))
    return entries


def _expand(value: str, base: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else base / path


def read(config: Path, found: CodePaths | None = None, depth: int = 0) -> CodePaths:
    """The hooks folders and included files named by `config` and what it includes."""
    found = found if found is not None else CodePaths()
    text = ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = config.read_text(encoding="utf-8", errors="replace")
    for section, key, value in _entries(text):
        if section == "core" and key == "hookspath" and value:
            found.hooks.append(Path(os.path.expanduser(value)))
        elif key == "path" and value and (section == "include" or section.startswith("includeif.")):
            included = _expand(value, config.parent)
            if included not in found.includes:
                found.includes.append(included)
                if depth < _MAX_DEPTH:
                    read(included, found, depth + 1)
    return found


def _gitfile_target(gitfile: Path) -> Path | None:
    """The directory a `.git` file (worktrees, submodules, --separate-git-dir) points to."""
    try:
        first = gitfile.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    return _real(target if target.is_absolute() else gitfile.parent / target)


def git_dirs(root: Path) -> list[Path]:
    """The git directories a repository at `root` uses: `.git` (a folder, a symlink or a gitfile's
    target) and the common directory it names."""
    dot_git = root / ".git"
    if dot_git.is_file():
        first = _gitfile_target(dot_git)
    elif dot_git.is_dir():
        first = _real(dot_git)
    else:
        return []
    if first is None:
        return []
    dirs = [first]
    common = first / "commondir"
    with contextlib.suppress(OSError):
        if common.is_file():
            named = Path(common.read_text(encoding="utf-8", errors="replace").strip())
            dirs.append(_real(named if named.is_absolute() else first / named))
    return dirs


def global_configs(home: Path) -> list[Path]:
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return [Path("/etc/gitconfig"), Path(xdg) / "git" / "config", home / ".gitconfig"]


def code_places(roots: tuple[Path, ...], home: Path) -> list[tuple[Path, bool]]:
    """The real paths of the hooks folders (`core.hooksPath`) and included config files that the
    repositories at `roots`, the user's and the system's git config name, each with whether it is
    a folder (a hooks folder) or a file (an included config)."""
    found: dict[Path, bool] = {}
    for root in roots:
        named = CodePaths()
        configs = [d / name for d in git_dirs(root) for name in ("config", "config.worktree")]
        for config in (*configs, *global_configs(home)):
            read(config, named)
        for path in (h if h.is_absolute() else root / h for h in named.hooks):
            found.setdefault(_real(path), True)
        for path in named.includes:
            found.setdefault(_real(path), False)
    return list(found.items())


def code_paths(roots: tuple[Path, ...], home: Path) -> list[Path]:
    """The paths of `code_places`, and the git-hook frameworks' files and folders at each root,
    present or not. These are not made ready for a command left running, as `code_places` are (an
    empty configuration would break the framework)."""
    places = [path for path, _ in code_places(roots, home)]
    frameworks = [root / name for root in roots for name in (*HOOK_FRAMEWORK_DIRS, *HOOK_FRAMEWORK_FILES)]
    # husky anywhere: its hooks folder `.husky/_` runs the `.husky/pre-commit` people write
    husky = [path.parent for path in places if path.name == "_" and path.parent.name == ".husky"]
    resolve = Resolver()  # the roots' files share their folders: each resolved once, now
    return list(dict.fromkeys([*places, *(resolve.path(p) for p in [*frameworks, *husky])]))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
