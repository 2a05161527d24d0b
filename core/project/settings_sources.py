"""Which settings files exist and how far each is believed: Piton's and Claude Code's, at each level.

From the lowest precedence to the highest (Claude Code's order, with Piton's file after Claude
Code's at the same level so that it wins a tie):

    user     ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR/settings.json), ~/.piton/settings.json
    project  .claude/settings.json, .piton/settings.json
    local    .claude/settings.local.json, .piton/settings.local.json
    flag     --settings FILE|JSON
    managed  /etc/claude-code/managed-settings.json, /etc/piton/managed-settings.json

The user's files, `--settings` and the machine's managed policy speak for the person running
Piton (`trusted`); the project and local files come with the code, so what they would widen is
taken only as far as workspace trust allows (`core/project/trust`). Managed policy cannot be
overridden: its deny rules always apply, and what it narrows stays narrowed whatever a flag says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from piton.core.project.claude_home import claude_home
from piton.core.records import record

Scope = Literal["user", "project", "local", "flag", "managed"]
SETTING_SOURCES = ("user", "project", "local")  # what `--setting-sources` may choose (managed always applies)
# the machine's policy, which no user or project file can loosen (Claude Code's path, then Piton's)
MANAGED_FILES = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/etc/piton/managed-settings.json"),
)


@record(frozen=True)
class Source:
    path: Path
    scope: Scope

    @property
    def trusted(self) -> bool:
        """Whether the file speaks for the person running Piton (else it came with the project)."""
        return self.scope in ("user", "flag", "managed")


def user_config_dir() -> Path:
    return Path.home() / ".piton"


def settings_files(cwd: Path, *, managed: tuple[Path, ...] = MANAGED_FILES) -> list[Source]:
    """Every settings file Piton would read for `cwd`, lowest precedence first (none need exist)."""
    files = [
        Source(claude_home(Path.home()) / "settings.json", "user"),
        Source(user_config_dir() / "settings.json", "user"),
    ]
    for scope, name in (("project", "settings.json"), ("local", "settings.local.json")):
        files += [Source(cwd / folder / name, scope) for folder in (".claude", ".piton")]  # type: ignore[arg-type]
    return files + [Source(path, "managed") for path in managed]


def shown(path: Path) -> str:
    """A settings file as people know it: `.claude/settings.json`, `~/.piton/settings.json`."""
    home = Path.home()
    if path.parent.parent == home or path.parent == user_config_dir():
        return f"~/{path.parent.name}/{path.name}"
    if path.is_absolute() and not path.parent.name.startswith("."):
        return str(path)  # managed policy, $CLAUDE_CONFIG_DIR: where it is, in full
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
