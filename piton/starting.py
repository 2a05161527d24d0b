"""What a run starts from, before its session is built: the settings files it reads, the `env` of the
user's own files applied to Piton's process (a cloud or a model may be chosen there), and the model
it starts with. Kept light: `piton -p` asks it before loading anything heavy."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from piton.core.options import RunOptions
from piton.core.project.claude_home import CONFIG_DIR_VAR, MACHINE_SANDBOX_VAR
from piton.core.project.settings import Settings, SettingsFlagError, load_settings
from piton.setup_errors import SetupError

if TYPE_CHECKING:
    from piton.core.providers.route import Router

_NOT_FROM_FILES = frozenset({CONFIG_DIR_VAR, MACHINE_SANDBOX_VAR, "HOME", "PATH"})


def apply_user_env(settings: Settings) -> list[str]:
    """The `env` of the user's own files (and `--settings`, and managed policy) set in Piton's own
    process, as Claude Code does (`ANTHROPIC_MODEL`, `API_TIMEOUT_MS`…); a project's `env` reaches
    only the sandboxed commands, and the hooks of a trusted folder. Returns what was refused."""
    refused = []
    for name, value in settings.env(trusted_only=True).items():
        if name in _NOT_FROM_FILES:
            refused.append(
                f"ignored env {name} from the settings: it comes from the environment Piton starts in"
            )
            continue
        os.environ[name] = value
    return refused


def run_settings(options: RunOptions) -> Settings:
    """The settings files `--setting-sources` names, and the `--settings` layer above them."""
    try:
        return load_settings(options.cwd, sources=options.setting_sources, extra=options.settings)
    except SettingsFlagError as e:
        raise SetupError(str(e)) from e


def starting_model(options: RunOptions) -> str:
    """Apply the user's own settings' `env` now (the provider reads `CLAUDE_CODE_USE_BEDROCK` and
    the like from it) and say which model the run starts with, as far as it is known before the
    session opens (`--model`, `ANTHROPIC_MODEL`, the settings' `model`)."""
    try:
        settings = run_settings(options)
    except SetupError:
        return options.model or os.environ.get("ANTHROPIC_MODEL", "")  # said when the run is built
    apply_user_env(settings)
    return options.model or os.environ.get("ANTHROPIC_MODEL") or settings.model or ""


def default_provider(options: RunOptions, *, require_key: bool = True) -> Router:
    """What serves the run's models: Claude models through Anthropic's provider (its API, Bedrock or
    Vertex), `vendor:model` ones through their OpenAI-compatible servers, made when first needed.
    With `require_key`, raises `ProviderError` at once when the starting model needs Anthropic's API
    and no credentials are at hand (said without importing the SDK)."""
    from piton.core.providers import ProviderError
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.core.providers.credentials import NO_API_KEY, credential_source
    from piton.core.providers.route import Router, default_model, needs_anthropic

    model = starting_model(options)
    if require_key and needs_anthropic(model) and credential_source() is None:
        raise ProviderError(NO_API_KEY, kind="config")
    return Router(AnthropicProvider(), default_model(model))
