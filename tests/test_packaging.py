"""Packaging, for real: the package list, a wheel installed beside another distribution's `core` and
`cli`, and install.py's pip bootstrap against a package index served on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import tomllib
import zipfile
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from piton import __version__
from piton.testing.script import reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("core", "cli", "builtin_tools", "skills")  # top-level folders installed as piton.<name>
NOT_SOURCE = {
    ".git",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".pytest_cache",
}


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def run(
    argv: Sequence[str | Path], *, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """A child that sees neither pip's configuration on this machine nor a PYTHONPATH into the checkout."""
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PIP_")}
    full_env.update(
        PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", **env
    )
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=full_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )


def succeeded(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


# --- the package list ----------------------------------------------------------------------------


def source_folders() -> Iterator[tuple[str, Path, list[str]]]:
    """Each folder under piton/ (not through its links to the layers) and under the layer folders,
    with the package name it would install as and its files."""
    roots = {"piton": ROOT / "piton", **{f"piton.{layer}": ROOT / layer for layer in LAYERS}}
    for name, root in roots.items():
        for folder, subfolders, files in os.walk(root):  # os.walk does not follow piton/core -> ../core
            subfolders[:] = [s for s in subfolders if s != "__pycache__"]
            yield ".".join((name, *Path(folder).relative_to(root).parts)), Path(folder), files


def package_folders() -> dict[str, Path]:
    return {name: folder for name, folder, files in source_folders() if "__init__.py" in files}


def test_the_package_list_names_every_package_folder() -> None:
    setuptools = pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"piton": "piton", **{f"piton.{x}": x for x in LAYERS}}
    assert sorted(setuptools["packages"]) == sorted(package_folders())


def source_folder(package: str) -> Path:
    """Where setuptools finds `package`, by the longest prefix the package-dir mapping names."""
    mapping: dict[str, str] = pyproject()["tool"]["setuptools"]["package-dir"]
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        if ".".join(parts[:cut]) in mapping:
            return ROOT / mapping[".".join(parts[:cut])] / Path(*parts[cut:])
    return ROOT / Path(*parts)


def test_no_folder_of_modules_is_left_out_for_want_of_an_init_file() -> None:
    """setuptools skips a folder without __init__.py silently; only package data may lack one."""
    data = {
        (source_folder(package) / pattern.split("/")[0]).resolve()
        for package, patterns in pyproject()["tool"]["setuptools"]["package-data"].items()
        for pattern in patterns
    }
    orphans = [
        folder
        for _, folder, files in source_folders()
        if any(f.endswith(".py") for f in files)
        and "__init__.py" not in files
        and not any(folder.resolve().is_relative_to(d) for d in data)
    ]
    assert orphans == []


# --- the wheel -----------------------------------------------------------------------------------


def _not_source(folder: str, names: list[str]) -> set[str]:
    return {
        n
        for n in names
        if n in NOT_SOURCE or n.endswith(".egg-info") or (Path(folder, n, "pyvenv.cfg")).exists()
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of the working tree, built offline from a copy (a build/ folder left in the checkout by
    an earlier build would otherwise leak files that no longer exist into it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_not_source)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--quiet",
    ]
    done = run([*argv, "--wheel-dir", tmp / "dist", source])
    if done.returncode != 0:
        pytest.fail(
            "building a wheel failed (it needs the dev extra's setuptools>=70.1 in this environment):\n"
            + done.stdout
            + done.stderr
        )
    (built,) = (tmp / "dist").glob("piton_code-*.whl")
    return built


