"""The least a client on Piton's libraries does for `-p hello`: asyncio, httpx2 and one pydantic
model, one streamed Messages API request, the text printed. No settings, tools, session log or
sandbox. `bench_vs_claude.py` runs it as the floor of a whole run.

    python benchmarks/bare_client.py hello     (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY set)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx2
import pydantic


class TextDelta(pydantic.BaseModel):
    """One piece of the answer, validated as a client validates what it is sent."""

    type: str
    text: str = ""


async def ask(prompt: str) -> str:
    body = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 1024,
        "stream": True,
        "messages": [{"role": "user", "content": prompt}],
    }
    headers = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
    url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
    text = []
    async with (
        httpx2.AsyncClient() as client,
        client.stream("POST", url, content=json.dumps(body), headers=headers) as r,
    ):
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event.get("type") == "content_block_delta":
                text.append(TextDelta.model_validate(event["delta"]).text)
    return "".join(text)


if __name__ == "__main__":
    print(asyncio.run(ask(" ".join(sys.argv[1:]) or "hello")))
