"""The names of the modes people choose, in one place: permission modes and sandbox modes as the
command line, the settings files, the terminal, the control protocol and the library spell them.
Kept free of imports: the command line's fast path reads it before anything else is loaded."""

from __future__ import annotations

TYPE_CHECKING = False  # importing `typing` would cost the fast path its speed
if TYPE_CHECKING:
    from typing import Literal

    PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
    SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]

# What the permission rules know; Claude Code's names
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")
# Claude Code's modes that the rules do not name: each runs as `default`, and the session gives it
# its meaning (dontAsk: nobody is asked; auto: no classifier here, so people are)
EXTRA_MODES = ("dontAsk", "auto")
# What `--permission-mode` and a client accept
CHOSEN_MODES: tuple[str, ...] = (*PERMISSION_MODES, *EXTRA_MODES)
# What Shift+Tab cycles through in the terminal: bypassing the rules is chosen by flag only
CYCLED_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan")
# Codex's names
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
