"""Built-in tools, one per module, registered through the same registry as extensions."""

from __future__ import annotations

from core.tools import Tool


def builtin_tools() -> list[Tool]:
    """Fresh instances of every built-in tool (tools may keep per-session state)."""
    return []
