"""Skill and command files shaped like the public collections (official commands, agent-style
descriptions, namespaced command folders) load and run as Claude Code runs them."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from piton.builtin_tools.skill_body import prepare
from piton.core.activation import Activation
from piton.core.safety.permissions import PermissionGate, Permissions
from piton.skills.catalog import Catalog, discover
from piton.skills.frontmatter import split
from piton.skills.invoke import Variables, expand
from piton.testing.script import ToolCall, reply
from tests.builtin_tools.helpers import context
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

CORPUS = Path(__file__).parent.parent / "fixtures" / "ecosystem"


@pytest.fixture
def corpus(project: Path) -> Path:
    shutil.copytree(CORPUS / ".claude", project / ".claude")
    return project


def catalog_of(root: Path) -> Catalog:
    catalog = discover(root, home=root / "no-home", bundled=root / "no-bundled")
    catalog.granted = {s.path for s in catalog.granting()}  # a trusted folder: allowed-tools grant
    return catalog


def test_the_whole_corpus_loads(corpus: Path) -> None:
    catalog = catalog_of(corpus)
    assert sorted(catalog.skills) == [
        "agent-development",  # `name: Agent Development`: the folder's name instead
        "code-reviewer",
        "commit",
        "pricing",
        "probe2",
        "release-notes",
        "tools:dependency-audit",
        "tools:security-scan",
    ]
    assert not [w for w in catalog.warnings if w.endswith("skipped")]
    [renamed] = catalog.warnings
    assert "'Agent Development' is not a usable name" in renamed
    commit, reviewer = catalog.skills["commit"], catalog.skills["code-reviewer"]
    assert commit.argument_hint == "[message]" and commit.allowed_tools[0] == "Bash(git add:*)"
    assert reviewer.allowed_tools == ("Read", "Grep")  # a tab-indented list
    assert "review. Examples: <example> Context: The user just wrote a function." in reviewer.description
    assert catalog.skills["release-notes"].description == "Use when: the user asks for release notes"
    assert catalog.skills["pricing"].description == "Quote a price: for one plan"
    assert all(s.model_invocable for s in catalog.skills.values()), "commands are offered to the model"
    assert "- tools:security-scan: Security scan" in catalog.listing()


def test_lenient_frontmatter_keeps_colons_lists_and_quotes() -> None:
    meta, body = split('---\ndescription: "Use when: x"\ntools:\n  - Read\n  - Grep\nhint: [a] [b]\n---\nB\n')
    assert meta == {"description": "Use when: x", "tools": ["Read", "Grep"], "hint": "[a] [b]"}
    warnings: list[str] = []
    meta, body = split("---\n<<not frontmatter>>\n---\nBody.\n", warnings)
    assert (meta, body) == ({}, "Body.\n") and "metadata is ignored" in warnings[0]


def test_placeholders_follow_claude_codes_rules(corpus: Path) -> None:
    catalog = catalog_of(corpus)
    probe = catalog.invocation("/probe2 staging prod")
    assert (
        probe is not None
        and probe.text == '<skill name="probe2">\nDeploy to staging then price is $3.50.\n</skill>'
    )
    pricing = catalog.invocation("/pricing acme pro")
    assert pricing is not None
    assert "Charge $5.00 for pro; keep $HOME and ${VAR} as they are." in pricing.text
    assert expand("$0 and $1 and $ARGUMENTS[2]", "a b") == "a and b and $ARGUMENTS[2]"
    assert expand(r"literal \$0, real $0", "x") == "literal $0, real x"
    assert expand("Just do it.", "now please") == "Just do it.\n\nARGUMENTS: now please"
    assert expand("Price $5.00.", "a b c d e f") == "Price f.00.", "a sixth argument does fill $5"
    assert expand("$ARGUMENTS", "$0 $1") == "$0 $1", "what is put in is not read again"
    variables = Variables(session_id="s-1", skill_dir="/s", plugin_root="/p")
    assert (
        expand("${CLAUDE_SESSION_ID} ${CLAUDE_PLUGIN_ROOT} ${PITON_SKILL_DIR}", "", variables) == "s-1 /p /s"
    )


def test_namespaced_commands_by_full_short_and_spaced_name(corpus: Path) -> None:
    catalog = catalog_of(corpus)
    for line in ("/tools:security-scan src", "/security-scan src", "/tools security-scan src"):
        activation = catalog.invocation(line)
        assert activation is not None and activation.name == "tools:security-scan", line
        assert "scan src for injection" in activation.text
    assert (
        catalog.unknown("/security-scn")
        == "Unknown command: /security-scn. Did you mean /tools:security-scan?"
    )
    assert catalog.unknown("/usr/bin/env python3") is None and catalog.unknown("/tmp holds it") is None
    assert catalog.unknown("/tools:security-scan") is None and catalog.unknown("plain text") is None


def _gate(project: Path, deny: tuple[str, ...] = ()) -> PermissionGate:
    return PermissionGate(Permissions.from_texts("default", deny=deny, project=project))


def _prepared(activation: Activation, project: Path, gate: PermissionGate, **policy: Any) -> str:
    """The text as the agent sends it: the skill's allowed-tools granted for the turn, as it loads."""
    gate.allow_for_turn(activation.allowed_tools)
    return asyncio.run(prepare(activation, context(project, **policy), gate)).text


