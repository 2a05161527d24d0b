"""Project memory: which instruction files load, in what order, and what their @imports may reach."""

from __future__ import annotations

from pathlib import Path

from piton.core.project.memory import load_memory
from piton.core.safety.policy import SandboxPolicy
from piton.prompt_setup import import_refusal


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_files_load_from_the_user_and_from_the_git_root_down(project: Path) -> None:
    (project / ".git").mkdir()
    home = Path.home()
    write(home / ".piton" / "AGENTS.md", "user: prefer short answers")
    write(project / "AGENTS.md", "root: run make test")
    write(project / "CLAUDE.local.md", "local: my sandbox db is on port 5433")
    sub = project / "services" / "api"
    write(sub / "CLAUDE.md", "api: use httpx, not requests")
    write(sub / ".claude" / "CLAUDE.md", "api-claude: keep handlers thin")
    memory = load_memory(sub)
    assert [(f.path, f.scope) for f in memory.files] == [
        (home / ".piton" / "AGENTS.md", "user"),
        (project / "AGENTS.md", "project"),
        (project / "CLAUDE.local.md", "project"),
        (sub / "CLAUDE.md", "project"),
        (sub / ".claude" / "CLAUDE.md", "project"),
    ]
    section = memory.prompt_section()
    assert section.startswith("# Project instructions")
    assert section.index("user: prefer") < section.index("root: run") < section.index("api: use httpx")


def test_imports_are_inlined_relative_to_the_importing_file(project: Path) -> None:
    (project / ".git").mkdir()
    write(project / "docs" / "testing.md", "Tests: pytest -q. See @style/python.md")
    write(project / "docs" / "style" / "python.md", "Style: ruff format.")
    write(project / "AGENTS.md", "Read these.\n@docs/testing.md\nDecorators like @property stay.")
    memory = load_memory(project)
    [agents] = memory.files
    assert "Tests: pytest -q. See Style: ruff format." in agents.text
    assert "@property stay" in agents.text and "@docs/testing.md" not in agents.text
    assert agents.imports == (project / "docs" / "testing.md", project / "docs" / "style" / "python.md")
    assert memory.warnings == []


def test_imports_inside_code_are_left_alone(project: Path) -> None:
    write(project / "notes.md", "IMPORTED")
    write(project / "AGENTS.md", "Use `@notes.md` literally.\n```\n@notes.md\n```\nBut @notes.md here.")
    [agents] = load_memory(project).files
    assert agents.text == "Use `@notes.md` literally.\n```\n@notes.md\n```\nBut IMPORTED here."


def test_import_depth_and_cycles_are_bounded(project: Path) -> None:
    for i in range(1, 7):
        write(project / f"level{i}.md", f"L{i} @level{i + 1}.md")
    write(project / "AGENTS.md", "start @level1.md")
    write(project / "a.md", "A @b.md")
    write(project / "b.md", "B @a.md")
    write(project / "CLAUDE.md", "cycle @a.md")
    memory = load_memory(project)
    agents, claude = memory.files
    assert agents.text.startswith("start L1 L2 L3 L4 @level5.md")
    assert claude.text == "cycle A B @a.md"
    assert any("at most 4 levels deep" in w for w in memory.warnings)
    assert any("a cycle" in w for w in memory.warnings)


def test_a_project_may_not_import_from_outside_it_nor_a_credential(project: Path, tmp_path: Path) -> None:
    (project / ".git").mkdir()
    outside = write(tmp_path / "elsewhere" / "notes.md", "OUTSIDE")
    secret = write(Path.home() / ".aws" / "credentials", "aws_secret_access_key = AKIA-SECRET")
    write(project / ".env", "API_KEY=sk-SECRET")
    write(project / "AGENTS.md", f"@{outside}\n@../elsewhere/notes.md\n@~/.aws/credentials\n@.env")
    write(Path.home() / ".piton" / "AGENTS.md", f"mine: @{outside}\nkeys: @~/.aws/credentials")
    policy = SandboxPolicy.create("workspace-write", project)
    memory = load_memory(project, refuse=import_refusal(policy))
    user, agents = memory.files
    assert user.text.startswith("mine: OUTSIDE"), "the user's own file may import from anywhere readable"
    assert "AKIA" not in user.text and "AKIA" not in agents.text
    assert "OUTSIDE" not in agents.text and "sk-SECRET" not in agents.text
    assert sum("only files inside the project" in w for w in memory.warnings) == 3
    assert sum("credential files" in w for w in memory.warnings) == 1
    assert sum("environment files" in w for w in memory.warnings) == 1
    assert secret.exists()


