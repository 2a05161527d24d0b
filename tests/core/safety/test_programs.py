"""How the settings' programs start: which sandbox each kind gets, what environment crosses into it,
and when one runs unconfined. The processes are real (bwrap where the machine has it)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.programs import Programs, named_in_tmp, program_env, program_policy
from piton.core.safety.sandbox import Launch, Unavailable, make_sandbox


def run(launch: Launch | str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert isinstance(launch, Launch), launch
    try:
        return subprocess.run(
            launch.argv,
            cwd=cwd,
            env=launch.env,
            pass_fds=launch.pass_fds,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    finally:
        launch.close()


def test_the_environment_loses_secrets_and_keeps_what_the_entry_lists(tmp_path: Path) -> None:
    inherited = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "sk", "GITHUB_TOKEN": "gh", "TEAM": "a"}
    env = program_env(inherited, {"GITHUB_TOKEN": "listed", "TEAM": "b"}, tmp_path)
    assert "ANTHROPIC_API_KEY" not in env
    assert (env["GITHUB_TOKEN"], env["TEAM"], env["PATH"]) == ("listed", "b", "/usr/bin")
    assert env["npm_config_cache"] == str(tmp_path / "npm") and env["XDG_CACHE_HOME"] == str(tmp_path)


@pytest.mark.parametrize(
    ("kind", "mode", "lasting"),
    [("hook", "workspace-write", False), ("server", "workspace-write", True), ("status", "read-only", False)],
)
def test_each_kind_gets_its_sandbox_with_the_network(
    tmp_path: Path, kind: str, mode: str, lasting: bool
) -> None:
    session = SandboxPolicy.create("workspace-write", tmp_path)
    policy = program_policy(session, kind, {}, tmp_path / "cache")  # type: ignore[arg-type]
    assert (policy.mode, policy.lasting, policy.network) == (mode, lasting, True)
    assert policy.scratch == (tmp_path / "cache",)
    read_only = program_policy(session.read_only(), kind, {}, tmp_path)  # type: ignore[arg-type]
    assert read_only.mode == "read-only", "a read-only session's programs write nothing either"


def test_an_opted_out_entry_and_a_session_without_sandbox_run_unconfined(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    programs = Programs(SandboxPolicy.create("workspace-write", tmp_path / "p"), cache=tmp_path / "c")
    launch = programs.launch(
        "hook", f"touch {marker}", tmp_path, {"PATH": "/usr/bin:/bin"}, {}, opted_out=True
    )
    assert isinstance(launch, Launch) and launch.argv[:2] == ["/bin/sh", "-c"]
    free = Programs(SandboxPolicy.create("danger-full-access", tmp_path), cache=tmp_path / "c")
    assert not free.confining
    assert (
        run(
            free.launch("hook", f"touch {marker}", tmp_path, {"PATH": "/usr/bin:/bin"}, {}), tmp_path
        ).returncode
        == 0
    )
    assert marker.exists()


def test_a_sandbox_that_cannot_start_is_the_programs_failure_never_a_fallback(tmp_path: Path) -> None:
    programs = Programs(
        SandboxPolicy.create("workspace-write", tmp_path),
        make=lambda _: Unavailable("no bwrap here"),
        cache=tmp_path / "c",
    )
    assert programs.launch("server", "true", tmp_path, {}, {}) == "no bwrap here"


def sandbox_works(tmp_path: Path) -> bool:
    return make_sandbox(SandboxPolicy.create("workspace-write", tmp_path)).unavailable_reason() is None


def test_a_hook_writes_the_project_and_its_cache_but_not_the_home(tmp_path: Path) -> None:
    project, cache = tmp_path / "project", tmp_path / "cache"
    project.mkdir()
    if not sandbox_works(project):
        pytest.fail("the sandbox cannot start on this machine: the test cannot prove confinement")
    programs = Programs(SandboxPolicy.create("workspace-write", project), cache=cache)
    outside = Path("/var/tmp") / f"piton-planted-{os.getpid()}"  # not under /tmp, private in there
    script = (
        'echo formatted > out.txt && echo cached > "$npm_config_cache.txt" && '
        f"(echo x > {outside} 2>/dev/null && echo outside-written || echo outside-refused)"
    )
    done = run(programs.launch("hook", script, project, {"PATH": "/usr/bin:/bin"}, {}), project)
    assert done.returncode == 0, done.stderr
    assert (project / "out.txt").read_text() == "formatted\n"
    assert (cache / "npm.txt").read_text() == "cached\n"
    assert "outside-refused" in done.stdout and not outside.exists()


def test_what_a_command_names_under_tmp_is_bound_into_the_sandboxs_own_tmp(tmp_path: Path) -> None:
    assert tmp_path.is_relative_to("/tmp"), "the test needs its folder under /tmp"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    tool = venv / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    script = tmp_path / "hook.sh"
    script.write_text("echo hook ran\n")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "x.sock"))
    named = named_in_tmp(f"{tool} --x && sh ./hook.sh /tmp {tmp_path / 'x.sock'} /tmp/none", tmp_path)
    assert set(named) == {venv, script}, "the environment whole, the script; never /tmp, a socket, or nothing"
    project = tmp_path / "project"
    project.mkdir()
    if not sandbox_works(project):
        pytest.fail("the sandbox cannot start on this machine: the test cannot prove the binds")
    programs = Programs(SandboxPolicy.create("workspace-write", project), cache=tmp_path / "c")
    done = run(
        programs.launch("hook", f"{tool}; sh {script}", project, {"PATH": "/usr/bin:/bin"}, {}), project
    )
    assert (done.returncode, done.stdout) == (0, "tool ran\nhook ran\n"), done.stderr
    sock.close()


def test_a_path_through_dot_dot_keeps_the_folder_it_walks_through(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "p").mkdir(parents=True)
    (tmp_path / "server.py").write_text("")
    named = named_in_tmp(f"python {tmp_path}/plugins/p/../../server.py", tmp_path)
    assert set(named) == {tmp_path / "server.py", tmp_path / "plugins" / "p"}
