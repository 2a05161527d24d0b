"""Attacks on the file tools: a folder swapped for a symlink while a tool works on a path under it
(E1), paths that are not paths (R1), what root may read (E6) and credential files the sandbox hides
(S1). The tools run in-process, as the agent runs them; the swapping is done by real threads and
real sandboxed commands."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from piton.builtin_tools.bash import Bash
from piton.builtin_tools.edit import Edit
from piton.builtin_tools.glob import Glob
from piton.builtin_tools.grep import Grep
from piton.builtin_tools.read import Read
from piton.builtin_tools.write import Write
from piton.core.tools import ToolContext, ToolResult
from piton.testing.script import ToolCall, reply
from tests.adversarial.conftest import SECRET, piton
from tests.builtin_tools.helpers import call, call_async, context
from tests.fakes.fake_api import FakeAnthropicAPI

ATTEMPTS = 400
TIME_BOUND_S = 8.0


_FLIPPER = """
import ctypes, os, sys
link, other = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[1] + ".swap")
os.symlink(sys.argv[2], other)
libc = ctypes.CDLL(None, use_errno=True)
while True:  # renameat2(RENAME_EXCHANGE): the folder and the symlink trade places atomically
    libc.renameat2(-100, link, -100, other, 2)
"""


@contextmanager
def flipping(link: Path, real_dir: Path, elsewhere: Path) -> Iterator[None]:
    """Keep swapping `link` between a real folder of the project and a symlink to `elsewhere`, each
    swap one atomic rename, from another process (truly in parallel) until the block ends."""
    real_dir.rename(link)
    flipper = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(link), str(elsewhere)])
    try:
        time.sleep(0.05)
        yield
    finally:
        flipper.kill()
        flipper.wait()


def text_of(result: ToolResult) -> str:
    return result.content if isinstance(result.content, str) else repr(result.content)


def attempts() -> Iterator[int]:
    deadline = time.monotonic() + TIME_BOUND_S
    for attempt in range(ATTEMPTS):
        if time.monotonic() > deadline:
            return
        yield attempt


def test_read_never_follows_a_folder_swapped_for_a_symlink(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "keys").mkdir(parents=True)
    (ws / "keys" / "id_rsa").write_text("a harmless file of the project\n")
    ctx = context(ws)
    harmless = 0
    with flipping(ws / "d", ws / "keys", home / ".ssh"):
        for attempt in attempts():
            out = text_of(call(Read(), ctx, file_path=str(ws / "d" / "id_rsa")))
            assert SECRET not in out, f"attempt {attempt}: Read followed the swapped folder to ~/.ssh"
            harmless += "harmless" in out
    assert harmless > 0  # the race was real: the project's own file was read between swaps


def test_write_never_lands_outside_through_a_swapped_folder(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ctx = context(ws)
    written = 0
    with flipping(ws / "d", ws / "sub", home):
        for attempt in attempts():
            name = f"planted{attempt}"
            out = text_of(call(Write(), ctx, file_path=str(ws / "d" / name), content="alias ls='rm -rf ~'\n"))
            assert not (home / name).exists(), f"attempt {attempt}: Write followed the swap into $HOME: {out}"
            written += out.startswith("Created")
    assert written > 0
    assert not list(home.glob("planted*")) and not list(home.glob(".piton-*"))


def test_edit_never_changes_a_file_outside_through_a_swapped_folder(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / ".bashrc").write_text("export A=1\n")
    (home / ".bashrc").write_text("export A=1\n")
    ctx = context(ws)
    call(Read(), ctx, file_path=str(ws / "sub" / ".bashrc"))
    with flipping(ws / "d", ws / "sub", home):
        for attempt in attempts():
            call(Edit(), ctx, file_path=str(ws / "d" / ".bashrc"), old_string="A=1", new_string="A=2")
            call(Edit(), ctx, file_path=str(ws / "d" / ".bashrc"), old_string="A=2", new_string="A=1")
            assert (home / ".bashrc").read_text() == "export A=1\n", f"attempt {attempt}: ~/.bashrc changed"


@pytest.mark.sandbox
def test_grep_never_searches_a_secret_through_a_swapped_folder(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "keys").mkdir(parents=True)
    (ws / "keys" / "notes").write_text("BEGIN OPENSSH notes of the project\n")
    ctx = context(ws)
    with flipping(ws / "d", ws / "keys", home / ".ssh"):
        for attempt in attempts():
            if attempt == 150:
                break  # each search starts a sandbox: fewer attempts, the same bound
            out = text_of(
                call(Grep(), ctx, pattern="BEGIN OPENSSH", path=str(ws / "d"), output_mode="content")
            )
            assert SECRET not in out, f"attempt {attempt}: Grep searched ~/.ssh"


@pytest.mark.sandbox
def test_file_tools_wait_for_a_command_that_swaps_a_folder(tmp_path: Path, home: Path) -> None:
    """A command of one subagent turns a folder into a symlink to ~/.ssh for half a second; a Read
    of another subagent in that half second waits for the command and reads the project's file."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "id_rsa").write_text("the project's own file\n")
    main = context(ws)
    other = ToolContext(cwd=ws, session_id="sub", policy=main.policy, lock=main.lock)
    swap = f"mv d d.real && ln -s {home}/.ssh d && sleep 0.8 && rm d && mv d.real d"

    async def race() -> tuple[ToolResult, ToolResult]:
        command = asyncio.ensure_future(call_async(Bash(), main, command=swap))
        await asyncio.sleep(0.3)
        read = await call_async(Read(), other, file_path=str(ws / "d" / "id_rsa"))
        return await command, read

    command, read = asyncio.run(race())
    assert not command.is_error, text_of(command)
    assert "the project's own file" in text_of(read) and SECRET not in text_of(read)


