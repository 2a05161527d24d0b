"""Subagent types defined in files: `.piton/agents/**/*.md` and `.claude/agents/**/*.md` (subfolders
organise them, as in large collections), in the project (nearest folder first, up to the git root)
and then under the user's home (`$CLAUDE_CONFIG_DIR` for Claude Code's folder when set);
frontmatter `name`, `description`, `tools`, `disallowedTools`, `model`, `maxTurns`,
`permissionMode`, `skills`, and the body as the system prompt. What a file says that Piton does not
apply (agent hooks, a color) is kept as a note the listings show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from piton.core.project.claude_home import user_config_dirs
from piton.core.project.roots import project_dirs
from piton.core.subagents import DEFAULT_MAX_TURNS, TASK_TOOL, AgentType, builtin_types
from piton.skills.frontmatter import (
    FrontmatterError,
    leaves_project,
    list_field,
    markdown_files,
    read,
    shown,
    text_field,
)


def load_agent_type(path: Path, source: str) -> AgentType:
    meta, body = read(path)
    if not text_field(meta, "description"):
        raise FrontmatterError("it has no description (the frontmatter's 'description' is required)")
    if not body.strip():
        raise FrontmatterError("it has no system prompt after the frontmatter")
    return agent_type(text_field(meta, "name") or path.stem, meta, body, source, path)


def agent_type(
    name: str, meta: dict[str, Any], prompt: str, source: str, path: Path | None = None
) -> AgentType:
    """A type from its fields, as a file's frontmatter or Claude Code's JSON definitions name them."""
    description = text_field(meta, "description")
    if not description:
        raise FrontmatterError("'description' is required")
    if not prompt.strip():
        raise FrontmatterError("'prompt' is required")
    turns = meta.get("maxTurns", meta.get("max-turns", DEFAULT_MAX_TURNS))
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
        raise FrontmatterError("'maxTurns' should be a positive whole number")
    tools = list_field(meta, "tools")
    model = text_field(meta, "model")
    mode = text_field(meta, "permissionMode", "permission-mode")
    notes = [f"'{key}' is not applied" for key in _NOT_APPLIED if key in meta]
    if mode is not None and mode not in AGENT_MODES:
        notes.append(f"permissionMode {mode!r} is not one of {', '.join(AGENT_MODES)}; ignored")
        mode = None
    return AgentType(
        name=name,
        description=description,
        prompt=prompt.strip(),
        tools=tuple(t for t in tools if t != TASK_TOOL) if tools is not None else None,
        model=None if model in (None, "inherit") else model,
        source=source,
        max_turns=turns,
        disallowed_tools=tuple(list_field(meta, "disallowedTools", "disallowed-tools") or ()),
        permission_mode=mode,
        skills=tuple(list_field(meta, "skills") or ()),
        path=path,
        notes=tuple(notes),
    )


_NOT_APPLIED = ("hooks", "mcpServers", "memory", "initialPrompt", "background", "effort")
AGENT_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")


def discover_agent_types(cwd: Path, home: Path | None = None) -> tuple[dict[str, AgentType], list[str]]:
    """Every type by name, first found wins: the project's, the user's, then the built-in ones."""
    home = home if home is not None else Path.home()
    folders = [(d / c / "agents", "project") for d in project_dirs(cwd) for c in (".piton", ".claude")]
    seen = {f for f, _ in folders}  # the home folder may be the project's: read (and warn) once
    folders += [(d / "agents", "user") for d in user_config_dirs(home) if d / "agents" not in seen]
    types: dict[str, AgentType] = {}
    warnings: list[str] = []
    for folder, source in folders:
        for path in markdown_files(folder, warnings):
            if source == "project" and (why := leaves_project(path, folder.parent)):
                warnings.append(why)  # read outside the sandbox, it would become an agent's prompt
                continue
            try:
                found = load_agent_type(path, source)
            except FrontmatterError as e:
                warnings.append(f"{shown(path)}: {e}; skipped")
                continue
            first = types.setdefault(found.name, found)
            if first is not found and first.path is not None:  # said, as for skills
                used, name = shown(first.path), found.name
                warnings.append(f"{shown(path)}: agent {name} is not used: the one in {used} comes first")
    for builtin in builtin_types():
        types.setdefault(builtin.name, builtin)
    return types, warnings


def agent_types_from_json(text: str) -> dict[str, AgentType]:
    """`--agents '{"name": {"description": …, "prompt": …, "tools": […], "model": …}}'`, Claude
    Code's inline definitions. ValueError, in one line, for one that cannot be used."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e})") from e
    return agent_types_from_data(data, "flag")


def agent_types_from_data(data: object, source: str) -> dict[str, AgentType]:
    """Definitions by name, as `--agents` and the Agent SDK's `initialize` carry them (the SDK's
    `AgentDefinition` fields). ValueError, in one line, for one that cannot be used."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object of agents by name")
    types: dict[str, AgentType] = {}
    for name, spec in data.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{name}: expected an object")
        prompt = spec.get("prompt")
        try:
            types[name] = agent_type(name, spec, prompt if isinstance(prompt, str) else "", source)
        except FrontmatterError as e:
            raise ValueError(f"{name}: {e}") from None
    return types
