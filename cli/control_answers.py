"""Answers to the control requests a client sends (`initialize`, `interrupt`, `set_permission_mode`,
`set_model`, …), in the shapes the Claude Agent SDK reads."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

from piton.core.mode_names import PERMISSION_MODES
from piton.core.models import ALIASES, DEFAULT_MODEL, resolve_alias

if TYPE_CHECKING:
    from piton.runtime import Runtime


class ControlSession(Protocol):
    """The conversation a request is about (`piton.cli.control.ControlSession`)."""

    @property
    def runtime(self) -> Runtime: ...

    def interrupt(self) -> None: ...

    def set_model(self, model: str) -> None: ...

    async def request(self, payload: dict[str, Any]) -> dict[str, Any]: ...

    def tell(self, payload: dict[str, Any]) -> None: ...


class UnsupportedRequest(ValueError):
    pass


def answer(session: ControlSession, request: dict[str, Any]) -> dict[str, Any]:
    """The `response` object of a success answer; raises for an error answer."""
    subtype = request.get("subtype")
    if subtype == "initialize":
        return _initialize(session, request)
    if subtype == "interrupt":
        session.interrupt()
        return {}
    if subtype == "set_permission_mode":
        return _set_permission_mode(session, request.get("mode"))
    if subtype == "set_model":
        model = request.get("model")
        session.set_model(resolve_alias(model) if isinstance(model, str) and model else DEFAULT_MODEL)
        return {}
    if subtype == "mcp_status":
        from piton.mcp_turn import client_status

        mcp = session.runtime.mcp
        return {"mcpServers": [client_status(s) for s in (mcp.states() if mcp is not None else [])]}
    if subtype == "rewind_files":
        return _rewind_files(session, request.get("user_message_id"))
    if subtype == "mcp_message":  # Piton sends these (to reach the client's servers); it serves none
        raise UnsupportedRequest("Piton hosts no in-process MCP servers; mcp_message goes to the client")
    raise UnsupportedRequest(f"unsupported control request: {subtype!r}")


def _rewind_files(session: ControlSession, checkpoint_id: Any) -> dict[str, Any]:
    """The files the tools changed from that user message on, back as they were before it. A file
    changed outside Piton since is left alone, and the answer is an error naming it."""
    from piton.rewind import RewindError, rewind

    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise UnsupportedRequest("rewind_files needs user_message_id")
    try:
        done = rewind(session.runtime.agent, checkpoint_id, code=True, conversation=False)
    except RewindError as e:
        raise UnsupportedRequest(str(e)) from None
    if done.problems:
        raise UnsupportedRequest("; ".join(done.problems))
    return {"restored": [str(p) for p in done.restored]}


def _set_permission_mode(session: ControlSession, mode: Any) -> dict[str, Any]:
    gate = session.runtime.agent.gate
    if mode not in PERMISSION_MODES:
        raise UnsupportedRequest(f"unknown permission mode {mode!r} (one of {', '.join(PERMISSION_MODES)})")
    if gate is None:
        raise UnsupportedRequest("this session has no permission checks to change")
    from piton.core.safety.rules import ModeRefused

    try:
        gate.permissions.mode = mode
    except ModeRefused as e:
        raise UnsupportedRequest(str(e)) from None
    return {}


def _initialize(session: ControlSession, request: dict[str, Any]) -> dict[str, Any]:
    from piton.client_hooks import SESSION_EVENTS

    runtime = session.runtime
    given = request.get("hooks")
    hooks = {
        e: [m for m in ms if isinstance(m, dict)]
        for e, ms in (given.items() if isinstance(given, dict) else [])
        if isinstance(ms, list)
    }
    if unserved := sorted(set(hooks) - {"PreToolUse", "PostToolUse", *SESSION_EVENTS}):
        raise UnsupportedRequest(f"Piton does not call hooks for {', '.join(unserved)}")
    if hooks.get("PreToolUse"):
        _install_hooks(session, hooks["PreToolUse"])
    if hooks.get("PostToolUse"):
        _install_post_hooks(session, hooks["PostToolUse"])
    _install_session_hooks(session, {e: ms for e, ms in hooks.items() if e in SESSION_EVENTS})
    if request.get("agents"):
        _add_agents(runtime, request["agents"])
    catalog = runtime.catalog
    commands = [
        {"name": s.name, "description": s.description, "argumentHint": s.argument_hint or ""}
        for s in (catalog.for_user() if catalog is not None else [])
    ]
    agents = [
        {"name": t.name, "description": t.description, **({"model": t.model} if t.model else {})}
        for t in runtime.agent_types.values()
    ]
    models = [
        {"value": alias, "displayName": alias.capitalize(), "description": model}
        for alias, model in ALIASES.items()
    ]
    return {
        "commands": commands,
        "agents": agents,
        "output_style": runtime.style_name,
        "available_output_styles": [
            "default" if not style.prompt else style.name for style in runtime.output_styles.values()
        ]
        or ["default"],
        "models": models,
        "account": {},
        "pid": os.getpid(),
        "hook_on_failure_supported": True,
        "hooks_applied": True,
    }


def _install_session_hooks(session: ControlSession, by_event: dict[str, list[dict[str, Any]]]) -> None:
    """The client's callbacks for the session's other events, asked beside the settings' hooks
    (a second initialize replaces them)."""
    from piton.client_hooks import ClientCallbacks
    from piton.core.hooks.session import Hooks

    runtime = session.runtime
    agent = runtime.agent
    if not any(by_event.values()):
        if agent.hooks is not None:
            agent.hooks.callbacks = None
        return
    if agent.hooks is None:  # no settings hooks: the session's Hooks, with no commands of its own
        assert runtime.programs is not None
        gate = agent.gate
        agent.hooks = Hooks(
            [],
            agent.config.cwd,
            dict(os.environ),
            runtime.programs,
            session_id=agent.config.session_id,
            transcript_path=str(runtime.log.path),
            mode=lambda: str(gate.permissions.mode) if gate is not None else "default",
        )
    agent.hooks.callbacks = ClientCallbacks(by_event, session.request, session.tell)


def _add_agents(runtime: Runtime, definitions: Any) -> None:
    """The SDK's `agents` (its `AgentDefinition`s): subagent types for this session, over the
    files' of the same name, as `--agents` gives them."""
    from piton.skills.agents import agent_types_from_data
    from piton.skills.catalog import with_skills

    try:
        found = agent_types_from_data(definitions, "sdk")
    except ValueError as e:
        raise UnsupportedRequest(f"agents: {e}") from None
    catalog = runtime.catalog
    for name, agent_type in found.items():
        runtime.agent_types[name] = with_skills(agent_type, catalog) if catalog is not None else agent_type
    tools = runtime.agent.tools
    for name in ("Task", "Agent"):  # made again: their descriptions list the types
        if (task := tools.get(name)) is not None:
            tools.register(task)


