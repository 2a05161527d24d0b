"""A loaded skill's or command's dynamic parts, made real before its text is sent: each
``!`command` `` its author wrote runs in the session's sandbox (checked by the permission gate as
the model's Bash calls are, the skill's allowed-tools granted, then run by the command orchestrator
as they are: `bash.run_line`) with its output put in its place; each `@path` that names a file (the
skill's folder first for a skill, else the project) is inlined under the file policy;
`${CLAUDE_SESSION_ID}` becomes the session's id.

Nothing is dropped silently: a command that is refused or fails, and a file that may not be read,
leave a one-line note where they were.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

from piton.builtin_tools.bash import Bash, BashInput, run_line
from piton.builtin_tools.mentions import attachment
from piton.core.activation import SHELL, Activation
from piton.core.clip import one_line
from piton.core.conversation.messages import TextBlock
from piton.core.safety.permissions import PermissionGate
from piton.core.tools import ToolContext

_NOTE_CHARS = 200  # of a note saying why a command or a mention was left out
MAX_OUTPUT_CHARS = 30_000  # of one command's output; a skill's text is context, not a log
_MENTION = re.compile(r"(?<![\w@`/])@([^\s`'\"<>()\[\]{}]+)")
_SESSION = re.compile(r"\$\{(?:CLAUDE|PITON)_SESSION_ID\}")


async def _run(command: str, ctx: ToolContext, gate: PermissionGate | None) -> str:
    """The command's output, or the note that says why there is none."""
    bash, args = Bash(), BashInput(command=command)
    if gate is not None:
        decision = await gate.check(
            bash,
            bash.rule_content(args, ctx),
            f"skill_{uuid.uuid4().hex[:12]}",
            {"command": command},
            looks=bash.is_read_only(args, ctx),
        )
        if decision.behavior != "allow":
            return f"[!`{command}` was not run: {one_line(decision.reason, _NOTE_CHARS)}]"
    result = await run_line(command, ctx)
    output = str(result.content)
    if result.is_error:
        return f"[!`{command}` failed: {one_line(output, _NOTE_CHARS)}]"
    if len(output) > MAX_OUTPUT_CHARS:
        output = output[:MAX_OUTPUT_CHARS] + f"\n[... {len(output) - MAX_OUTPUT_CHARS:,} more characters]"
    return "" if output == "(no output)" else output


async def _run_commands(
    text: str, wanted: tuple[str, ...], ctx: ToolContext, gate: PermissionGate | None
) -> str:
    """`text` with each of the author's commands replaced by what running it gave, in order."""
    budget = Counter(wanted)
    parts: list[str] = []
    at = 0
    for match in SHELL.finditer(text):
        command = (match.group("inline") or match.group("block") or "").strip()
        if budget[command] <= 0:
            continue  # not the author's: text an argument brought, left as typed
        budget[command] -= 1
        parts += [text[at : match.start()], await _run(command, ctx, gate)]
        at = match.end()
    return "".join([*parts, text[at:]])


def _inlined(text: str, bases: list[Path], ctx: ToolContext) -> list[str]:
    """The files `text` mentions as `@path` (those that exist, looked for under each of `bases` in
    turn), each as a `<file>` block or a note."""
    out: list[str] = []
    seen: set[Path] = set()
    for mention in _MENTION.findall(text):
        mention = mention.rstrip(".,;:!?")
        candidates = [(base / mention).resolve() for base in bases]
        path = next((p for p in candidates if p.exists()), None)
        if path is None or path in seen:
            continue  # a handle, a package scope, an address: not a file
        seen.add(path)
        found = attachment(ctx, str(path))
        if isinstance(found, str):
            out.append(f"[@{mention} was not included: {one_line(found, _NOTE_CHARS)}]")
            continue
        texts = [b.text for b in found if isinstance(b, TextBlock)]
        if len(texts) != len(found):
            out.append(f"[@{mention} was not included: it is an image]")
        else:
            out += texts
    return out


async def prepare(activation: Activation, ctx: ToolContext, gate: PermissionGate | None) -> Activation:
    """`activation` ready to send (see the module's docstring)."""
    text = _SESSION.sub(lambda _: ctx.session_id, activation.text)
    # a skill's `@path` is its folder's first, then the project's; a command's, the project's
    bases = [Path(activation.base_dir), ctx.cwd] if activation.base_dir else [ctx.cwd]
    files = _inlined(text, bases, ctx)
    if activation.commands:
        text = await _run_commands(text, activation.commands, ctx, gate)
    if files:
        text = "\n\n".join([text, *files])
    return replace(activation, text=text)
