#!/usr/bin/env python3
"""Installs Piton from this checkout into a virtual environment.

    python3 install.py && piton          # a user's install
    python3 install.py --dev             # a contributor's: .venv in the checkout, with the tools

Debian and Ubuntu refuse `pip install` into their own Python (PEP 668) and ship it without pip and
without ensurepip, so this script needs only the standard library: it creates the environment,
fetches pip from the package index when the interpreter cannot provide it, and installs at the
versions constraints.txt names (the ones the tests passed with).

A user's install is a copy (not editable, no development tools) in ~/.local/share/piton/venv, outside
any project: the bundled bubblewrap in it may then run the sandbox wherever Piton works, and `piton`
is linked into ~/.local/bin. A contributor's (`--dev`) is the checkout, editable, with the test and
lint tools, in `.venv` beside it.
"""

from __future__ import annotations

import argparse
import base64
import configparser
import hashlib
import html.parser
import json
import os
import platform
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PROG = "install.py"
MIN_PYTHON = (3, 11)
DEFAULT_INDEX_URL = "https://pypi.org/simple/"
TIMEOUT_S = 60.0
# Only final releases: a pre-release of pip is not what a fresh machine should start with.
_PIP_WHEEL = re.compile(r"pip-(?P<version>\d+(?:\.\d+)*)-(?P<tags>py[0-9.py]+)-none-any\.whl")
_CLAUSE = re.compile(r"\s*(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*")
_HASHES = ("sha256", "sha384", "sha512")  # weaker hashes prove nothing about a download


class InstallError(Exception):
    """A failure the user can act on; `main` prints it as one line."""


def say(message: str) -> None:
    print(message, flush=True)


def shown(path: Path) -> str:
    """`path` as a user would type it: relative to here when inside it, else from ~ when inside home."""
    for base, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


