"""How full the window is: the API's count for what it has seen, estimates for what came after."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from piton.core.context.meter import ContextMeter, estimate_tokens
from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.usage import Usage

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


def _history(turns: int, text: str) -> list[Message]:
    history = [Message.user("start")]
    for i in range(turns):
        history.append(Message(role="assistant", content=[TextBlock(text=f"{text} {i}")]))
        history.append(Message.user(f"{text} again {i}"))
    return history


def test_near_the_limit_the_figure_is_the_exact_estimate() -> None:
    history = _history(30, "a sentence of ordinary English words, ünïcode too")
    exact = ContextMeter().used(SYSTEM, TOOLS, history)
    for limit in (exact // 2, exact, exact + 1, exact * 2):  # the byte bound reaches all of these
        assert ContextMeter().used(SYSTEM, TOOLS, history, limit=limit) == exact
    reported = ContextMeter()
    reported.observe(Usage(input_tokens=5_000), 40)
    meter = ContextMeter()
    meter.observe(Usage(input_tokens=5_000), 40)
    assert meter.used(SYSTEM, TOOLS, history, limit=5_100) == reported.used(SYSTEM, TOOLS, history)


@pytest.mark.parametrize("reported", [None, 3_000])
def test_every_comparison_with_the_limit_comes_out_as_with_the_exact_figure(reported: int | None) -> None:
    history = _history(20, "def f(x):\n    return x * 2  # code, the usual content")
    plain = ContextMeter()
    if reported is not None:
        plain.observe(Usage(input_tokens=reported), 9)
    exact = plain.used(SYSTEM, TOOLS, history)
    for limit in range(max(1, exact - 600), exact + 4_000, 37):
        meter = ContextMeter()
        if reported is not None:
            meter.observe(Usage(input_tokens=reported), 9)
        assert (meter.used(SYSTEM, TOOLS, history, limit=limit) < limit) == (exact < limit), limit


def test_far_below_the_limit_the_tokenizer_is_never_loaded() -> None:
    probe = """
import sys
from piton.core.context.meter import ContextMeter
from piton.core.conversation.usage import Usage
from piton.core.conversation.messages import Message, TextBlock
history = [Message.user("hello"), Message(role="assistant", content=[TextBlock(text="hi " * 500)])]
meter = ContextMeter()
before = meter.used("You are a test agent." * 200, [{"name": "Read"}], history, limit=160_000)
meter.observe(Usage(input_tokens=2_000, output_tokens=50), len(history))
history.append(Message.user("more " * 300))
after = meter.used("You are a test agent." * 200, [{"name": "Read"}], history, limit=160_000)
assert 0 < before < 160_000 and 2_050 < after < 160_000, (before, after)
print("tiktoken" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
