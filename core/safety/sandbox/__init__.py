"""The shell sandbox: choosing the implementation for this platform (bubblewrap on Linux, seatbelt
on macOS). What they share is in `base`; which bubblewrap runs is `locate`'s choice, the seccomp
filter is `seccomp`'s, and the resource limits are `limits`'."""

from __future__ import annotations

import sys

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox.base import (
    BASH,
    OPT_OUT,
    Launch,
    NoSandbox,
    Sandbox,
    Unavailable,
    command_env,
)
from piton.core.safety.sandbox.limits import Limits

__all__ = [
    "BASH",
    "OPT_OUT",
    "Launch",
    "Limits",
    "NoSandbox",
    "Sandbox",
    "Unavailable",
    "command_env",
    "make_sandbox",
]


def make_sandbox(
    policy: SandboxPolicy, platform: str = sys.platform, limits: Limits | None = None
) -> Sandbox:
    """The sandbox for `policy`; `limits` default to the policy's (the user's settings)."""
    if policy.mode == "danger-full-access":
        return NoSandbox(policy)
    if platform.startswith("linux"):
        from piton.core.safety.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(policy, limits=limits)
    if platform == "darwin":
        from piton.core.safety.sandbox.seatbelt import SeatbeltSandbox

        return SeatbeltSandbox(policy, limits=limits)
    return Unavailable(f"no sandbox is available on {platform}; {OPT_OUT}")
