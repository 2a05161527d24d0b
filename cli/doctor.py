"""`piton doctor`: what this installation and this folder's settings amount to, and what is wrong
with them, one line each (✓ works, ✗ broken, ! noted)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any


def doctor(cwd: Path) -> int:
    """Print the report; exit code 1 when something Piton needs is broken."""
    from piton import __version__
    from piton.core.project.settings import load_settings, settings_files
    from piton.core.project.settings_sources import shown
    from piton.core.providers.credentials import credential_source
    from piton.core.safety.policy import SandboxPolicy
    from piton.core.safety.sandbox import make_sandbox
    from piton.extensions import apply_user_env, hook_commands

    lines: list[tuple[str, str]] = [("✓", f"Piton {__version__}")]
    settings = load_settings(cwd)
    settings.warnings += apply_user_env(settings)  # the settings' env may hold the key, as in a run
    source = {"key": "an API key or token", "sdk": "the SDK's profile"}.get(credential_source() or "")
    lines.append(
        ("✓", f"credentials: {source}") if source else ("✗", "credentials: none (set ANTHROPIC_API_KEY)")
    )
    lines.append(("✓", f"API: {os.environ.get('ANTHROPIC_BASE_URL') or 'https://api.anthropic.com'}"))
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
    lines += _plugin_lines(cwd, settings)
    lines += [("!", warning) for warning in settings.warnings]
    for mark, text in lines:
        print(f"{mark} {text}")
    return 1 if any(mark == "✗" for mark, _ in lines) else 0


def _plugin_lines(cwd: Path, settings: Any) -> list[tuple[str, str]]:
    """The plugins a session here would load (a project's only once the folder is trusted)."""
    from piton.core.project.trust import decide
    from piton.skills.catalog import Catalog
    from piton.skills.plugins import load_plugins, plugin_grants, summary

    trust = decide(cwd, plugin_grants(cwd, settings), trusted_folders=settings.trusted_folders)
    catalog = Catalog()
    plugins = load_plugins(cwd, settings, trust, catalog=catalog)
    lines = [("✓", f"plugin {line}") for line in summary(plugins, list(catalog.skills.values()))]
    lines += [
        ("!", f"plugin {pid}: enabled by the project; loads once you trust the folder")
        for pid in plugins.blocked
    ]
    return lines + [("!", warning) for warning in plugins.warnings]
