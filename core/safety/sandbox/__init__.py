"""The shell sandbox: choosing the implementation for this platform (bubblewrap on Linux, seatbelt
on macOS). What they share is in `base`."""

from __future__ import annotations

import sys

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox.base import BASH, OPT_OUT, NoSandbox, Sandbox, Unavailable, command_env

__all__ = ["BASH", "OPT_OUT", "NoSandbox", "Sandbox", "Unavailable", "command_env", "make_sandbox"]


def make_sandbox(policy: SandboxPolicy, platform: str = sys.platform) -> Sandbox:
    if policy.mode == "danger-full-access":
        return NoSandbox(policy)
    if platform.startswith("linux"):
        from piton.core.safety.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(policy)
    if platform == "darwin":
        from piton.core.safety.sandbox.seatbelt import SeatbeltSandbox

        return SeatbeltSandbox(policy)
    return Unavailable(f"no sandbox is available on {platform}; {OPT_OUT}")
