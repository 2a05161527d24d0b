"""Assembling a ready Agent from what the user asked for: settings, model, session, tools, prompt."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.agent import Agent, AgentConfig
from core.messages import Message
from core.models import DEFAULT_MODEL, resolve_alias
from core.providers import Provider
from core.session import SessionLog, SessionStore
from core.settings import load_settings
from core.system_prompt import build_system_prompt
from core.tools import Tool, ToolRegistry


@dataclass(slots=True)
class RunOptions:
    cwd: Path
    model: str | None = None
    thinking: bool | None = None
    max_turns: int | None = None
    append_system_prompt: str | None = None
    continue_latest: bool = False
    resume: str | None = None


@dataclass(slots=True)
class Runtime:
    agent: Agent
    log: SessionLog
    notices: list[str] = field(default_factory=list)


def default_tools() -> list[Tool]:
    from builtin_tools import builtin_tools

    return builtin_tools()


def build_runtime(
    options: RunOptions,
    provider: Provider,
    *,
    store: SessionStore | None = None,
    tools: list[Tool] | None = None,
) -> Runtime:
    """Raises `SessionError` when the session to resume or continue cannot be opened."""
    settings = load_settings(options.cwd)
    notices = list(settings.warnings)
    store = store or SessionStore()
    history: list[Message] = []
    session_model: str | None = None
    session_id = options.resume
    if options.continue_latest and session_id is None:
        session_id = store.latest(options.cwd)
        if session_id is None:
            notices.append("no earlier session in this directory; starting a new one")
    log: SessionLog | None = None
    if session_id is not None:
        loaded, log = store.open(session_id, options.cwd)
        history, session_model = loaded.messages, loaded.model
        notices.extend(loaded.warnings)
    model = resolve_alias(
        options.model or os.environ.get("ANTHROPIC_MODEL") or settings.model or session_model or DEFAULT_MODEL
    )
    if log is None:
        log = store.create(options.cwd, model)
    thinking = options.thinking if options.thinking is not None else settings.thinking
    config = AgentConfig(
        model=model,
        system_prompt=build_system_prompt(options.cwd, append=options.append_system_prompt),
        cwd=options.cwd,
        session_id=log.session_id,
        max_turns=options.max_turns,
        thinking=True if thinking is None else thinking,
    )
    registry = ToolRegistry(default_tools() if tools is None else tools)
    agent = Agent(provider, registry, config, history=history, transcript=log)
    return Runtime(agent, log, notices)