def test_the_wheel_holds_the_piton_package_its_prompts_and_bundled_skills_only(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {name.split("/")[0] for name in names} == {"piton", f"piton_code-{__version__}.dist-info"}
    for package, folder in package_folders().items():
        assert f"{package.replace('.', '/')}/__init__.py" in names, folder
    for module in ("piton/__main__.py", "piton/runtime.py", "piton/cli/main.py"):
        assert module in names
    prompts = sorted((ROOT / "core" / "prompts").glob("*.md"))
    bundled = sorted(
        p for p in (ROOT / "skills" / "bundled").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    assert prompts and bundled
    for path in prompts + bundled:
        assert f"piton/{path.relative_to(ROOT).as_posix()}" in names


def dummy_wheel(folder: Path) -> Path:
    """Another distribution that ships top-level `core` and `cli` packages, as generic names invite."""
    info = "generic_layers-1.0.dist-info"
    files = {
        "core/__init__.py": 'WHO = "generic-layers"\n',
        "cli/__init__.py": 'WHO = "generic-layers"\n',
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: generic-layers\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": "cli\ncore\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    path = folder / "generic_layers-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def fresh_venv(path: Path) -> Path:
    """A venv whose only way to this environment's packages is a plain path entry: a .pth line that
    names a folder does not run that folder's own .pth files, so the editable piton stays out."""
    succeeded(run([sys.executable, "-m", "venv", "--without-pip", path]))
    python = path / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(succeeded(run([python, "-c", where])).stdout.strip())
    dependencies = sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})
    (site / "dependencies-from-the-test-environment.pth").write_text("\n".join(dependencies) + "\n")
    return python


PROBE = """
import json, sys, sysconfig
import core, cli, piton, piton.core, piton.cli.main
print(json.dumps({
    "site": sysconfig.get_path("purelib"),
    "piton": piton.__file__, "piton.core": piton.core.__file__,
    "core": core.WHO, "cli": cli.WHO,
    "finders": [getattr(f, "__module__", "") for f in sys.meta_path],
    "modules": [m for m in sys.modules if "editable" in m],
}))
"""


def test_the_wheel_installs_and_runs_beside_another_distributions_core_and_cli(
    wheel: Path, tmp_path: Path, fake_api: FakeAnthropicAPI
) -> None:
    python = fresh_venv(tmp_path / "venv")
    pip: list[str | Path] = [
        python,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--ignore-installed",
        "--quiet",
    ]
    succeeded(run([*pip, wheel, dummy_wheel(tmp_path)]))
    project = tmp_path / "project"  # not the checkout: `python -m` puts the working directory on sys.path
    project.mkdir()

    probe = json.loads(succeeded(run([python, "-c", PROBE], cwd=project)).stdout)
    assert (probe["core"], probe["cli"]) == ("generic-layers", "generic-layers")  # the collision is real
    assert Path(probe["piton"]).is_relative_to(probe["site"])
    assert Path(probe["piton.core"]).is_relative_to(probe["site"])
    assert not [f for f in probe["finders"] if "editable" in f] and probe["modules"] == []

    piton = python.with_name("piton")
    commands: list[list[str | Path]] = [[piton, "--version"], [python, "-m", "piton", "--version"]]
    for argv in commands:
        done = run(argv, cwd=project)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"piton {__version__}\n", "")

    fake_api.add(reply("Hello from the installed wheel."))
    done = run([piton, "-p", "hi"], cwd=project)
    assert (done.returncode, done.stdout) == (0, "Hello from the installed wheel.\n"), done.stderr
    fake_api.assert_complete()


