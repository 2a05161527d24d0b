"""A run's permission rules and sandbox policy, from the flags, the settings files and the folder's
trust (a project's files narrow what the user allows, never widen it)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from piton.core.conversation.session import state_dir
from piton.core.mode_names import CHOSEN_MODES, EXTRA_MODES
from piton.core.options import RunOptions
from piton.core.project.claude_home import named_config_dir
from piton.core.project.settings import (
    MODE_STRICTNESS,
    SANDBOX_STRICTNESS,
    Settings,
)
from piton.core.project.trust import Grant, Trust
from piton.core.records import record
from piton.core.safety.permissions import (
    Approver,
    Decision,
    DenyAll,
    PermissionGate,
    PermissionRequest,
    Permissions,
    Rule,
)
from piton.core.safety.policy import SANDBOX_MODES, SandboxPolicy, real
from piton.core.safety.rules import BYPASS_REFUSED
from piton.setup_errors import SetupError

if TYPE_CHECKING:
    from piton.core.safety.programs import Programs

MACHINE_SANDBOX_NOTICE = (
    "IS_SANDBOX=1: this machine is the sandbox, so commands run without bwrap (--sandbox overrides)"
)


class DontAsk:
    """The approver of `--permission-mode dontAsk`: what the rules do not allow is refused unasked."""

    async def __call__(self, request: PermissionRequest) -> Decision:
        if request.tool.kind == "question":
            return Decision("deny", "permission mode dontAsk: no questions are asked; decide yourself")
        return Decision(
            "deny",
            f"{request.reason}; permission mode dontAsk refuses what the rules do not allow "
            f'(--allowedTools "{request.suggestion}" would allow it)',
        )


def valid_rules(texts: list[str], where: str, notices: list[str]) -> list[str]:
    good = []
    for text in texts:
        try:
            Rule.parse(text)
        except ValueError as e:
            notices.append(f"ignored a permission rule in {where}: {e}")
            continue
        good.append(text)
    return good


def permissions_for(options: RunOptions, settings: Settings, trust: Trust, notices: list[str]) -> Permissions:
    """The rules of the user's files and flags, the project's deny and ask rules, and the project's
    allow rules that the folder's trust covers; the mode the user chose, or a stricter one the
    project asks for."""
    chosen = options.permission_mode
    if chosen is not None and chosen not in CHOSEN_MODES:
        modes = ", ".join(CHOSEN_MODES)
        raise SetupError(f"unknown permission mode {chosen!r} (one of {modes})")
    flag = "default" if chosen in EXTRA_MODES else chosen
    mode = settings.narrowed(("permissions", "defaultMode"), MODE_STRICTNESS, flag, "default")
    if mode == "bypassPermissions" and settings.bypass_disabled:
        notices.append(f"{BYPASS_REFUSED}; default")
        mode = "default"
    for text in [*options.allowed_tools, *options.disallowed_tools]:
        try:
            Rule.parse(text)
        except ValueError as e:
            raise SetupError(str(e)) from e
    # a broken rule is noted whether or not the folder is trusted
    valid = valid_rules(settings.rules("allow"), "settings", notices)
    user = settings.rules("allow", trusted_only=True)
    granted = [
        rule
        for path, rule in settings.project_rules("allow")
        if rule in valid and trust.honours(rule_grant(options.cwd, path, rule))
    ]
    allow = [*(r for r in user if r in valid), *granted, *options.allowed_tools]
    ask = valid_rules(settings.rules("ask"), "settings", notices)
    deny = [*valid_rules(settings.rules("deny"), "settings", notices), *options.disallowed_tools]
    return Permissions.from_texts(
        mode,  # type: ignore[arg-type]
        allow,
        ask,
        deny,
        project=options.cwd,
        bypass_disabled=settings.bypass_disabled,
    )


def _read_globs(permissions: Permissions, rules: list[str]) -> list[str]:
    """Absolute path globs named by the Read rules among `rules`."""
    parsed = (Rule.parse(text) for text in rules)
    return [permissions.path_pattern(r.specifier) for r in parsed if r.tool == "Read" and r.specifier]


def policy_for(
    options: RunOptions,
    settings: Settings,
    permissions: Permissions,
    results: list[Path],
    shared: list[Path],
    notices: list[str],
) -> SandboxPolicy:
    """The sandbox policy. Piton's own state (other sessions' transcripts) is private, except the
    stored tool results in `results`, which the model is told to read."""
    if options.sandbox is not None and options.sandbox not in SANDBOX_MODES:
        raise SetupError(f"unknown sandbox mode {options.sandbox!r} (one of {', '.join(SANDBOX_MODES)})")
    # IS_SANDBOX=1 from the user's environment speaks for the user, as a flag would; --sandbox wins
    chosen = options.sandbox or ("danger-full-access" if options.machine_is_sandbox else None)
    mode = settings.narrowed(("sandbox", "mode"), SANDBOX_STRICTNESS, chosen, "workspace-write")
    if options.sandbox is None and options.machine_is_sandbox and mode == "danger-full-access":
        notices.append(MACHINE_SANDBOX_NOTICE)
    dirs = [
        *options.add_dirs,
        *(options.cwd / Path(os.path.expanduser(d)) for d in settings.additional_directories),
    ]
    for d in dirs:
        if not d.is_dir():
            raise SetupError(f"--add-dir {d}: not a directory")
    # an allow rule such as `Read(.env)` lifts the credential rule, but only from the user's own file or flags
    trusted_allow = [
        *valid_rules(settings.rules("allow", trusted_only=True), "settings", []),
        *options.allowed_tools,
    ]
    deny = [str(r) for r in permissions.deny]
    return SandboxPolicy.create(
        mode,  # type: ignore[arg-type]
        options.cwd,
        dirs,
        network=settings.network,
        read_exceptions=[*_read_globs(permissions, trusted_allow), *(f"{real(r)}/**" for r in results)],
        read_denied=_read_globs(permissions, deny),
        # Claude Code's folder a harness named holds transcripts, and skills that grant tools
        private_paths=[state_dir(), *harness_folder(options.cwd)],
        shared_dirs=shared,
        extra_credentials=settings.credential_paths,
        env=settings.env(),
    )


def harness_folder(cwd: Path) -> list[Path]:
    """`$CLAUDE_CONFIG_DIR` as a private place (it holds transcripts, and skills that grant tools),
    unless it holds the project itself."""
    folder = named_config_dir()
    if folder is None or real(cwd).is_relative_to(real(folder)):
        return []
    return [folder]


def where(cwd: Path, path: Path) -> str:
    """A file as the trust question shows it (and the store remembers it): relative to the folder
    when inside it."""
    for base in (cwd, real(cwd)):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def rule_grant(cwd: Path, path: Path, rule: str) -> Grant:
    return Grant(where(cwd, path), f"allow {rule}")


@record
class Secured:
    """The session's sandbox policy and its permission gate, and what deciding them had to say."""

    policy: SandboxPolicy
    gate: PermissionGate
    notices: list[str]


