"""Finding skills and commands in real folders, reading their frontmatter, and filling in arguments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from piton.core.activation import skill_name
from piton.skills.catalog import Catalog, Skill, SkillError, discover
from piton.skills.invoke import expand


def skill(root: Path, name: str, text: str) -> Path:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def simple(description: str, body: str = "Do the thing.", extra: str = "") -> str:
    return f"---\ndescription: {description}\n{extra}---\n{body}\n"


def named(catalog: Catalog, name: str) -> Skill:
    """The skill named `name`, which the test expects the catalog to have."""
    got = catalog.get(name)
    assert got is not None, f"no skill {name!r}"
    return got


def test_the_nearest_definition_of_a_name_wins(project: Path) -> None:
    home = Path.home()
    skill(project / ".piton" / "skills", "review", simple("piton project review"))
    skill(project / ".claude" / "skills", "review", simple("claude project review"))
    skill(project / ".claude" / "skills", "lint", simple("claude project lint"))
    skill(home / ".piton" / "skills", "lint", simple("user lint"))
    skill(home / ".claude" / "skills", "deploy", simple("user deploy"))
    catalog = discover(project)
    assert named(catalog, "review").description == "piton project review"
    assert named(catalog, "lint").description == "claude project lint"
    assert (named(catalog, "deploy").description, named(catalog, "deploy").source) == ("user deploy", "user")
    assert named(catalog, "commit").source == "bundled", "the bundled skills come last"
    hidden = {(str(h.path.relative_to(h.path.parents[2])), h.source) for h, _ in catalog.shadowed}
    assert {("skills/review/SKILL.md", "project"), ("skills/lint/SKILL.md", "user")} <= hidden
    assert ("bundled/review/SKILL.md", "bundled") in hidden
    assert catalog.warnings == []


def test_a_subfolder_finds_the_repositorys_skills(project: Path) -> None:
    (project / ".git").mkdir()
    skill(project / ".claude" / "skills", "lint", simple("lint it"))
    inner = project / "src" / "pkg"
    inner.mkdir(parents=True)
    assert discover(inner).get("lint") is not None


def test_every_frontmatter_field_is_read(project: Path) -> None:
    skill(
        project / ".claude" / "skills",
        "pdf-tools",
        "---\n"
        "name: pdf-tools\n"
        "description: >-\n  Fill PDF forms and extract\n  their text.\n"
        "allowed-tools: Bash(python3:*), Read\n"
        "model: haiku\n"
        'argument-hint: "[file]"\n'
        "license: Apache-2.0\n"
        "metadata:\n  author: someone\n  version: '1.2'\n"
        "---\n# PDF tools\nUse scripts/fill.py.\n",
    )
    skill(
        project / ".claude" / "skills",
        "secret",
        simple(
            "user only", extra="disable-model-invocation: true\nallowed-tools: [Read, 'Bash(git log:*)']\n"
        ),
    )
    skill(project / ".claude" / "skills", "helper", simple("model only", extra="user-invocable: false\n"))
    catalog = discover(project)
    pdf = catalog.get("pdf-tools")
    assert pdf is not None
    assert pdf.description == "Fill PDF forms and extract their text."
    assert pdf.allowed_tools == ("Bash(python3:*)", "Read")
    assert (pdf.model, pdf.argument_hint) == ("haiku", "[file]")
    assert pdf.metadata == {"license": "Apache-2.0", "metadata": {"author": "someone", "version": "1.2"}}
    assert named(catalog, "secret").allowed_tools == ("Read", "Bash(git log:*)")
    names_for_model = [s.name for s in catalog.for_model()]
    names_for_user = [s.name for s in catalog.for_user()]
    assert "secret" not in names_for_model and "secret" in names_for_user
    assert "helper" in names_for_model and "helper" not in names_for_user
    with pytest.raises(SkillError, match="only the user may start it"):
        catalog.activate("secret", "")


def test_a_broken_file_is_skipped_with_one_warning_and_the_rest_load(project: Path) -> None:
    root = project / ".claude" / "skills"
    skill(root, "good", simple("fine"))
    broken = {
        "no-description": "---\nname: no-description\n---\nbody\n",
        "no-close": "---\ndescription: x\nbody without the closing line\n",
        "empty-body": "---\ndescription: x\n---\n\n",
        "list-description": "---\ndescription: [a, b]\n---\nbody\n",
    }
    for name, text in broken.items():
        skill(root, name, text)
    # flawed but usable, as Claude Code loads them: said, not skipped
    skill(root, "bad-yaml", "---\ndescription: [unclosed\n---\nbody\n")
    skill(root, "bad-name", "---\nname: has spaces\ndescription: x\n---\nbody\n")
    (root / "latin1").mkdir()
    (root / "latin1" / "SKILL.md").write_bytes(b"---\ndescription: caf\xe9\n---\nbody\n")
    catalog = discover(project)
    assert catalog.get("good") is not None and catalog.get("bad-yaml") is not None
    assert catalog.get("bad-name") is not None
    assert len(catalog.warnings) == len(broken) + 2
    for name in [*broken, "latin1"]:
        [warning] = [w for w in catalog.warnings if f"/{name}/SKILL.md:" in w]
        assert warning.endswith("; skipped")
    assert any("'has spaces' is not a usable name" in w for w in catalog.warnings)
    assert any("no closing '---'" in w for w in catalog.warnings)
    assert any("not UTF-8" in w for w in catalog.warnings)


def test_commands_are_files_named_by_their_stem(project: Path) -> None:
    commands = project / ".claude" / "commands"
    (commands / "ops").mkdir(parents=True)
    (commands / "ops" / "deploy.md").write_text("# Deploy to $1\nRun the deploy for $ARGUMENTS.\n")
    (commands / "fix.md").write_text(
        "---\ndescription: Fix an issue\nargument-hint: <issue>\nmodel: opus\n---\nFix issue #$0.\n"
    )
    catalog = discover(project)
    deploy, fix = catalog.get("deploy"), catalog.get("fix")  # `ops:deploy`, by its short name
    assert deploy is not None and fix is not None
    assert (deploy.kind, deploy.description, deploy.directory) == ("command", "Deploy to $1", None)
    assert (fix.description, fix.argument_hint, fix.model) == ("Fix an issue", "<issue>", "opus")
    assert deploy.name == "ops:deploy" and deploy.model_invocable, "the model may run commands too"
    activation = catalog.invocation("/fix 42 quickly")
    assert activation is not None and activation.model == "opus"
    assert skill_name(activation.text) == "fix" and "Fix issue #42." in activation.text
    assert catalog.invocation("/nothing here") is None and catalog.invocation("fix 42") is None


def test_arguments_fill_the_placeholders() -> None:
    assert expand("Review $ARGUMENTS now.", "src/a.py src/b.py", None) == "Review src/a.py src/b.py now."
    assert expand("From $0 to $1, not $2.", 'main "feature x"', None) == "From main to feature x, not $2."
    assert expand("Just do it.", "with care", None) == "Just do it.\n\nARGUMENTS: with care"
    assert expand("Just do it.", "", None) == "Just do it."
    assert (
        expand("Run ${PITON_SKILL_DIR}/run.sh and ${CLAUDE_SKILL_DIR}/x", "", "/s")
        == "Run /s/run.sh and /s/x"
    )
    assert expand("Cost: $10 and $ARGUMENTS_X", "a", None) == "Cost: $10 and $ARGUMENTS_X\n\nARGUMENTS: a"
    assert expand("Unbalanced $0", "'oops", None) == "Unbalanced 'oops"


def test_the_listing_stays_within_its_budget_and_says_how_to_find_the_rest(project: Path) -> None:
    root = project / ".claude" / "skills"
    for i in range(40):
        skill(root, f"skill-{i:02d}", simple(f"Skill number {i}. Do NOT use for billing. " + "x" * 2_000))
    catalog = discover(project, bundled=project / "no-bundled")
    listing = catalog.listing(budget=16_000)
    assert len(listing) <= 16_100
    lines = listing.splitlines()
    assert lines[0].startswith("- skill-00: Skill number 0. Do NOT use for billing.") and lines[0].endswith(
        "…"
    )
    assert len(lines[0]) == len("- skill-00: ") + 1_500, "descriptions keep up to 1,500 characters"
    left = 40 - (len(lines) - 1)
    assert lines[-1] == f"- … and {left} more, not listed for length: use SearchSkills"
    assert catalog.left_out(16_000) == left
    assert next(name for _, name, _ in catalog.search("number 39")) == "skill-39"


def test_the_budget_grows_with_the_context_window() -> None:
    from piton.core.listing import LISTING_BUDGET, listing_budget

    assert listing_budget(200_000) == 16_000 and listing_budget(1_000_000) == 80_000
    assert listing_budget(100_000) == LISTING_BUDGET


def test_a_real_skill_folder_loads_as_it_is(project: Path) -> None:
    folder = Path.home() / ".claude" / "skills" / "changelog"
    (folder / "scripts").mkdir(parents=True)
    (folder / "reference").mkdir()
    (folder / "scripts" / "collect.py").write_text("import sys\nprint('entries for', sys.argv[1:])\n")
    (folder / "reference" / "style.md").write_text("# Changelog style\nKeep a Changelog 1.1.\n")
    (folder / "LICENSE.txt").write_text("Apache License 2.0\n")
    (folder / "SKILL.md").write_text(
        "---\n"
        "name: changelog\n"
        "description: Update CHANGELOG.md from the commits since the last tag. Use when preparing a release.\n"
        "license: Complete terms in LICENSE.txt\n"
        "allowed-tools: Bash(python3:*) Read\n"
        "---\n\n"
        "# Changelog\n\n"
        "1. Run `python3 ${CLAUDE_SKILL_DIR}/scripts/collect.py $ARGUMENTS`.\n"
        "2. Follow [the style guide](reference/style.md).\n"
    )
    catalog = discover(project)
    found = catalog.get("changelog")
    assert found is not None and catalog.warnings == []
    assert found.directory == folder and found.allowed_tools == ("Bash(python3:*)", "Read")
    text = catalog.activate("changelog", "v1.2").text
    assert f'<skill name="changelog" dir="{folder}">' in text
    assert f"python3 {folder}/scripts/collect.py v1.2" in text
    assert "[the style guide](reference/style.md)" in text


def test_an_empty_catalog_lists_nothing() -> None:
    assert Catalog().listing() == "" and Catalog().prompt_section() == ""


def test_one_folder_that_cannot_be_read_is_skipped_alone(project: Path) -> None:
    """chmod 000 stops a user, not root; a link that loops fails for both, by the same road."""
    root = project / ".claude" / "skills"
    skill(root, "good", simple("fine"))
    locked = skill(root, "locked", simple("locked away")).parent
    (root / "loop").symlink_to("loop")
    (project / ".claude" / "commands").mkdir()
    (project / ".claude" / "commands" / "ship.md").write_text("Ship it.\n")
    locked.chmod(0)
    try:
        catalog = discover(project)
    finally:
        locked.chmod(0o755)
    assert catalog.get("good") is not None and catalog.get("ship") is not None
    [loop] = [w for w in catalog.warnings if w.startswith(str(root / "loop"))]
    assert (
        loop == f"{root / 'loop'}: cannot read this skill folder (Too many levels of symbolic links); skipped"
    )
    if os.geteuid() == 0:
        assert catalog.get("locked") is not None and catalog.warnings == [loop]
    else:
        assert catalog.get("locked") is None
        assert catalog.warnings == [
            f"{locked}: cannot read this skill folder (Permission denied); skipped",
            loop,
        ]


def test_links_to_nothing_and_files_in_a_folders_place_are_named(project: Path) -> None:
    root = project / ".claude" / "skills"
    skill(root, "good", simple("fine"))
    (root / "gone").symlink_to(project / "nowhere")
    (root / "not-a-file").mkdir()
    (root / "not-a-file" / "SKILL.md").mkdir()
    (root / "dangling").mkdir()
    (root / "dangling" / "SKILL.md").symlink_to(project / "nowhere.md")
    (root / "README.md").write_text("These are our skills.\n")  # a stray file is no skill, and no problem
    (project / ".piton").mkdir()
    (project / ".piton" / "skills").write_text("a file where the skills folder belongs\n")
    commands = project / ".piton" / "commands"
    commands.mkdir()
    (commands / "dangling.md").symlink_to(project / "nowhere.md")
    (commands / "fine.md").write_text("Do it.\n")
    catalog = discover(project, bundled=project / "no-bundled")
    assert sorted(catalog.skills) == ["fine", "good"]
    assert catalog.warnings == [
        f"{project / '.piton' / 'skills'}: cannot list it (Not a directory); skipped",
        f"{commands / 'dangling.md'}: cannot read it: No such file or directory; skipped",
        f"{root / 'dangling'}: its SKILL.md is a link to nothing; skipped",
        f"{root / 'gone'}: it is a link to nothing; skipped",
        f"{root / 'not-a-file'}: its SKILL.md is not a regular file; skipped",
    ]


def test_a_command_folder_that_cannot_be_listed_is_named_and_the_rest_load(project: Path) -> None:
    commands = project / ".claude" / "commands"
    (commands / "ops").mkdir(parents=True)
    (commands / "ops" / "deploy.md").write_text("Deploy.\n")
    (commands / "review.md").write_text("Review.\n")
    (commands / "loop").symlink_to("loop")  # os.walk does not follow links: as a file, not an .md one
    (commands / "loop.md").symlink_to("loop.md")
    (commands / "ops").chmod(0)
    try:
        catalog = discover(project, bundled=project / "no-bundled")
    finally:
        (commands / "ops").chmod(0o755)
    loop = f"{commands / 'loop.md'}: cannot read it: Too many levels of symbolic links; skipped"
    if os.geteuid() == 0:
        assert sorted(catalog.skills) == ["ops:deploy", "review"] and catalog.warnings == [loop]
    else:
        assert sorted(catalog.skills) == ["review"]
        assert catalog.warnings == [f"{commands / 'ops'}: cannot list it (Permission denied); skipped", loop]


def test_a_configuration_folder_that_cannot_be_listed_is_named_once(project: Path) -> None:
    skill(project / ".piton" / "skills", "good", simple("fine"))
    (project / ".claude").write_text("a file where the folder belongs\n")
    catalog = discover(project, bundled=project / "no-bundled")
    assert list(catalog.skills) == ["good"]
    assert catalog.warnings == [f"{project / '.claude'}: cannot list it (Not a directory); skipped"]