# --- install.py ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installer() -> Iterator[ModuleType]:
    """install.py as a module (it does nothing when imported)."""
    spec = importlib.util.spec_from_file_location("piton_install_script", ROOT / "install.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def real_pip_wheel(folder: Path) -> Path:
    """A real pip wheel, offline: the one this Python ships for ensurepip, Debian's copy of it, or
    (Debian without python3-venv has neither) this environment's own pip packed into a wheel again."""
    spec = importlib.util.find_spec("ensurepip")
    places = [Path(spec.origin).parent / "_bundled"] if spec and spec.origin else []
    places.append(Path("/usr/share/python-wheels"))
    found = sorted(p for place in places for p in place.glob("pip-*-py3-none-any.whl"))
    if found:
        return found[-1]
    pip = importlib.metadata.distribution("pip")
    packed = folder / f"pip-{pip.version}-py3-none-any.whl"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in pip.files or []:
            path = Path(str(pip.locate_file(file)))
            if file.parts[0] != ".." and "__pycache__" not in file.parts and path.is_file():
                archive.write(path, file.as_posix())
    return packed


class Index:
    """A PEP 503 simple index on 127.0.0.1 holding one real pip wheel, and decoys around it that a
    correct choice skips (so choosing one of them fails: they are listed but not served)."""

    def __init__(self, real: Path, digest: str) -> None:
        self.files = {f"/files/{real.name}": real.read_bytes()}
        self.requested: list[str] = []
        decoys = [
            ("pip-99.0-py3-none-any.whl", ' data-requires-python="&gt;=3.99"'),  # for a newer Python
            ("pip-98.0b1-py3-none-any.whl", ""),  # a pre-release
            ("pip-97.0-py3-none-any.whl", ' data-yanked=""'),
            ("pip-96.0.tar.gz", ""),  # not a wheel
            ("pip-95.0-py3-none-any.whl", ""),  # no hash to verify it by (below)
            ("pip-1.0-py3-none-any.whl", ""),  # older
        ]
        anchors = [
            f'<a href="/files/{name}{"" if name.startswith("pip-95") else "#sha256=" + "0" * 64}"{attrs}>{name}</a>'
            for name, attrs in decoys
        ]
        anchors.insert(3, f'<a href="../../files/{real.name}#sha256={digest}">{real.name}</a>')
        self.page = f"<!DOCTYPE html><html><body>{'<br/>'.join(anchors)}</body></html>".encode()
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requested.append(self.path)
                body = index.page if self.path == "/simple/pip/" else index.files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    opened: list[Index] = []

    def serve(digest: str | None = None) -> Index:
        real = real_pip_wheel(tmp_path_factory.mktemp("pip"))
        opened.append(Index(real, digest or hashlib.sha256(real.read_bytes()).hexdigest()))
        return opened[-1]

    yield serve
    for index in opened:
        index.close()


def bootstrap(venv: Path, index_url: str) -> subprocess.CompletedProcess[str]:
    return run(
        [sys.executable, ROOT / "install.py", "--bootstrap-only", "--venv", venv], PIP_INDEX_URL=index_url
    )


def test_install_py_puts_pip_from_the_index_into_a_venv_without_pip(tmp_path: Path, serve_index: Any) -> None:
    venv = tmp_path / "venv"
    succeeded(run([sys.executable, "-m", "venv", "--without-pip", venv]))
    assert run([venv / "bin" / "python", "-m", "pip", "--version"]).returncode != 0
    index = serve_index()
    succeeded(bootstrap(venv, index.url))
    (real,) = (name.removeprefix("/files/") for name in index.files)
    assert index.requested == ["/simple/pip/", f"/files/{real}"]
    done = succeeded(run([venv / "bin" / "python", "-m", "pip", "--version"]))
    assert done.stdout.startswith(f"pip {real.split('-')[1]} from {venv}")


def test_install_py_refuses_a_pip_wheel_whose_hash_does_not_match(tmp_path: Path, serve_index: Any) -> None:
    venv = tmp_path / "venv"
    succeeded(run([sys.executable, "-m", "venv", "--without-pip", venv]))
    done = bootstrap(venv, serve_index("ab" * 32).url)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("install.py: error: pip-")
    assert "does not match the index's sha256" in done.stderr
    assert run([venv / "bin" / "python", "-m", "pip", "--version"]).returncode != 0


def test_install_py_says_in_one_line_that_the_index_cannot_be_reached(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    succeeded(run([sys.executable, "-m", "venv", "--without-pip", venv]))
    done = bootstrap(venv, "http://127.0.0.1:9/simple/")  # the discard port: nothing listens
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "install.py: error: cannot reach the package index http://127.0.0.1:9/simple/"
    )


def test_install_py_reads_the_index_from_pips_environment_and_configuration(
    installer: ModuleType, tmp_path: Path
) -> None:
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nindex-url = https://global.example/simple\n[install]\nindex_url = https://install.example/simple\n"
    )
    env = {"HOME": str(tmp_path), "PIP_CONFIG_FILE": str(config)}
    assert installer.index_settings(env, tmp_path).url == "https://install.example/simple"
    env["PIP_INDEX_URL"] = "https://env.example/simple"
    assert installer.index_settings(env, tmp_path).url == "https://env.example/simple"
    quiet = {"HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull}
    assert installer.index_settings(quiet, tmp_path).url == "https://pypi.org/simple/"


def test_install_py_reads_requires_python_as_pip_does(installer: ModuleType) -> None:
    satisfies = installer.python_satisfies
    assert satisfies(">=3.9", (3, 11, 2)) and satisfies(">=2.6,!=3.0.*,!=3.1.*", (3, 11, 2))
    assert not satisfies(">=3.12", (3, 11, 2)) and not satisfies("!=3.11.*", (3, 11, 2))
    assert satisfies("~=3.10", (3, 11, 0)) and not satisfies("~=3.10.1", (3, 11, 0))
    assert satisfies("<4, >3.11.1", (3, 11, 2)) and not satisfies("==3.11", (3, 11, 2))


def test_install_py_links_piton_only_where_nothing_else_is(
    installer: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "venv" / "bin" / "piton"
    target.parent.mkdir(parents=True)
    target.write_text("#!/bin/sh\n")
    bin_dir = tmp_path / "bin"
    message, ours = installer.link_command(target, bin_dir)
    assert ours and message.startswith("Linked") and (bin_dir / "piton").resolve() == target
    assert installer.link_command(target, bin_dir)[1]  # again: already ours
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin")
    assert "is on your PATH" in installer.path_advice(bin_dir, target)
    monkeypatch.setenv("PATH", "/usr/bin")
    assert "is not on your PATH" in installer.path_advice(bin_dir, target)

    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "piton").write_text("someone else's\n")
    message, ours = installer.link_command(target, other)
    assert not ours and "left as it is" in message
    assert (other / "piton").read_text() == "someone else's\n"


def test_upgrading_the_pins_writes_every_installed_package_once_and_keeps_the_explanation(
    installer: ModuleType, tmp_path: Path
) -> None:
    """What `install.py --upgrade-constraints` writes, from this environment: the explanation kept,
    then one exact pin a line, sorted, neither Piton nor pip. Every one of them is in the committed
    file at the same version: a dependency added without moving the pins fails here."""
    committed = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    target = tmp_path / "constraints.txt"
    target.write_text("# the explanation\n# on two lines\nold==1.0\n", encoding="utf-8")
    installer.write_constraints(Path(sys.prefix), target)
    head: list[str] = []
    pins: list[str] = []
    for line in target.read_text(encoding="utf-8").splitlines():
        (head if line.startswith("#") else pins).append(line)
    assert head == ["# the explanation", "# on two lines"]
    assert pins == sorted(pins, key=str.lower) and all(re.fullmatch(r"[\w.-]+==\S+", p) for p in pins)
    names = {p.split("==")[0].lower() for p in pins}
    assert "anthropic" in names and not names & {"piton-code", "pip", "old"}
    assert set(pins) - set(committed) == set()


def test_install_py_compiles_an_editable_checkout_its_linked_subpackages_included(
    installer: ModuleType, tmp_path: Path
) -> None:
    """pip compiles only what it copies; an editable checkout (whose package links to its
    subpackages, as Piton's does) must be compiled by install.py, or every start recompiles it
    wherever PYTHONDONTWRITEBYTECODE is set."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "tools.py").write_text("X = 1\n")
    (tmp_path / "piton").mkdir()
    (tmp_path / "piton" / "__init__.py").write_text("")
    (tmp_path / "piton" / "core").symlink_to(tmp_path / "core")
    installer.compile_checkout(Path(sys.prefix), tmp_path)
    for source in (tmp_path / "core" / "tools.py", tmp_path / "piton" / "__init__.py"):
        assert Path(importlib.util.cache_from_source(str(source))).is_file(), source
    (tmp_path / "core" / "broken.py").write_text("def (:\n")
    with pytest.raises(installer.InstallError, match="could not compile"):
        installer.compile_checkout(Path(sys.prefix), tmp_path)


def test_a_users_install_is_a_copy_outside_every_project_and_a_contributors_the_checkout(
    installer: ModuleType, tmp_path: Path
) -> None:
    """A user's install lives in Piton's data folder (so the bundled bubblewrap in it may run the
    sandbox wherever Piton works) and copies the checkout without the tools; `--dev` installs the
    checkout itself, editable, with them."""
    assert installer.user_venv({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "piton" / "venv"
    assert installer.user_venv({}) == Path.home() / ".local/share/piton/venv"
    venv = tmp_path / "venv"
    user = [str(a) for a in installer.pip_install_argv(venv, dev=False)]
    dev = [str(a) for a in installer.pip_install_argv(venv, dev=True)]
    assert user[-1] == str(ROOT) and "--editable" not in user
    assert dev[-2:] == ["--editable", f"{ROOT}[dev]"]
    refused = subprocess.run(
        [sys.executable, ROOT / "install.py", "--upgrade-constraints"], capture_output=True, text=True
    )
    assert refused.returncode == 1 and "use it with --dev" in refused.stderr


def test_install_py_writes_a_launcher_that_starts_piton_without_pips_wrapper(
    installer: ModuleType, tmp_path: Path
) -> None:
    """A user's launcher starts Python without `site`, names the venv's packages itself and answers
    `--version` before anything loads; a contributor's keeps `site` (its editable install is a .pth
    file) and asks the checkout."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    # a venv whose packages are this one's: its pyvenv.cfg, and its site-packages a link to ours
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", tmp_path / "pyvenv.cfg")
    own = tmp_path / Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)
    own.parent.mkdir(parents=True)
    own.symlink_to(sysconfig.get_path("purelib"))
    launcher = tmp_path / "bin" / "piton"
    installer.write_launcher(tmp_path, dev=True)
    assert launcher.read_text().splitlines()[0] == f"#!{tmp_path / 'bin' / 'python'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([launcher, "--version"], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stdout) == (0, f"piton {__version__}\n"), done.stderr
    assert "| piton.core.version" in done.stderr  # asked of the checkout
    installer.write_launcher(tmp_path, version="9.8.7")
    text = launcher.read_text()
    assert "import re" not in text and os.access(launcher, os.X_OK)
    assert text.splitlines()[0] == f"#!{tmp_path / 'bin' / 'python'} -S"
    for flag in ("--version", "-v"):
        done = subprocess.run([launcher, flag], capture_output=True, text=True, env=env)
        assert (done.returncode, done.stdout) == (0, "piton 9.8.7\n"), done.stderr
        assert "piton" not in done.stderr  # the importer's report: no module of Piton's was loaded
    # the launcher's own lines find every package the run needs, with no `site` loaded
    check = tmp_path / "bin" / "check"
    body = "import piton.cli.main, pydantic, httpx2\nprint(sys.flags.no_site, 'site' in sys.modules)\n"
    check.write_text(text.replace("from piton.cli.main import main\nsys.exit(main())\n", body))
    check.chmod(0o755)
    seen = subprocess.run([check], capture_output=True, text=True, env=env)
    assert seen.stdout.split() == ["1", "False"], seen.stderr
