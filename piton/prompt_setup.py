"""The main agent's configuration: its model and limits, and the system prompt it works under (Piton's
own with the project's memory, the skills listing and the output style, or one the caller gives)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from piton.core.agent_parts import AgentConfig
from piton.core.models import resolve_alias
from piton.core.options import RunOptions
from piton.core.project.claude_home import claude_home
from piton.core.project.settings import Settings
from piton.core.project.system_prompt import OutputStyle, build_system_prompt
from piton.core.safety.policy import PolicyError, SandboxPolicy, real
from piton.core.safety.sandbox import Sandbox, make_sandbox
from piton.core.structured import OutputSchema
from piton.session_setup import OpenedSession


def agent_config(
    options: RunOptions,
    settings: Settings,
    session: OpenedSession,
    policy: SandboxPolicy,
    sections: list[str],
    style: OutputStyle,
) -> AgentConfig:
    """The main agent's configuration: its model and limits, and the system prompt (the project's
    memory and the skills listing as its last `sections`, then the output style's instructions)."""
    thinking = options.thinking if options.thinking is not None else settings.thinking
    # git runs in a read-only sandbox: a repository's config can name programs for it to run
    git_sandbox = None if policy.mode == "danger-full-access" else make_sandbox(policy.read_only())
    window, max_output = settings.model_limits(session.model)
    return AgentConfig(
        model=session.model,
        system_prompt=_system_prompt(options, git_sandbox, sections, style),
        cwd=options.cwd,
        session_id=session.log.session_id,
        max_turns=options.max_turns,
        thinking=True if thinking is None else thinking,
        context_window=window,
        max_output_tokens=max_output,
        skills_listing=sections[-1],
        max_budget_usd=options.max_budget_usd,
        effort=options.effort,
        thinking_display=options.thinking_display,
        output=OutputSchema(options.json_schema) if options.json_schema is not None else None,
        fallback_model=resolve_alias(options.fallback_model) if options.fallback_model else None,
        max_budget_tokens=options.max_budget_tokens,
        output_style=style.name if style.prompt and options.system_prompt is None else None,
    )


def _system_prompt(
    options: RunOptions, git_sandbox: Sandbox | None, sections: list[str], style: OutputStyle
) -> str:
    """Piton's prompt, or the one `--system-prompt` gives in its place. Either way the user's memory
    files and the skills listing follow (as Claude Code sends them whatever the system prompt: the
    Agent SDK's default is `--system-prompt ""`), then what is appended. An output style shapes
    Piton's own prompt only."""
    if options.system_prompt is None:
        return build_system_prompt(
            options.cwd,
            append=options.append_system_prompt,
            sandbox=git_sandbox,
            sections=sections,
            style=style,
        )
    parts = (options.system_prompt, *sections, options.append_system_prompt or "")
    return "\n\n".join(p.strip() for p in parts if p.strip())


def import_refusal(policy: SandboxPolicy) -> Callable[[Path, str], str | None]:
    """Why project memory may not read a file: what the file tools may not read either. The user's
    own files may also reach into `~/.claude` (where Claude Code users keep instructions), all but
    its credentials file."""
    claude = real(claude_home(policy.home))

    def refuse(path: Path, scope: str) -> str | None:
        if scope == "user" and path.is_relative_to(claude) and path.name != ".credentials.json":
            return None
        try:
            policy.check_read(path)
        except PolicyError as e:
            return str(e)
        return None

    return refuse
