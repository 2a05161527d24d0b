"""`piton config` and `piton update` through the installed command: real files in a fresh HOME and
project, and a local HTTP server speaking PyPI's JSON API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from piton import __version__
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton, piton_here


def test_set_add_remove_and_get_write_pitons_own_files(project: Path) -> None:
    claude = project / ".claude" / "settings.json"
    claude.parent.mkdir()
    claude.write_text(json.dumps({"model": "sonnet", "permissions": {"allow": ["Read"]}}))
    assert piton_here("config", "set", "model", "opus").returncode == 0
    assert piton_here("config", "set", "-g", "autoCompact", "false").returncode == 0
    added = piton_here("config", "add", "permissions.allow", "Bash(npm test:*)", "Glob")
    assert added.returncode == 0 and "until" not in added.stdout
    assert "applies permissions in full only once you trust the folder" in added.stdout
    assert piton_here("config", "remove", "permissions.allow", "Glob").returncode == 0

    local = json.loads((project / ".piton" / "settings.local.json").read_text())
    assert local == {"model": "opus", "permissions": {"allow": ["Bash(npm test:*)"]}}
    assert json.loads((Path.home() / ".piton" / "settings.json").read_text()) == {"autoCompact": False}
    assert json.loads(claude.read_text())["model"] == "sonnet"  # Claude Code's file is only read

    got = piton_here("config", "get", "model")
    assert got.stdout.splitlines() == [
        '"sonnet"  (.claude/settings.json, project)',
        '"opus"  (.piton/settings.local.json, local)',
    ]
    listed = piton_here("config", "list").stdout
    assert "~/.piton/settings.json (user)\n  autoCompact = false" in listed
    assert '.piton/settings.local.json (local)\n  model = "opus"' in listed
    missing = piton_here("config", "get", "nothing.here")
    assert missing.returncode == 1 and "nothing.here is not set" in missing.stdout


def test_a_session_runs_with_a_model_set_by_config(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton.testing.script import reply

    fake_api.add(reply("ok"))
    assert piton_here("config", "set", "model", "claude-opus-4-5").returncode == 0
    assert piton_here("-p", "hi").returncode == 0
    assert fake_api.bodies[0]["model"] == "claude-opus-4-5"


def test_unusable_input_is_one_line_and_the_file_is_left_alone(project: Path) -> None:
    broken = project / ".piton" / "settings.local.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    done = piton_here("config", "set", "model", "opus")
    assert done.returncode == 1 and "fix or remove it first" in done.stderr and "Traceback" not in done.stderr
    assert broken.read_text() == "{not json"
    assert "not a key" in piton_here("config", "set", "-g", "a..b", "1").stderr
    assert piton_here("config", "set", "-s", "user", "model", "x").returncode == 0
    scalar = piton_here("config", "add", "-s", "user", "model", "y")
    assert scalar.returncode == 1 and "not a list" in scalar.stderr
    unknown = piton_here("config", "set", "-s", "user", "spinnerTipsEnabled", "false")
    assert "Piton does not apply spinnerTipsEnabled" in unknown.stdout


class _Index(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/pypi/piton-code/json":
            self.send_error(404)
            return
        body = json.dumps({"info": {"version": self.server.release}}).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PITON_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}")
    yield server
    server.shutdown()


def test_update_says_what_is_installed_and_what_is_newer(project: Path, index: ThreadingHTTPServer) -> None:
    index.release = "999.0.0"  # type: ignore[attr-defined]
    done = piton(project, "update")
    assert done.returncode == 0, done.stderr
    assert f"piton {__version__}, installed from the checkout at" in done.stdout
    assert "piton 999.0.0 is available" in done.stdout and "git pull" in done.stdout
    assert "install.py" not in done.stdout  # the tests' install is the checkout itself: a pull is enough
    index.release = __version__  # type: ignore[attr-defined]
    assert "is up to date" in piton(project, "update").stdout


def test_update_help_is_its_usage_not_an_error(project: Path) -> None:
    done = piton(project, "update", "--help")
    assert (done.returncode, done.stderr) == (0, "") and done.stdout.startswith(
        "usage: piton update [--check]"
    )


def test_skills_and_doctor_answer_help_and_name_an_option_they_do_not_take(project: Path) -> None:
    for command, usage in (("skills", "usage: piton skills [--json]"), ("doctor", "usage: piton doctor [--")):
        done = piton(project, command, "--help")
        assert (done.returncode, done.stderr) == (0, "") and done.stdout.startswith(usage), command
        wrong = piton(project, command, "--bogus")
        assert wrong.returncode == 2 and wrong.stderr.startswith(f"piton {command}: unknown option --bogus")


def test_update_without_an_index_is_one_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITON_INDEX_URL", "http://127.0.0.1:9")
    done = piton(project, "update")
    assert done.returncode == 1 and "could not ask the package index" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_local_setting_is_kept_out_of_the_projects_commits(project: Path) -> None:
    """The local file is the user's own: `.git/info/exclude` names it (the project's `.gitignore`
    is left alone), once, and git then ignores it."""
    (project / ".git").mkdir(exist_ok=True)
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text(
        "# git ls-files --others --exclude-from=.git/info/exclude"
    )
    assert piton_here("config", "set", "model", "opus").returncode == 0
    assert piton_here("config", "set", "outputStyle", "Explanatory").returncode == 0
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.endswith("\n/.piton/settings.local.json\n") and exclude.count("settings.local.json") == 1
    assert not (project / ".gitignore").exists()
