"""Workspace trust: whether a folder's own files may add power.

A project's files come with the code: whoever can commit wrote them, and so may a model that could
write in an earlier session. What they would grant — allow rules in `.piton/settings.json` and
`.piton/settings.local.json`, the `allowed-tools` of project skills and commands (and the hooks and
MCP servers to come) — is honoured only in a folder the user trusts: by answering the REPL's
question (remembered in the user's state directory, keyed by the folder's real path, never inside
the project), with `--trust-workspace` for one run, or with `"trustedFolders"` in
`~/.piton/settings.json`. Deny and ask rules only take power away: they always apply.

Trust is per folder one starts in: a subfolder of a trusted folder is not trusted, because a
command can plant `sub/.piton/settings.json`. A remembered yes covers the grants the user was shown;
a grant that appears later (a skill planted by a session) waits for a new yes, and a no is not asked
again for the same grants. A folder trusted by flag or setting is held to the same rule: what its
files granted the first time it was trusted so is remembered, and a grant added since waits for a
yes in the REPL.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from piton.core.project.jsonfile import JsonFileError, read
from piton.core.records import record
from piton.core.safety.globs import glob_match

How = Literal["flag", "setting", "remembered", "declined", "unknown"]
TRUST_FLAG = "--trust-workspace"
HOW_TO_TRUST = f'trust it with {TRUST_FLAG}, or list it in "trustedFolders" in ~/.piton/settings.json'
_SHOWN = 3  # grants named in the one-line notice
_BY = {"flag": TRUST_FLAG, "setting": "trustedFolders"}


def folder_key(folder: Path) -> str:
    """How a folder is known to the store: its real path."""
    return os.path.realpath(folder)


def default_store_path() -> Path:
    """In Piton's state directory, which the sandbox policy keeps private from the model's tools."""
    from piton.core.conversation.session import state_dir

    return state_dir() / "trusted-folders.json"


@record(frozen=True)
class Grant:
    """One thing a folder's files would allow; remembered by its text, so a changed grant is new."""

    where: str  # the file that grants, as shown to people
    what: str  # "allow Bash(npm test:*)", "skill deploy: allowed-tools Bash, Read"

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


