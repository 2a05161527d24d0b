"""Checkpoints read back from a damaged index: an unreadable line, or a file line whose turn line is
lost, is skipped; what remains still restores."""

from __future__ import annotations

from pathlib import Path

from piton.core.checkpoints import Checkpoints


def test_a_damaged_index_loads_what_it_can(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("before\n")
    folder = tmp_path / "checkpoints"
    checkpoints = Checkpoints(folder)
    checkpoints.begin("t1", 0, "change a")
    checkpoints.before_change(target, b"before\n")
    target.write_text("after\n")
    checkpoints.after_change(target, b"after\n")
    with (folder / "index.jsonl").open("a") as f:
        f.write('{"type": "file", "turn": "lost-turn", "path": "/etc/passwd", "blob": null}\n')
        f.write('{"type": "turn", "id": "t2", "posi')  # torn by a killed process

    reloaded = Checkpoints(folder)
    assert [t.id for t in reloaded.turns] == ["t1"]
    done, problems = reloaded.restore(reloaded.plan("t1"))
    assert done == [target] and problems == [] and target.read_text() == "before\n"
    reloaded.begin("t3", 2, "a later turn")  # written on a line of its own, after the torn one
    assert [t.id for t in Checkpoints(folder).turns] == ["t1", "t3"]