def redact(url: str) -> str:
    """`url` without the credentials a private index's address may carry."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def one_line(text: str) -> str:
    return " ".join(text.split())


def run(argv: Sequence[str | Path], *, capture: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs a child with no stdin (a prompt would hang an unattended install), its output captured
    so that it can be shown only when something failed."""
    try:
        return subprocess.run(
            [str(a) for a in argv],
            # `user = true` in a pip.conf would send pip past the venv, into ~/.local
            env={**os.environ, "PIP_USER": "0"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            errors="replace",
            check=False,
        )
    except OSError as exc:
        raise InstallError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stdout or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"exit status {done.returncode}"


# --- the virtual environment -------------------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def venv_version(venv: Path) -> tuple[int, ...] | None:
    """The venv's Python version, or None when it is not a venv or its interpreter does not start
    (its base Python was removed or upgraded away)."""
    if not (venv / "pyvenv.cfg").is_file():
        return None
    try:
        done = run([venv_python(venv), "-c", "import sys; print(*sys.version_info[:3])"])
    except InstallError:
        return None
    try:
        return tuple(int(part) for part in done.stdout.split()) if done.returncode == 0 else None
    except ValueError:
        return None


def ensure_venv(venv: Path, python: str) -> None:
    """Reuses a healthy venv; otherwise creates one, without pip when this Python cannot provide it."""
    version = venv_version(venv)
    if version is not None and version >= MIN_PYTHON:
        say(f"Using the virtual environment {shown(venv)}")
        return
    not_a_venv = venv.exists() and not (venv / "pyvenv.cfg").is_file()
    if not_a_venv and (not venv.is_dir() or any(venv.iterdir())):
        raise InstallError(f"{shown(venv)} exists and is not a virtual environment; choose another --venv")
    say(f"Creating the virtual environment {shown(venv)}")
    done = run([python, "-m", "venv", "--clear", venv])
    if done.returncode == 0:
        return
    # Debian's python3 without python3-venv has no ensurepip; such a venv still works, and
    # bootstrap_pip gives it pip from the index.
    say("No ensurepip in this Python (Debian's python3-venv provides it): creating it without pip")
    done = run([python, "-m", "venv", "--clear", "--without-pip", venv])
    if done.returncode != 0:
        raise InstallError(f"Python's venv module cannot create {shown(venv)}: {last_line(done)}")


def has_pip(venv: Path) -> bool:
    return run([venv_python(venv), "-m", "pip", "--version"]).returncode == 0


# --- pip's package index -----------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSettings:
    url: str
    cert: str | None = None  # the CA bundle pip is told to trust, for a mirror behind a private CA


def pip_config_files(env: Mapping[str, str], venv: Path) -> list[Path]:
    """The files pip reads on Linux and macOS, lowest precedence first, as pip orders them."""
    named = env.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    home = Path(env.get("HOME") or Path.home())
    xdg_dirs = (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs if d]
    files.append(Path("/etc/pip.conf"))
    if sys.platform == "darwin":
        files.insert(0, Path("/Library/Application Support/pip/pip.conf"))
    if not (named and Path(named).exists()):
        config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        files += [home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"]
        if sys.platform == "darwin":
            files.append(home / "Library" / "Application Support" / "pip" / "pip.conf")
    files.append(venv / "pip.conf")
    if named:
        files.append(Path(named))
    return files


def index_settings(env: Mapping[str, str], venv: Path) -> IndexSettings:
    """The index and CA bundle pip itself would use: its environment variables, then its
    configuration files' [install] sections, then their [global] sections."""
    sections: dict[str, dict[str, str]] = {"global": {}, "install": {}}
    for path in pip_config_files(env, venv):
        if not path.is_file():
            continue
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError) as exc:
            raise InstallError(f"cannot read pip's configuration {path}: {one_line(str(exc))}") from None
        for name, values in sections.items():
            if parser.has_section(name):
                values.update({key.replace("_", "-"): value for key, value in parser.items(name)})
    merged = {**sections["global"], **sections["install"]}
    url = env.get("PIP_INDEX_URL") or merged.get("index-url") or DEFAULT_INDEX_URL
    cert = env.get("PIP_CERT") or merged.get("cert") or None
    return IndexSettings(url=url.strip(), cert=cert.strip() if cert else None)


def fetch(url: str, settings: IndexSettings) -> tuple[bytes, str]:
    """The body at `url` and its final address (after redirects), for resolving relative links.
    Credentials in the index's address go to the index's own host only, as pip sends them."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path))
        if path.is_dir():  # a simple index laid out as folders, as pip reads file:// indexes
            path = path / "index.html"
        return path.read_bytes(), path.as_uri()
    headers = {"User-Agent": "piton-install", "Accept": "text/html"}
    index = urllib.parse.urlsplit(settings.url)
    authorization = None
    if index.username is not None and parts.hostname == index.hostname:
        user = urllib.parse.unquote(index.username)
        secret = urllib.parse.unquote(index.password or "")
        authorization = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()
    context = ssl.create_default_context(cafile=settings.cert) if settings.cert else None
    request = urllib.request.Request(redact(url), headers=headers)
    if authorization:  # not sent on to wherever a redirect points
        request.add_unredirected_header("Authorization", authorization)
    with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=context) as response:
        body: bytes = response.read()
        return body, str(response.geturl())


@dataclass(frozen=True)
class Link:
    """One file a PEP 503 project page lists."""

    url: str
    filename: str
    requires_python: str | None = None
    yanked: bool = False


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.base: str | None = None
        self.found: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append((self._open, "".join(self._text).strip()))
            self._open = None


def parse_project_page(page: str, page_url: str) -> list[Link]:
    parser = _Anchors()
    parser.feed(page)
    parser.close()
    base = urllib.parse.urljoin(page_url, parser.base) if parser.base else page_url
    links = []
    for attrs, text in parser.found:
        href = attrs.get("href")
        if not href:
            continue
        url = urllib.parse.urljoin(base, href)
        filename = text or urllib.parse.unquote(urllib.parse.urlsplit(url).path.rpartition("/")[2])
        links.append(Link(url, filename, attrs.get("data-requires-python"), "data-yanked" in attrs))
    return links


def python_satisfies(spec: str, version: Sequence[int]) -> bool:
    """Whether `version` meets a Requires-Python specifier (the PEP 440 subset indexes use); a
    clause this cannot read is left to pip, which checks the wheel's metadata again."""
    have = tuple(version)
    for clause in spec.split(","):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            continue
        op, text, wildcard = match.groups()
        want = tuple(int(part) for part in text.split("."))
        if wildcard:
            if (have[: len(want)] == want) != (op == "=="):
                return False
            continue
        width = max(len(want), len(have))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        if op == "~=":
            ok = a >= b and have[: len(want) - 1] == want[:-1]
        else:
            ok = {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b}[op]
        if not ok:
            return False
    return True


@dataclass(frozen=True)
class PipWheel:
    version: tuple[int, ...]
    url: str
    filename: str
    hash_name: str
    digest: str


def choose_pip_wheel(links: Sequence[Link], python: Sequence[int]) -> PipWheel:
    """The newest final release of pip as a pure-Python wheel that this Python can run, among the
    files whose hash the index gives (a download must be verified)."""
    usable: list[PipWheel] = []
    unhashed = 0
    for link in links:
        match = _PIP_WHEEL.fullmatch(link.filename)
        if match is None or "py3" not in match["tags"].split(".") or link.yanked:
            continue
        if link.requires_python and not python_satisfies(link.requires_python, python):
            continue
        name, _, digest = urllib.parse.urlsplit(link.url).fragment.partition("=")
        if name not in _HASHES or not digest:
            unhashed += 1
            continue
        version = tuple(int(part) for part in match["version"].split("."))
        url = urllib.parse.urldefrag(link.url).url
        usable.append(PipWheel(version, url, link.filename, name, digest.lower()))
    if not usable:
        running = ".".join(map(str, python))
        why = "with a sha256 hash to verify it by" if unhashed else f"that Python {running} can run"
        raise InstallError(f"the package index lists no wheel of pip {why}")
    return max(usable, key=lambda wheel: (wheel.version + (0,) * 4)[:4])


def download(wheel: PipWheel, folder: Path, settings: IndexSettings) -> Path:
    body, _ = fetch(wheel.url, settings)
    got = hashlib.new(wheel.hash_name, body).hexdigest()
    if got != wheel.digest:
        raise InstallError(
            f"{wheel.filename} from {redact(wheel.url)} does not match the index's {wheel.hash_name} "
            f"(expected {wheel.digest}, got {got}); not installing it"
        )
    path = folder / wheel.filename
    path.write_bytes(body)
    return path


def bootstrap_pip(venv: Path, settings: IndexSettings) -> None:
    """Puts pip into a venv that has none: the newest pip wheel from the index, verified by its hash,
    installs itself (pip runs from its own wheel)."""
    index = redact(settings.url)
    say(f"{shown(venv)} has no pip: fetching pip from {index}")
    page_url = settings.url.rstrip("/") + "/pip/"
    try:
        body, final_url = fetch(page_url, settings)
        links = parse_project_page(body.decode("utf-8", "replace"), final_url)
        wheel = choose_pip_wheel(links, venv_version(venv) or sys.version_info[:3])
        with tempfile.TemporaryDirectory(prefix="piton-pip-") as folder:
            path = download(wheel, Path(folder), settings)
            argv: list[str | Path] = [venv_python(venv), path / "pip", "install", "--no-index", path]
            done = run([*argv, "--quiet", "--disable-pip-version-check"])
    except urllib.error.HTTPError as exc:
        raise InstallError(f"the package index {index} answered {exc.code} {exc.reason} for pip") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise InstallError(
            f"cannot reach the package index {index} to fetch pip ({one_line(str(reason))}); set "
            "PIP_INDEX_URL to one that is reachable, or install python3-venv (Debian, Ubuntu)"
        ) from None
    if done.returncode != 0 or not has_pip(venv):
        sys.stderr.write(done.stdout)
        raise InstallError(f"pip could not install itself from {wheel.filename} (its messages are above)")


# --- Piton ----------------------------------------------------------------------------------------


CONSTRAINTS = ROOT / "constraints.txt"


def user_venv(env: Mapping[str, str]) -> Path:
    """Where a user's install lives: Piton's data folder (XDG), outside every project."""
    data = Path(env.get("XDG_DATA_HOME") or "~/.local/share").expanduser()
    return Path(os.path.abspath(data)) / "piton" / "venv"


def pip_install_argv(venv: Path, *, dev: bool) -> list[str | Path]:
    """A contributor's install is the checkout itself, editable (a `git pull` is enough to update),
    with the development tools; a user's is a copy of it (pip copies a folder again each time)."""
    pip: list[str | Path] = [venv_python(venv), "-m", "pip", "install"]
    return [*pip, "--editable", f"{ROOT}[dev]"] if dev else [*pip, str(ROOT)]


def install_piton(venv: Path, *, dev: bool, verbose: bool, upgrade: bool = False) -> str:
    """Installs Piton at the versions `constraints.txt` names, and returns `piton --version` as the
    installed command prints it. With `upgrade`, the newest versions pyproject.toml allows instead,
    written to constraints.txt."""
    say(f"Installing Piton{' and its development tools' if dev else ''} into {shown(venv)}")
    argv = pip_install_argv(venv, dev=dev)
    if upgrade:
        argv += ["--upgrade", "--upgrade-strategy", "eager"]
    elif CONSTRAINTS.is_file():
        argv += ["--constraint", CONSTRAINTS]
    argv.append("--disable-pip-version-check")
    done = run(argv if verbose else [*argv, "--quiet"], capture=not verbose)
    if done.returncode != 0:
        sys.stderr.write(done.stdout or "")
        raise InstallError("pip could not install Piton (its messages are above)")
    if dev:
        compile_checkout(venv)
    found = run([venv_python(venv), "-c", "import piton.cli.main, piton; print(piton.__version__)"])
    if found.returncode != 0:
        raise InstallError(f"the installed piton does not start: {last_line(found)}")
    write_launcher(venv, dev=dev, version=found.stdout.strip())
    check = run([venv / "bin" / "piton", "--version"])
    if check.returncode != 0:
        raise InstallError(f"the installed piton does not start: {last_line(check)}")
    if upgrade:
        write_constraints(venv)
    return check.stdout.strip()


def write_launcher(venv: Path, *, dev: bool = False, version: str = "") -> None:
    """`bin/piton` as a few lines: pip's wrapper imports `re` to tidy a Windows program name, a third
    of what `piton --version` costs. A user's install starts Python without `site` (`-S`) and names
    its own site-packages: reading pyvenv.cfg and every .pth file is another quarter, and a copy
    needs none of it. It also answers `--version` itself, from the `version` installed, before
    anything loads (a quarter of the rest). A contributor's keeps `site`, since its editable install
    is a .pth file, and asks the checkout, whose version a `git pull` changes. Written anew after
    every pip run, which restores its own."""
    launcher = venv / "bin" / "piton"
    if dev:
        start = f"#!{venv_python(venv)}\nimport sys\n"
    else:
        start = f"#!{venv_python(venv)} -S\nimport sys\n"
        if version:
            start += f"if sys.argv[1:] in (['--version'], ['-v']):\n    print({f'piton {version}'!r})\n"
            start += "    sys.exit(0)\n"
        start += f"sys.path += {site_packages(venv)!r}\n"
    launcher.write_text(f"{start}from piton.cli.main import main\nsys.exit(main())\n", encoding="utf-8")
    launcher.chmod(0o755)


def site_packages(venv: Path) -> list[str]:
    """The venv's folders of installed packages, as its Python with `site` finds them."""
    script = (
        "import json, sysconfig; print(json.dumps([sysconfig.get_path(k) for k in ('purelib', 'platlib')]))"
    )
    done = run([venv_python(venv), "-c", script])
    if done.returncode != 0:
        raise InstallError(f"the virtual environment's Python does not start: {last_line(done)}")
    return list(dict.fromkeys(json.loads(done.stdout.strip().splitlines()[-1])))


def compile_checkout(venv: Path, root: Path = ROOT) -> None:
    """Byte-compiles the checkout an editable install runs from. pip compiles what it copies into
    the venv, never an editable checkout; where PYTHONDONTWRITEBYTECODE is set, `piton` would
    otherwise compile every module again at each start."""
    # compileall does not follow the package's links to its subpackages: each is named by itself
    folders = sorted({root / "piton", *(p.resolve() for p in (root / "piton").iterdir() if p.is_dir())})
    done = run([venv_python(venv), "-m", "compileall", "-q", "-j", "0", *folders])
    if done.returncode != 0:
        raise InstallError(f"Python could not compile Piton's sources: {last_line(done)}")


def write_constraints(venv: Path, target: Path = CONSTRAINTS) -> None:
    """`target` (constraints.txt) anew from what the venv holds, its explanatory head kept."""
    frozen = run(
        [venv_python(venv), "-m", "pip", "freeze", "--all", "--exclude", "piton-code", "--exclude", "pip"]
    )
    if frozen.returncode != 0:
        raise InstallError(f"pip freeze failed: {last_line(frozen)}")
    old = target.read_text(encoding="utf-8") if target.is_file() else ""
    head = [line for line in old.splitlines() if line.startswith("#")]
    pins = sorted((line for line in frozen.stdout.splitlines() if "==" in line), key=str.lower)
    target.write_text("\n".join([*head, *pins]) + "\n", encoding="utf-8")
    say(f"Wrote {len(pins)} versions to {shown(target)}: run the tests, then commit it")


def link_command(target: Path, bin_dir: Path) -> tuple[str, bool]:
    """Links `target` as `bin_dir/piton` unless something else is there; returns what happened and
    whether the link is ours."""
    link = bin_dir / "piton"
    if link.is_symlink() or link.exists():
        if link.is_symlink() and os.path.realpath(link) == os.path.realpath(target):
            return f"{shown(link)} already links to {shown(target)}", True
        what = f"a link to {os.readlink(link)}" if link.is_symlink() else "a file"
        return (
            f"{shown(link)} is already {what}: left as it is (remove it and run install.py again "
            "to link this installation)",
            False,
        )
    try:
        bin_dir.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    except OSError as exc:
        return f"could not link {shown(link)}: {exc.strerror or exc}", False
    return f"Linked {shown(link)} -> {shown(target)}", True


def path_advice(bin_dir: Path, target: Path) -> str:
    folders = {
        os.path.realpath(os.path.expanduser(p)) for p in os.environ.get("PATH", "").split(os.pathsep) if p
    }
    if os.path.realpath(bin_dir) not in folders:
        # Debian's and Ubuntu's ~/.profile put ~/.local/bin on PATH once the folder exists.
        login = (
            " (a new login shell does on Debian and Ubuntu)" if bin_dir == Path.home() / ".local/bin" else ""
        )
        return f"{shown(bin_dir)} is not on your PATH: add it{login}, or run {shown(target)}"
    first = shutil.which("piton")
    if first and os.path.realpath(first) != os.path.realpath(target):
        return f"{shown(bin_dir)} is on your PATH, but another piton comes first there: {first}"
    return f"{shown(bin_dir)} is on your PATH: `piton` starts this installation"


def sandbox_report(venv: Path, dev: bool) -> str | None:
    """Where the sandbox's bubblewrap comes from, as the installed Piton finds it (the system's, else
    the bundled one); None off Linux. The bundled one inside a checkout cannot serve Piton working on
    that checkout, since commands there could replace it."""
    if not sys.platform.startswith("linux"):
        return None
    probe = (
        "from piton.core.safety.sandbox.locate import locate_bwrap\n"
        "found = locate_bwrap()\n"
        "print('' if isinstance(found, str) else found.describe())"
    )
    found = run([venv_python(venv), "-c", probe]).stdout.strip()
    if not found:
        return (
            "No bubblewrap was found for the sandbox, so Piton will run no command: install your "
            "system's bubblewrap package (Debian and Ubuntu: sudo apt-get install bubblewrap)"
        )
    report = f"The sandbox runs {found}"
    if dev and "bundled" in found:
        report += (
            f"; not in {shown(ROOT)} itself, which holds it: there, commands need your system's "
            "bubblewrap or a user's install (python3 install.py)"
        )
    return report


# --- the command ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Install Piton from this checkout into a virtual environment and link the piton command.",
    )
    parser.add_argument(
        "--dev",
        action="store_true",
        help="a contributor's install: this checkout, editable, with the test and lint tools, in .venv",
    )
    parser.add_argument(
        "--venv",
        type=Path,
        metavar="DIR",
        help="the virtual environment (default: ~/.local/share/piton/venv; with --dev, the checkout's .venv)",
    )
    parser.add_argument(
        "--bin-dir",
        type=Path,
        default=Path("~/.local/bin"),
        metavar="DIR",
        help="where to link piton (default: ~/.local/bin)",
    )
    parser.add_argument("--no-link", action="store_true", help="do not link piton into the bin folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pip's output")
    parser.add_argument(
        "--upgrade-constraints",
        action="store_true",
        help="with --dev: install the newest versions pyproject.toml allows, write them to constraints.txt",
    )
    # Only the venv and its pip, so that the bootstrap can be tested without a whole install.
    parser.add_argument("--bootstrap-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def install(args: argparse.Namespace) -> None:
    if sys.version_info < MIN_PYTHON:
        raise InstallError(
            f"Piton needs Python 3.11 or newer; {sys.executable} is {platform.python_version()}"
        )
    if not (ROOT / "pyproject.toml").is_file():
        raise InstallError(f"{ROOT} is not a Piton checkout (no pyproject.toml beside install.py)")
    if args.upgrade_constraints and not args.dev:
        raise InstallError("--upgrade-constraints pins the development tools too: use it with --dev")
    default = ROOT / ".venv" if args.dev else user_venv(os.environ)
    venv = Path(os.path.abspath(args.venv.expanduser())) if args.venv else default
    ensure_venv(venv, sys.executable)
    if not has_pip(venv):
        bootstrap_pip(venv, index_settings(os.environ, venv))
    if args.bootstrap_only:
        return
    version = install_piton(venv, dev=args.dev, verbose=args.verbose, upgrade=args.upgrade_constraints)
    target = venv / "bin" / "piton"
    if not args.no_link:
        bin_dir = Path(os.path.abspath(args.bin_dir.expanduser()))
        message, ours = link_command(target, bin_dir)
        say(message)
        if ours:
            say(path_advice(bin_dir, target))
    report = sandbox_report(venv, args.dev)
    if report:
        say(report)
    say(f"{version} is installed: cd into a project and run {shown(target) if args.no_link else 'piton'}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        install(args)
    except InstallError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
