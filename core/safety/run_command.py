"""Running a command line once it is allowed: the one orchestrator for every command the model (Bash),
the user (`!cmd`, through Bash) or a skill (``!`cmd` ``) writes, in the foreground or left running.

The permission question has been asked before, by the permission gate. Callers declare only the
command, how long it may take and whether it is left running; from there the sequence is the same:

1. plan: the sandbox policy, lock mode and guard it gets (`command_policy`: policy only);
2. take the session's command lock (`lock`) as the plan says;
3. the sandbox for that policy, made once per agent (`sandbox`: the mechanism, bubblewrap or
   seatbelt), or a refusal with its reason when that sandbox cannot start;
4. where the command starts: where the last foreground command ended, within the roots;
5. the guard: a snapshot of what it must not change (`guard`); a command left running is guarded for
   its whole life by the session's background shells instead (`lasting`);
6. run it under the sandbox's limits (`shell`), or hand it to the background shells;
7. restore what the guard keeps, and keep where the next command starts.

It is part of the boundary, so it lives in core/safety and imports nothing outside it: the session's
pieces it works with (the agent's sandboxes, lock and scratch state, which `piton.core.tools.
ToolContext` holds, and the `piton.core.shells.BackgroundShells` commands left running go to) are
reached through the two small protocols below, which those classes meet as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from piton.core.records import record
from piton.core.safety import guard
from piton.core.safety.command_policy import CommandPlan, plan_command
from piton.core.safety.lasting import GuardError
from piton.core.safety.lock import CommandLock
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import Sandbox, make_sandbox
from piton.core.safety.shell import ShellResult, run_shell

_CWD = "bash_cwd"  # ToolContext.state key: where the next command starts
# ToolContext.state keys of the sandboxes besides the session's own (`ToolContext.sandbox`)
_SANDBOXES = {
    "looking": "bash_read_only_sandbox",
    "lasting": "bash_lasting_sandbox",
    "lasting-looking": "bash_lasting_read_only_sandbox",
}
_CHANGES_DIRECTORY = re.compile(r"\b(cd|pushd|popd)\b")
ShellT = TypeVar("ShellT", covariant=True)  # what the session's background shells return for one


class LeftRunning(Protocol[ShellT]):
    """Where commands left running go (`piton.core.shells.BackgroundShells`): they start one in the
    sandbox given and follow it, guarding it for its whole life (`lasting.LastingGuard`)."""

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        description: str = "",
        timeout_s: float | None = None,
    ) -> ShellT: ...


class CommandSession(Protocol[ShellT]):
    """What of an agent's session the orchestrator works with (`piton.core.tools.ToolContext`)."""

    sandbox: Sandbox | None  # the agent's own sandbox, made from its policy (the session may set it)
    state: dict[str, Any]  # scratch space: the other sandboxes and the working directory are kept here

    @property
    def lock(self) -> CommandLock: ...  # the session's command lock, shared with its subagents

    @property
    def shells(self) -> LeftRunning[ShellT]: ...


@record(frozen=True)
class Ran:
    """A command that ran in the foreground, to its end or to its deadline."""

    result: ShellResult
    notes: tuple[str, ...]  # what the guard did, and where the next command starts, for the model


@record(frozen=True)
class Started(Generic[ShellT]):
    """A command left running."""

    shell: ShellT
    notes: tuple[str, ...]


@record(frozen=True)
class Refused:
    """A command that did not start: no sandbox can run it, its guarded places cannot be held still
    while it runs, or the process could not be started."""

    cause: Literal["no sandbox", "not held", "not started"]
    reason: str


def where_next(ctx: CommandSession[Any], workspace: Path) -> str | None:
    """Where the next command starts, relative to `workspace` (or absolute outside it), when that is
    not the workspace itself: a `cd` of an earlier command carries over."""
    cwd = ctx.state.get(_CWD)
    if not cwd or Path(cwd) == workspace:
        return None
    try:
        return str(Path(cwd).relative_to(workspace))
    except ValueError:
        return str(cwd)


