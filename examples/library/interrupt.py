"""Stop a turn that runs too long, then go on in the same session.

python examples/library/interrupt.py
"""

import asyncio

from piton import Agent, AgentOptions
from piton.api import AssistantMessage, ResultMessage, StreamEvent


async def main() -> None:
    async with Agent(AgentOptions(builtin_tools=[], include_partial_messages=True)) as agent:
        stopper: asyncio.Task[None] | None = None
        async for message in agent.query("Write a very long story."):
            if isinstance(message, StreamEvent) and stopper is None:  # the story has begun
                stopper = asyncio.create_task(stop_later(agent))
            elif isinstance(message, ResultMessage):
                print(f"first turn: {message.subtype}: {message.text}")
        if stopper is not None:
            stopper.cancel()  # a story that ended on its own needs no stopping
        async for message in agent.query("In one line, then."):
            if isinstance(message, AssistantMessage) and message.text:
                print(f"second turn: {message.text}")


async def stop_later(agent: Agent) -> None:
    await asyncio.sleep(1.0)  # enough of the story
    await agent.interrupt()


if __name__ == "__main__":
    asyncio.run(main())
