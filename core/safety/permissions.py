"""The permission gate: each tool call checked before it runs, the approver asked when the rules say
ask (a person in the terminal, a client, or nobody in a `-p` run), PreToolUse hooks heard first, and
the calls that were refused kept for the result.

What the rules say about a call is `rules.py`'s; its names are also importable from here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from piton.core.mode_names import PERMISSION_MODES as PERMISSION_MODES
from piton.core.records import record
from piton.core.safety.rules import Behavior as Behavior
from piton.core.safety.rules import Decision as Decision
from piton.core.safety.rules import GovernedTool as GovernedTool
from piton.core.safety.rules import Permissions as Permissions
from piton.core.safety.rules import Rule as Rule
from piton.core.safety.suggest import suggest_rule as suggest_rule
from piton.core.safety.suggest import suggest_rules as suggest_rules

if TYPE_CHECKING:  # a name for type checkers only (see piton.core.mode_names)
    from piton.core.mode_names import PermissionMode as PermissionMode


@record(frozen=True)
class PermissionRequest:
    tool: GovernedTool
    tool_use_id: str
    input: dict[str, Any]
    content: str | None
    reason: str
    suggestion: str  # the rules below, as one line
    preview: str | None = None  # what the call would change (a diff), when the tool can tell
    rules: tuple[str, ...] = ()  # what allowing it for the session adds

    @property
    def session_rules(self) -> tuple[str, ...]:
        return self.rules or (self.suggestion,)


class Approver(Protocol):
    """Answers "ask" decisions: the terminal UI asks a person; headless runs cannot."""

    async def __call__(self, request: PermissionRequest) -> Decision: ...


class PreToolHook(Protocol):
    """Commands the user set to run before a tool call (Claude Code's PreToolUse hooks): a verdict
    ("allow", "deny", "ask" or None for no opinion), why, and an input to run instead."""

    async def __call__(
        self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str
    ) -> tuple[str | None, str, dict[str, Any] | None]: ...


NO_ONE_TO_ASK = (
    "no user is present to answer questions in a non-interactive run: decide yourself, and say in your "
    "answer which assumptions you made"
)


class DenyAll:
    """The approver of `-p` runs: nobody is there to answer, so asking means no."""

    async def __call__(self, request: PermissionRequest) -> Decision:
        if request.tool.kind == "plan":
            return Decision(
                "deny",
                "nobody can approve a plan in a non-interactive run: stay in plan mode and give the "
                "plan as your final answer",
            )
        if request.tool.kind == "question":
            return Decision("deny", NO_ONE_TO_ASK)
        return Decision(
            "deny",
            f"{request.reason}, and nobody can approve it in a non-interactive run. To allow it, run with "
            f'--allowedTools "{request.suggestion}" or a --permission-mode that permits it',
        )


@record
class PermissionGate:
    """Checks each tool call before it runs, asking the approver when the rules say ask, and keeps
    the calls that were refused (the JSON result reports them)."""

    permissions: Permissions
    approver: Approver = field(default_factory=DenyAll)
    denials: list[dict[str, Any]] = field(default_factory=list)
    skill_allow: list[Rule] = field(default_factory=list)  # allowed-tools of the skills of this turn
    pre_tool: PreToolHook | None = None  # the settings' PreToolUse hooks, asked before the rules

    def fork(self) -> PermissionGate:
        """The gate of a subagent: the same rules, approver, hooks and list of refusals, and grants
        of its own (a skill it loads grants nothing to the agent that started it)."""
        return PermissionGate(self.permissions, self.approver, self.denials, pre_tool=self.pre_tool)

    async def check(
        self,
        tool: GovernedTool,
        content: str | None,
        tool_use_id: str,
        tool_input: dict[str, Any],
        preview: Callable[[], str | None] | None = None,
        looks: bool = False,
    ) -> Decision:
        edited: dict[str, Any] | None = None
        forced_ask: str | None = None
        if tool.kind == "question":
            return await self._question(tool, tool_use_id, tool_input)
        if self.pre_tool is not None:
            verdict, why, edited = await self.pre_tool(tool.name, tool_input, tool_use_id)
            if verdict == "deny":
                self.denials.append(
                    {"tool_name": tool.name, "tool_use_id": tool_use_id, "tool_input": tool_input}
                )
                return Decision(
                    "deny", f"a PreToolUse hook blocked it: {why}" if why else "a hook blocked it"
                )
            if verdict == "allow" and self.permissions.decide(tool, content, looks=looks).behavior != "deny":
                return self._allowed(
                    tool, Decision("allow", "a PreToolUse hook allowed it", updated_input=edited)
                )
            if verdict == "ask":
                forced_ask = f"a PreToolUse hook asks first: {why}" if why else "a PreToolUse hook asks first"
        decision = self._decide(tool, content, looks, forced_ask)
        if decision.behavior == "ask":
            shown = None
            if preview is not None:
                with contextlib.suppress(Exception):  # a preview is a courtesy: it must not stop the question
                    shown = preview()
            rules = suggest_rules(tool, content)
            request = PermissionRequest(
                tool,
                tool_use_id,
                edited or tool_input,
                content,
                decision.reason,
                ", ".join(rules),
                shown,
                tuple(rules),
            )
            decision = await self.approver(request)
        if decision.behavior != "allow":
            self.denials.append(
                {"tool_name": tool.name, "tool_use_id": tool_use_id, "tool_input": tool_input}
            )
            return decision
        if edited is not None and decision.updated_input is None:
            decision = dataclasses.replace(decision, updated_input=edited)
        return self._allowed(tool, decision)

    async def _question(self, tool: GovernedTool, tool_use_id: str, tool_input: dict[str, Any]) -> Decision:
        """A question only the user answers: no rule, mode or hook stands in for them, and answers
        the model wrote into its own call are dropped before the question is put."""
        asked = {k: v for k, v in tool_input.items() if k != "answers"}
        decision = self.permissions.decide(tool, None)
        if decision.behavior == "ask":
            decision = await self.approver(
                PermissionRequest(tool, tool_use_id, asked, None, decision.reason, "", None, ())
            )
        if decision.behavior == "allow" and not (decision.updated_input or {}).get("answers"):
            decision = Decision("deny", "the question was allowed but not answered: the user gave no answers")
        if decision.behavior != "allow":
            self.denials.append({"tool_name": tool.name, "tool_use_id": tool_use_id, "tool_input": asked})
        return decision

    def _allowed(self, tool: GovernedTool, decision: Decision) -> Decision:
        """An allowed call that moves the session to another mode: an approved plan ends plan mode
        (in the mode the user chose, else the default)."""
        if decision.mode is not None and self.permissions.allows_mode(decision.mode):
            self.permissions.mode = decision.mode  # a mode the settings forbid is not taken up
        elif tool.kind == "plan" and self.permissions.mode == "plan":
            self.permissions.mode = "default"
        return decision

    def _decide(
        self, tool: GovernedTool, content: str | None, looks: bool, forced_ask: str | None
    ) -> Decision:
        """The rules' decision, a skill's allowed-tools waiving the default question, and a hook's
        wish to ask (which a deny rule still beats)."""
        decision = self.permissions.decide(tool, content, looks=looks)
        if forced_ask is not None and decision.behavior == "allow":
            return Decision("ask", forced_ask)
        if decision.default and self.skill_allow:
            # a skill's allowed-tools waive the default question, never a deny or an ask rule
            granted = Permissions(
                "default", self.skill_allow, project=self.permissions.project, home=self.permissions.home
            ).decide(tool, content, looks=looks)
            if granted.behavior == "allow" and granted.rule is not None:
                decision = Decision(
                    "allow", f"the skill's allowed-tools ({granted.rule}) allow it", granted.rule
                )
        return decision

    def allow_for_session(self, rule: str) -> None:
        self.permissions.allow.append(Rule.parse(rule))

    def allow_for_turn(self, rules: Iterable[str]) -> None:
        """Rules a skill grants while the current turn runs (malformed ones grant nothing)."""
        for text in rules:
            with contextlib.suppress(ValueError):
                self.skill_allow.append(Rule.parse(text))
