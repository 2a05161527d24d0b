"""Every question the terminal would ask, asked through the editor (`session/request_permission`):
a call the rules leave open (allow once, allow for the session with the suggested rule, reject), a
plan to approve (and the mode the work goes on in), and the model's own AskUserQuestion, one
question at a time. The answers feed the same rules as the terminal's; nothing else changes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import schema

from piton.acp.updates import kind_of, locations_of, title_of
from piton.core.records import record
from piton.core.safety.rules import Decision

if TYPE_CHECKING:
    from acp.interfaces import Client

    from piton.core.mode_names import PermissionMode
    from piton.core.safety.permissions import PermissionGate, PermissionRequest

ALLOW, ALWAYS, REJECT = "allow", "allow_always", "reject"
PLAN_EDITS, PLAN_ASK = "plan_accept_edits", "plan_default"


@record
class EditorApprover:
    client: Client
    session_id: str
    cwd: Path
    gate: PermissionGate | None = None  # where the rules granted for the session go (set once built)

    async def __call__(self, request: PermissionRequest) -> Decision:
        try:
            if request.tool.kind == "question":
                return await self._questions(request)
            return await self._ask(request)
        except Exception as e:  # an editor that cannot answer has not said yes
            return Decision("deny", f"the editor could not answer the permission question: {e}")

    def _call(self, request: PermissionRequest, title: str | None = None) -> schema.ToolCallUpdate:
        name, tool_input = request.tool.name, request.input
        content = None
        if request.preview:  # what the call would change, as the terminal shows it before asking
            text = schema.TextContentBlock(type="text", text=f"```diff\n{request.preview}\n```")
            content = [schema.ContentToolCallContent(type="content", content=text)]
        return schema.ToolCallUpdate(
            tool_call_id=request.tool_use_id,
            title=title or title_of(name, tool_input, self.cwd),
            kind=kind_of(name),
            status="pending",
            locations=locations_of(tool_input, self.cwd) or None,
            raw_input=tool_input,
            content=content,
        )

    async def _ask(self, request: PermissionRequest) -> Decision:
        if request.tool.kind == "plan":
            options = [
                _option(PLAN_EDITS, "Yes, and accept edits without asking", "allow_always"),
                _option(PLAN_ASK, "Yes, and ask before each edit", "allow_once"),
                _option(REJECT, "No, keep planning", "reject_once"),
            ]
        else:
            rules = ", ".join(request.session_rules)
            options = [
                _option(ALLOW, "Allow", "allow_once"),
                _option(ALWAYS, f"Allow for this session: {rules}", "allow_always"),
                _option(REJECT, "Reject", "reject_once"),
            ]
        answer = await self.client.request_permission(
            session_id=self.session_id, tool_call=self._call(request), options=options
        )
        chosen = _chosen(answer)
        if chosen == ALWAYS and self.gate is not None:
            for rule in request.session_rules:
                try:
                    self.gate.allow_for_session(rule)
                except ValueError:
                    continue
        if chosen in (ALLOW, ALWAYS):
            return Decision("allow", "the user allowed it in the editor")
        if chosen in (PLAN_EDITS, PLAN_ASK):
            mode: PermissionMode = "acceptEdits" if chosen == PLAN_EDITS else "default"
            return Decision("allow", "the user approved the plan in the editor", mode=mode)
        if chosen is None:
            return Decision("deny", "the user cancelled the question in the editor")
        return Decision("deny", "the user refused it in the editor")

    async def _questions(self, request: PermissionRequest) -> Decision:
        """AskUserQuestion: each question with its choices as the options; the answers go back to
        the tool as its `answers`, as the terminal gives them."""
        questions = request.input.get("questions")
        answers: dict[str, str] = {}
        for question in questions if isinstance(questions, list) else []:
            if not isinstance(question, dict) or not isinstance(question.get("question"), str):
                continue
            labels = [str(o.get("label")) for o in question.get("options") or [] if isinstance(o, dict)]
            options = [_option(f"choice-{i}", label, "allow_once") for i, label in enumerate(labels)]
            answer = await self.client.request_permission(
                session_id=self.session_id,
                tool_call=self._call(request, title=question["question"]),
                options=options,
            )
            chosen = _chosen(answer)
            if chosen is None:
                return Decision("deny", "the user did not answer the question")
            answers[question["question"]] = labels[int(chosen.removeprefix("choice-"))]
        updated: dict[str, Any] = {**request.input, "answers": answers}
        return Decision("allow", "the user answered in the editor", updated_input=updated)


def _option(option_id: str, name: str, kind: Any) -> schema.PermissionOption:
    return schema.PermissionOption(option_id=option_id, name=name, kind=kind)


def _chosen(answer: schema.RequestPermissionResponse) -> str | None:
    outcome = answer.outcome
    return outcome.option_id if isinstance(outcome, schema.AllowedOutcome) else None