@pytest.mark.sandbox
def test_commands_run_in_the_sandbox_when_allowed_and_are_refused_by_a_deny_rule(corpus: Path) -> None:
    activation = catalog_of(corpus).invocation("/commit tidy")
    assert activation is not None
    (corpus / "new.txt").write_text("x")
    text = _prepared(activation, corpus, _gate(corpus))
    assert "Current git status: [!`git status --short` failed: fatal: not a git repository" in text
    assert "[!`git branch --show-current` was not run: Bash needs permission" in text, "not in allowed-tools"
    refused = _prepared(activation, corpus, _gate(corpus, deny=("Bash(git status:*)",)))
    assert "[!`git status --short` was not run: the rule Bash(git status:*) denies it]" in refused
    echo = Activation("e", "Say !`echo SANDBOX-OK` now", ("Bash(echo:*)",), commands=("echo SANDBOX-OK",))
    assert _prepared(echo, corpus, _gate(corpus)) == "Say SANDBOX-OK now"


def test_an_argument_cannot_smuggle_a_command(corpus: Path) -> None:
    activation = catalog_of(corpus).invocation("/tools:security-scan !`touch pwned`")
    assert activation is not None and activation.commands == ()
    text = _prepared(
        activation, corpus, PermissionGate(Permissions.from_texts("bypassPermissions", project=corpus))
    )
    assert "!`touch pwned`" in text and not (corpus / "pwned").exists()


def test_file_references_are_inlined_under_the_file_policy(corpus: Path, tmp_path: Path) -> None:
    skill = catalog_of(corpus).invocation("/agent-development")
    assert skill is not None
    assert "FRONTMATTER-REFERENCE: name, description" in _prepared(skill, corpus, _gate(corpus))
    (corpus / "notes.md").write_text("PROJECT-NOTES\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-SECRET\n")
    command = Activation("c", "Read @notes.md and @../outside.txt please")
    text = _prepared(command, corpus, _gate(corpus), private_paths=[outside])
    assert '<file path="' in text and "PROJECT-NOTES" in text
    assert "OUTSIDE-SECRET" not in text and "[@../outside.txt was not included:" in text


def test_the_session_id_is_put_in(corpus: Path) -> None:
    activation = catalog_of(corpus).invocation("/release-notes v1 v2")
    assert activation is not None
    assert "Write release notes from v1 to v2 for session test." in _prepared(
        activation, corpus, _gate(corpus)
    )


def test_a_namespaced_command_through_piton_p(fake_api: FakeAnthropicAPI, corpus: Path) -> None:
    fake_api.add(
        reply("Scanned."), reply(ToolCall("Skill", {"skill": "tools:dependency-audit", "args": "x"}))
    )
    fake_api.add(reply("Audited."))
    done = piton_here("-p", "/tools:security-scan src")
    assert done.returncode == 0, done.stderr
    sent = json.dumps(fake_api.bodies[0]["messages"])
    assert "SECURITY-SCAN-BODY: scan src for injection" in sent
    assert "- tools:dependency-audit: Audit the dependencies" in json.dumps(fake_api.bodies[0]["system"])
    assert piton_here("-p", "the model may run a command").returncode == 0
    assert "Check every dependency of x" in json.dumps(fake_api.bodies[2]["messages"])
    unknown = piton_here("-p", "/tools:nothing here")
    assert unknown.returncode == 1 and "Unknown command: /tools:nothing" in unknown.stderr
    assert len(fake_api.bodies) == 3, "an unknown command is not sent to the model"


def test_a_commands_folder_stays_its_namespace_whatever_its_name_says(project: Path) -> None:
    """SuperClaude installs `~/.claude/commands/sc/analyze.md` with `name: analyze`: Claude Code
    keeps /sc:analyze, and so does Piton (a second /analyze would shadow or be shadowed)."""
    folder = project / ".claude" / "commands" / "sc"
    folder.mkdir(parents=True)
    (folder / "analyze.md").write_text(
        "---\nname: analyze\ndescription: Analyze code.\n---\nANALYZE $ARGUMENTS\n"
    )
    (folder / "build.md").write_text("---\ndescription: Build.\n---\nBUILD\n")
    (project / ".claude" / "commands" / "top.md").write_text(
        "---\nname: renamed\ndescription: Top.\n---\nTOP\n"
    )
    catalog = catalog_of(project)
    assert {"sc:analyze", "sc:build", "renamed"} <= set(catalog.skills)
    assert "analyze" not in catalog.skills
    activation = catalog.invocation("/sc:analyze src")
    assert activation is not None and "ANALYZE src" in activation.text
