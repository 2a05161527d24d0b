"""The Messages API's prompt caching, simulated, for the fake server and the context benchmark.

The rules it applies are the documented ones:
- A request is a sequence of blocks in the order tools, system, messages. A cache entry is keyed by
  the hash of everything up to and including a block (the model is part of the key); `cache_control`
  itself is not part of what is hashed.
- Each block that carries `cache_control` is a breakpoint (at most 4). At each breakpoint the API
  looks for an entry at that block and then at up to ~20 blocks before it; the longest prefix found
  is read from the cache.
- A tool marked `defer_loading` is left out of the prefix; a `tool_reference` that loads it counts
  as its definition, where the reference is.
- The prefix up to each breakpoint is written, if it is at least the minimum cacheable length
  (1,024 tokens here). Tokens after the hit and up to the last breakpoint that qualifies are cache
  writes; the rest is plain input.

Token counts are the fake server's estimate (four characters a token); the proportions are what
matter.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.tool_references import definitions, expanded

LOOKBACK_BLOCKS = 20
MIN_CACHEABLE_TOKENS = 1_024
MAX_BREAKPOINTS = 4


@dataclass(frozen=True, slots=True)
class CacheUsage:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def block_tokens(block: Any) -> int:
    return max(1, len(json.dumps(block, ensure_ascii=False)) // 4)


def _blocks(body: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """Every block of the request in prefix order, each with whether it is a breakpoint. A deferred
    tool is no part of the prefix: its definition counts where a `tool_reference` loads it."""
    out: list[tuple[dict[str, Any], bool]] = []
    loaded = definitions(body)
    for tool in body.get("tools") or []:
        if not tool.get("defer_loading"):
            out.append((tool, "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append(({"type": "text", "text": system}, False))
    elif isinstance(system, list):
        out += [(b, "cache_control" in b) for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(({"role": message["role"], "type": "text", "text": content}, False))
            continue
        for index, block in enumerate(content or []):
            # the role starts each message: the same block under another role is another prefix
            keyed = {**block, "role": message["role"]} if index == 0 else block
            out.append((expanded(keyed, loaded), "cache_control" in block))
    return out


@dataclass
class PromptCache:
    min_tokens: int = MIN_CACHEABLE_TOKENS
    lookback: int = LOOKBACK_BLOCKS
    entries: set[str] = field(default_factory=set)

    def apply(self, body: dict[str, Any]) -> CacheUsage:
        """What the API would report for `body`, and the entries it writes."""
        blocks = _blocks(body)
        digest = hashlib.sha256(json.dumps([body.get("model"), body.get("thinking")]).encode())
        hashes: list[str] = []
        cumulative: list[int] = []
        total = 0
        for block, _ in blocks:
            clean = {k: v for k, v in block.items() if k != "cache_control"}
            digest.update(json.dumps(clean, sort_keys=True, ensure_ascii=False).encode())
            hashes.append(digest.copy().hexdigest())
            total += block_tokens(clean)
            cumulative.append(total)
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise ValueError(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided.")
        hit = 0
        for point in breakpoints:
            for j in range(point, max(-1, point - self.lookback - 1), -1):
                if hashes[j] in self.entries:
                    hit = max(hit, cumulative[j])
                    break
        written_to = hit
        for point in breakpoints:
            if cumulative[point] >= self.min_tokens:
                self.entries.add(hashes[point])
                written_to = max(written_to, cumulative[point])
        return CacheUsage(
            input_tokens=total - written_to,
            cache_read_input_tokens=hit,
            cache_creation_input_tokens=written_to - hit,
        )
