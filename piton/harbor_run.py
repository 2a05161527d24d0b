"""How Piton is installed and run inside a Harbor task container: the install script, the command
line (Harbor's own for Claude Code, with `piton` in place of `claude`) and its environment. Plain
functions, without Harbor: `piton.harbor` puts them to work, and they can be run without it.

The run follows Claude Code's harness conventions, which Piton honours: the instruction arrives on
standard input, `IS_SANDBOX=1` says the container is the sandbox (so commands run without bwrap),
and `CLAUDE_CONFIG_DIR` names the folder where the transcript is written in Claude Code's format,
for the trajectory to be read from after the run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from piton.core.records import record

LOG_NAME = "piton.txt"  # the stream-json output (and stderr), teed into the agent's log folder
VENV = "/opt/piton"
# passed on from the host when set: what the API client needs, and Piton's own waits
PASSED_ON = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "API_TIMEOUT_MS",
    "PITON_CONNECT_TIMEOUT_MS",
    "PITON_STREAM_IDLE_TIMEOUT_MS",
    "PITON_MAX_RETRIES",
    "PITON_MAX_RETRY_WAIT_MS",
)
_VERSION = re.compile(r"\d+(\.\d+)*([a-z0-9.+-]*)")


@record(frozen=True)
class RunFlags:
    """Claude Code's print-mode flags a Harbor run may pass."""

    effort: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    model: str | None = None
    thinking_display: str | None = None  # summarized or omitted
    disable_web_search: bool = False  # WebSearch and WebFetch taken out of the model's tools

    def argv(self) -> list[str]:
        out: list[str] = []
        if self.effort:
            out += ["--effort", self.effort]
        if self.thinking_display:
            out += ["--thinking-display", self.thinking_display]
        if self.disable_web_search:
            out += ["--disallowedTools", "WebSearch,WebFetch"]
        if self.max_turns is not None:
            out += ["--max-turns", str(self.max_turns)]
        if self.max_budget_usd is not None:
            out += ["--max-budget-usd", str(self.max_budget_usd)]
        return out


def package_spec(version: str | None = None, wheel: str | None = None) -> str:
    """What pip installs: an uploaded wheel, a released version, or the latest release."""
    if wheel:
        return wheel
    if version:
        if not _VERSION.fullmatch(version):
            raise ValueError(f"not a version: {version!r}")
        return f"piton-code=={version}"
    return "piton-code"


def install_script(spec: str) -> str:
    """Install Piton into its own virtual environment and put `piton` on the PATH (as root). A
    Python of 3.11 or later from the image is used when there is one; otherwise uv brings one."""
    quoted = shlex.quote(spec)
    return f"""set -e
if command -v piton >/dev/null 2>&1 && [ -x {VENV}/bin/piton ]; then piton --version; exit 0; fi
fetch() {{
  if command -v apt-get >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
  elif command -v apk >/dev/null 2>&1; then apk add --no-cache "$@" >/dev/null
  elif command -v dnf >/dev/null 2>&1; then dnf install -y -q "$@" >/dev/null
  fi
}}
usable() {{
  python3 -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1
}}
venv() {{ python3 -m venv {VENV} 2>/dev/null || {{ fetch python3-venv && python3 -m venv {VENV}; }}; }}
if usable && venv; then
  {VENV}/bin/python -m pip install -q --disable-pip-version-check {quoted}
else
  command -v curl >/dev/null 2>&1 || fetch curl ca-certificates
  curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/usr/local/bin UV_NO_MODIFY_PATH=1 sh
  uv venv -q --python 3.12 {VENV}
  uv pip install -q --python {VENV}/bin/python {quoted}
fi
ln -sf {VENV}/bin/piton /usr/local/bin/piton
piton --version
"""


def run_env(host: Mapping[str, str], sessions_dir: str, flags: RunFlags) -> dict[str, str]:
    """The run's environment: the API credentials and waits from the host, the model, and the two
    harness conventions."""
    env = {name: host[name] for name in PASSED_ON if host.get(name)}
    if flags.model:
        env["ANTHROPIC_MODEL"] = flags.model
    env["IS_SANDBOX"] = "1"
    env["CLAUDE_CONFIG_DIR"] = sessions_dir
    return env


def run_command(
    instruction_var: str,
    logs_dir: str,
    flags: RunFlags,
    *,
    settings: str | None = None,
    resume: bool = False,
    piton: str = "piton",
) -> str:
    """Harbor's command line for Claude Code, with `piton`: the instruction (in the environment
    variable `instruction_var`, never on the command line) on standard input, stream-json out,
    stdout and stderr teed into the log."""
    shell_var = instruction_var.lower()
    argv = [
        piton,
        "--verbose",
        "--output-format=stream-json",
        *(["--settings", settings] if settings else []),
        *flags.argv(),
        *(["--continue"] if resume else []),
        "--permission-mode=bypassPermissions",
        "--print",
    ]
    log = shlex.quote(f"{logs_dir.rstrip('/')}/{LOG_NAME}")
    return (
        'export PATH="/usr/local/bin:$HOME/.local/bin:$PATH"; '
        f'{shell_var}="${instruction_var}"; unset {instruction_var}; '
        f'printf "%s" "${shell_var}" | {shlex.join(argv)} 2>&1 | tee {log}'
    )


def setup_command(sessions_dir: str) -> str:
    """The transcript folder, and the user's Claude Code skills of the image copied into it (Piton
    reads skills from `$CLAUDE_CONFIG_DIR/skills` when it is set)."""
    folder = shlex.quote(sessions_dir)
    return (
        f"mkdir -p {folder}/projects {folder}/skills && "
        f"if [ -d ~/.claude/skills ]; then cp -r ~/.claude/skills/. {folder}/skills/ 2>/dev/null || true; fi"
    )
