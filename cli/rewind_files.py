"""`piton --resume ID --rewind-files CHECKPOINT` (Claude Code's flag) and `--rewind-to CHECKPOINT`:
a script's rewind, without a prompt. The first restores the files the tools changed from that turn
on; the second also takes the conversation back to before it, so the next `--resume` goes on from
there. A file changed outside Piton since is left alone and named; the exit status is then 1."""

from __future__ import annotations

import sys
from typing import TextIO

from piton.core.options import RunOptions


def run_rewind(
    options: RunOptions, checkpoint_id: str, *, conversation: bool, out: TextIO | None = None
) -> int:
    from piton.core.conversation.session import SessionError
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.rewind import RewindError, rewind
    from piton.runtime import SetupError, build_runtime

    out = out or sys.stdout
    try:  # the provider is never asked anything: the session, its settings and its policy are
        runtime = build_runtime(options, AnthropicProvider())
    except (SessionError, SetupError) as e:
        sys.stderr.write(f"piton: {e}\n")
        return 1
    try:
        done = rewind(runtime.agent, checkpoint_id, code=True, conversation=conversation)
    except RewindError as e:
        sys.stderr.write(f"piton: {e}\n")
        return 1
    finally:
        runtime.close()
        runtime.log.close()
    for path in done.restored:
        out.write(f"restored {path}\n")
    for problem in done.problems:
        sys.stderr.write(f"piton: {problem}\n")
    if conversation:
        out.write(f"the conversation of session {runtime.log.session_id} is back to before that message\n")
    return 1 if done.problems else 0
