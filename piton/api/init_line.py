"""What the `system/init` line lists beside the tools (`Catalogue`): the commands, skills and
subagent types, and the session's own fields, key for key as Claude Code writes them where Piton
has the value."""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from piton.core.records import record

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from piton.runtime import Runtime
    from piton.skills.catalog import Catalog


@record
class Catalogue:
    """What the `system/init` line lists beside the tools: slash commands, skills, subagent types."""

    slash_commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    # the session's types, read when `init` is made: a client's `initialize` may add some
    agent_types: Mapping[str, object] | None = None
    output_style: str = "default"
    session: dict[str, Any] = field(default_factory=dict)  # the rest of `init` (`init_line`)

    @classmethod
    def of(
        cls, catalog: Catalog | None, agent_types: Iterable[str], output_style: str = "default"
    ) -> Catalogue:
        """What a run offers: the commands a user may type, the skills the model may use, the types,
        and the output style it answers in."""
        return cls(
            slash_commands=[s.name for s in catalog.for_user()] if catalog else [],
            skills=[s.name for s in catalog.for_model() if s.kind == "skill"] if catalog else [],
            agents=sorted(agent_types),
            output_style=output_style,
        )

    @classmethod
    def of_runtime(cls, runtime: Runtime) -> Catalogue:
        found = cls.of(runtime.catalog, runtime.agent_types, runtime.style_name)
        found.session = session_fields(runtime)
        found.agent_types = runtime.agent_types
        return found

    def agent_names(self) -> list[str]:
        return sorted(self.agent_types) if self.agent_types is not None else list(self.agents)


def session_fields(runtime: Runtime) -> dict[str, Any]:
    from piton.core.project.claude_home import machine_is_sandbox
    from piton.core.providers.cloud import platform

    policy = runtime.agent.context.policy
    plugins = runtime.plugins.plugins if runtime.plugins is not None else []
    host = urlparse(os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").hostname
    return {
        "original_cwd": str(runtime.agent.config.cwd),
        "additional_directories": [str(d) for d in policy.extra_dirs] if policy is not None else [],
        "plugins": [
            {"name": p.name, "path": str(p.root), "source": p.plugin_id or f"{p.name}@{p.origin}"}
            for p in plugins
        ],
        "sandbox_enabled": policy is not None
        and policy.mode != "danger-full-access"
        and not machine_is_sandbox(),
        "served_by_anthropic": platform(os.environ) == "anthropic" and host == "api.anthropic.com",
        "fast_mode_state": "off",  # Piton has no fast mode
        "analytics_disabled": True,  # Piton sends no analytics
        "product_feedback_disabled": True,
        "capabilities": [],  # none of Claude Code's optional control-protocol extensions
    }