def secure(
    options: RunOptions,
    settings: Settings,
    permissions: Permissions,
    readable: list[Path],
    shared: list[Path],
    approver: Approver | None,
) -> Secured:
    """The policy (with the resource limits of the user's settings: each session carries its own)
    and the gate that asks `approver`; `readable` are the stored tool results the model may read,
    `shared` the user's skill folders."""
    from piton.core.safety.sandbox.limits import parse as parse_limits

    notices: list[str] = []
    policy = policy_for(options, settings, permissions, readable, shared, notices)
    if settings.auto_allow_sandboxed_bash and policy.mode != "danger-full-access":
        permissions.allow.append(
            Rule("Bash")
        )  # sandbox.autoAllowBashIfSandboxed: deny and ask rules still apply
    limits, warnings = parse_limits(settings.sandbox_limits)
    notices += warnings
    if options.permission_mode == "dontAsk":
        approver = DontAsk()
    elif options.permission_mode == "auto":
        notices.append("permission mode auto: Piton has no classifier to decide; asking as in default mode")
    gate = PermissionGate(permissions, approver or DenyAll())
    return Secured(replace(policy, limits=limits), gate, notices)


def programs_for(options: RunOptions, settings: Settings, trust: Trust) -> Programs:
    """How the settings' programs start outside a session (`piton mcp list`, `piton doctor`): in
    the sandbox a session here would give them."""
    from piton.core.safety.programs import Programs

    permissions = permissions_for(options, settings, trust, [])
    return Programs(policy_for(options, settings, permissions, [], [], []))
