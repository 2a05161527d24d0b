"""Deciding "no credentials" without the SDK must agree with the SDK itself, source by source."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from piton.core.providers import ProviderError
from piton.core.providers.anthropic import AnthropicProvider
from piton.core.providers.credentials import credential_source

Setup = Callable[[pytest.MonkeyPatch, Path], None]


def _profile(config_dir: Path, name: str) -> None:
    (config_dir / "configs").mkdir(parents=True, exist_ok=True)
    (config_dir / "credentials").mkdir(parents=True, exist_ok=True)
    config = config_dir / "configs" / f"{name}.json"
    config.write_text(json.dumps({"authentication": {"type": "user_oauth"}}))
    config.chmod(0o644)
    secret = config_dir / "credentials" / f"{name}.json"
    secret.write_text(json.dumps({"access_token": "tok", "expires_at": 4_000_000_000}))
    secret.chmod(0o600)


def nothing(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    pass


def api_key(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")


def empty_api_key(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")


def auth_token(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")


def default_profile(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    _profile(home / ".config" / "anthropic", "default")


def pointed_profile(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    _profile(home / ".config" / "anthropic", "work")
    (home / ".config" / "anthropic" / "active_config").write_text("work\n")


def stray_profile(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    _profile(home / ".config" / "anthropic", "other")  # neither default nor pointed at: not used


def named_profile(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    _profile(home / ".config" / "anthropic", "dev")
    monkeypatch.setenv("ANTHROPIC_PROFILE", "dev")


def missing_named_profile(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_PROFILE", "nowhere")


def config_dir(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    _profile(home / "elsewhere", "default")
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(home / "elsewhere"))


def empty_config_dir(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    (home / "empty").mkdir()
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(home / "empty"))


def federation(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_1")
    monkeypatch.setenv("ANTHROPIC_ORGANIZATION_ID", "org_1")
    monkeypatch.setenv("ANTHROPIC_IDENTITY_TOKEN", "jwt")


def half_federation(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_1")
    monkeypatch.setenv("ANTHROPIC_IDENTITY_TOKEN", "jwt")


SETUPS = [
    nothing,
    api_key,
    empty_api_key,
    auth_token,
    default_profile,
    pointed_profile,
    stray_profile,
    named_profile,
    missing_named_profile,
    config_dir,
    empty_config_dir,
    federation,
    half_federation,
]


def sdk_verdict() -> str:
    """What the SDK itself makes of the environment: "key", "other" credentials, "none", or "error"."""
    import anthropic  # here, not at the top: collecting the suite need not pay for the SDK

    from piton.core import tls
    from tests.helpers import DEAD_URL

    # plain http, so no certificates to read: the SDK's default client reads the whole bundle (30 ms)
    plain = anthropic.DefaultAsyncHttpxClient(verify=tls.for_url(DEAD_URL))
    try:
        client = anthropic.AsyncAnthropic(base_url=DEAD_URL, http_client=plain)
    except anthropic.AnthropicError:
        return "error"
    if client.api_key is not None or client.auth_token is not None:
        return "key"
    return "other" if client.credentials is not None else "none"


@pytest.mark.parametrize("setup", SETUPS, ids=[s.__name__ for s in SETUPS])
def test_the_check_without_the_sdk_agrees_with_the_sdk(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    setup(monkeypatch, home)
    ours, theirs = credential_source(), sdk_verdict()
    if theirs == "none":
        assert ours is None, "the SDK finds nothing here: say so without it"
    elif theirs == "key":
        assert ours == "key"
    else:  # a profile or federation the SDK resolves (or reports as broken): it must be asked
        assert ours == "sdk"


def test_a_broken_profile_is_one_line_from_the_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_PROFILE", "nowhere")
    with pytest.raises(ProviderError) as err:
        AnthropicProvider().check()
    assert err.value.kind == "config" and "nowhere" in str(err.value) and "\n" not in str(err.value)


def test_no_credentials_anywhere_is_the_setup_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ProviderError) as err:
        AnthropicProvider().check()
    assert err.value.kind == "config" and "export ANTHROPIC_API_KEY" in str(err.value)
