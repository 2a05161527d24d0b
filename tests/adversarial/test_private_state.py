"""Piton's state — transcripts, memory notes, the prompt's history — is closed to other accounts:
its folder is 0700, and one an earlier version left open is closed at the next run. Through the
`piton` command's routing against the scripted API."""

from __future__ import annotations

import stat
from pathlib import Path

from piton.core.conversation.session import state_dir
from piton.testing.script import reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here


def _run() -> None:
    done = piton_here("-p", "hi")
    assert done.returncode == 0, done.stderr


def test_a_new_state_folder_is_closed_to_other_accounts(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("hello"))
    _run()
    assert stat.S_IMODE(state_dir().stat().st_mode) == 0o700


def test_a_state_folder_left_open_is_closed(fake_api: FakeAnthropicAPI, project: Path) -> None:
    notes = state_dir() / "memories" / "p"
    notes.mkdir(parents=True)
    (notes / "prefs.md").write_text("the user's notes")
    (state_dir() / "repl_history").write_text("+a prompt\n")
    for folder in (state_dir(), state_dir() / "memories", notes):
        folder.chmod(0o755)
    fake_api.add(reply("hello"))
    _run()
    assert stat.S_IMODE(state_dir().stat().st_mode) == 0o700
