"""Background shells for the model: Bash `run_in_background` starts one (`start_in_background`,
through the command orchestrator, `piton.core.safety.run_command`), BashOutput reads what it printed
since the last read, KillShell stops it. The shells themselves are the session's
(`piton.core.shells`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import Field

from piton.builtin_tools.files import policy_of
from piton.core.display import CommandOutput
from piton.core.safety.run_command import CommandRunner, Refused
from piton.core.shells import BackgroundShell
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

# What a refusal to leave a command running says, by its cause
_REFUSED = {
    "no sandbox": "Bash is unavailable: {}.",
    "not held": "The command was not started in the background: {}.",
    "not started": "The command could not start: {}.",
}


async def start_in_background(
    command: str, description: str, timeout_s: float | None, ctx: ToolContext
) -> ToolResult:
    """Leave `command` running through the orchestrator; its shell id, or why it did not start."""
    outcome = await CommandRunner(ctx, policy_of(ctx)).start(
        command, timeout_s=timeout_s, description=description
    )
    if isinstance(outcome, Refused):
        return ToolResult.error(_REFUSED[outcome.cause].format(outcome.reason))
    shell = outcome.shell
    text = (
        f"Command running in the background with ID: {shell.id}. Read its output with BashOutput "
        f"(bash_id {shell.id!r}); stop it with KillShell (shell_id {shell.id!r})."
    )
    return ToolResult("\n".join([text, *outcome.notes]), summary=f"{shell.id} started in the background")


def _shell(ctx: ToolContext, shell_id: str) -> BackgroundShell | ToolResult:
    shell = ctx.shells.get(shell_id)
    if shell is not None:
        return shell
    known = ", ".join(s.id for s in ctx.shells) or "none"
    return ToolResult.error(f"No background shell {shell_id!r} (this session's: {known}).")


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The id of the background shell (Bash run_in_background returned it).")
    filter: str | None = Field(
        None,
        description="A regular expression: only output lines matching it are shown. Lines that do not "
        "match are discarded all the same: they will not be shown by a later call.",
    )


class BashOutput(Tool[BashOutputInput]):
    name = "BashOutput"
    description = (
        "Returns the output a background shell (Bash with run_in_background) printed since the last "
        "call for it, with its status (running, completed, failed or killed) and, once it has ended, "
        "its exit code. Returns at once: it does not wait for more output."
    )
    input_model = BashOutputInput
    read_only = True  # it reads what the session's own command printed
    deferred = True  # only once a command runs in the background

    async def run(self, args: BashOutputInput, ctx: ToolContext) -> ToolResult:
        found = _shell(ctx, args.bash_id)
        if isinstance(found, ToolResult):
            return found
        try:
            pattern = re.compile(args.filter) if args.filter else None
        except re.error as e:
            return ToolResult.error(f"The filter is not a valid regular expression: {e}.")
        reading = found.read(pattern)
        parts = [f"<status>{reading.status}</status>"]
        if reading.exit_code is not None:
            parts.append(f"<exit_code>{reading.exit_code}</exit_code>")
        if reading.dropped_bytes:
            parts.append(f"[... {reading.dropped_bytes:,} bytes of earlier output were discarded unread]")
        if reading.text:
            parts.append(f"<stdout>\n{reading.text.rstrip(chr(10))}\n</stdout>")
        else:
            parts.append("(no new output)")
        if reading.hidden_lines:
            parts.append(f"({reading.hidden_lines} lines did not match the filter)")
        parts.append(f"<timestamp>{datetime.now(UTC).isoformat(timespec='seconds')}</timestamp>")
        lines = reading.text.count("\n")
        summary = f"{reading.status}, {lines} new line{'s' if lines != 1 else ''}"
        return ToolResult(
            "\n\n".join(parts), summary=summary, display=CommandOutput(reading.text, reading.exit_code)
        )


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The id of the background shell to stop.")


class KillShell(Tool[KillShellInput]):
    name = "KillShell"
    description = (
        "Stops a background shell (started by Bash with run_in_background) and everything it started."
    )
    input_model = KillShellInput
    read_only = True  # it only stops what the session itself started
    deferred = True  # only once a command runs in the background

    async def run(self, args: KillShellInput, ctx: ToolContext) -> ToolResult:
        found = _shell(ctx, args.shell_id)
        if isinstance(found, ToolResult):
            return found
        return await kill_shell(found)


async def kill_shell(shell: BackgroundShell) -> ToolResult:
    """Stop `shell` and all it started, and say how that went (KillShell, TaskStop)."""
    if not shell.kill():
        return ToolResult(
            f"Background shell {shell.id} had already ended ({shell.status}).", summary="already ended"
        )
    ended = await shell.wait(5.0)
    shell.told()
    if not ended:
        return ToolResult.error(f"Background shell {shell.id} was sent a kill but has not ended yet.")
    return ToolResult(
        f"Killed background shell {shell.id} (`{shell.command}`).", summary=f"killed {shell.id}"
    )
