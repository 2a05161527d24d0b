"""Git worktrees from the model's side: MergeWorktree brings in (or drops) what an agent did in its
own worktree (Task with isolation: worktree); EnterWorktree moves the session's own work into a
worktree and ExitWorktree leaves it, keeping, applying or dropping what was done there. Made and
removed by `piton.core.worktrees`."""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import Field

from piton.builtin_tools.files import policy_of
from piton.core import worktrees
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.run_command import CommandRunner, Refused
from piton.core.subagent_runner import SubagentRunner
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

_ENTERED = "worktree_entered"  # ToolContext.state: (the worktree, the folder and policy left)
# what a session keeps of its folder and sandboxes (`run_command`), made anew in the other folder
_SANDBOX_STATE = (
    "bash_cwd",
    "bash_read_only_sandbox",
    "bash_lasting_sandbox",
    "bash_lasting_read_only_sandbox",
)


class MergeWorktreeInput(ToolInput):
    agent: str = Field(description="The id or name of an agent that worked in a worktree.")
    action: Literal["diff", "apply", "discard"] = Field(
        description="diff: show its changes; apply: bring them into the project; discard: drop them."
    )


class MergeWorktree(Tool[MergeWorktreeInput]):
    name = "MergeWorktree"
    description = (
        "Brings the changes of an agent that worked in its own git worktree (Task with isolation: "
        "worktree) into the project, as one patch; or shows them, or drops them. Its worktree is removed "
        "once they are applied or dropped. A patch that does not apply (the project changed the same "
        "lines) is refused whole, and the worktree kept."
    )
    input_model = MergeWorktreeInput
    kind = "edit"  # applying writes the project's files: asked about as an edit is
    deferred = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    def is_read_only(self, args: MergeWorktreeInput, ctx: ToolContext) -> bool:
        return args.action != "apply"  # a diff reads; a discard drops only the agent's own copy

    def rule_content(self, args: MergeWorktreeInput, ctx: ToolContext) -> str | None:
        return args.action

    async def run(self, args: MergeWorktreeInput, ctx: ToolContext) -> ToolResult:
        run = self.runner.agents.get(args.agent)
        worktree = run.worktree if run is not None else None
        if run is None or worktree is None:
            return ToolResult.error(f"No agent '{args.agent}' has a worktree with changes.")
        if run.running:
            return ToolResult.error(
                f"Agent {run.label} is still working in its worktree: wait for its report."
            )
        if args.action == "discard":
            await asyncio.to_thread(worktrees.remove, worktree)
            run.worktree = None
            return ToolResult(
                f"Dropped the changes of {run.label} and removed its worktree.", summary="dropped"
            )
        if args.action == "diff":
            try:
                patch = await asyncio.to_thread(worktrees.changes, worktree, policy_of(ctx))
            except worktrees.WorktreeError as e:
                return ToolResult.error(str(e))
            return ToolResult(patch or "(no changes)", summary=f"{patch.count('diff --git ')} files")
        result = await apply_worktree(worktree, ctx, f"the changes of {run.label}")
        if not result.is_error:
            run.worktree = None
        return result


async def apply_worktree(worktree: worktrees.Worktree, ctx: ToolContext, whose: str) -> ToolResult:
    """The worktree's patch applied to the project as a command (the session's sandbox, lock and
    guard), all or nothing; the worktree removed once it is in."""
    target = shlex.quote(str(worktree.repository))
    line = f"{worktrees.diff_script(worktree)} | ( cd {target} && git apply --binary --whitespace=nowarn - )"
    # a sandbox of its own (the worktree in view), made for this command and not kept for the next
    apart = replace(ctx, sandbox=None, state={"bash_cwd": str(worktree.repository)})
    outcome = await CommandRunner(apart, worktrees.seen(policy_of(ctx), worktree.path)).run(
        line, timeout_s=120
    )
    if isinstance(outcome, Refused):
        return ToolResult.error(f"The patch cannot be applied: {outcome.reason}")
    result = outcome.result
    if result.exit_code != 0:
        said = result.output.strip() or "git apply failed"
        return ToolResult.error(f"Nothing was applied: {said}\nThe worktree {worktree.path} is kept.")
    await asyncio.to_thread(worktrees.remove, worktree)
    return ToolResult(f"Applied {whose} to the project; the worktree is removed.", summary="applied")


