"""The macOS profile, checked as text here (sandbox-exec exists only on macOS)."""

from __future__ import annotations

from pathlib import Path

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox import NoSandbox, Unavailable, make_sandbox
from piton.core.safety.sandbox.seatbelt import SeatbeltSandbox, profile


def test_the_profile_denies_by_default_and_takes_paths_as_parameters(tmp_path: Path) -> None:
    ws = tmp_path / 'it\'s (odd) "ws"'
    ws.mkdir()
    text, params = profile(
        SandboxPolicy.create("workspace-write", ws, [tmp_path]), "/private/var/folders/x/T/p"
    )
    assert text.startswith("(version 1)\n(deny default)")
    assert str(ws) not in text  # paths never become profile syntax
    assert params["WRITABLE_0"] == str(ws.resolve()) and params["WRITABLE_1"] == str(tmp_path.resolve())
    assert params["PRIVATE_TMP"] == "/private/var/folders/x/T/p"
    assert '(allow file-write* (subpath (param "PRIVATE_TMP")) (subpath (param "WRITABLE_0"))' in text
    assert "(allow mach-lookup)" not in text and '(global-name "com.apple.system.logger")' in text
    assert "/private/tmp" not in text  # the shared /tmp is not writable
    protected = [k for k, v in params.items() if k.startswith("PROTECTED_") and v.endswith(".git/hooks")]
    assert protected and f'(deny file-write* (subpath (param "{protected[0]}")))' in text
    secrets = [k for k, v in params.items() if k.startswith("SECRET_") and v.endswith("/.ssh")]
    assert secrets and f'(deny file-read* file-write* (subpath (param "{secrets[0]}")))' in text
    assert "(allow network*)" not in text


def test_denials_come_after_the_allowances_they_narrow(tmp_path: Path) -> None:
    text, _ = profile(SandboxPolicy.create("workspace-write", tmp_path), "/t")
    assert text.index("(allow file-write*") < text.index("(deny file-write*")


def test_read_only_and_network_variants(tmp_path: Path) -> None:
    text, params = profile(SandboxPolicy.create("read-only", tmp_path, network=True), "/t")
    assert not any(k.startswith("WRITABLE_") for k in params)
    assert "(allow network*)" in text


def test_the_argv_passes_each_parameter_with_d(tmp_path: Path) -> None:
    sandbox = SeatbeltSandbox(
        SandboxPolicy.create("workspace-write", tmp_path), executable="/usr/bin/sandbox-exec"
    )
    argv = sandbox.command("make test", tmp_path)
    assert argv[:2] == [sandbox.executable, "-p"]
    assert f"WRITABLE_0={tmp_path.resolve()}" in argv
    assert argv[argv.index(f"WRITABLE_0={tmp_path.resolve()}") - 1] == "-D"
    assert argv[-5:-1] == ["/bin/bash", "--noprofile", "--norc", "-c"]
    assert argv[-1] == f"ulimit -f {4 << 20}\nmake test"  # the file-size limit (KiB), then the command


def test_each_platform_gets_its_sandbox(tmp_path: Path) -> None:
    policy = SandboxPolicy.create("workspace-write", tmp_path)
    assert type(make_sandbox(policy, "linux")).__name__ == "BwrapSandbox"
    assert isinstance(make_sandbox(policy, "darwin"), SeatbeltSandbox)
    other = make_sandbox(policy, "win32")
    assert isinstance(other, Unavailable) and "danger-full-access" in (other.unavailable_reason() or "")
    assert isinstance(make_sandbox(SandboxPolicy.create("danger-full-access", tmp_path), "linux"), NoSandbox)
