"""The first phase of opening a session: what the folder and the user's files hold. Settings, skills
and commands, plugins, subagent types and output styles are found, and the folder's trust decides
which of the project's grants count. Nothing here writes anything or starts anything."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.options import RunOptions
from piton.core.project.settings import Settings
from piton.core.project.trust import Grant, Trust, TrustStore, decide
from piton.core.records import record
from piton.extensions import grants as extension_grants
from piton.extensions import hook_commands
from piton.permission_setup import rule_grant, valid_rules, where
from piton.setup_errors import SetupError
from piton.starting import run_settings

if TYPE_CHECKING:
    from piton.core.project.system_prompt import OutputStyle
    from piton.core.subagents import AgentType
    from piton.skills.catalog import Catalog, Skill
    from piton.skills.plugins import Plugins


@record
class Found:
    """What the folder and the user's files hold, and what of it the folder's trust lets count."""

    settings: Settings
    catalog: Catalog
    trust: Trust
    plugins: Plugins
    agent_types: dict[str, AgentType]
    styles: dict[str, OutputStyle]
    style: OutputStyle
    notices: list[str] = field(default_factory=list)


def discover(options: RunOptions, trust_store: TrustStore | None = None) -> Found:
    """Raises `SetupError` for what the options name wrongly (`--agents`, a settings flag)."""
    from piton.skills.catalog import discover as discover_skills
    from piton.skills.output_styles import choose, discover_output_styles
    from piton.skills.plugins import load_plugins

    settings = run_settings(options)
    catalog = discover_skills(options.cwd)
    trust = workspace_trust(options, settings=settings, catalog=catalog, trust_store=trust_store)
    catalog.granted = {s.path for s in catalog.granting() if trust.honours(skill_grant(options.cwd, s))}
    plugins = load_plugins(options.cwd, settings, trust, options.plugin_dirs, catalog)
    notices = list(settings.warnings)
    if (ignored := trust.notice()) is not None:
        notices.append(ignored)
    agent_types, type_warnings = _agent_types(options, catalog, plugins)
    styles, style_warnings = discover_output_styles(options.cwd, plugins=plugins.plugins)
    notices += [*catalog.warnings, *type_warnings, *plugins.warnings, *style_warnings]
    style = choose(styles, settings.output_style, notices)
    return Found(settings, catalog, trust, plugins, agent_types, styles, style, notices)


def _agent_types(
    options: RunOptions, catalog: Catalog, plugins: Plugins
) -> tuple[dict[str, AgentType], list[str]]:
    """The subagent types: the plugins', then the files', then `--agents` (each wins over the one
    before), each with the skills it names loaded."""
    from piton.skills.agents import agent_types_from_json, discover_agent_types
    from piton.skills.catalog import with_skills

    types, warnings = discover_agent_types(options.cwd)
    if options.agents is not None:
        try:
            types.update(agent_types_from_json(options.agents))
        except ValueError as e:
            raise SetupError(f"--agents: {e}") from e
    types = {**{a.name: a for a in plugins.agents}, **types}
    return {name: with_skills(t, catalog) for name, t in types.items()}, warnings


def skill_grant(cwd: Path, skill: Skill) -> Grant:
    return Grant(
        where(cwd, skill.path), f"{skill.kind} {skill.name}: allowed-tools {', '.join(skill.allowed_tools)}"
    )


def workspace_trust(
    options: RunOptions,
    *,
    settings: Settings | None = None,
    catalog: Catalog | None = None,
    trust_store: TrustStore | None = None,
) -> Trust:
    """What the folder's own files would grant — the project settings' allow rules, the project
    skills' and commands' allowed-tools — and which of it the user's trust covers."""
    from piton.skills.catalog import discover as discover_skills

    settings = settings if settings is not None else run_settings(options)
    catalog = catalog if catalog is not None else discover_skills(options.cwd)
    grants = [
        rule_grant(options.cwd, path, rule)
        for path, rule in settings.project_rules("allow")
        if valid_rules([rule], "settings", [])
    ]
    grants += [skill_grant(options.cwd, skill) for skill in catalog.granting()]
    grants += extension_grants(
        options.cwd, settings, hook_commands(settings, []), strict_mcp=options.strict_mcp_config
    )
    return decide(
        options.cwd,
        grants,
        trusted_folders=settings.trusted_folders,
        store=trust_store,
        flag=options.trust_workspace,
    )