class EnterWorktreeInput(ToolInput):
    name: str | None = Field(default=None, description="A name for the worktree (letters, digits, -).")


class EnterWorktree(Tool[EnterWorktreeInput]):
    name = "EnterWorktree"
    description = (
        "Moves your own work into a new git worktree of this repository (as of its last commit): "
        "from now on your files and commands are there, and the project's folder is read-only until "
        "ExitWorktree. For an experiment or a risky change that should not touch the project yet."
    )
    input_model = EnterWorktreeInput
    read_only = True  # it narrows where writes go; the project itself is not changed
    deferred = True

    async def run(self, args: EnterWorktreeInput, ctx: ToolContext) -> ToolResult:
        if _ENTERED in ctx.state:
            return ToolResult.error(f"You already work in the worktree {ctx.cwd}: ExitWorktree first.")
        name = args.name or f"session-{ctx.session_id[:8]}"
        if not name.replace("-", "").isalnum():
            return ToolResult.error("A worktree's name has letters, digits and - only.")
        try:
            worktree = await asyncio.to_thread(worktrees.create, ctx.cwd, name)
        except worktrees.WorktreeError as e:
            return ToolResult.error(f"Cannot make a worktree: {e}")
        policy = policy_of(ctx)
        ctx.state[_ENTERED] = (worktree, ctx.cwd, policy)
        _move(
            ctx,
            worktree.path,
            worktrees.seen(replace(policy, workspace=worktree.path, extra_dirs=()), *policy.roots),
        )
        return ToolResult(
            f"You now work in the worktree {worktree.path} (the project as of {worktree.base[:12]}). "
            "ExitWorktree leaves it: keep, apply (bring the changes into the project) or discard.",
            summary=f"entered {name}",
        )


class ExitWorktreeInput(ToolInput):
    action: Literal["keep", "apply", "discard"] = Field(
        description="keep: leave it as it is; apply: bring its changes into the project; discard: drop them."
    )


class ExitWorktree(Tool[ExitWorktreeInput]):
    name = "ExitWorktree"
    description = "Leaves the worktree EnterWorktree moved your work into, back to the project."
    input_model = ExitWorktreeInput
    kind = "edit"  # applying writes the project's files: asked about as an edit is
    deferred = True

    def is_read_only(self, args: ExitWorktreeInput, ctx: ToolContext) -> bool:
        return args.action != "apply"

    async def run(self, args: ExitWorktreeInput, ctx: ToolContext) -> ToolResult:
        entered = ctx.state.get(_ENTERED)
        if entered is None:
            return ToolResult.error("You do not work in a worktree (EnterWorktree moves you into one).")
        worktree, cwd, policy = entered
        del ctx.state[_ENTERED]
        _move(ctx, cwd, policy)
        if args.action == "keep":
            return ToolResult(f"Back in {cwd}; the worktree {worktree.path} is kept.", summary="kept")
        if args.action == "discard":
            await asyncio.to_thread(worktrees.remove, worktree)
            return ToolResult(f"Back in {cwd}; the worktree and its changes are gone.", summary="discarded")
        result = await apply_worktree(worktree, ctx, "the worktree's changes")
        return replace(result, content=f"Back in {cwd}. {result.content}")


def _move(ctx: ToolContext, cwd: Path, policy: SandboxPolicy) -> None:
    """The session's folder and policy, and its sandboxes made anew for them."""
    ctx.cwd, ctx.policy, ctx.sandbox = cwd, policy, None
    for key in _SANDBOX_STATE:
        ctx.state.pop(key, None)
