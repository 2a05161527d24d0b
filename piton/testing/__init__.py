"""Test doubles for code built on Piton: a provider that replays scripted replies, offline.

    from piton.testing import ScriptedProvider, ToolCall, reply

    provider = ScriptedProvider(reply(ToolCall("Read", {"file_path": "a.py"})), reply("It is empty."))
    ...  # run an agent with it
    provider.assert_complete()

A scripted reply becomes the same stream events the Messages API sends, folded by the same code
the Anthropic provider uses, so what passes here behaves the same against the real API.
"""

from piton.testing.script import (
    DropStream,
    MidStreamError,
    RedactedThinking,
    Reply,
    Text,
    Thinking,
    ToolCall,
    reply,
    sse_events,
)
from piton.testing.scripted import ScriptedProvider, SeenRequest

__all__ = [
    "DropStream",
    "MidStreamError",
    "RedactedThinking",
    "Reply",
    "ScriptedProvider",
    "SeenRequest",
    "Text",
    "Thinking",
    "ToolCall",
    "reply",
    "sse_events",
]
