from __future__ import annotations

import os
from pathlib import Path

import pytest

from piton.core.safety.policy import PolicyError, SandboxPolicy


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside").mkdir()
    return root


def policy(ws: Path, mode: str = "workspace-write", **kwargs: object) -> SandboxPolicy:
    return SandboxPolicy.create(mode, ws, **kwargs)  # type: ignore[arg-type]


def test_writes_inside_the_workspace_are_allowed_even_for_new_paths(ws: Path) -> None:
    assert (
        policy(ws).check_write(ws / "new" / "deep" / "file.py") == ws.resolve() / "new" / "deep" / "file.py"
    )


@pytest.mark.parametrize("target", ["../outside/x", "/etc/passwd", "~/x"])
def test_writes_outside_the_workspace_are_refused(ws: Path, target: str) -> None:
    path = Path(os.path.expanduser(target)) if target.startswith("~") else ws / target
    with pytest.raises(PolicyError, match="outside the writable directories"):
        policy(ws).check_write(path)


def test_a_symlink_pointing_out_cannot_be_written_through(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    (ws / "dangling").symlink_to(ws.parent / "outside" / "not-yet")
    for path in (ws / "link" / "file", ws / "dangling"):
        with pytest.raises(PolicyError, match="really"):
            policy(ws).check_write(path)


def test_protected_files_stay_read_only(ws: Path) -> None:
    for path in (ws / ".piton" / "settings.json", ws / ".claude" / "settings.local.json"):
        with pytest.raises(PolicyError, match="protected"):
            policy(ws).check_write(path)
    for path in (ws / ".git" / "hooks" / "pre-commit", ws / ".git" / "HEAD", ws / "sub" / ".git" / "config"):
        with pytest.raises(PolicyError, match=r"files inside \.git belong to git"):
            policy(ws).check_write(path)


def test_a_symlink_cannot_lead_a_write_into_a_protected_file(ws: Path) -> None:
    (ws / "cfg").mkdir()
    (ws / ".piton").symlink_to(ws / "cfg")
    with pytest.raises(PolicyError, match="protected"):
        policy(ws).check_write(ws / "cfg" / "settings.json")


def test_process_and_kernel_files_are_never_read(ws: Path) -> None:
    for path in ("/proc/self/environ", f"/proc/{os.getpid()}/cmdline", "/sys/kernel/notes"):
        with pytest.raises(PolicyError, match=r"/proc, /sys"):
            policy(ws, "danger-full-access").check_read(Path(path))


def test_read_deny_globs_apply_to_reads_and_listings(ws: Path) -> None:
    p = policy(ws, read_denied=[f"{ws.resolve()}/secrets/**"])
    with pytest.raises(PolicyError, match="permission rule"):
        p.check_read(ws / "nope" / ".." / "secrets" / "key.pem")
    allowed = p.listing_filter(ws)
    assert not allowed(f"{ws.resolve()}/secrets/key.pem")
    assert allowed(f"{ws.resolve()}/src/a.py")


def test_a_listing_from_the_filesystem_root_still_hides_credentials(ws: Path) -> None:
    allowed = policy(ws).listing_filter(Path("/"))
    home = Path.home().resolve()
    assert not allowed(f"{home}/.ssh/id_rsa")
    assert not allowed(f"{home}/.aws/credentials")
    assert not allowed("/srv/app/.env")
    assert allowed("/srv/app/main.py")


def test_added_directories_are_writable(ws: Path) -> None:
    extra = ws.parent / "outside"
    assert policy(ws, extra_dirs=[extra]).check_write(extra / "f") == extra.resolve() / "f"


def test_read_only_mode_refuses_every_write(ws: Path) -> None:
    with pytest.raises(PolicyError, match="read-only"):
        policy(ws, "read-only").check_write(ws / "f")


def test_full_access_writes_anywhere(ws: Path) -> None:
    assert policy(ws, "danger-full-access").check_write(ws.parent / "outside" / "f")


def test_credential_locations_are_not_read(ws: Path) -> None:
    home = Path.home()
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("secret")
    for path in (home / ".ssh" / "id_ed25519", home / ".aws" / "credentials", home / ".gnupg"):
        with pytest.raises(PolicyError, match="credential"):
            policy(ws).check_read(path)


def test_a_symlink_to_credentials_is_not_read_either(ws: Path) -> None:
    (Path.home() / ".aws").mkdir(exist_ok=True)
    (ws / "innocent").symlink_to(Path.home() / ".aws")
    with pytest.raises(PolicyError, match="credential"):
        policy(ws).check_read(ws / "innocent" / "credentials")


@pytest.mark.parametrize(
    "name", [".env", ".env.local", ".env.production", ".envrc", "prod.env", "docker.env"]
)
def test_env_files_are_not_read(ws: Path, name: str) -> None:
    with pytest.raises(PolicyError, match="environment files"):
        policy(ws).check_read(ws / name)


@pytest.mark.parametrize("name", [".env.example", ".envrc.md", "env.py", ".environment"])
def test_env_templates_and_lookalikes_are_read(ws: Path, name: str) -> None:
    assert policy(ws).check_read(ws / name) == ws.resolve() / name


def test_a_listing_hides_what_a_read_refuses_and_nothing_else(ws: Path) -> None:
    """A search's per-path check (string tests only) agrees with `check_read` on every name."""
    names = [".env", ".env.local", ".envrc", "prod.env", ".env.example", ".envrc.md", "env.py", "a.ENV"]
    for pol in (policy(ws), policy(ws, read_exceptions=[f"{ws.resolve()}/.env"])):
        shown = pol.listing_filter(ws)
        for name in names:
            try:
                pol.check_read(ws / name)
                readable = True
            except PolicyError:
                readable = False
            assert shown(f"{ws.resolve()}/{name}") == readable, name


def test_an_allow_rule_lifts_the_credential_rule_for_what_it_names(ws: Path) -> None:
    allowed = policy(ws, read_exceptions=[f"{ws.resolve()}/.env"])
    assert allowed.check_read(ws / ".env")
    with pytest.raises(PolicyError):
        allowed.check_read(ws / ".env.local")


def test_the_shell_may_only_stay_in_the_workspace_and_added_dirs(ws: Path) -> None:
    extra = ws.parent / "outside"
    p = policy(ws, extra_dirs=[extra])
    assert p.in_roots(ws / "sub") and p.in_roots(extra)
    assert not p.in_roots(Path("/"))


@pytest.mark.parametrize("rel", ["pkg/.piton/settings.json", "deep/er/.claude/settings.local.json"])
def test_settings_files_are_refused_at_any_depth(ws: Path, rel: str) -> None:
    with pytest.raises(PolicyError, match="settings files are protected"):
        policy(ws).check_write(ws / rel)


def test_a_symlinked_credential_file_is_still_a_credential(ws: Path) -> None:
    dotfiles = ws.parent / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "npmrc").write_text("//registry.npmjs.org/:_authToken=secret\n")
    (Path.home() / ".npmrc").symlink_to(dotfiles / "npmrc")
    with pytest.raises(PolicyError, match="credential"):
        policy(ws).check_read(Path.home() / ".npmrc")
    with pytest.raises(PolicyError, match="credential"):
        policy(ws).check_read(Path.home() / ".claude.json")


def test_private_paths_are_treated_like_credentials(ws: Path) -> None:
    store = ws.parent / "state"
    (store / "projects").mkdir(parents=True)
    with pytest.raises(PolicyError, match="credential"):
        policy(ws, private_paths=[store]).check_read(store / "projects" / "x.jsonl")


def test_credential_locations_resolve_as_realpath_does(tmp_path: Path) -> None:
    """Folders shared by many locations are resolved once; the answers are realpath's, through
    links, dangling links, loops and missing parts."""
    from piton.core.safety.realpaths import Resolver

    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "up").symlink_to("../a")
    (tmp_path / "a" / "dangling").symlink_to("missing/x")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    parts = ["a", "a/b/c", "l", "l/c", "l/c/none/x", "a/b/up/b/c", "a/dangling", "a/dangling/y", "nope/x"]
    paths = [str(tmp_path / p) for p in [*parts, "loop1/x", "l/up/b/up/b", "a/./b", "l/../a"]] + [
        "/",
        "/proc/self/cwd",
    ]
    resolve = Resolver()
    assert [resolve(p) for p in paths] == [os.path.realpath(p) for p in paths]
    assert [resolve(p) for p in paths] == [os.path.realpath(p) for p in paths]  # remembered, the same