def test_a_project_file_that_is_a_symlink_out_of_the_project_is_not_loaded(project: Path) -> None:
    (project / ".git").mkdir()
    key = write(Path.home() / ".ssh" / "id_rsa", "-----BEGIN PRIVATE KEY----- SECRETKEY")
    (project / "CLAUDE.md").symlink_to(key)
    inside = write(project / "docs" / "agents.md", "Use tabs.")
    (project / "AGENTS.md").symlink_to(inside)
    policy = SandboxPolicy.create("workspace-write", project)
    memory = load_memory(project, refuse=import_refusal(policy))
    assert [f.text for f in memory.files] == ["Use tabs."], "a link inside the project is fine"
    assert memory.warnings == [
        f"{project / 'CLAUDE.md'}: not loaded: it leads outside the project (to {key})"
    ]


def test_the_users_claude_md_may_import_its_neighbours_but_not_the_credentials(project: Path) -> None:
    claude = Path.home() / ".claude"
    write(claude / "rules.md", "RULES: answer in English.")
    write(claude / ".credentials.json", '{"token": "SECRET"}')
    write(claude / "CLAUDE.md", "@rules.md\n@.credentials.json")
    policy = SandboxPolicy.create("workspace-write", project)
    memory = load_memory(project, refuse=import_refusal(policy))
    [user] = memory.files
    assert user.text.startswith("RULES: answer in English.\n@.credentials.json")
    assert len(memory.warnings) == 1 and "credential files" in memory.warnings[0]


def test_a_huge_instruction_file_is_cut_without_reading_it_all(project: Path) -> None:
    write(project / "AGENTS.md", "x" * 5_000_000)
    [agents] = load_memory(project).files
    assert len(agents.text) < 40_100 and agents.text.endswith(
        "[... the rest of the file is left out for length]"
    )


def test_diamond_imports_include_each_file_once_where_it_is_first_reached(project: Path) -> None:
    """Two files that import a third, on every level: the leaf was inlined 2**levels times."""
    (project / ".git").mkdir()
    write(project / "AGENTS.md", "top @l1a.md @l1b.md")
    for level in (1, 2, 3):
        for side in "ab":
            below = "@leaf.md @l1a.md" if level == 3 else f"@l{level + 1}a.md @l{level + 1}b.md"
            write(project / f"l{level}{side}.md", f"{level}{side} {below}")
    write(project / "leaf.md", "LEAF")
    write(project / "CLAUDE.md", "Also @AGENTS.md and @leaf.md")
    memory = load_memory(project)
    agents, claude = memory.files
    assert agents.text == (
        "top 1a 2a 3a LEAF @l1a.md 3b @leaf.md @l1a.md 2b @l3a.md @l3b.md 1b @l2a.md @l2b.md"
    )
    assert claude.text == "Also @AGENTS.md and @leaf.md", "both are in the prompt already"
    assert len(agents.imports) == len(set(agents.imports)) == 7
    assert memory.prompt_section().count("LEAF") == 1
    assert [w.split(": ", 1)[1] for w in memory.warnings] == [
        "@l1a.md was not imported: it imports itself (a cycle)"
    ] * 2


def test_a_top_level_file_already_imported_is_not_loaded_again(project: Path) -> None:
    write(project / "AGENTS.md", "agents @CLAUDE.md")
    write(project / "CLAUDE.md", "CLAUDE-TEXT")
    memory = load_memory(project)
    assert [f.path.name for f in memory.files] == ["AGENTS.md"]
    assert memory.prompt_section().count("CLAUDE-TEXT") == 1