def test_a_nul_byte_in_a_path_is_an_error_result_and_the_run_goes_on(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    for name, args in (
        ("Read", {"file_path": "a\u0000b"}),
        ("Write", {"file_path": "a\u0000b", "content": "x"}),
        ("Edit", {"file_path": "a\u0000b", "old_string": "x", "new_string": "y"}),
        ("Grep", {"pattern": "x", "path": "a\u0000b"}),
        ("Glob", {"pattern": "*", "path": "a\u0000b"}),
    ):
        fake_api.add(reply(ToolCall(name, args)), reply("still here"))
        done = piton("-p", "go", "--permission-mode", "acceptEdits", cwd=project)
        assert (done.returncode, done.stdout) == (0, "still here\n"), (name, done.stderr)
        result = fake_api.bodies[-1]["messages"][-1]["content"][0]
        assert result["is_error"] and "NUL" in str(result["content"]), (name, result)


def test_root_does_not_read_another_users_private_file(tmp_path: Path) -> None:
    """The sandbox drops root's power to override permissions; the file tools hold to the same."""
    ws = tmp_path / "ws"
    ws.mkdir()
    private = ws / "theirs.txt"
    private.write_text(SECRET)
    private.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(private, 54321, 54321)  # as root: owned by someone else; otherwise the kernel refuses
    else:
        private.chmod(0o000)
    out = call(Read(), context(ws), file_path=str(private))
    assert out.is_error and SECRET not in text_of(out)


@pytest.mark.parametrize(
    "name",
    [".vault-token", ".pgpass", ".bash_history", ".zsh_history", ".python_history", ".kube/config",
     ".config/rclone/rclone.conf", ".azure/accessTokens.json", ".config/gcloud/credentials.db",
     ".terraform.d/credentials.tfrc.json", ".m2/settings.xml", ".npmrc", ".pypirc",
     ".docker/desktop/settings.json", ".mozilla/firefox/cookies.sqlite"],
)  # fmt: skip
def test_credential_files_are_not_read(tmp_path: Path, home: Path, name: str) -> None:
    secret = home / name
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = call(Read(), context(ws), file_path=str(secret))
    assert out.is_error and SECRET not in text_of(out)
    grep = call(Grep(), context(ws), pattern="OPENSSH", path=str(secret.parent), output_mode="content")
    assert SECRET not in text_of(grep)


def test_credential_paths_can_be_added(tmp_path: Path, home: Path) -> None:
    (home / ".company-token").write_text(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    out = call(
        Read(), context(ws, extra_credentials=["~/.company-token"]), file_path=str(home / ".company-token")
    )
    assert out.is_error and "credential" in text_of(out)


@pytest.mark.sandbox
def test_glob_lists_only_what_the_sandbox_shows(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = text_of(call(Glob(), context(ws), pattern="*", path=str(home / ".ssh")))
    assert "id_rsa" not in out


def test_credential_paths_from_the_settings_are_not_read(
    fake_api: FakeAnthropicAPI, project: Path, home: Path
) -> None:
    (home / ".piton").mkdir()
    (home / ".piton" / "settings.json").write_text('{"sandbox": {"credentialPaths": ["~/.company-token"]}}')
    (home / ".company-token").write_text(SECRET)
    fake_api.add(reply(ToolCall("Read", {"file_path": str(home / ".company-token")})), reply("done"))
    done = piton("-p", "go", cwd=project)
    assert done.returncode == 0, done.stderr
    result = fake_api.bodies[-1]["messages"][-1]["content"][0]
    assert result["is_error"] and SECRET not in str(result["content"])


def test_edit_deny_rules_cover_notebook_edit(tmp_path: Path) -> None:
    from piton.builtin_tools.notebook import NotebookEdit, NotebookEditInput
    from piton.core.safety.permissions import Permissions
    from tests.builtin_tools.helpers import context

    (tmp_path / "secret").mkdir()
    ctx = context(tmp_path)
    tool = NotebookEdit()
    content = tool.rule_content(NotebookEditInput(notebook_path="secret/x.ipynb", new_source="x"), ctx)
    assert content == str((tmp_path / "secret" / "x.ipynb").resolve())
    permissions = Permissions.from_texts("acceptEdits", deny=["Edit(secret/**)"], project=tmp_path)
    assert permissions.decide(tool, content).behavior == "deny"


def test_a_file_whose_name_is_not_utf8_is_shown_by_a_name_the_tools_take_back(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """Glob and Grep once showed `name_\\xff.txt` as `name_�.txt`, a name no file has: the model
    could find the file but never open it. It is shown with the byte escaped, which Read and Edit
    take back, and nothing on the way (the checkpoint of the edit) fails on the name."""
    raw = os.fsencode(project) + b"/name_\xff.txt"
    with open(raw, "wb") as f:
        f.write(b"hello latin\n")
    shown = "name_\\xff.txt"
    fake_api.add(
        reply(ToolCall("Glob", {"pattern": "*.txt"})),
        reply(ToolCall("Grep", {"pattern": "hello", "output_mode": "files_with_matches"})),
        reply(ToolCall("Read", {"file_path": shown})),
        reply(ToolCall("Edit", {"file_path": shown, "old_string": "hello", "new_string": "bye"})),
        reply("done"),
    )
    done = piton("-p", "go", "--permission-mode", "acceptEdits", cwd=project)
    assert done.returncode == 0, done.stderr
    found, grepped, read, edited = (last_result(fake_api.bodies[i]) for i in range(1, 5))
    assert found.endswith(shown) and grepped.endswith(shown), (found, grepped)
    assert "hello latin" in read and not edited.startswith(("Edit failed", "Error")), edited
    with open(raw, "rb") as f:
        assert f.read() == b"bye latin\n"


def last_result(body: dict[str, Any]) -> str:
    """The text of the newest tool result a request carries."""
    [block] = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    content = block["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def _bomb_pdf(raw_mb: int) -> bytes:
    """A one-page PDF whose content stream inflates to `raw_mb` MB of text operators (about 3 KB per
    MB compressed)."""
    import io
    import zlib

    line = b"BT /F1 12 Tf 10 10 Td (" + b"A" * 60 + b") Tj ET\n"
    squeeze = zlib.compressobj(9)
    block = line * (1_000_000 // len(line))
    stream = b"".join(squeeze.compress(block) for _ in range(raw_mb)) + squeeze.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = io.BytesIO(b"%PDF-1.4\n"), []
    out.seek(0, io.SEEK_END)
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def test_a_pdf_decompression_bomb_is_one_line_not_a_gigabyte(tmp_path: Path) -> None:
    """2 MB on disk, 500 MB inflated: Read says the PDF cannot be read, and holds nothing like it."""
    import resource

    (tmp_path / "bomb.pdf").write_bytes(_bomb_pdf(500))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = call(Read(), context(tmp_path), file_path=str(tmp_path / "bomb.pdf"))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert out.is_error and "cannot be read" in str(out.content), out.content
    assert "\n" not in str(out.content).strip(), "one line"
    assert grown_mb < 400, f"reading the bomb took {grown_mb:.0f} MB more"


def test_notebook_edit_never_writes_through_a_link_out_of_the_project(tmp_path: Path) -> None:
    from piton.builtin_tools.notebook import NotebookEdit

    outside = Path(tempfile.mkdtemp(dir="/var/tmp")) / "out.ipynb"
    cell = {"cell_type": "code", "source": ["x = 1"], "metadata": {}, "outputs": [], "id": "a"}
    original = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    outside.write_text(original)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "nb.ipynb").symlink_to(outside)
    (ws / ".git" / "hooks").mkdir(parents=True)
    try:
        ctx = context(ws)
        out = call(
            NotebookEdit(), ctx, notebook_path=str(ws / "nb.ipynb"), cell_id="a", new_source="import os"
        )
        assert out.is_error and "outside the writable directories" in str(out.content), out.content
        hook = ws / ".git" / "hooks" / "pre-commit.ipynb"
        out = call(
            NotebookEdit(), ctx, notebook_path=str(hook), new_source="x", edit_mode="insert", cell_type="code"
        )
        assert out.is_error and not hook.exists(), out.content
        assert outside.read_text() == original
    finally:
        shutil.rmtree(outside.parent, ignore_errors=True)
