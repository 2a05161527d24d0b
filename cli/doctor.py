"""`piton doctor`: what this installation and this folder's settings amount to, and what is wrong
with them, one line each (✓ works, ✗ broken, ! noted). It asks the API about the model (no tokens
spent) and starts the MCP servers once, so what it says is what a session would meet."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from piton.skills.plugins import Plugins

Line = tuple[str, str]


def doctor(cwd: Path, *, trust_workspace: bool = False) -> int:
    """Print the report; exit code 1 when something Piton needs is broken. `trust_workspace`: as a
    run with `--trust-workspace` would see the folder (its plugins loaded)."""
    from piton import __version__
    from piton.core.project.settings import load_settings, settings_files
    from piton.core.project.settings_sources import shown
    from piton.core.safety.policy import SandboxPolicy
    from piton.core.safety.sandbox import make_sandbox
    from piton.extensions import apply_user_env, hook_commands

    lines: list[Line] = [("✓", f"Piton {__version__}, Python {sys.version.split()[0]} ({sys.executable})")]
    settings = load_settings(cwd)
    before = dict(os.environ)
    settings.warnings += apply_user_env(settings)  # the settings' env may hold the key, as in a run
    credentials = _credentials(before)
    lines.append(credentials)
    lines.append(_api(settings, reachable=credentials[0] == "✓"))
    sandbox = make_sandbox(SandboxPolicy.create("workspace-write", cwd))
    problem = sandbox.unavailable_reason()
    lines.append(("✗", f"sandbox: {problem}") if problem else ("✓", f"sandbox: {sandbox.describe()}"))
    rg = shutil.which("rg")
    lines.append(("✓", f"ripgrep: {rg}") if rg else ("!", "ripgrep: not on PATH (Piton uses its own copy)"))
    read = [f"{shown(f.path)} ({f.scope})" for f in settings_files(cwd) if f.path.is_file()]
    lines.append(("✓", f"settings files: {', '.join(read) or 'none'}"))
    lines += [("!", f"setting not applied: {key}") for key in settings.unsupported_keys()]
    hooks = hook_commands(settings, settings.warnings)
    if hooks:
        events = sorted({h.event for h in hooks})
        lines.append(
            ("✓", f"hooks: {len(hooks)} ({', '.join(events)}); a project's run only in a trusted folder")
        )
    lines += _skill_lines(cwd)
    plugin_lines, plugins = _plugin_lines(cwd, settings, trust_workspace)
    lines += _style_lines(cwd, settings.output_style, plugins)
    lines += plugin_lines
    lines += _mcp_lines(cwd)
    lines += [("!", warning) for warning in settings.warnings]
    for mark, text in lines:
        print(f"{mark} {text}")
    return 1 if any(mark == "✗" for mark, _ in lines) else 0


def _credentials(before: dict[str, str]) -> Line:
    """Which credentials a request would use, and where they come from."""
    from piton.core.providers.cloud import platform
    from piton.core.providers.credentials import credential_source

    cloud = platform(os.environ)
    if cloud == "bedrock":
        key = (
            " (a Bedrock API key, AWS_BEARER_TOKEN_BEDROCK)"
            if os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
            else ""
        )
        return "✓", f"credentials: Amazon Bedrock's AWS credentials{key}, region {_region() or 'not set'}"
    if cloud == "vertex":
        region = os.environ.get("CLOUD_ML_REGION") or "not set"
        return "✓", f"credentials: Google Vertex AI's application default credentials, region {region}"
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if os.environ.get(name):
            where = "the environment" if before.get(name) else "the settings' env"
            return "✓", f"credentials: {name} from {where}"
    if credential_source() == "sdk":
        return "✓", "credentials: the Anthropic SDK's profile (ANTHROPIC_PROFILE or its config folder)"
    return "✗", "credentials: none (export ANTHROPIC_API_KEY=sk-ant-…)"


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""


def _api(settings: Any, *, reachable: bool) -> Line:
    """Whether the API answers for the model a session would use (a model lookup: no tokens spent)."""
    import asyncio

    from piton.core.models import DEFAULT_MODEL, resolve_alias
    from piton.core.providers import ProviderError
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.core.providers.failures import DEFAULT_BASE_URL

    base = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    model = resolve_alias(os.environ.get("ANTHROPIC_MODEL") or settings.model or DEFAULT_MODEL)
    if not reachable:
        return "!", f"API: {base} not checked (no credentials)"
    provider = AnthropicProvider()
    if provider.platform != "anthropic":  # no lookup there without spending tokens: what would be asked
        try:
            provider.check()
            return "!", f"API: {asyncio.run(provider.probe(model))}"
        except ProviderError as e:
            return "✗", f"API: {e}"

    async def probe() -> str:
        try:
            return await provider.probe(model)
        finally:
            await provider.aclose()

    started = time.monotonic()
    try:
        name = asyncio.run(probe())
    except ProviderError as e:
        return "✗", f"API: {base}, model {model}: {e}"
    took = (time.monotonic() - started) * 1000
    return "✓", f"API: {base} answers; model {model} ({name}) is available to this key ({took:.0f} ms)"


def _skill_lines(cwd: Path) -> list[Line]:
    """How many skills, commands and subagent types load here, and how many files were skipped."""
    from piton.skills.agents import discover_agent_types
    from piton.skills.catalog import discover

    catalog = discover(cwd)
    types, warnings = discover_agent_types(cwd)
    sources: dict[str, int] = {}
    for skill in catalog.skills.values():
        sources[skill.source] = sources.get(skill.source, 0) + 1
    words = {"project": "from the project", "user": "of your own"}
    found = ", ".join(f"{n} {words.get(source, source)}" for source, n in sorted(sources.items(), key=_first))
    skipped = sum(w.endswith("; skipped") for w in [*catalog.warnings, *warnings])
    lines = [
        ("✓", f"skills and commands: {len(catalog.skills)} ({found or 'none'}); subagent types: {len(types)}")
    ]
    if skipped:
        lines.append(("!", f"{skipped} skill, command or agent file(s) skipped (piton skills says why)"))
    return lines


def _style_lines(cwd: Path, name: str | None, plugins: Plugins) -> list[Line]:
    """The output style a session here would answer in."""
    from piton.skills.output_styles import choose, discover_output_styles

    styles, warnings = discover_output_styles(cwd, plugins=plugins.plugins)
    notices: list[str] = []
    style = choose(styles, name, notices)
    where = "" if style.source == "builtin" else f" ({style.source})"
    lines: list[Line] = [("✓", f"output style: {style.name}{where}; {len(styles)} available")]
    return lines + [("!", text) for text in [*notices, *warnings]]


def _first(item: tuple[str, int]) -> int:
    order = ("project", "user", "plugin", "bundled")
    return order.index(item[0]) if item[0] in order else len(order)


def _mcp_lines(cwd: Path) -> list[Line]:
    """Each MCP server a session here would know of, started once (a failure is a note: the
    session goes on without it)."""
    from piton.cli.mcp_command import describe_state, server_health
    from piton.runtime import SetupError

    try:
        states = server_health(cwd)
    except SetupError as e:
        return [("!", f"MCP servers: {e}")]
    marks = {"connected": "✓", "disabled": "-", "stopped": "-"}
    return [
        (marks.get(s.status, "!"), f"MCP server {s.config.name} ({s.config.scope}): {describe_state(s)}")
        for s in states
    ]


def _plugin_lines(cwd: Path, settings: Any, trust_workspace: bool) -> tuple[list[Line], Plugins]:
    """The plugins a session here would load (a project's only once the folder is trusted)."""
    from piton.core.project.trust import decide
    from piton.skills.catalog import Catalog
    from piton.skills.plugins import load_plugins, plugin_grants, summary

    trust = decide(
        cwd,
        plugin_grants(cwd, settings),
        trusted_folders=settings.trusted_folders,
        flag=trust_workspace,
        first_use=False,
    )
    catalog = Catalog()
    plugins = load_plugins(cwd, settings, trust, catalog=catalog)
    lines = [("✓", f"plugin {line}") for line in summary(plugins, list(catalog.skills.values()))]
    lines += [
        ("!", f"plugin {pid}: enabled by the project; loads once you trust the folder")
        for pid in plugins.blocked
    ]
    return lines + [("!", warning) for warning in plugins.warnings], plugins
