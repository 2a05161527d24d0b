"""A Python function as a tool the model calls beside the built-ins.

python examples/library/custom_tool.py
"""

import asyncio
from pathlib import Path

from piton import AgentOptions, query, tool
from piton.api import ResultMessage, UserMessage


@tool(read_only=True)
def word_count(path: str) -> dict[str, int]:
    """Count the lines and words of a text file of the project."""
    text = Path(path).read_text(encoding="utf-8")
    return {"lines": len(text.splitlines()), "words": len(text.split())}


async def main() -> None:
    options = AgentOptions(tools=[word_count], builtin_tools=["Read"], max_turns=5)
    async for message in query("How many words are in README.md?", options=options):
        if isinstance(message, UserMessage) and message.tool_use_result:
            print(f"tool: {message.tool_use_result}")
        elif isinstance(message, ResultMessage):
            print(f"answer: {message.text}")


if __name__ == "__main__":
    asyncio.run(main())
