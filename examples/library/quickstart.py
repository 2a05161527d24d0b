"""One prompt, streamed: the model's text as it answers, then what the run cost.

python examples/library/quickstart.py "What does this project do?"
"""

import asyncio
import sys

from piton import AgentOptions, query
from piton.api import AssistantMessage, ResultMessage


async def main(prompt: str) -> None:
    options = AgentOptions(allowed_tools=["Read", "Grep", "Glob"], max_turns=10)
    async for message in query(prompt, options=options):
        if isinstance(message, AssistantMessage) and message.text:
            print(message.text)
        elif isinstance(message, ResultMessage):
            print(f"[{message.subtype}] ${message.total_cost_usd:.4f}, session {message.session_id}")


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "Say hello."))
