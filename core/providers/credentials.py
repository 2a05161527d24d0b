"""Whether the Anthropic SDK could find credentials, decided without importing it (a second's import,
to say that no key is set).

This follows the SDK's own resolution order (anthropic 2.12, `AsyncAnthropic.__init__` and
`lib.credentials.default_credentials`): an explicit key, `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`,
a profile named by `ANTHROPIC_PROFILE`, workload identity federation from the environment, and the
active profile on disk (`ANTHROPIC_CONFIG_DIR`, its `active_config` pointer, `configs/default.json`).
Anything short of a plain key is left to the SDK to resolve (or to report as broken); only when none
of these is there do we answer for it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from piton.core.providers.cloud import platform

NO_API_KEY = (
    "ANTHROPIC_API_KEY is not set. Export your key (export ANTHROPIC_API_KEY=sk-ant-...) and run again."
)

CredentialSource = Literal["key", "sdk"]


def _config_dir() -> Path:
    explicit = os.environ.get("ANTHROPIC_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        return (Path(appdata) if appdata else Path.home() / "AppData" / "Roaming") / "Anthropic"
    return Path.home() / ".config" / "anthropic"


def _profile_on_disk() -> bool:
    """An `active_config` pointer, or the default profile's config file (what the SDK looks for last)."""
    try:
        directory = _config_dir()
    except RuntimeError:  # no home directory to look in: let the SDK say what it makes of that
        return True
    try:
        if (directory / "active_config").read_text(encoding="utf-8").strip():
            return True
    except (OSError, UnicodeDecodeError):
        pass
    try:
        return (directory / "configs" / "default.json").is_file()
    except OSError:
        return False


def credential_source(api_key: str | None = None) -> CredentialSource | None:
    """ "key" when a key or token is at hand, "sdk" when the SDK may find credentials elsewhere (it
    has to be asked), None when it could find none."""
    env = os.environ
    if platform(env) != "anthropic":  # Bedrock's or Vertex's own credentials: their SDKs resolve them
        return "sdk"
    if api_key or env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
        return "key"
    if env.get("ANTHROPIC_PROFILE") or env.get("ANTHROPIC_CONFIG_DIR"):
        return "sdk"
    federation = env.get("ANTHROPIC_FEDERATION_RULE_ID") and env.get("ANTHROPIC_ORGANIZATION_ID")
    if federation and (env.get("ANTHROPIC_IDENTITY_TOKEN") or env.get("ANTHROPIC_IDENTITY_TOKEN_FILE")):
        return "sdk"
    return "sdk" if _profile_on_disk() else None