class TrustStore:
    """The user's answers, one record per folder: whether it is trusted, the grants approved and the
    ones declined. An answer that cannot be saved still holds for this process."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_store_path()
        self._records: dict[str, dict[str, Any]] | None = None
        self.problem: str | None = None  # why the last answer could not be saved
        self.unreadable: str | None = None  # why the answers on disk could not be read (naming the file)
        self._declined: dict[str, frozenset[str]] = {}  # the noes of this process, never written

    def decline(self, folder: Path, grants: Iterable[str]) -> None:
        """A no to `grants` of `folder`: it holds while this process lives, and the next start asks."""
        key = folder_key(folder)
        self._declined[key] = self._declined.get(key, frozenset()) | frozenset(grants)

    def declined(self, folder: Path) -> frozenset[str]:
        return self._declined.get(folder_key(folder), frozenset())

    def _read(self) -> dict[str, dict[str, Any]]:
        """The answers on disk. A file that cannot be used counts as no answers (nothing is trusted
        that was not said yes to), and the next answer given replaces it."""
        self.unreadable = None
        try:
            data = read(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except JsonFileError as e:
            self.unreadable = f"your answers about trusted folders in {self.path} were ignored: {e}"
            return {}
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, dict):
            self.unreadable = (
                f"your answers about trusted folders in {self.path} were ignored: not the shape Piton writes"
            )
            return {}
        return {k: v for k, v in folders.items() if isinstance(v, dict)}

    def record(self, folder: Path) -> dict[str, Any] | None:
        if self._records is None:
            self._records = self._read()
        return self._records.get(folder_key(folder))

    def save(self, folder: Path, *, trusted: bool, approved: Iterable[str], declined: Iterable[str]) -> None:
        entry = {
            "trusted": trusted,
            "approved": sorted(set(approved)),
            "declined": sorted(set(declined)),
            "answered": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._store(folder, entry)

    def forget(self, folder: Path) -> bool:
        """Drop what was remembered about `folder` (`/trust forget`): the next start asks again.
        Whether there was an answer to drop."""
        records = self._read()
        if records.pop(folder_key(folder), None) is None:
            return False
        self._records = records
        try:
            self._write({"version": 1, "folders": records})
        except OSError as e:
            self.problem = f"could not forget the answer in {self.path} ({e.strerror or e})"
            return False
        return True

    def save_baseline(self, folder: Path, grants: Iterable[str]) -> None:
        """What the folder's files granted the first time it was trusted by flag or setting."""
        self._store(folder, {"baseline": sorted(set(grants))})

    def _store(self, folder: Path, fields: dict[str, Any]) -> None:
        records = self._read()  # another session may have answered for another folder meanwhile
        key = folder_key(folder)
        records[key] = {**records.get(key, {}), **fields}
        self._records = records
        try:
            self._write({"version": 1, "folders": records})
            self.problem = self.unreadable = None
        except OSError as e:
            self.problem = (
                f"could not remember the answer in {self.path} ({e.strerror or e}); it holds for this session"
            )

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(prefix=".trusted-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2)
                out.write("\n")
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def matches(folder: Path, patterns: Sequence[str]) -> bool:
    """Whether `folder` (by its real path or as given) is one of `patterns`: absolute paths or `~/…`,
    globs allowed (`~/work/*` is each folder in ~/work, `~/work/**` the folder and all below it)."""
    names = {folder_key(folder), os.path.abspath(folder)}
    for raw in patterns:
        pattern = os.path.expanduser(raw.strip())
        if not os.path.isabs(pattern):
            continue
        pattern = pattern.rstrip("/") or "/"
        candidates = {pattern}
        if not any(c in pattern for c in "*?[{"):
            candidates.add(os.path.realpath(pattern))
        if any(glob_match(p, name) for p in candidates for name in names):
            return True
    return False


@record(frozen=True)
class Trust:
    """What a folder's files may grant in this run, and why."""

    folder: Path
    how: How
    grants: tuple[Grant, ...] = ()
    approved: frozenset[str] = frozenset()  # remembered grants the user said yes to
    declined: frozenset[str] = frozenset()  # and those they said no to
    store: TrustStore | None = field(default=None, compare=False)

    @property
    def trusted(self) -> bool:
        return self.how in ("flag", "setting", "remembered")

    def honours(self, grant: Grant) -> bool:
        return self.trusted and str(grant) in self.approved

    @property
    def ignored(self) -> list[Grant]:
        return [g for g in self.grants if not self.honours(g)]

    @property
    def pending(self) -> list[Grant]:
        """What the REPL asks about: ignored grants the user has not said no to."""
        return [g for g in self.ignored if str(g) not in self.declined]

    def question(self) -> tuple[list[str], str]:
        """The lines that show what trusting would grant, and the question itself."""
        if self.how == "remembered":
            head = "Since you trusted this folder, its files have added what would grant more power:"
        elif self.trusted:
            head = (
                f"Since this folder was first trusted ({_BY[self.how]}), its files have added what "
                "would grant more power:"
            )
        else:
            head = "This folder's files would grant more power than you gave Piton:"
        lines = [head, *(f"  {g}" for g in self.ignored)]
        lines.append("Piton honours them only in folders you trust (deny and ask rules always apply).")
        if self.store is not None and self.store.unreadable:
            lines.append(f"({self.store.unreadable}; your answer now replaces them)")
        return lines, f"Trust {self.folder} and what its files grant? (y/N) › "

    def answer(self, yes: bool) -> Trust:
        """The user's answer. A yes is remembered; a no holds for this session only, so the next
        start asks again (a no to added grants leaves the earlier yes in place)."""
        current = {str(g) for g in self.grants}
        if not yes:
            how: How = self.how if self.trusted else "declined"
            no = {str(g) for g in self.pending}
            if self.store is not None:
                self.store.decline(self.folder, no)
            return replace(self, how=how, declined=self.declined | no)
        answered = replace(self, how="remembered", approved=frozenset(current), declined=frozenset())
        if self.store is not None:
            self.store.save(
                self.folder,
                trusted=answered.how == "remembered",
                approved=answered.approved,
                declined=answered.declined,
            )
        return answered

    def notice(self) -> str | None:
        """The one line that says what was ignored and how to trust the folder, or None."""
        unreadable = self.store.unreadable if self.store is not None else None
        ignored = self.ignored
        if not ignored:
            return unreadable
        shown = "; ".join(map(str, ignored[:_SHOWN]))
        if len(ignored) > _SHOWN:
            shown += f"; and {len(ignored) - _SHOWN} more"
        if self.trusted:
            since = (
                "you trusted it" if self.how == "remembered" else f"it was first trusted ({_BY[self.how]})"
            )
            return (
                f"ignored what this folder's files added since {since} ({shown}); "
                "start piton here to review it"
            )
        told = f"this folder is not trusted, so its files grant nothing: ignored {shown} ({HOW_TO_TRUST})"
        return f"{told}; {unreadable}" if unreadable else told

    def describe(self) -> str:
        """For /status."""
        why = {
            "flag": f"trusted for this run ({TRUST_FLAG})",
            "setting": 'trusted ("trustedFolders" in ~/.piton/settings.json)',
            "remembered": "trusted (you said yes)",
            "declined": "not trusted (you said no; the next start asks again)",
            "unknown": "not trusted" if self.grants else "not trusted (its files grant nothing)",
        }[self.how]
        ignored = len(self.ignored)
        if not ignored:
            return why
        return f"{why}; {ignored} grant(s) of its files ignored: {HOW_TO_TRUST}"


def decide(
    folder: Path,
    grants: Sequence[Grant],
    *,
    trusted_folders: Sequence[str] = (),
    store: TrustStore | None = None,
    flag: bool = False,
    first_use: bool = True,
) -> Trust:
    """The trust `folder` has: `flag` (`--trust-workspace`, for this run), else the user's setting,
    else the answer remembered in `store` (the user's state directory).

    Trusted by flag or setting, the folder's files grant what they granted the first time it was
    (remembered in `store` when `first_use`), and what the user approved since: a grant a session
    planted waits for a yes in the REPL, as in a folder trusted by answering."""
    found = tuple(dict.fromkeys(grants))
    key = folder_key(folder)
    store = store if store is not None else TrustStore()
    record = store.record(folder)
    approved = frozenset(v for v in (record or {}).get("approved", []) if isinstance(v, str))
    declined = store.declined(folder)  # a no holds for this process: the next start asks again
    if flag or matches(folder, trusted_folders):
        how: How = "flag" if flag else "setting"
        baseline = (record or {}).get("baseline")
        if not isinstance(baseline, list):
            baseline = [str(g) for g in found]
            if first_use:
                store.save_baseline(folder, baseline)
        approved |= {v for v in baseline if isinstance(v, str)}
        return Trust(Path(key), how, found, approved, declined, store=store)
    if record is None or record.get("trusted") is not True:  # no answer, or an earlier version's no
        how = "declined" if declined else "unknown"
        return Trust(Path(key), how, found, declined=declined, store=store)
    return Trust(Path(key), "remembered", found, approved, declined, store=store)
