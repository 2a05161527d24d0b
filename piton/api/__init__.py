"""Piton as a library: `from piton import query, Agent, AgentOptions, tool`.

Each name is loaded when first asked for, so the terminal, which prints these messages in
stream-json, pays only for the module it uses; the provider's SDK, the tools and the settings load
when a session opens (`Agent.connect`).
"""

from typing import TYPE_CHECKING

_WHERE = {
    "Agent": "piton.api.client",
    "PitonError": "piton.api.client",
    "query": "piton.api.client",
    "AssistantMessage": "piton.api.messages",
    "ResultMessage": "piton.api.messages",
    "RunMessage": "piton.api.messages",
    "StreamEvent": "piton.api.messages",
    "SystemMessage": "piton.api.messages",
    "UserMessage": "piton.api.messages",
    "AgentOptions": "piton.api.options",
    "Allow": "piton.api.options",
    "CanUseTool": "piton.api.options",
    "Deny": "piton.api.options",
    "HookCallback": "piton.api.options",
    "HookMatcher": "piton.api.options",
    "ToolPermissionContext": "piton.api.options",
    "FunctionTool": "piton.api.tools",
    "tool": "piton.api.tools",
    "SessionStorage": "piton.core.conversation.storage",
    "SqliteSessionStorage": "piton.core.conversation.storage",
    "StoredSession": "piton.core.conversation.storage",
    "Telemetry": "piton.telemetry",
}
__all__ = [
    "Agent",
    "AgentOptions",
    "Allow",
    "AssistantMessage",
    "CanUseTool",
    "Deny",
    "FunctionTool",
    "HookCallback",
    "HookMatcher",
    "PitonError",
    "ResultMessage",
    "RunMessage",
    "SessionStorage",
    "SqliteSessionStorage",
    "StoredSession",
    "StreamEvent",
    "SystemMessage",
    "Telemetry",
    "ToolPermissionContext",
    "UserMessage",
    "query",
    "tool",
]

if TYPE_CHECKING:
    from piton.api.client import Agent as Agent
    from piton.api.client import PitonError as PitonError
    from piton.api.client import query as query
    from piton.api.messages import AssistantMessage as AssistantMessage
    from piton.api.messages import ResultMessage as ResultMessage
    from piton.api.messages import RunMessage as RunMessage
    from piton.api.messages import StreamEvent as StreamEvent
    from piton.api.messages import SystemMessage as SystemMessage
    from piton.api.messages import UserMessage as UserMessage
    from piton.api.options import AgentOptions as AgentOptions
    from piton.api.options import Allow as Allow
    from piton.api.options import CanUseTool as CanUseTool
    from piton.api.options import Deny as Deny
    from piton.api.options import HookCallback as HookCallback
    from piton.api.options import HookMatcher as HookMatcher
    from piton.api.options import ToolPermissionContext as ToolPermissionContext
    from piton.api.tools import FunctionTool as FunctionTool
    from piton.api.tools import tool as tool
    from piton.core.conversation.storage import SessionStorage as SessionStorage
    from piton.core.conversation.storage import SqliteSessionStorage as SqliteSessionStorage
    from piton.core.conversation.storage import StoredSession as StoredSession
    from piton.telemetry import Telemetry as Telemetry


def __getattr__(name: str) -> object:
    import importlib

    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'piton.api' has no attribute {name!r}")
