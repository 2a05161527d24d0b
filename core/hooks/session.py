"""A session's hooks: what each of Claude Code's events sends its commands, and what their answers
do to the run.

Exit code 0 is success (stdout may be a JSON answer; for UserPromptSubmit and SessionStart plain
stdout is context for the model); exit code 2 blocks, with stderr going to the model (a tool
call, stopping) or to the user (a prompt); any other code is an error shown to the user, and the
run goes on. A JSON answer may say `continue: false` (the run stops, `stopReason` shown),
`decision: "block"` with a `reason`, `systemMessage` (shown to the user), and in
`hookSpecificOutput` a `permissionDecision` (allow, deny, ask) with its reason, an
`updatedInput`, or `additionalContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Protocol

from piton.core.conversation.events import AgentEvent, HookResponse, Notice
from piton.core.conversation.messages import TextBlock, ToolUseBlock
from piton.core.hooks.config import HookCommand
from piton.core.hooks.run import HookRun, run_hooks
from piton.core.records import record
from piton.core.safety.programs import Programs
from piton.core.safety.sandbox import Launch
from piton.core.tools import ToolResult, current_call


class HookCallbacks(Protocol):
    """Hooks a client registered (the Agent SDK's callbacks), asked beside the settings' commands
    and answering as they do."""

    def has(self, event: str) -> bool: ...

    async def run(self, event: str, match: str | None, payload: dict[str, Any]) -> list[HookRun]: ...


@record(frozen=True)
class PromptVerdict:
    blocked: str | None = None  # why the prompt is not sent (shown to the user)
    context: tuple[str, ...] = ()  # text for the model, sent with the prompt


@record
class Hooks:
    """The hooks one session runs, and where their output goes: events the agent yields (or the
    running tool call reports), and a stop the run honours at its next step."""

    commands: Sequence[HookCommand]
    cwd: Path
    env: Mapping[str, str]  # what hooks inherit: Piton's environment
    programs: Programs  # how each starts: sandboxed, unless the user's settings opt it out
    listed: Mapping[str, str] = field(default_factory=dict)  # the settings' `env`, given as written
    session_id: str = ""
    transcript_path: str = ""
    mode: Callable[[], str] = lambda: "default"
    pending: list[AgentEvent] = field(default_factory=list)
    halt: str | None = None  # a hook said `continue: false`: the run ends, saying this
    callbacks: HookCallbacks | None = None  # a client's, set when it initializes

    def has(self, event: str) -> bool:
        return any(h.event == event for h in self.commands) or (
            self.callbacks is not None and self.callbacks.has(event)
        )

    def drain(self) -> list[AgentEvent]:
        """What the hooks reported outside a tool call, for the agent (or the CLI) to yield."""
        events, self.pending = self.pending, []
        return events

    def take_halt(self) -> str | None:
        reason, self.halt = self.halt, None
        return reason

    async def fire(self, event: str, match: str | None, fields: dict[str, Any]) -> list[HookRun]:
        """Run the hooks of `event` that match `match` with Claude Code's input, and report them."""
        chosen = [h for h in self.commands if h.event == event and h.matches(match)]
        callbacks = self.callbacks if self.callbacks is not None and self.callbacks.has(event) else None
        if not chosen and callbacks is None:
            return []
        payload = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self.cwd),
            "permission_mode": self.mode(),
            "hook_event_name": event,
            **fields,
        }
        listed = {**self.listed, "CLAUDE_PROJECT_DIR": str(self.cwd)}

        def start(hook: HookCommand) -> Launch | str:
            return self.programs.launch(
                "hook", hook.command, self.cwd, self.env, listed, opted_out=not hook.sandboxed
            )

        if any(h.sandboxed for h in chosen):
            async with self.programs.guarded() as notes:
                runs = await run_hooks(chosen, payload, self.cwd, start)
        else:
            runs, notes = await run_hooks(chosen, payload, self.cwd, start) if chosen else [], []
        if callbacks is not None:
            runs += await callbacks.run(event, match, payload)
        for run in runs:
            self._report(run, fields.get("tool_use_id"))
        self._emit([Notice(f"{event} hooks: {note}") for note in notes])
        return runs

    def _report(self, run: HookRun, tool_use_id: str | None) -> None:
        output = run.output or {}
        events: list[AgentEvent] = [
            HookResponse(
                run.hook.event,
                run.hook.command,
                run.exit_code,
                "" if output.get("suppressOutput") is True else run.stdout,
                run.stderr,
                run.outcome,
                tool_use_id,
            )
        ]
        if (failure := run.failure()) is not None:
            events.append(Notice(failure))
        if isinstance(message := output.get("systemMessage"), str) and message.strip():
            events.append(Notice(message.strip()))
        if output.get("continue") is False:
            self.halt = str(output.get("stopReason") or f"a {run.hook.event} hook stopped the run")
        self._emit(events)

    def _emit(self, events: list[AgentEvent]) -> None:
        scope = current_call.get()
        for event in events:
            if scope is not None:
                scope.emit(event)
            else:
                self.pending.append(event)

    # -- the events --------------------------------------------------------------------------------
    async def pre_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str
    ) -> tuple[str | None, str, dict[str, Any] | None]:
        """The `PreToolHook` of the permission gate: deny beats ask beats allow among the hooks."""
        runs = await self.fire(
            "PreToolUse",
            tool_name,
            {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": tool_use_id},
        )
        verdicts: list[tuple[str, str]] = []
        edited: dict[str, Any] | None = None
        for run in runs:
            if run.blocks:
                verdicts.append(("deny", run.stderr.strip()))
                continue
            output = run.output or {}
            if output.get("continue") is False:
                verdicts.append(("deny", str(output.get("stopReason") or "a hook stopped the run")))
            specific = output.get("hookSpecificOutput")
            specific = specific if isinstance(specific, dict) else {}
            decision = specific.get("permissionDecision") or {"approve": "allow", "block": "deny"}.get(
                str(output.get("decision"))
            )
            if decision in ("allow", "deny", "ask"):
                reason = specific.get("permissionDecisionReason") or output.get("reason") or ""
                verdicts.append((decision, str(reason)))
            if isinstance(specific.get("updatedInput"), dict):
                edited = specific["updatedInput"]
        for wanted in ("deny", "ask", "allow"):
            reasons = [r for v, r in verdicts if v == wanted]
            if reasons:
                return wanted, "; ".join(r for r in reasons if r), edited
        return None, "", edited

    async def post_tool_use(self, use: ToolUseBlock, result: ToolResult) -> ToolResult:
        """The `AfterTool` of the agent: what the hooks say about a result is added to it."""
        response = result.content if isinstance(result.content, str) else _text(result)
        runs = await self.fire(
            "PostToolUse",
            use.name,
            {
                "tool_name": use.name,
                "tool_input": use.input,
                "tool_response": response,
                "tool_use_id": use.id,
            },
        )
        notes: list[str] = []
        for run in runs:
            output = run.output or {}
            if run.blocks and run.stderr.strip():
                notes.append(f"PostToolUse hook feedback: {run.stderr.strip()}")
            if output.get("decision") == "block":
                notes.append(f"PostToolUse hook feedback: {output.get('reason') or 'the hook objected'}")
            notes += _context(output)
        return result.with_note("\n".join(notes)) if notes else result

    async def user_prompt(self, prompt: str) -> PromptVerdict:
        runs = await self.fire("UserPromptSubmit", None, {"prompt": prompt})
        context: list[str] = []
        for run in runs:
            output = run.output or {}
            if run.blocks:
                return PromptVerdict(blocked=run.stderr.strip() or "a UserPromptSubmit hook blocked it")
            if output.get("decision") == "block" or output.get("continue") is False:
                why = output.get("reason") or output.get("stopReason") or "a UserPromptSubmit hook blocked it"
                return PromptVerdict(blocked=str(why))
            if run.exit_code == 0 and run.output is None and run.stdout.strip():
                context.append(run.stdout.strip())
            context += _context(output)
        return PromptVerdict(context=tuple(context))

    async def stop(self, *, active: bool, subagent: bool = False, agent_id: str = "") -> str | None:
        """Why the agent must go on instead of stopping (a Stop or SubagentStop hook's block)."""
        event = "SubagentStop" if subagent else "Stop"
        fields: dict[str, Any] = {"stop_hook_active": active}
        if subagent:
            fields["agent_id"] = agent_id
        reasons: list[str] = []
        for run in await self.fire(event, None, fields):
            output = run.output or {}
            if run.blocks and run.stderr.strip():
                reasons.append(run.stderr.strip())
            elif output.get("decision") == "block" and output.get("continue") is not False:
                reasons.append(str(output.get("reason") or f"a {event} hook asked to go on"))
        return "\n".join(reasons) or None

    async def session_start(self, source: str) -> list[str]:
        """Context for the model from SessionStart hooks (`startup`, `resume`, `clear`, `compact`)."""
        context: list[str] = []
        for run in await self.fire("SessionStart", source, {"source": source}):
            if run.exit_code == 0 and run.output is None and run.stdout.strip():
                context.append(run.stdout.strip())
            context += _context(run.output or {})
        return context

    async def subagent_start(self, agent_id: str, agent_type: str) -> list[str]:
        """Context for a subagent from SubagentStart hooks (matched on its type)."""
        runs = await self.fire("SubagentStart", agent_type, {"agent_id": agent_id, "agent_type": agent_type})
        return [text for run in runs for text in _context(run.output or {})]

    async def session_end(self, reason: str) -> None:
        await self.fire("SessionEnd", reason, {"reason": reason})

    async def pre_compact(self, trigger: str, instructions: str | None) -> None:
        await self.fire(
            "PreCompact", trigger, {"trigger": trigger, "custom_instructions": instructions or ""}
        )

    async def notification(self, message: str, kind: str) -> None:
        await self.fire("Notification", kind, {"message": message, "notification_type": kind})


def _context(output: dict[str, Any]) -> list[str]:
    specific = output.get("hookSpecificOutput")
    text = specific.get("additionalContext") if isinstance(specific, dict) else None
    return [text.strip()] if isinstance(text, str) and text.strip() else []


def _text(result: ToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextBlock)) if result.content else ""
