"""What happens around the model/tool loop of a turn, so that the loop itself stays a loop: the
prompt's message (a skill it starts, what UserPromptSubmit hooks add or refuse, the turn's
checkpoint, the notes the model must hear this turn), skills that tool calls load, the background
shells' news, and how a turn ends (the Stop hooks may send the agent back to work)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from piton.core.activation import Activation, ActiveSkills
from piton.core.agent_parts import Working
from piton.core.conversation.endings import ending_notice
from piton.core.conversation.events import AgentEvent, MessageDone, Notice
from piton.core.conversation.messages import ContentBlock, Message, TextBlock
from piton.core.models import resolve_alias
from piton.core.modes import PLAN_MODE_ENDED, PLAN_MODE_REMINDER, style_reminder
from piton.core.run_state import Stop
from piton.core.structured import MAX_MISSES, REMINDER, STRUCTURED_OUTPUT

if TYPE_CHECKING:
    from piton.core.activation_prep import ActivationPreparer
    from piton.core.hooks.session import Hooks

MAX_KEPT_GOING = 8  # Stop hooks may send the agent back to work this often in one turn


class Agent(Working, Protocol):
    """What of `piton.core.agent.Agent` the rules use (that module imports this one)."""

    hooks: Hooks | None
    prepare: ActivationPreparer | None
    agent_id: str | None


class TurnRules:
    """The choreography of one agent's turns. A subagent's turns skip what belongs to the user's
    own (prompt hooks, checkpoints, mode notes, shell news)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._skills = ActiveSkills()  # skills loaded in the current turn
        self._loaded: list[str] = []  # texts of skills loaded by the tool calls under way
        self._planning = False  # the last turn was in plan mode (the model was told so)
        self._kept_going = 0  # times Stop hooks kept this turn going

    @property
    def main(self) -> bool:
        return self.agent.agent_id is None

    def begin(self, skill: Activation | None) -> None:
        """A new turn; the skill the user started loads into it (its model and allowed tools)."""
        self._skills, self._kept_going = ActiveSkills(), 0
        if self.agent.config.output is not None:
            self.agent.config.output.begin()  # each turn owes its own answer
        if skill is not None:
            self.activate(skill)

    async def opening(
        self, prompt: str | list[ContentBlock], skill: Activation | None, turn_id: str | None
    ) -> AsyncIterator[AgentEvent]:
        """Append the turn's user message: the prompt, the skill's prepared text, what the hooks add,
        this turn's notes. Raises `Stop` when a UserPromptSubmit hook refuses the prompt."""
        agent = self.agent
        content: list[ContentBlock] = [TextBlock(text=prompt)] if isinstance(prompt, str) else list(prompt)
        if skill is not None:  # its commands may be interrupted like any call
            content.append(TextBlock(text=(await self.prepared(skill)).text))
        if agent.hooks is not None and self.main:
            verdict = await agent.hooks.user_prompt(prompt_text(content))
            for event in agent.hooks.drain():
                yield event
            if verdict.blocked is not None:
                raise Stop(
                    "error_during_execution",
                    f"A UserPromptSubmit hook blocked the prompt: {verdict.blocked}",
                    "hook_stopped",
                    errors=(verdict.blocked,),
                )
            content += [TextBlock(text=text) for text in verdict.context]
        turn_id = turn_id or str(uuid.uuid4())
        if agent.context.checkpoints is not None and self.main:
            agent.context.checkpoints.begin(turn_id, len(agent.history), prompt_text(content))
        content += self._notes()
        agent.append(Message(role="user", content=content), line_id=turn_id)

    async def closing(self, done: MessageDone) -> AsyncIterator[AgentEvent]:
        """The model answered without calls: the turn ends (raises `Stop`), unless the Stop hooks
        send the agent back to work; their feedback is then appended for the next request."""
        agent = self.agent
        notice = ending_notice(done, agent.max_output())
        if notice is not None:
            yield Notice(notice)
        if self._wants_structured_output():
            return
        go_on = await self._stop_hooks(self._kept_going > 0)
        for event in self.drained():
            yield event
        if go_on is None or self._kept_going >= MAX_KEPT_GOING:
            if go_on is not None:  # a hook that never lets go must not spend forever
                yield Notice(f"Stop hooks kept the agent going {self._kept_going} times; it stops now")
            raise Stop("success", done.message.text, done.stop_reason)
        agent.append(Message.user(f"Stop hook feedback:\n{go_on}"))
        self._kept_going += 1

    def _wants_structured_output(self) -> bool:
        """A `--json-schema` turn that ended without its answer goes back with a reminder (as
        Claude Code's does), a few times; then it ends in error."""
        output = self.agent.config.output
        if output is None or output.given or not self.main:
            return False
        output.misses += 1
        if output.failed():
            raise no_answer()
        self.agent.append(Message.user(REMINDER))
        return True

    async def answered(self) -> AsyncIterator[AgentEvent]:
        """The structured answer is in: the turn ends with it, unless the Stop hooks send the agent
        back to work, which then answers again."""
        output = self.agent.config.output
        assert output is not None
        go_on = await self._stop_hooks(self._kept_going > 0)
        for event in self.drained():
            yield event
        if go_on is None or self._kept_going >= MAX_KEPT_GOING:
            raise Stop("success", output.text(), "tool_use", structured=output.answer)
        self.agent.append(Message.user(f"Stop hook feedback:\n{go_on}"))
        self._kept_going += 1
        output.answer, output.given = None, False

    def drained(self) -> list[AgentEvent]:
        """What the hooks reported since last asked (their output, for the front end to show)."""
        return self.agent.hooks.drain() if self.agent.hooks is not None else []

    def halt(self) -> None:
        """Raise `Stop` when a hook said the session must stop (`continue: false`)."""
        hooks = self.agent.hooks
        if hooks is not None and (halt := hooks.take_halt()) is not None:
            raise Stop("success", halt, "hook_stopped")

    # -- skills ---------------------------------------------------------------------------------
    def activate(self, skill: Activation) -> str | None:
        """Load `skill` into this turn, or say why it may not load."""
        refusal = self._skills.refusal(skill.name)
        if refusal is not None:
            return refusal
        agent = self.agent
        self._skills.admit(skill.name)
        agent.metrics.skill_activations += 1
        if agent.gate is not None:
            agent.gate.allow_for_turn(skill.allowed_tools)
        if skill.model:
            agent.config.model = resolve_alias(skill.model)
        return None

    async def prepared(self, skill: Activation) -> Activation:
        """`skill` with its commands run and its files inlined, when a preparer was given."""
        agent = self.agent
        if agent.prepare is None:
            return skill
        return await agent.prepare(skill, agent.context, agent.gate)

    async def load(self, skill: Activation) -> str | None:
        """A skill a tool call loads: its text joins the call's results; or why it may not load."""
        refusal = self.activate(skill)
        if refusal is None:
            self._loaded.append((await self.prepared(skill)).text)
        return refusal

    def after_calls(self) -> list[ContentBlock]:
        """What joins a round of tool results: the skills its calls loaded, the shells' and the
        background agents' news (a subagent: the messages sent to it meanwhile)."""
        blocks: list[ContentBlock] = [TextBlock(text=text) for text in self._loaded]
        self._loaded = []
        return blocks + self._shell_news() + self._agent_news()

    def _agent_news(self) -> list[ContentBlock]:
        """For the main agent, the background agents that ended since it last heard; for a subagent,
        what SendMessage sent it while it ran. Each is told once."""
        team = self.agent.context.agents
        if self.main:
            return [TextBlock(text=text) for text in team.take_news()]
        run = team.get(self.agent.agent_id or "")
        if run is None or not run.inbox:
            return []
        sent, run.inbox = run.inbox, []
        return [TextBlock(text=f"A message from the agent that started you:\n{text}") for text in sent]

    # -- notes ----------------------------------------------------------------------------------
    def _notes(self) -> list[ContentBlock]:
        """What the model must know this turn: plan mode's rules, and once that it is over (its rules
        are still in the history); the output style it answers in; the shells still running."""
        if not self.main:
            return []
        agent = self.agent
        notes: list[ContentBlock] = []
        if agent.config.output_style:
            notes.append(TextBlock(text=style_reminder(agent.config.output_style)))
        mode = agent.gate.permissions.mode if agent.gate is not None else "bypassPermissions"
        was, self._planning = self._planning, mode == "plan"
        if self._planning:
            notes.append(TextBlock(text=PLAN_MODE_REMINDER))
        elif was:
            notes.append(TextBlock(text=PLAN_MODE_ENDED))
        return notes + self._shell_news(turn_start=True) + self._agent_news()

    def _shell_news(self, *, turn_start: bool = False) -> list[ContentBlock]:
        """What the background shells did since the model last heard (the main agent hears it: the
        shells are the session's, whoever started them)."""
        if not self.main:
            return []
        news = self.agent.context.shells.news(turn_start=turn_start)
        return [TextBlock(text=news)] if news else []

    async def _stop_hooks(self, active: bool) -> str | None:
        """Why the hooks want the agent to go on instead of stopping (None: stop)."""
        agent = self.agent
        if agent.hooks is None:
            return None
        reason = await agent.hooks.stop(active=active, subagent=not self.main, agent_id=agent.agent_id or "")
        self.halt()
        return reason


def prompt_text(content: list[ContentBlock]) -> str:
    return "\n".join(b.text for b in content if isinstance(b, TextBlock))


def no_answer() -> Stop:
    """A `--json-schema` run whose model missed the answer too often."""
    why = f"the model did not give a valid answer through {STRUCTURED_OUTPUT} in {MAX_MISSES + 1} tries"
    return Stop("error_max_structured_output_retries", f"No structured output: {why}.", errors=(why,))
