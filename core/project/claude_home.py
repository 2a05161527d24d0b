"""Claude Code's per-user folder, and the harness conventions that come with it.

Claude Code keeps its user configuration (skills, commands, agents, `CLAUDE.md`) and its session
transcripts in `~/.claude`, or in `$CLAUDE_CONFIG_DIR` when that is set; evaluation harnesses set
it to collect transcripts. Piton reads the user's Claude Code files from the same place, and
writes a transcript in Claude Code's own format there only when a harness (or the user) names the
folder explicitly: a user who never asked keeps their Claude Code history to Claude Code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CONFIG_DIR_VAR = "CLAUDE_CONFIG_DIR"
MACHINE_SANDBOX_VAR = "IS_SANDBOX"
_TRUE = ("1", "true", "yes", "on")


def named_config_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """`$CLAUDE_CONFIG_DIR` as an absolute path, when it is set (and not empty)."""
    value = (os.environ if env is None else env).get(CONFIG_DIR_VAR, "").strip()
    if not value:
        return None
    return Path(os.path.abspath(os.path.expanduser(value)))


def claude_home(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where the user's Claude Code files are: `$CLAUDE_CONFIG_DIR`, else `<home>/.claude`."""
    return named_config_dir(env) or home / ".claude"


def user_config_dirs(home: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """The user's own configuration folders, Piton's first: `~/.piton`, then Claude Code's."""
    return [home / ".piton", claude_home(home, env)]


def machine_is_sandbox(env: Mapping[str, str] | None = None) -> bool:
    """`IS_SANDBOX=1`: the machine itself is the sandbox (a container a harness throws away).
    Read from the environment Piton was started with, never from a file a project can write."""
    return (os.environ if env is None else env).get(MACHINE_SANDBOX_VAR, "").strip().lower() in _TRUE
