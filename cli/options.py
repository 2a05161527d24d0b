"""The parsed command line as the options of a run, a group at a time: the session, the model,
permissions and the sandbox, what extends the session (`RunOptions`), and the output of a `-p` run
(`HeadlessOptions`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from piton.core.options import RunOptions

if TYPE_CHECKING:
    from piton.cli.headless import HeadlessOptions


def split_rules(values: list[str] | None) -> list[str]:
    """Rules given as repeated flags, or several in one value separated by commas or spaces (outside
    parentheses, so `Bash(git diff:*)` stays whole)."""
    rules: list[str] = []
    for value in values or []:
        current, depth = "", 0
        for ch in value:
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and (ch == "," or ch.isspace()):
                if current.strip():
                    rules.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            rules.append(current.strip())
    return rules


def fail(message: str) -> NoReturn:
    """A usage error: one line, exit status 1 (the parser need not be loaded to say it)."""
    sys.stderr.write(f"piton: {message}\n")
    raise SystemExit(1)


def note(text: str) -> None:
    sys.stderr.write(f"piton: {text}\n")


def run_options(values: dict[str, Any]) -> RunOptions:
    from piton.core.project.claude_home import machine_is_sandbox

    return RunOptions(
        cwd=Path.cwd(),
        machine_is_sandbox=machine_is_sandbox(),
        **_session(values),
        **_model(values),
        **_safety(values),
        **_extensions(values),
    )


def _session(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "continue_latest": values["continue_latest"],
        "resume": values["resume"] or None,
        "session_id": values["session_id"],
        "fork_session": values["fork_session"],
        "max_turns": values["max_turns"],
        "max_budget_usd": values["max_budget_usd"],
        "max_budget_tokens": values["max_budget_tokens"],
    }


def _model(values: dict[str, Any]) -> dict[str, Any]:
    from piton.core.models import with_provider

    if values["system_prompt"] is not None and values["system_prompt_file"] is not None:
        fail("use --system-prompt or --system-prompt-file, not both")
    system_prompt = values["system_prompt"]
    if values["system_prompt_file"] is not None:
        system_prompt = _read_text(values["system_prompt_file"])
    try:
        model = with_provider(values["provider"], values["model"])
    except ValueError as e:
        fail(str(e))
    return {
        "model": model,
        "fallback_model": values["fallback_model"],
        "thinking": _thinking(values["thinking"], values["max_thinking_tokens"]),
        "effort": values["effort"],
        "thinking_display": values["thinking_display"],
        "json_schema": _schema(values["json_schema"]),
        "system_prompt": system_prompt,
        "append_system_prompt": values["append_system_prompt"],
    }


def _safety(values: dict[str, Any]) -> dict[str, Any]:
    mode = "bypassPermissions" if values["dangerously_skip_permissions"] else values["permission_mode"]
    tools = values["tools"]
    return {
        "permission_mode": mode,
        "allowed_tools": split_rules(values["allowed_tools"]),
        "disallowed_tools": split_rules(values["disallowed_tools"]),
        "tools": None if tools is None else split_rules(tools),
        "sandbox": values["sandbox"],
        "add_dirs": [d.expanduser().resolve() for d in values["add_dir"] or []],
        "trust_workspace": values["trust_workspace"],
        "permission_prompt_tool": values["permission_prompt_tool"],
    }


def _extensions(values: dict[str, Any]) -> dict[str, Any]:
    sources = values["setting_sources"]
    return {
        "settings": values["settings"],
        "setting_sources": None if sources is None else _sources(sources),
        "mcp_config": list(values["mcp_config"] or []),
        "strict_mcp_config": values["strict_mcp_config"],
        "agents": values["agents"],
        "plugin_dirs": [Path(d).expanduser().resolve() for d in values["plugin_dir"] or []],
    }


def headless_options(options: RunOptions, prompt: str | None, values: dict[str, Any]) -> HeadlessOptions:
    """How a `-p` run (or a client's conversation) reads its input and writes its output."""
    from piton.cli.headless import HeadlessOptions

    return HeadlessOptions(
        options,
        prompt,
        values["output_format"] or "text",
        values["verbose"],
        input_format=values["input_format"] or "text",
        include_partial_messages=values["include_partial_messages"],
        include_hook_events=values["include_hook_events"],
        replay_user_messages=values["replay_user_messages"],
    )


def _read_text(path: Path) -> str:
    try:
        return path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail(f"--system-prompt-file {path}: {getattr(e, 'strerror', None) or e}")


def _schema(text: str | None) -> dict[str, Any] | None:
    from piton.core.structured import SchemaError, parse_schema

    if text is None:
        return None
    try:
        return parse_schema(text)
    except SchemaError as e:
        fail(f"--json-schema: {e}")


def _sources(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if unknown := [n for n in names if n not in ("user", "project", "local")]:
        fail(f"--setting-sources: unknown source {', '.join(unknown)} (user, project, local)")
    return names


def _thinking(choice: str | None, budget: int | None) -> bool | None:
    if choice is not None:
        return choice in ("on", "adaptive")
    if budget is None:
        return None
    if budget > 0:
        note(
            "--max-thinking-tokens: a set budget is not supported yet; thinking is on with Piton's own budget"
        )
    return budget > 0
