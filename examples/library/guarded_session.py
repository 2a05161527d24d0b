"""A conversation of two turns with a permission callback and a PreToolUse hook, kept in SQLite.

python examples/library/guarded_session.py
"""

import asyncio
from typing import Any

from piton import Agent, AgentOptions
from piton.api import Allow, Deny, HookMatcher, ResultMessage, SqliteSessionStorage, ToolPermissionContext


def can_use_tool(name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Allow | Deny:
    """Edits only under docs/; everything else the rules ask about is refused."""
    if name in ("Write", "Edit") and "/docs/" in tool_input.get("file_path", ""):
        return Allow()
    return Deny(f"{name} is not allowed here ({context.reason})")


async def no_force_push(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
    command = hook_input["tool_input"].get("command", "")
    if "push --force" in command:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "force pushes are not allowed",
            }
        }
    return {}


async def main() -> None:
    storage = SqliteSessionStorage("sessions.db")
    options = AgentOptions(
        can_use_tool=can_use_tool,
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[no_force_push])]},
        session_storage=storage,
    )
    async with Agent(options) as agent:
        for prompt in ("Write docs/notes.md with one line: hello", "Now force-push the branch"):
            async for message in agent.query(prompt):
                if isinstance(message, ResultMessage):
                    print(f"{prompt!r}: {message.text}")
        session = agent.session_id
    print(f"stored sessions: {[s.session_id for s in storage.sessions()] == [session]}")


if __name__ == "__main__":
    asyncio.run(main())
