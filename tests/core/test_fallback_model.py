"""`--fallback-model`: the agent goes on with the fallback once the main model stays overloaded,
for the rest of the session, and only for an overload."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from piton.core.agent import Agent
from piton.core.agent_parts import AgentConfig
from piton.core.conversation.events import MessageDone, Notice, Result
from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.usage import Usage
from piton.core.providers import ModelRequest, ProviderError
from piton.core.tools import ToolRegistry
from tests.helpers import collect


class Busy:
    """A provider whose main model is overloaded (or failing with `status`) and whose other answers."""

    def __init__(self, status: int = 529) -> None:
        self.models: list[str] = []
        self.status = status

    def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def stream(self, request: ModelRequest) -> AsyncIterator[object]:
        self.models.append(request.model)
        if request.model == "claude-opus-4-5":
            raise ProviderError("The API stayed overloaded", kind="overloaded", status=self.status)
        message = Message(role="assistant", content=[TextBlock(text=f"{request.model} here")])
        yield MessageDone(message, Usage(10, 5), "end_turn", request.model, "msg_1")


def agent(provider: Busy, tmp_path: Path) -> Agent:
    config = AgentConfig(
        model="claude-opus-4-5",
        system_prompt="",
        cwd=tmp_path,
        session_id="s",
        fallback_model="claude-haiku-4-5",
    )
    return Agent(provider, ToolRegistry([]), config)  # type: ignore[arg-type]


def test_the_fallback_serves_the_rest_of_the_session(tmp_path: Path) -> None:
    provider = Busy()
    a = agent(provider, tmp_path)
    first = collect(a.run("hi"))
    assert any(isinstance(e, Notice) and "fallback model claude-haiku-4-5" in e.text for e in first)
    assert next(e for e in first if isinstance(e, Result)).result == "claude-haiku-4-5 here"
    collect(a.run("again"))
    assert provider.models == ["claude-opus-4-5", "claude-haiku-4-5", "claude-haiku-4-5"]


@pytest.mark.parametrize("status", [500, 503])
def test_other_server_errors_do_not_switch_models(tmp_path: Path, status: int) -> None:
    provider = Busy(status)
    events = collect(agent(provider, tmp_path).run("hi"))
    result = next(e for e in events if isinstance(e, Result))
    assert result.is_error and provider.models == ["claude-opus-4-5"]
