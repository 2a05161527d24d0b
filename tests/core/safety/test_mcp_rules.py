"""Permission rules for MCP tools: `mcp__server`, `mcp__server__*` and `mcp__server__tool`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from piton.core.safety.permissions import Permissions


@dataclass
class McpLike:
    name: str
    kind: str = "other"
    read_only: bool = False


def decide(
    tool: str, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = (), read_only: bool = False
) -> str:
    permissions = Permissions.from_texts("default", allow, (), deny, project=Path("/p"))
    return permissions.decide(McpLike(tool, read_only=read_only), None).behavior


@pytest.mark.parametrize("rule", ["mcp__github", "mcp__github__*", "mcp__github__create_issue"])
def test_a_deny_rule_naming_the_server_or_tool_denies(rule: str) -> None:
    assert decide("mcp__github__create_issue", deny=(rule,)) == "deny"
    assert decide("mcp__github__create_issue", deny=(rule,), read_only=True) == "deny"


def test_a_server_rule_never_covers_another_server_with_a_longer_name() -> None:
    assert decide("mcp__github__x", deny=("mcp__git",)) == "ask"
    assert decide("mcp__github__x", allow=("mcp__git",)) == "ask"
    assert decide("mcp__github__x", allow=("mcp__git__*",)) == "ask"


def test_allow_rules_for_a_server_and_for_one_tool() -> None:
    assert decide("mcp__github__list", allow=("mcp__github",)) == "allow"
    assert decide("mcp__github__list", allow=("mcp__github__list",)) == "allow"
    assert decide("mcp__github__delete", allow=("mcp__github__list",)) == "ask"


def test_read_only_mcp_tools_run_unasked_and_others_ask() -> None:
    assert decide("mcp__docs__search", read_only=True) == "allow"
    assert decide("mcp__docs__write") == "ask"
