"""Permission questions and PreToolUse hooks answered by the client that drives Piton over the
control protocol (the Claude Agent SDK's `can_use_tool` and `hook_callback` requests)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from piton.core.conversation.messages import TextBlock, ToolUseBlock
from piton.core.records import record
from piton.core.safety.permissions import (
    PERMISSION_MODES,
    Decision,
    PermissionGate,
    PermissionRequest,
    PreToolHook,
    Rule,
)
from piton.core.tools import ToolResult

if TYPE_CHECKING:
    from piton.core.mode_names import PermissionMode

# sends one control request and waits for the client's answer (raises when it answers with an error)
Ask = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def suggestions(request: PermissionRequest) -> list[dict[str, Any]]:
    """The rules a person would add, in the SDK's PermissionUpdate shape (for a plan: the mode the
    work goes on in)."""
    if request.tool.kind == "plan":
        return [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    if request.tool.kind == "question":
        return []  # an answer, not a rule to add
    entries: list[dict[str, Any]] = []
    for text in request.session_rules:
        try:
            rule = Rule.parse(text)
        except ValueError:
            continue
        entry: dict[str, Any] = {"toolName": rule.tool}
        if rule.specifier is not None:
            entry["ruleContent"] = rule.specifier
        entries.append(entry)
    if not entries:
        return []
    return [{"type": "addRules", "rules": entries, "behavior": "allow", "destination": "session"}]


def _new_mode(updates: Any) -> PermissionMode | None:
    """The mode a client's `setMode` update moves the session to, if any."""
    for update in updates if isinstance(updates, list) else []:
        if (
            isinstance(update, dict)
            and update.get("type") == "setMode"
            and update.get("mode") in PERMISSION_MODES
        ):
            return update["mode"]  # type: ignore[no-any-return]
    return None


def _session_rules(updates: Any) -> list[str]:
    """Allow rules the client granted for the rest of the session (other updates are not kept)."""
    rules: list[str] = []
    for update in updates if isinstance(updates, list) else []:
        if (
            not isinstance(update, dict)
            or update.get("type") != "addRules"
            or update.get("behavior") != "allow"
        ):
            continue
        for rule in update.get("rules") or []:
            if isinstance(rule, dict) and isinstance(rule.get("toolName"), str):
                content = rule.get("ruleContent")
                rules.append(f"{rule['toolName']}({content})" if content else rule["toolName"])
    return rules


@record
class ClientApprover:
    """Asks the client (`--permission-prompt-tool stdio`) whenever the rules say ask."""

    ask: Ask
    gate: PermissionGate | None = None  # where rules granted for the session go

    async def __call__(self, request: PermissionRequest) -> Decision:
        try:
            answer = await self.ask(
                {
                    "subtype": "can_use_tool",
                    "tool_name": request.tool.name,
                    "input": request.input,
                    "permission_suggestions": suggestions(request),
                    "tool_use_id": request.tool_use_id,
                    "decision_reason": request.reason,
                }
            )
        except Exception as e:  # a client that cannot answer has not said yes
            return Decision("deny", f"the client could not answer the permission question: {e}")
        if answer.get("behavior") == "allow":
            if self.gate is not None:
                for rule in _session_rules(answer.get("updatedPermissions")):
                    try:
                        self.gate.allow_for_session(rule)
                    except ValueError:
                        continue
            edited = answer.get("updatedInput")
            return Decision(
                "allow",
                "the client allowed it",
                updated_input=edited if isinstance(edited, dict) else None,
                mode=_new_mode(answer.get("updatedPermissions")),
            )
        message = answer.get("message") or "the client denied it"
        return Decision("deny", str(message))


def matches(matcher: Any, tool_name: str) -> bool:
    """Claude Code's matchers: none, empty or `*` match every tool; else a tool name, `A|B`, or a regex."""
    if matcher in (None, "", "*"):
        return True
    if not isinstance(matcher, str):
        return False
    try:
        return re.fullmatch(matcher, tool_name) is not None
    except re.error:
        return matcher == tool_name


def edited_input(output: dict[str, Any]) -> dict[str, Any] | None:
    """The input a PreToolUse hook gives the call instead (`hookSpecificOutput.updatedInput`)."""
    specific = output.get("hookSpecificOutput")
    edited = specific.get("updatedInput") if isinstance(specific, dict) else None
    return edited if isinstance(edited, dict) else None


def hook_verdict(output: dict[str, Any]) -> tuple[str | None, str]:
    """`("deny" | "allow" | None, reason)` from a hook's answer, in either of Claude Code's forms."""
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("permissionDecision") in ("deny", "allow", "ask"):
        decision = specific["permissionDecision"]
        reason = specific.get("permissionDecisionReason") or output.get("reason") or ""
        return (None if decision == "ask" else decision), str(reason)
    if output.get("decision") == "block" or output.get("continue") is False:
        return "deny", str(output.get("reason") or output.get("stopReason") or "")
    if output.get("decision") == "approve":
        return "allow", str(output.get("reason") or "")
    return None, ""


