"""What a loaded skill changes for its turn: the model, and which calls go without asking."""

from __future__ import annotations

import asyncio
from typing import Any

from piton.core.activation import Activation, ActiveSkills
from piton.core.safety.permissions import PermissionGate, Permissions
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Probe, make_agent


class Catalog:
    def activate(self, name: str, args: str) -> Activation:
        if name != "fast":
            raise LookupError(f"no skill {name}")
        return Activation("fast", '<skill name="fast">\nBe quick.\n</skill>', ("Shell(make:*)",), "haiku")


def test_a_skills_model_and_allowed_tools_last_for_its_turn(project: Any) -> None:
    from piton.builtin_tools.skill import Skill

    provider = ScriptedProvider(
        reply(ToolCall("Skill", {"skill": "fast"})),
        reply(ToolCall("Shell", {"text": "make test"})),
        reply("Tested."),
        reply(ToolCall("Shell", {"text": "make test"})),
        reply("Not allowed this time."),
    )
    shell = Probe("Shell")
    shell.kind = "execute"
    shell.rule_content = lambda args, ctx: args.text  # type: ignore[method-assign]
    agent = make_agent(provider, Skill(Catalog()), shell)
    agent.gate = PermissionGate(Permissions(project=project))

    async def two_turns() -> None:
        async for _ in agent.run("test it, fast"):
            pass
        async for _ in agent.run("test it again"):
            pass

    asyncio.run(two_turns())
    models = [r.model for r in provider.requests]
    assert models == [
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-haiku-5-5",
        "claude-sonnet-5-5",
        "claude-sonnet-5-5",
    ]
    assert shell.log == ["start make test", "end make test"], "allowed while the skill's turn ran, not after"
    assert [d["tool_name"] for d in agent.gate.denials] == ["Shell"]
    assert agent.gate.skill_allow == []


def test_the_chain_refuses_cycles_and_depth() -> None:
    skills = ActiveSkills()
    for name in ("a", "b", "c"):
        assert skills.refusal(name) is None
        skills.admit(name)
    assert skills.refusal("b") == (
        "The skill 'b' is already loaded in this turn (a cycle: a → b → c → b); its instructions are above."
    )
    assert skills.refusal("d") == "Skills may load at most 3 skills deep in one turn (a → b → c → d)."


def test_a_skills_allowed_tools_never_override_deny_or_ask_rules(project: Any) -> None:
    shell = Probe("Bash")
    shell.kind = "execute"
    permissions = Permissions.from_texts(
        "default", deny=["Bash(rm:*)"], ask=["Bash(git push:*)"], project=project
    )
    gate = PermissionGate(permissions)
    gate.allow_for_turn(["Bash"])

    def decide(command: str) -> str:
        return asyncio.run(gate.check(shell, command, "toolu_1", {"command": command})).behavior

    assert decide("make test") == "allow", "the skill's bare Bash waives the default question"
    assert decide("rm -rf build") == "deny"
    assert decide("git push origin main") == "deny", "an ask rule still asks (and -p cannot answer)"
    assert decide("$(cat notes) -rf build") == "deny", "a line the deny rules cannot check still asks"
