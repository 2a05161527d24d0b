"""The system prompt: the template in `prompts/system.md` filled with the session's environment."""

from __future__ import annotations

import platform
import subprocess
from datetime import date
from importlib.resources import files
from pathlib import Path
from string import Template

_GIT_TIMEOUT_S = 2.0
_MAX_STATUS_LINES = 40


class _GitUnavailable(Exception):
    pass


def _git(cwd: Path, *args: str) -> str | None:
    """git's output, or None when git says no (not a repository); raises when git cannot answer."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise _GitUnavailable(f"git status took over {_GIT_TIMEOUT_S:g} s") from e
    except OSError as e:
        raise _GitUnavailable(f"git could not run ({e.strerror or e})") from e
    return done.stdout if done.returncode == 0 else None


def git_summary(cwd: Path) -> str:
    """Branch, changed files (capped) and recent commits, or a line saying there is no repository."""
    try:
        status = _git(cwd, "status", "--short", "--branch")
        log = _git(cwd, "log", "--oneline", "-n", "5") if status is not None else None
    except _GitUnavailable as e:
        return f"Unknown: {e}."
    if status is None:
        return "Not a git repository."
    lines = status.splitlines()
    branch = lines[0].removeprefix("## ") if lines and lines[0].startswith("## ") else "unknown"
    changes = lines[1:] if lines and lines[0].startswith("## ") else lines
    out = [f"Branch: {branch}"]
    if changes:
        shown = changes[:_MAX_STATUS_LINES]
        out.append("Changes:")
        out.extend(shown)
        if len(changes) > len(shown):
            out.append(f"... and {len(changes) - len(shown)} more")
    else:
        out.append("Working tree clean.")
    if log and log.strip():
        out.append("Recent commits:")
        out.extend(log.strip().splitlines())
    return "\n".join(out)


def build_system_prompt(cwd: Path, *, append: str | None = None, today: date | None = None) -> str:
    template = Template(files("core").joinpath("prompts/system.md").read_text(encoding="utf-8"))
    text = template.safe_substitute(
        cwd=str(cwd),
        platform=f"{platform.system()} {platform.release()}",
        date=(today or date.today()).isoformat(),
        git_status=git_summary(cwd),
    ).rstrip()
    if append and append.strip():
        text += "\n\n" + append.strip()
    return text
