"""Stop a turn that runs too long, then go on in the same session.

python examples/library/interrupt.py
"""

import asyncio

from piton import Agent, AgentOptions
from piton.api import AssistantMessage, ResultMessage


async def main() -> None:
    async with Agent(AgentOptions(builtin_tools=[])) as agent:

        async def stop_soon() -> None:
            await asyncio.sleep(1.0)
            await agent.interrupt()

        stopper = asyncio.create_task(stop_soon())
        async for message in agent.query("Write a very long story."):
            if isinstance(message, ResultMessage):
                print(f"first turn: {message.subtype}: {message.text}")
        await stopper
        async for message in agent.query("In one line, then."):
            if isinstance(message, AssistantMessage) and message.text:
                print(f"second turn: {message.text}")


if __name__ == "__main__":
    asyncio.run(main())