class CommandRunner(Generic[ShellT]):
    """The orchestrator for one agent's commands under `policy` (the session's, or a subagent's);
    `make` builds a sandbox for a policy (the platform's, unless a test gives another)."""

    def __init__(
        self,
        ctx: CommandSession[ShellT],
        policy: SandboxPolicy,
        make: Callable[[SandboxPolicy], Sandbox] = make_sandbox,
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.make = make

    def unavailable(self, command: str | None = None, *, left_running: bool = False) -> str | None:
        """Why `command` could not start (no sandbox it may run in), or None; without a command, why
        one that writes could not (the session's own sandbox)."""
        if command is None:
            plan = CommandPlan(self.policy, "session", "exclusive", "none")
        else:
            plan = plan_command(command, self.policy, left_running=left_running)
        return self.sandbox(plan).unavailable_reason()

    async def run(self, command: str, *, timeout_s: float) -> Ran | Refused:
        """Run `command` in the foreground, killed with all it started after `timeout_s`."""
        plan = plan_command(command, self.policy)
        lock = self.ctx.lock.shared() if plan.lock == "shared" else self.ctx.lock.exclusive()
        async with lock:
            sandbox = self.sandbox(plan)
            reason = sandbox.unavailable_reason()
            if reason is not None:
                return Refused("no sandbox", reason)
            cwd, notes = self.start_dir()
            if plan.guard == "snapshot":
                guard.prepare(plan.policy)
            before = guard.snapshot(plan.policy) if plan.guard == "snapshot" else guard.Snapshot()
            try:
                result = await run_shell(command, cwd=cwd, sandbox=sandbox, timeout_s=timeout_s)
            finally:
                notes += guard.restore(before)
            notes += self._ended_in(command, cwd, result)
        return Ran(result, tuple(notes))

    async def start(
        self, command: str, *, timeout_s: float | None, description: str = ""
    ) -> Started[ShellT] | Refused:
        """Leave `command` running in the background (killed after `timeout_s`, if given)."""
        plan = plan_command(command, self.policy, left_running=True)
        async with self.ctx.lock.exclusive():  # its placeholders are made between other commands
            sandbox = self.sandbox(plan)
            reason = sandbox.unavailable_reason()
            if reason is not None:
                return Refused("no sandbox", reason)
            cwd, notes = self.start_dir()
            try:
                shell = await self.ctx.shells.start(
                    command,
                    cwd=cwd,
                    sandbox=sandbox,
                    policy=plan.policy,
                    description=description,
                    timeout_s=timeout_s,
                )
            except GuardError as e:
                return Refused("not held", str(e))
            except OSError as e:
                return Refused("not started", str(e))
        return Started(shell, tuple(notes))

    def sandbox(self, plan: CommandPlan) -> Sandbox:
        """The agent's sandbox for `plan`, made the first time it is needed (the session's own is
        `ToolContext.sandbox`, which the session may have set)."""
        if plan.sandbox == "session":
            if self.ctx.sandbox is None:
                self.ctx.sandbox = self.make(plan.policy)
            return self.ctx.sandbox
        key = _SANDBOXES[plan.sandbox]
        sandbox: Sandbox | None = self.ctx.state.get(key)
        if sandbox is None:
            sandbox = self.ctx.state[key] = self.make(plan.policy)
        return sandbox

    def start_dir(self) -> tuple[Path, list[str]]:
        """Where the next command starts (where the last one ended), and a note if that is gone."""
        workspace = self.policy.workspace
        cwd = Path(self.ctx.state.get(_CWD) or workspace)
        if cwd.is_dir():
            return cwd, []
        return workspace, [f"(The directory {cwd} is gone; the command ran in {workspace}.)"]

    def _ended_in(self, command: str, cwd: Path, result: ShellResult) -> list[str]:
        """Keep where a foreground command ended as where the next one starts (within the roots,
        else the workspace); what the model should know about it."""
        if result.cwd is None:
            if result.timed_out or not _CHANGES_DIRECTORY.search(command):
                return []
            return [
                "(The command's final directory is unknown (it replaced the shell or its EXIT trap); "
                f"the next command starts in {cwd}.)"
            ]
        if self.policy.in_roots(result.cwd):
            self.ctx.state[_CWD] = str(result.cwd)
            return []
        self.ctx.state[_CWD] = str(self.policy.workspace)
        return [
            f"(The shell's directory was reset to {self.policy.workspace}: {result.cwd} is outside the "
            "project and the added directories.)"
        ]
