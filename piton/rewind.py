"""Going back to a turn's checkpoint: the files the tools changed since, the conversation, or both.

One operation for `/rewind` in the REPL, `--rewind-files` on the command line and the Agent SDK's
`rewind_files` request.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from piton.core.agent import Agent
from piton.core.checkpoints import Checkpoint, Checkpoints, RestorePlan
from piton.core.conversation.messages import TextBlock
from piton.core.records import record


class RewindError(Exception):
    """A rewind that cannot be done; the message is one line for people."""


@record
class Rewound:
    restored: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files left alone, and why
    prompt: str | None = None  # the turn's prompt, when the conversation went back before it


def _typed(agent: Agent, checkpoint: Checkpoint) -> str:
    """The prompt as typed: the first text of the turn's message (a skill's body and a hook's
    context come after it), or what the checkpoint kept of it."""
    if checkpoint.position < len(agent.history):
        for block in agent.history[checkpoint.position].content:
            if isinstance(block, TextBlock):
                return block.text
    return checkpoint.prompt


def checkpoints_of(agent: Agent) -> Checkpoints:
    if agent.context.checkpoints is None:
        raise RewindError("this session keeps no checkpoints")
    return agent.context.checkpoints


def find(agent: Agent, checkpoint_id: str) -> Checkpoint:
    try:
        return checkpoints_of(agent).find(checkpoint_id)
    except KeyError:
        raise RewindError(f"no checkpoint {checkpoint_id!r} in this session") from None


def plan(agent: Agent, checkpoint_id: str) -> RestorePlan:
    find(agent, checkpoint_id)
    return checkpoints_of(agent).plan(checkpoint_id)


def rewind(
    agent: Agent, checkpoint_id: str, *, code: bool, conversation: bool, overwrite: bool = False
) -> Rewound:
    """Restore the files (`code`) and/or the conversation to where they were before the turn
    `checkpoint_id`. A file changed outside Piton since is left alone unless `overwrite`."""
    checkpoint = find(agent, checkpoint_id)
    checkpoints = checkpoints_of(agent)
    if conversation and not checkpoint.conversation:
        raise RewindError(
            "the conversation was compacted after that turn, so it cannot go back there; its code can"
        )
    done = Rewound()
    if code:
        done.restored, done.problems = checkpoints.restore(
            checkpoints.plan(checkpoint_id), overwrite=overwrite
        )
    if conversation:
        done.prompt = _typed(agent, checkpoint)
        agent.replace_history(agent.history[: checkpoint.position], trigger="rewind")
        checkpoints.forget_from(checkpoint_id)
    return done
