"""What the first screen says: who is answering, where, with what sandbox, and how to get help; and,
for a resumed session, the last few exchanges, so the user knows where the conversation stands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from piton import __version__
from piton.core.clip import one_line
from piton.core.conversation.messages import TextBlock
from piton.core.display import counted
from piton.core.safety.run_command import CommandRunner
from piton.core.safety.sandbox.bwrap import NO_BWRAP

if TYPE_CHECKING:
    from piton.core.conversation.messages import Message
    from piton.runtime import Runtime

RECAP_EXCHANGES = 3
_WIDTH = 100


def _home_relative(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


def welcome_lines(runtime: Runtime) -> list[tuple[str, str]]:
    agent = runtime.agent
    sandbox = agent.context.policy.mode if agent.context.policy is not None else "workspace-write"
    mode = agent.gate.permissions.mode if agent.gate is not None else "default"
    lines = [
        (f"✻ Piton {__version__} · {agent.config.model} · {_home_relative(agent.config.cwd)}", "bold"),
        (f"  sandbox {sandbox} · permission mode {mode} · /help for commands · Esc Esc rewinds", "dim"),
    ]
    why = no_commands(runtime)
    if why is not None:
        lines.append((f"  ✗ Bash cannot run here: {why}. `piton doctor` says what to do.", "yellow"))
    return lines


def no_commands(runtime: Runtime) -> str | None:
    """Why the model's commands cannot run in this session (no sandbox may start), in brief, or None:
    said on the first screen, not after the user approved a command."""
    context = runtime.agent.context
    if context.policy is None:
        return None
    reason = CommandRunner(context, context.policy).unavailable()
    if reason is None:
        return None
    brief = reason.removeprefix("the shell sandbox cannot start: ").partition("; install bubblewrap")[0]
    refused = brief.removeprefix(f"{NO_BWRAP} (")
    if refused == brief or not refused.endswith(")"):
        return brief
    why = list(dict.fromkeys(refused[:-1].split("; ")))  # each binary refused, once
    return why[0] + (f" (and {len(why) - 1} more)" if len(why) > 1 else "")


def _last(n: int) -> str:
    return "exchange" if n == 1 else f"{n} exchanges"


def recap_lines(
    history: list[Message], exchanges: int = RECAP_EXCHANGES, session_id: str = ""
) -> list[tuple[str, str]]:
    """The last `exchanges` typed prompts, each with the last text the model answered it with,
    under a line naming the session (when given) and its length."""
    turns: list[tuple[str, str]] = []
    for message in history:
        typed = message.role == "user" and not message.tool_results and message.text.strip()
        if typed:  # what was typed is the first block; reminders and hook context come after it
            first = next(b.text for b in message.content if isinstance(b, TextBlock))
            turns.append((first, ""))
        elif message.role == "assistant" and message.text.strip() and turns:
            turns[-1] = (turns[-1][0], message.text)
    if not turns:
        return []
    named = f" session {session_id}" if session_id else ""
    size = counted(len(history), "message")
    lines = [(f"── Resumed{named}: {size}; the last {_last(min(exchanges, len(turns)))}:", "dim")]
    for prompt, answer in turns[-exchanges:]:
        lines.append((f"❯ {one_line(prompt, _WIDTH)}", "cyan"))
        if answer:
            lines.append((f"  ⎿  {one_line(answer, _WIDTH)}", "dim"))
    return lines
