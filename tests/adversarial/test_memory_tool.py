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
    attempts = [
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


def test_the_memory_folder_itself_as_a_link_leads_nowhere(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.md").write_text("keep")
    link = tmp_path / "memories"
    link.symlink_to(elsewhere)
    # the folder is Piton's choice, resolved once: a link in its place is the place itself, and what
    # is inside it is still reached without following any further link
    tool = Memory(link)
    assert "keep" in text(call(tool, context(tmp_path), command="view", path="/memories/keep.md"))
