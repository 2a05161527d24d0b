"""Claude Code's hook configuration: which commands run at which event, for which tools.

    "hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command",
              "command": "./check.sh", "timeout": 30}]}]}

A matcher names tools (`Bash`, `Edit|Write`, a regular expression such as `mcp__.*`, or `*` and
the empty string for every tool); events without tools match on what they carry (SessionStart on
its source, PreCompact on its trigger, Notification on its type) or ignore the matcher. An entry
that cannot be used is skipped with a warning naming its file and event.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from piton.core.records import record

EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
)
DEFAULT_TIMEOUT_S = 60.0


@record(frozen=True)
class HookCommand:
    event: str
    matcher: str  # "" matches everything
    command: str
    timeout: float
    source: Path  # the settings file that names it
    trusted: bool  # from the user's own files (else the project's: it runs only in a trusted folder)
    sandboxed: bool = True  # False only by `"sandbox": false` in the user's own settings
    may_opt_out: bool = False  # from the user's own settings, where `"sandbox": false` counts

    @property
    def grant(self) -> str:
        """What the hook grants, as the trust question shows it."""
        on = f" ({self.matcher})" if self.matcher else ""
        return f"hook {self.event}{on}: {self.command}"

    def matches(self, value: str | None) -> bool:
        """Whether the hook runs for a tool (or source, trigger…) named `value`."""
        if self.matcher in ("", "*") or value is None:
            return True
        values = (value, "Agent") if value == "Task" else (value,)  # Claude Code's name for Task
        if re.fullmatch(r"[A-Za-z0-9_|-]+", self.matcher):  # plain names: exact, no regex surprises
            return any(v in self.matcher.split("|") for v in values)
        try:
            return any(re.fullmatch(self.matcher, v) is not None for v in values)
        except re.error:
            return self.matcher in values


def parse_hooks(
    source: Path, trusted: bool, value: dict[str, Any], warn: list[str], *, may_opt_out: bool = False
) -> list[HookCommand]:
    """The command hooks of one settings file's `"hooks"` object. `may_opt_out`: the file is the
    user's own settings, whose `"sandbox": false` on a hook runs it unconfined."""
    found: list[HookCommand] = []
    for event, entries in value.items():
        if event not in EVENTS:
            warn.append(f"ignored hooks.{event} in {source}: Piton runs {', '.join(EVENTS)}")
            continue
        if not isinstance(entries, list):
            warn.append(f"ignored hooks.{event} in {source}: expected a list of matchers")
            continue
        for entry in entries:
            found += _entry(event, entry, source, trusted, may_opt_out, warn)
    return found


def _entry(
    event: str, entry: Any, source: Path, trusted: bool, may_opt_out: bool, warn: list[str]
) -> list[HookCommand]:
    matcher = entry.get("matcher", "") if isinstance(entry, dict) else None
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    if not isinstance(matcher, str) or not isinstance(hooks, list):
        warn.append(f'ignored an entry of hooks.{event} in {source}: expected {{"matcher", "hooks": [...]}}')
        return []
    found = []
    for hook in hooks:
        if not isinstance(hook, dict) or hook.get("type", "command") != "command":
            kind = hook.get("type") if isinstance(hook, dict) else None
            warn.append(f"ignored a hook of {event} in {source}: only command hooks run (not {kind!r})")
            continue
        command, timeout = hook.get("command"), hook.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(command, str) or not command.strip():
            warn.append(f"ignored a hook of {event} in {source}: it names no command")
            continue
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            warn.append(f"hook {command!r} in {source}: timeout {timeout!r} is not a number of seconds; 60 s")
            timeout = DEFAULT_TIMEOUT_S
        sandboxed = _sandboxed(hook, command, source, may_opt_out, warn)
        found.append(
            HookCommand(
                event, matcher.strip(), command, float(timeout), source, trusted, sandboxed, may_opt_out
            )
        )
    return found


def _sandboxed(hook: dict[str, Any], command: str, source: Path, may_opt_out: bool, warn: list[str]) -> bool:
    value = hook.get("sandbox", True)
    if value is True:
        return True
    if value is not False:
        warn.append(f"hook {command!r} in {source}: sandbox must be true or false; it runs sandboxed")
        return True
    if not may_opt_out:
        warn.append(
            f'hook {command!r} in {source}: "sandbox": false counts only in your user settings; '
            "it runs sandboxed"
        )
        return True
    return False
