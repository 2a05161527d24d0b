"""Attacks on checkpoints and /rewind: a folder swapped for a symlink between a change and its
rewind (the restore must not follow it out of the project), and the checkpoints themselves, which
no sandboxed command may write (they decide what a rewind writes)."""

from __future__ import annotations

from pathlib import Path

from piton.builtin_tools.bash import Bash
from piton.builtin_tools.read import Read
from piton.builtin_tools.write import Write
from piton.core.checkpoints import Checkpoints
from piton.core.safety.policy import PolicyError
from piton.core.tools import ToolContext
from tests.builtin_tools.helpers import call, context


def changed_in_a_turn(tmp_path: Path) -> tuple[Path, Path, Checkpoints, ToolContext]:
    """A project whose src/old.txt the Write tool changed in turn-1, with its checkpoints."""
    project, outside, checkpoints = setup(tmp_path)
    ctx = context(project)
    ctx.checkpoints = checkpoints
    checkpoints.begin("turn-1", 0, "change things")
    assert not call(Read(), ctx, file_path=str(project / "src" / "old.txt")).is_error
    assert not call(Write(), ctx, file_path=str(project / "src" / "old.txt"), content="changed\n").is_error
    return project, outside, checkpoints, ctx


def setup(tmp_path: Path) -> tuple[Path, Path, Checkpoints]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "new.txt").write_text("victim's\n")
    (outside / "old.txt").write_text("victim's\n")
    (project / "src" / "old.txt").write_text("original\n")
    policy = context(project).policy
    assert policy is not None

    def writable(path: Path) -> bool:
        try:
            return policy.check_write(path) == path
        except PolicyError:
            return False

    return project, outside, Checkpoints(tmp_path / "state" / "checkpoints", writable=writable)


def test_a_rewind_does_not_follow_a_folder_swapped_for_a_symlink(tmp_path: Path) -> None:
    project, outside, checkpoints, ctx = changed_in_a_turn(tmp_path)
    assert not call(Write(), ctx, file_path=str(project / "src" / "new.txt"), content="created\n").is_error
    # later, a command replaces the folder with a link to a folder outside the project
    (project / "src").rename(project / "src.gone")
    (project / "src").symlink_to(outside)

    plan = checkpoints.plan("turn-1")
    done, problems = checkpoints.restore(plan, overwrite=True)
    assert done == []
    assert len(problems) == 2 and all("left as it is" in p for p in problems), problems
    assert (outside / "new.txt").read_text() == "victim's\n" and (
        outside / "old.txt"
    ).read_text() == "victim's\n"


def test_no_sandboxed_command_can_write_the_checkpoints(tmp_path: Path) -> None:
    project, _, checkpoints, ctx = changed_in_a_turn(tmp_path)
    assert checkpoints.folder is not None
    index = checkpoints.folder / "index.jsonl"
    before = index.read_bytes()
    planted = '{"type": "file", "turn": "turn-1", "path": "/etc/passwd", "blob": null}'
    result = call(Bash(), ctx, command=f"echo '{planted}' >> {index}; ls {checkpoints.folder}/blobs")
    assert result.is_error
    assert index.read_bytes() == before
    reloaded = Checkpoints(checkpoints.folder).plan("turn-1")
    assert [c.path for c in reloaded.changes] == [project / "src" / "old.txt"]
