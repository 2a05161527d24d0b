"""What a library caller sets for a run (`AgentOptions`), and the callbacks it may pass: a
permission callback (`can_use_tool`) and Python hooks (`HookMatcher`)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from piton.core.options import RunOptions
from piton.core.safety.permissions import Decision, PermissionRequest

if TYPE_CHECKING:
    from piton.api.tools import FunctionTool
    from piton.core.conversation.storage import SessionStorage
    from piton.core.providers import Provider
    from piton.telemetry import Telemetry


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call run (with `updated_input` in place of the model's, when given)."""

    updated_input: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; the model reads `message`."""

    message: str = "the caller denied this tool call"


@dataclass(frozen=True, slots=True)
class ToolPermissionContext:
    tool_use_id: str
    reason: str  # why the rules ask
    suggestions: tuple[str, ...]  # the rules that would allow such calls (`Bash(npm test:*)`)
    preview: str | None = None  # what the call would change (a diff), when the tool can tell


Verdict = Allow | Deny | bool
CanUseTool = Callable[[str, dict[str, Any], ToolPermissionContext], Verdict | Awaitable[Verdict]]
HookCallback = Callable[[dict[str, Any], str | None, Any], Any]  # (input, tool_use_id, context) -> output


@dataclass(slots=True)
class HookMatcher:
    """Hooks for the tools `matcher` names (a name, `A|B`, a regex; None: every tool). A hook
    gets Claude Code's hook input and answers with its hook output (`{"decision": "block", …}`,
    `{"hookSpecificOutput": {"permissionDecision": "deny", …}}`), as the Agent SDK's do."""

    matcher: str | None = None
    hooks: list[HookCallback] = field(default_factory=list)


HOOK_EVENTS = ("PreToolUse", "PostToolUse")  # other events: command hooks in the settings


@dataclass(slots=True)
class AgentOptions:
    cwd: Path | str = field(default_factory=Path.cwd)
    model: str | None = None
    system_prompt: str | None = None  # replaces Piton's own
    append_system_prompt: str | None = None
    allowed_tools: list[str] = field(default_factory=list)  # permission rules: `Read`, `Bash(git:*)`
    disallowed_tools: list[str] = field(default_factory=list)
    permission_mode: str | None = None  # default, acceptEdits, plan, bypassPermissions, dontAsk
    can_use_tool: CanUseTool | None = None  # asked whenever the rules ask (none: such calls are denied)
    hooks: dict[str, list[HookMatcher]] = field(default_factory=dict)
    mcp_servers: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # as in `.mcp.json`
    tools: Sequence[FunctionTool] = ()  # custom tools (`@tool`), offered beside the built-ins
    builtin_tools: list[str] | None = None  # the built-in tools offered (None: all of them)
    max_turns: int | None = None
    max_budget_usd: float | None = None
    max_budget_tokens: int | None = None
    resume: str | None = None  # a session id to go on with
    continue_conversation: bool = False  # go on with this folder's latest session
    fork_session: bool = False  # with `resume`: go on in a new session with the same history
    session_id: str | None = None  # the id (a UUID) a new session takes
    session_storage: SessionStorage | None = None  # None: the JSONL files under the state directory
    include_partial_messages: bool = False  # `StreamEvent`s as the reply streams
    sandbox: str | None = None  # read-only, workspace-write (default), danger-full-access
    add_dirs: list[Path | str] = field(default_factory=list)
    setting_sources: list[str] | None = None  # user, project, local (None: all of them)
    settings: str | None = None  # one more settings layer: a file or inline JSON
    thinking: bool | None = None
    effort: str | None = None
    # a JSON schema the answer must match: the result's `structured_output` (`--json-schema`)
    output_schema: Mapping[str, Any] | None = None
    fallback_model: str | None = None
    agents: Mapping[str, dict[str, Any]] | None = None  # subagent types: {name: {description, prompt, …}}
    plugin_dirs: list[Path | str] = field(default_factory=list)
    trust_workspace: bool = False  # the folder's own grants (allow rules, hooks, servers) count
    provider: Provider | None = None  # None: Anthropic's API (or the cloud the environment names)
    # OpenTelemetry providers of the caller's (`Telemetry(tracer_provider, meter_provider)`); None:
    # as the environment says (`CLAUDE_CODE_ENABLE_TELEMETRY=1` and the `OTEL_*` variables)
    telemetry: Telemetry | None = None

    def run_options(self) -> RunOptions:
        for event in self.hooks:
            if event not in HOOK_EVENTS:
                raise ValueError(
                    f"hooks: {event} hooks cannot be Python functions ({', '.join(HOOK_EVENTS)} can); "
                    "command hooks in the settings serve every event"
                )
        return RunOptions(
            cwd=Path(self.cwd).resolve(),
            model=self.model,
            thinking=self.thinking,
            max_turns=self.max_turns,
            append_system_prompt=self.append_system_prompt,
            continue_latest=self.continue_conversation,
            resume=self.resume,
            permission_mode=self.permission_mode,
            allowed_tools=list(self.allowed_tools),
            disallowed_tools=list(self.disallowed_tools),
            sandbox=self.sandbox,
            add_dirs=[Path(d) for d in self.add_dirs],
            trust_workspace=self.trust_workspace,
            system_prompt=self.system_prompt,
            tools=self.builtin_tools,
            setting_sources=self.setting_sources,
            settings=self.settings,
            session_id=self.session_id,
            fork_session=self.fork_session,
            max_budget_usd=self.max_budget_usd,
            effort=self.effort,
            json_schema=_output_schema(self.output_schema),
            max_budget_tokens=self.max_budget_tokens,
            fallback_model=self.fallback_model,
            agents=json.dumps(dict(self.agents)) if self.agents is not None else None,
            mcp_config=[json.dumps({"mcpServers": dict(self.mcp_servers)})] if self.mcp_servers else [],
            plugin_dirs=[Path(d) for d in self.plugin_dirs],
        )


@dataclass(slots=True)
class CallbackApprover:
    """The permission questions the rules leave open, answered by the caller's `can_use_tool`."""

    callback: CanUseTool

    async def __call__(self, request: PermissionRequest) -> Decision:
        context = ToolPermissionContext(
            request.tool_use_id, request.reason, request.session_rules, request.preview
        )
        try:
            verdict = self.callback(request.tool.name, dict(request.input), context)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as e:  # a callback that fails has not said yes
            return Decision("deny", f"can_use_tool failed: {type(e).__name__}: {e}")
        if verdict is True or isinstance(verdict, Allow):
            edited = verdict.updated_input if isinstance(verdict, Allow) else None
            return Decision("allow", "can_use_tool allowed it", updated_input=edited)
        if isinstance(verdict, Deny):
            return Decision("deny", verdict.message)
        return Decision("deny", "the caller denied this tool call")


def _output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema checked as `--json-schema` checks it (ValueError, in one line, if unusable)."""
    from piton.core.structured import parse_schema

    return None if schema is None else parse_schema(json.dumps(dict(schema)))
