"""Which confinement a command line gets once it is allowed: the sandbox policy it runs under, whether
it may run beside other commands and the file tools, and how the guard keeps what it must not change.

Policy only: nothing here starts a process, makes a sandbox or touches a file, so the rules can be
read and tested alone. `piton.core.safety.run_command` carries a plan out (the mechanism: bubblewrap or
seatbelt, the session's command lock, the guard's snapshot and restore).

- A line that only looks (`readonly.classify`) runs in a read-only sandbox when the project is
  writable, so a line the classification misjudges still cannot write; it then holds the lock
  shared (beside reads and other lookers) and needs no guard.
- In a read-only session every line is like that: shared, unguarded.
- Any other line may write: it runs alone (the lock held exclusively), its guarded places
  snapshotted before and restored after when the sandbox lets it write the project. Without a
  sandbox (danger-full-access) there is nothing the guard could keep: it still runs alone.
- A line left running gets a lasting sandbox (`SandboxPolicy.left_running`: the guarded folders
  read-only as a whole), or a read-only one when it only looks; it is started alone (its
  placeholders are made between other commands) and guarded for its whole life by the session's
  `lasting.LastingGuard`.
"""

from __future__ import annotations

from typing import Literal

from piton.core.records import record
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.readonly import classify

# Which of an agent's sandboxes a command uses: each is made once, from the policy its role implies.
SandboxRole = Literal["session", "looking", "lasting", "lasting-looking"]
LockMode = Literal["shared", "exclusive"]
GuardMode = Literal["none", "snapshot", "lasting"]


@record(frozen=True)
class CommandPlan:
    policy: SandboxPolicy  # what the command's sandbox is made from
    sandbox: SandboxRole
    lock: LockMode  # how it holds the session's command lock
    guard: GuardMode  # how the guarded places are kept: around it, for its whole life, or not at all


def plan_command(command: str, policy: SandboxPolicy, *, left_running: bool = False) -> CommandPlan:
    """The plan for `command` in a session under `policy` (see the module's docstring)."""
    looks = classify(command).read_only and policy.mode == "workspace-write"
    if left_running:
        lasting = policy.read_only() if looks else policy.left_running()
        role: SandboxRole = "lasting-looking" if lasting.mode == "read-only" else "lasting"
        return CommandPlan(
            lasting, role, "exclusive", "lasting" if lasting.mode == "workspace-write" else "none"
        )
    if looks:
        return CommandPlan(policy.read_only(), "looking", "shared", "none")
    if policy.mode == "read-only":
        return CommandPlan(policy, "session", "shared", "none")
    return CommandPlan(
        policy, "session", "exclusive", "snapshot" if policy.mode == "workspace-write" else "none"
    )
