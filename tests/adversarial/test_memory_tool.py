"""The memory tool writes outside the sandbox, into Piton's own folder (or the project's
`.piton/memories`, which commands can reach). A symbolic link planted there must not lead a read, a
write, an edit, a rename or a delete to another file."""

from __future__ import annotations

from pathlib import Path

from piton.builtin_tools.memory import Memory
from tests.builtin_tools.helpers import call, context, text


def test_links_planted_in_the_memory_folder_are_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "project" / ".piton" / "memories"
    root.mkdir(parents=True)
    (root / "note.md").symlink_to(victim)
    (root / "dir").symlink_to(outside)
    tool, ctx = Memory(root), context(tmp_path / "project")
    attempts: list[dict[str, object]] = [
        {"command": "view", "path": "/memories/note.md"},
        {"command": "create", "path": "/memories/note.md", "file_text": "pwned"},
        {"command": "str_replace", "path": "/memories/note.md", "old_str": "secret", "new_str": "pwned"},
        {"command": "insert", "path": "/memories/note.md", "insert_line": 0, "insert_text": "pwned"},
        {"command": "create", "path": "/memories/dir/planted.md", "file_text": "pwned"},
        {"command": "rename", "old_path": "/memories/dir/x", "new_path": "/memories/y"},
    ]
    for args in attempts:
        result = call(tool, ctx, **args)
        assert result.is_error, (args, text(result))
        assert "secret" not in text(result)
    assert victim.read_text() == "secret\n" and list(outside.iterdir()) == []
    deleted = call(tool, ctx, command="delete", path="/memories/note.md")  # removes the link, not its target
    assert not deleted.is_error and victim.read_text() == "secret\n" and not (root / "note.md").is_symlink()
    listing = text(call(tool, ctx, command="view", path="/memories"))
    assert "planted" not in listing and "victim" not in listing


def test_a_memory_folder_swapped_for_a_link_is_refused(tmp_path: Path) -> None:
    # the user opted into `.piton/memories`; the project (or a command) made it a link to a folder
    # outside: nothing may be read or written through it
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("keep")
    project = tmp_path / "project"
    (project / ".piton").mkdir(parents=True)
    (project / ".piton" / "memories").symlink_to(outside)
    tool, ctx = Memory(project / ".piton" / "memories"), context(project)
    for args in (
        {"command": "view", "path": "/memories/keep.md"},
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/pwned", "file_text": "pwned"},
    ):
        result = call(tool, ctx, **args)
        assert result.is_error and "keep" not in text(result), args
    assert sorted(p.name for p in outside.iterdir()) == ["keep.md"]
    (project / ".piton" / "memories").unlink()
    (project / ".piton").rmdir()
    (project / ".piton").symlink_to(outside)  # a link one level up is refused as well
    result = call(tool, ctx, command="create", path="/memories/pwned", file_text="pwned")
    assert result.is_error and sorted(p.name for p in outside.iterdir()) == ["keep.md"]


def test_a_link_to_a_folder_is_not_listed_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "sub"
    outside.mkdir(parents=True)
    (outside / "secret-name.txt").write_text("x")
    root = tmp_path / "memories"
    root.mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    tool = Memory(root)
    result = call(tool, context(tmp_path), command="view", path="/memories/link/sub")
    assert result.is_error and "secret-name" not in text(result)
    assert "secret-name" not in text(call(tool, context(tmp_path), command="view", path="/memories"))