def _install_post_hooks(session: ControlSession, matchers: list[dict[str, Any]]) -> None:
    """The client's PostToolUse hooks, asked after each call (after the settings' own); a second
    initialize replaces them."""
    from piton.client_gate import PostToolHooks

    agent = session.runtime.agent
    gate = agent.gate
    hooks = PostToolHooks(
        matchers,
        session.request,
        session_id=agent.config.session_id,
        cwd=str(agent.config.cwd),
        mode=lambda: str(gate.permissions.mode) if gate is not None else "bypassPermissions",
    )
    agent.after_tool.put("client", hooks)


def _install_hooks(session: ControlSession, matchers: list[dict[str, Any]]) -> None:
    """The client's PreToolUse hooks, asked before each call (the main agent's and its subagents')."""
    from piton.client_gate import ClientPreToolHooks

    agent = session.runtime.agent
    if agent.gate is None:
        return
    gate = agent.gate
    if isinstance(gate.pre_tool, ClientPreToolHooks):  # a second initialize replaces the hooks
        gate.pre_tool.hooks = matchers
        return
    gate.pre_tool = ClientPreToolHooks(
        matchers,
        session.request,
        session_id=agent.config.session_id,
        cwd=str(agent.config.cwd),
        mode=lambda: str(gate.permissions.mode),
        then=gate.pre_tool,
    )
