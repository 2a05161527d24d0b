"""Bash: one command in a fresh sandboxed shell; the working directory carries over between calls."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from piton.builtin_tools.bash_background import start_in_background
from piton.builtin_tools.files import policy_of
from piton.core.display import CommandOutput
from piton.core.safety import guard
from piton.core.safety.readonly import Reading, classify
from piton.core.safety.sandbox import Sandbox, make_sandbox
from piton.core.safety.shell import run_shell
from piton.core.tools import Tool, ToolContext, ToolResult

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
_CWD = "bash_cwd"  # ToolContext.state key
_CONFINED = "bash_read_only_sandbox"  # ToolContext.state key: where lines that only look run
_CHANGES_DIRECTORY = re.compile(r"\b(cd|pushd|popd)\b")


class BashInput(BaseModel):
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


def _is_dir(path: Path) -> bool:
    return path.is_dir()


def working_directory(ctx: ToolContext) -> tuple[Path, list[str]]:
    """Where the next command starts (where the last one ended), and a note if that is gone."""
    workspace = policy_of(ctx).workspace
    cwd = Path(ctx.state.get(_CWD) or workspace)
    if _is_dir(cwd):
        return cwd, []
    return workspace, [f"(The directory {cwd} is gone; the command ran in {workspace}.)"]


def sandbox_of(ctx: ToolContext) -> Sandbox:
    if ctx.sandbox is None:
        ctx.sandbox = make_sandbox(policy_of(ctx))
    return ctx.sandbox


def _confined(ctx: ToolContext, reading: Reading) -> Sandbox:
    """The sandbox for a command: a line that only looks runs where it can only look (so a line the
    classification misjudges still cannot write), any other in the session's own sandbox."""
    policy = policy_of(ctx)
    if not reading.read_only or policy.mode != "workspace-write":
        return sandbox_of(ctx)
    sandbox: Sandbox | None = ctx.state.get(_CONFINED)
    if sandbox is None:
        sandbox = ctx.state[_CONFINED] = make_sandbox(policy.read_only())
    return sandbox


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
            async with ctx.lock.exclusive():  # its placeholders are made between other commands
                cwd, notes = working_directory(ctx)
                timeout_s = args.timeout / 1000 if args.timeout else None
                return await start_in_background(
                    args.command, args.description or "", cwd, timeout_s, ctx, notes
                )
        sandbox = _confined(ctx, classify(args.command))
        if sandbox is ctx.state.get(_CONFINED) or policy_of(ctx).mode == "read-only":
            async with ctx.lock.shared():  # it cannot write: it may run beside reads and other lookers
                return await self._run(args, ctx, sandbox, guarded=False)
        async with ctx.lock.exclusive():
            return await self._run(args, ctx, sandbox, guarded=True)

    async def _run(self, args: BashInput, ctx: ToolContext, sandbox: Sandbox, guarded: bool) -> ToolResult:
        reason = sandbox.unavailable_reason()
        if reason is not None:
            return ToolResult.error(f"Bash is unavailable: {reason}.")
        policy = policy_of(ctx)
        cwd, notes = working_directory(ctx)
        timeout_ms = args.timeout or DEFAULT_TIMEOUT_MS
        if guarded:
            guard.prepare(policy)
        before = guard.snapshot(policy) if guarded else guard.Snapshot()
        try:
            result = await run_shell(args.command, cwd=cwd, sandbox=sandbox, timeout_s=timeout_ms / 1000)
        finally:
            notes += guard.restore(before)
        if result.cwd is None and not result.timed_out and _CHANGES_DIRECTORY.search(args.command):
            notes.append(
                "(The command's final directory is unknown (it replaced the shell or its EXIT trap); "
                f"the next command starts in {cwd}.)"
            )
        if result.cwd is not None:
            if policy.in_roots(result.cwd):
                ctx.state[_CWD] = str(result.cwd)
            else:
                ctx.state[_CWD] = str(policy.workspace)
                notes.append(
                    f"(The shell's directory was reset to {policy.workspace}: {result.cwd} is outside the "
                    "project and the added directories.)"
                )
        parts = [result.output.rstrip("\n")] if result.output.strip() else []
        if result.dropped_bytes:
            parts.append(f"[... {result.dropped_bytes:,} more bytes of output were discarded]")
        if result.timed_out:
            parts.append(f"Command timed out after {timeout_ms / 1000:g} s; it and its children were killed.")
            summary = "timed out"
        elif result.exit_code:
            parts.append(f"Exit code {result.exit_code}")
            summary = f"exit {result.exit_code}"
        else:
            lines = result.output.count("\n")
            summary = f"{lines} line{'s' if lines != 1 else ''}" if lines else "no output"
        parts += notes
        text = "\n".join(parts) or "(no output)"
        return ToolResult(
            text,
            is_error=result.timed_out or bool(result.exit_code),
            summary=summary,
            display=CommandOutput(result.output, result.exit_code),
        )