@record
class ClientPreToolHooks:
    """The client's PreToolUse hooks, as the gate's `pre_tool` (so subagents' gates, forked from
    the session's, ask them too): asked first, then the settings' hooks (`then`). Deny beats ask
    beats allow across both; a hook that allows spares the question, never a deny rule."""

    hooks: list[dict[str, Any]]  # matchers: {"matcher", "hookCallbackIds"}
    ask: Ask | None = None
    session_id: str = ""
    cwd: str = ""
    mode: Callable[[], str] = lambda: "default"
    then: PreToolHook | None = None

    async def __call__(
        self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str
    ) -> tuple[str | None, str, dict[str, Any] | None]:
        verdict, reason, edited = await self._pre_tool_use(tool_name, tool_use_id, tool_input)
        if verdict == "deny" or self.then is None:
            return verdict, reason, edited
        after, why, edited_after = await self.then(tool_name, edited or tool_input, tool_use_id)
        edited = edited_after or edited
        if after in ("deny", "ask") or verdict is None:
            return after, why, edited
        return verdict, reason, edited

    async def _pre_tool_use(
        self, tool_name: str, tool_use_id: str, tool_input: dict[str, Any]
    ) -> tuple[str | None, str, dict[str, Any] | None]:
        """The hooks' verdict, why, and the input the last of them to edit it gave."""
        if self.ask is None:
            return None, "", None
        allowed: tuple[str | None, str] = (None, "")
        edited: dict[str, Any] | None = None
        for matcher in self.hooks:
            if not matches(matcher.get("matcher"), tool_name):
                continue
            for callback_id in matcher.get("hookCallbackIds") or []:
                hook_input = {
                    "hook_event_name": "PreToolUse",
                    "session_id": self.session_id,
                    "transcript_path": "",
                    "cwd": self.cwd,
                    "permission_mode": self.mode(),
                    "tool_name": tool_name,
                    "tool_input": tool_input,
                    "tool_use_id": tool_use_id,
                }
                try:
                    output = await self.ask(
                        {
                            "subtype": "hook_callback",
                            "callback_id": callback_id,
                            "input": hook_input,
                            "tool_use_id": tool_use_id,
                        }
                    )
                except Exception as e:  # onFailure "block" (or an unknown value): a failed guard refuses
                    if matcher.get("onFailure", "continue") == "continue":
                        continue
                    return "deny", f"the hook failed: {e}", None
                verdict = hook_verdict(output)
                if verdict[0] == "deny":
                    return (*verdict, None)
                if verdict[0] == "allow":
                    allowed = verdict
                edited = edited_input(output) or edited
        return (*allowed, edited)


@record
class PostToolHooks:
    """The client's PostToolUse hooks, asked after each call of the main agent with its result. A
    hook that blocks (`decision: "block"`) or adds context (`additionalContext`) has its words
    added to the result the model sees; the call itself has already run."""

    hooks: list[dict[str, Any]]
    ask: Ask
    session_id: str = ""
    cwd: str = ""
    mode: Callable[[], str] = lambda: "default"

    async def __call__(self, use: ToolUseBlock, result: ToolResult) -> ToolResult:
        notes: list[str] = []
        for matcher in self.hooks:
            if not matches(matcher.get("matcher"), use.name):
                continue
            for callback_id in matcher.get("hookCallbackIds") or []:
                hook_input = {
                    "hook_event_name": "PostToolUse",
                    "session_id": self.session_id,
                    "transcript_path": "",
                    "cwd": self.cwd,
                    "permission_mode": self.mode(),
                    "tool_name": use.name,
                    "tool_input": use.input,
                    "tool_response": _response(result),
                    "tool_use_id": use.id,
                }
                request = {"subtype": "hook_callback", "callback_id": callback_id, "input": hook_input}
                try:
                    output = await self.ask({**request, "tool_use_id": use.id})
                except Exception:  # the call has run: a hook that fails changes nothing
                    continue
                notes += _post_notes(output)
        return result.with_note("\n".join(notes)) if notes else result


def _response(result: ToolResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return "\n".join(b.text for b in result.content if isinstance(b, TextBlock))


def _post_notes(output: dict[str, Any]) -> list[str]:
    """What a PostToolUse hook's answer tells the model: why it objects, and context it adds."""
    notes = []
    if output.get("decision") == "block":
        notes.append(
            f"PostToolUse hook feedback: {output.get('reason') or 'the hook objected to this result'}"
        )
    specific = output.get("hookSpecificOutput")
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    if isinstance(context, str) and context.strip():
        notes.append(context.strip())
    return notes
