"""How full the window is: the API's count for what it has seen, estimates for what came after."""

from __future__ import annotations

import gc
import weakref

from piton.core.context.meter import ContextMeter, estimate_tokens
from piton.core.context.usage import Usage
from piton.core.conversation.messages import Message, TextBlock

SYSTEM = "You are a test agent."
TOOLS = [{"name": "Read", "description": "Read a file."}]


def test_the_reported_usage_counts_and_what_follows_is_estimated() -> None:
    meter = ContextMeter()
    history = [Message.user("hello"), Message(role="assistant", content=[TextBlock(text="hi")])]
    first = meter.used(SYSTEM, TOOLS, history)
    assert first > estimate_tokens(SYSTEM), "before any reply, everything is estimated"
    meter.observe(Usage(input_tokens=900, cache_read_input_tokens=5_000, output_tokens=100), len(history))
    assert meter.used(SYSTEM, TOOLS, history) == 6_000
    history.append(Message.user("a longer question " * 20))
    grown = meter.used(SYSTEM, TOOLS, history)
    assert 6_000 + 20 < grown < 6_000 + 200


def test_after_a_rewrite_the_old_messages_are_let_go() -> None:
    meter = ContextMeter()
    old = [Message.user(f"message {i}") for i in range(50)]
    meter.used(SYSTEM, TOOLS, old)
    meter.observe(Usage(input_tokens=80_000), len(old))
    ref = weakref.ref(old[0])
    compacted = [Message.user("summary"), *old[-2:]]
    del old
    meter.forget(compacted)
    gc.collect()
    assert ref() is None, "the estimate cache must not keep replaced messages alive"
    assert meter.used(SYSTEM, TOOLS, compacted) < 200, "estimated again until the next reply"
