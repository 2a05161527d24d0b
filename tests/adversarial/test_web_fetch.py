"""WebFetch runs in Piton's own process, outside the sandbox whose network is off. A prompt-injected
model must not reach the machine's own services or the cloud metadata address through it: not by
naming them, not through a redirect, not through another name for an allowed host."""

from __future__ import annotations

from pathlib import Path

from tests.builtin_tools.test_web_fetch import call, context, site

__all__ = ["site"]  # the local web server these tests attack through


def test_a_local_address_needs_a_rule_naming_its_host(site: str, project: Path) -> None:
    text, error, _ = call(context(project, allowed=()), f"{site}/docs")
    assert error and "127.0.0.1, a private or local address" in text and "WebFetch(domain:127.0.0.1)" in text
    text, error, _ = call(context(project, allowed=()), "http://169.254.169.254/latest/meta-data/")
    assert error and "private or local address" in text
    port = site.rsplit(":", 1)[1]
    text, error, _ = call(context(project, allowed=("127.0.0.1",)), f"http://localhost:{port}/docs")
    assert error and "WebFetch(domain:localhost)" in text  # a rule for one name does not open another


def test_a_redirect_never_reaches_the_metadata_service(site: str, project: Path) -> None:
    # the cloud metadata address is another host: the redirect goes back to the model, unfollowed
    text, error, _ = call(context(project), f"{site}/metadata")
    assert not error and "redirects to another host: http://169.254.169.254/" in text


def test_a_wildcard_rule_opens_no_private_address(site: str, project: Path) -> None:
    from piton.core.safety.permissions import Permissions

    permissions = Permissions.from_texts(
        "default", ["WebFetch(domain:*)", "WebFetch(domain:*.internal)"], project=project
    )
    assert not permissions.names("WebFetch", "domain:127.0.0.1")
    assert not permissions.names("WebFetch", "domain:169.254.169.254")
    exact = Permissions.from_texts("default", ["WebFetch(domain:127.0.0.1)"], project=project)
    assert exact.names("WebFetch", "domain:127.0.0.1")


def test_ipv6_addresses_that_lead_to_private_ipv4_ones_are_not_public() -> None:
    from piton.builtin_tools.web_get import _public

    for address in (
        "64:ff9b::a00:1",
        "2002:7f00:1::",
        "::7f00:1",
        "::ffff:10.0.0.1",
        "fec0::1",
        "::1",
        "fe80::1%eth0",
    ):
        assert not _public(address), address
    assert _public("2606:4700::1111") and _public("8.8.8.8")
