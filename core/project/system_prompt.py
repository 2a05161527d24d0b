"""The system prompt: the template in `prompts/system.md` filled with the session's environment."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from datetime import date
from importlib.resources import files
from pathlib import Path
from string import Template

from piton.core.records import record
from piton.core.safety.sandbox import BASH, Launch, Sandbox

_GIT_TIMEOUT_S = 2.0
_MAX_STATUS_LINES = 40
# A repository's own config can name programs git runs (core.fsmonitor, hooks): never outside a sandbox.
_HARDENED = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
_SEPARATOR = "\x1e"  # between the two commands' outputs


class _GitUnavailable(Exception):
    pass


def _git_outputs(cwd: Path, sandbox: Sandbox | None) -> tuple[str, str] | None:
    """`git status --short --branch` and `git log --oneline -5`, or None when this is no repository."""
    if not _may_be_repository(cwd):
        return None
    status = shlex.join(["git", *_HARDENED, "status", "--short", "--branch"])
    log = shlex.join(["git", *_HARDENED, "log", "--oneline", "-n", "5"])
    script = f"{status} && printf '\\036' && {{ {log} || true; }}"
    if sandbox is not None and sandbox.unavailable_reason() is None:
        launch = sandbox.launch(script, cwd)
    else:
        launch = Launch([*BASH, script])
    try:
        done = subprocess.run(
            launch.argv,
            cwd=cwd,
            env=launch.env,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise _GitUnavailable(f"git status took over {_GIT_TIMEOUT_S:g} s") from e
    except OSError as e:
        raise _GitUnavailable(f"git could not run ({e.strerror or e})") from e
    finally:
        launch.close()
    if done.returncode == 127:
        raise _GitUnavailable("git could not run (not installed)")
    if done.returncode != 0 or _SEPARATOR not in done.stdout:
        return None
    status_out, _, log_out = done.stdout.partition(_SEPARATOR)
    return status_out, log_out


def _may_be_repository(cwd: Path) -> bool:
    """Whether git could find a repository from `cwd`: a `.git` here or above it, or one the
    environment names. Where none can be, neither a sandbox nor git need start."""
    if "GIT_DIR" in os.environ:
        return True
    here = cwd.resolve()  # git climbs from the folder the kernel says it is in, past any link
    return any(os.path.lexists(folder / ".git") for folder in (here, *here.parents))


def git_summary(cwd: Path, sandbox: Sandbox | None = None) -> str:
    """Branch, changed files (capped) and recent commits, or a line saying there is no repository.
    Git runs in `sandbox` (read-only) when one can start, with repository-named programs disabled."""
    try:
        outputs = _git_outputs(cwd, sandbox)
    except _GitUnavailable as e:
        return f"Unknown: {e}."
    if outputs is None:
        return "Not a git repository."
    status, log = outputs
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
    if log.strip():
        out.append("Recent commits:")
        out.extend(log.strip().splitlines())
    return "\n".join(out)


_ROLE = {
    True: "You are Piton, a coding assistant that works in the user's terminal, inside their project. You "
    "help with software engineering tasks: explaining code, fixing bugs, adding features, refactoring, "
    "writing tests, and running commands.",
    False: "You are Piton, an assistant that works in the user's terminal, inside their project. You help "
    "the user as the output style at the end of these instructions describes.",
}
_BREVITY = (
    "- Be direct and brief. Answer in the fewest words that fully serve the user; no preamble, no "
    "summary of what you are about to do unless asked."
)
_MARKDOWN = "- Use GitHub-flavoured Markdown; it is rendered in a terminal."


@record(frozen=True)
class OutputStyle:
    """How the model talks (`piton.skills.output_styles` finds them): its instructions, added at the
    end of the prompt (none for Default), and whether the coding instructions stay."""

    name: str
    description: str
    prompt: str
    keep_coding: bool
    source: str  # builtin, project, user or plugin
    path: Path | None = None


def build_system_prompt(
    cwd: Path,
    *,
    append: str | None = None,
    today: date | None = None,
    sandbox: Sandbox | None = None,
    sections: Sequence[str] = (),
    style: OutputStyle | None = None,
) -> str:
    """The template filled in, then `sections` (project instructions, the skills listing), the output
    style's instructions, and what the user appends. Everything here stays the same for the session:
    it is the cached prefix."""
    prompts = files("piton.core").joinpath("prompts")
    template = Template(prompts.joinpath("system.md").read_text(encoding="utf-8"))
    coding = style is None or style.keep_coding
    how = [] if style is not None and style.prompt else [_BREVITY]  # a style says how long to be
    how.append(_MARKDOWN)
    if coding:
        how.append(prompts.joinpath("how-to-work.md").read_text(encoding="utf-8").strip())
    text = template.safe_substitute(
        role=_ROLE[coding],
        how_to_work="\n".join(how),
        cwd=str(cwd),
        platform=f"{platform.system()} {platform.release()}",
        date=(today or date.today()).isoformat(),
        git_status=git_summary(cwd, sandbox),
    ).rstrip()
    styled = f"# Output style: {style.name}\n{style.prompt.strip()}" if style and style.prompt.strip() else ""
    for part in [*sections, styled, append or ""]:
        if part.strip():
            text += "\n\n" + part.strip()
    return text


def environment_section(cwd: Path, today: date | None = None) -> str:
    """The environment block on its own (for subagents' prompts)."""
    return (
        "# Environment\n"
        f"- Working directory: {cwd}\n"
        f"- Platform: {platform.system()} {platform.release()}\n"
        f"- Date: {(today or date.today()).isoformat()}"
    )
