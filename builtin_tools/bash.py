"""Bash: one command in a fresh sandboxed shell; the working directory carries over between calls.

The tool declares the command, its deadline and whether it is left running; what happens once a call
is allowed (its sandbox, the command lock, the guard, where it starts) is the command orchestrator's
(`piton.core.safety.run_command`). Here: the tool's contract and how what ran is reported.
"""

from __future__ import annotations

from pydantic import Field

from piton.builtin_tools.bash_background import start_in_background
from piton.builtin_tools.files import policy_of
from piton.core.display import CommandOutput
from piton.core.safety.readonly import classify
from piton.core.safety.run_command import CommandRunner, Ran, Refused
from piton.core.safety.shell import MAX_CAPTURE_BYTES
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000


class BashInput(ToolInput):
    command: str = Field(description="The command line to run with bash.")
    timeout: int | None = Field(
        None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Milliseconds before it is killed (default {DEFAULT_TIMEOUT_MS}).",
    )
    description: str | None = Field(None, description="What the command does, in 5-10 words, for the user.")
    run_in_background: bool | None = Field(
        None,
        description="Start the command and return at once with a shell id; read its output later with "
        "BashOutput and stop it with KillShell.",
    )


async def run_line(command: str, ctx: ToolContext, timeout_ms: int | None = None) -> ToolResult:
    """`command` run in the foreground by the command orchestrator, reported as Bash reports it: the
    model's calls, the user's `!cmd` and a skill's ``!`cmd` `` lines all run this way."""
    timeout_ms = timeout_ms or DEFAULT_TIMEOUT_MS
    outcome = await CommandRunner(ctx, policy_of(ctx)).run(command, timeout_s=timeout_ms / 1000)
    if isinstance(outcome, Refused):
        return ToolResult.error(f"Bash is unavailable: {outcome.reason}.")
    return _report(outcome, timeout_ms)


def _report(ran: Ran, timeout_ms: int) -> ToolResult:
    """What the model reads of a command that ran: its output, how it ended, and the notes."""
    result = ran.result
    parts = [result.output.rstrip("\n")] if result.output.strip() else []
    if result.dropped_bytes:
        half = MAX_CAPTURE_BYTES // 2 // (1024 * 1024)
        parts.append(
            f"[{result.dropped_bytes:,} bytes from the middle of the output were cut: shown are "
            f"its first and last {half} MiB]"
        )
    if result.timed_out:
        parts.append(f"Command timed out after {timeout_ms / 1000:g} s; it and its children were killed.")
        summary = "timed out"
    elif result.exit_code:
        parts.append(f"Exit code {result.exit_code}")
        summary = f"exit {result.exit_code}"
    else:
        lines = result.output.count("\n")
        summary = f"{lines} line{'s' if lines != 1 else ''}" if lines else "no output"
    parts += ran.notes
    text = "\n".join(parts) or "(no output)"
    return ToolResult(
        text,
        is_error=result.timed_out or bool(result.exit_code),
        summary=summary,
        display=CommandOutput(result.output, result.exit_code),
        data={  # Claude Code's: the output is one stream here, so all of it is `stdout`
            "stdout": result.output.rstrip("\n"),
            "stderr": "",
            "interrupted": result.timed_out,
            "isImage": False,
            "noOutputExpected": False,
        },
    )


class Bash(Tool[BashInput]):
    name = "Bash"
    description = (
        "Runs a bash command in a sandbox and returns its output (stdout and stderr together) and its "
        "exit code.\n"
        "- Each call is a fresh shell: variables and aliases do not carry over, but the working directory "
        "does (cd persists, within the project and added directories).\n"
        "- The sandbox can write only inside the project (and added directories) and a private /tmp; "
        "network access is off unless enabled in settings. A command that fails because of the sandbox "
        "should be reported, not worked around.\n"
        "- There is no standard input: do not run interactive commands (editors, pagers, prompts); pass "
        "flags such as --yes or -y instead.\n"
        f"- Commands are killed after {DEFAULT_TIMEOUT_MS // 1000} s unless timeout says otherwise "
        f"(at most {MAX_TIMEOUT_MS // 1000} s).\n"
        "- Prefer Read, Glob, Grep, Edit and Write over cat, find, grep, sed and echo redirection.\n"
        "- Quote paths that contain spaces. Chain dependent commands with &&.\n"
        "- run_in_background: true starts a command that keeps running (a dev server, a watcher, a long "
        "build) and returns its shell id at once; do not add '&'. You are told when it has new output or "
        "ends; read it with BashOutput and stop it with KillShell. It cannot write .git, .claude or "
        ".piton, and it ends with the session. Without timeout it runs until it ends or is stopped."
    )
    input_model = BashInput
    kind = "execute"

    def refusal(self, args: BashInput, ctx: ToolContext) -> str | None:
        runner = CommandRunner(ctx, policy_of(ctx))
        reason = runner.unavailable(args.command, left_running=bool(args.run_in_background))
        return None if reason is None else f"Bash is unavailable: {reason}."

    def rule_content(self, args: BashInput, ctx: ToolContext) -> str | None:
        return args.command

    def is_read_only(self, args: BashInput, ctx: ToolContext) -> bool:
        """A line that only looks (`core/safety/readonly.py`): plan mode asks about it rather than
        refusing it. Never without a sandbox, which is what makes a misjudged line harmless."""
        return policy_of(ctx).mode != "danger-full-access" and classify(args.command).read_only

    def is_concurrency_safe(self, args: BashInput, ctx: ToolContext) -> bool:
        """A line that cannot write (it only looks and runs in a read-only sandbox, or the whole
        sandbox is read-only) may run beside others; one that changes directory runs alone, so the
        next command starts where it ended."""
        policy = policy_of(ctx)
        reading = classify(args.command)
        if args.run_in_background or policy.mode == "danger-full-access" or reading.changes_directory:
            return False
        return policy.mode == "read-only" or reading.read_only

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolResult:
        if args.run_in_background:
            timeout_s = args.timeout / 1000 if args.timeout else None
            return await start_in_background(args.command, args.description or "", timeout_s, ctx)
        return await run_line(args.command, ctx, args.timeout)
