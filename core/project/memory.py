"""Project memory: the instructions people keep in AGENTS.md and CLAUDE.md files.

Read at start-up, in this order (the most specific last): `~/.piton/AGENTS.md` and
`~/.claude/CLAUDE.md` (or `$CLAUDE_CONFIG_DIR/CLAUDE.md`), then in each folder from the git root
down to the working directory `AGENTS.md`, `CLAUDE.md`, `.claude/CLAUDE.md` and `CLAUDE.local.md`;
and the rules files of `~/.claude/rules/` and the project's `.claude/rules/` (any depth), a rule
whose frontmatter names `paths:` (globs) being for work on those files only.
An `@path` in a file (outside code) is replaced by that file's text: relative to the importing file,
`~/` for home, at most four levels deep. Each file goes into the prompt once, where it is first
reached: a later import of it (two files that import a third, a CLAUDE.md that imports AGENTS.md)
stays a mention, so imports that meet again cannot multiply a file. A project's files may import
only files inside the project (anyone who can commit can write them); every import must pass the
file policy, so a credential is never imported.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from piton.core.project.claude_home import user_config_dirs
from piton.core.project.roots import git_root, project_dirs
from piton.core.records import record

PROJECT_FILES = ("AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
MAX_IMPORT_DEPTH = 4
MAX_FILE_CHARS = 40_000
_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.DOTALL)
_IMPORT = re.compile(r"(?<![\w@/`])@((?:~/|\.{1,2}/|/)?[\w.\-/]*[\w\-])")

Refusal = Callable[[Path, str], str | None]  # why a file of a scope may not be read, or None


@record(frozen=True)
class MemoryFile:
    path: Path
    text: str
    scope: str  # user | project
    imports: tuple[Path, ...] = ()


@record
class Memory:
    files: list[MemoryFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def prompt_section(self) -> str:
        if not self.files:
            return ""
        parts = [
            "# Project instructions\n"
            "The user's own instructions for this work follow, from their AGENTS.md and CLAUDE.md files. "
            "Where they differ from the guidance above, follow them."
        ]
        parts += [f"## {f.path}\n{f.text.strip()}" for f in self.files]
        return "\n\n".join(parts)


def _read(path: Path) -> str:
    # non-blocking and checked once open: a FIFO put in a file's place cannot hang the start-up
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, encoding="utf-8", errors="replace") as f:  # bounded: a huge file costs nothing
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(0, "not a regular file")
        text = f.read(MAX_FILE_CHARS + 1)
    if len(text) > MAX_FILE_CHARS:
        text = text[:MAX_FILE_CHARS] + "\n[... the rest of the file is left out for length]"
    return text


class _Importer:
    def __init__(self, home: Path, refuse: Refusal, memory: Memory) -> None:
        self.home = home
        self.refuse = refuse
        self.memory = memory
        self.scope = "project"
        self.included: set[Path] = set()  # every file in the prompt so far, by its real path

    def expand(
        self, text: str, source: Path, within: Path | None, seen: list[Path]
    ) -> tuple[str, list[Path]]:
        """`text` with its imports inlined; `within` bounds where a project's file may import from."""
        imported: list[Path] = []
        pieces = _CODE.split(text)
        for index in range(0, len(pieces), 2):  # even pieces are prose, odd ones code
            pieces[index] = _IMPORT.sub(lambda m: self._one(m, source, within, seen, imported), pieces[index])
        return "".join(pieces), imported

    def _one(
        self, match: re.Match[str], source: Path, within: Path | None, seen: list[Path], imported: list[Path]
    ) -> str:
        token = match.group(1)
        target = self.home / token[2:] if token.startswith("~/") else source.parent / token
        try:
            target = target.resolve()
            if not target.is_file():
                return match.group(0)  # a mention (`@property`, a handle), not an import
        except OSError:
            return match.group(0)
        problem = self._problem(target, within, seen)
        if problem is None and target in self.included:  # already in the prompt, above: once is enough
            return match.group(0)
        if problem is None:
            try:
                content = _read(target)
            except OSError as e:
                problem = f"cannot read it ({e.strerror or e})"
        if problem is not None:
            self.memory.warnings.append(f"{source}: @{token} was not imported: {problem}")
            return match.group(0)
        self.included.add(target)
        text, nested = self.expand(content, target, within, [*seen, target])
        imported += [target, *nested]
        return text.strip()

    def _problem(self, target: Path, within: Path | None, seen: list[Path]) -> str | None:
        if target in seen:
            return "it imports itself (a cycle)"
        if len(seen) > MAX_IMPORT_DEPTH:
            return f"imports go at most {MAX_IMPORT_DEPTH} levels deep"
        if within is not None and not target.is_relative_to(within):
            return "a project's instructions may import only files inside the project"
        return self.refuse(target, self.scope)


def _outside(real: Path, root: Path) -> str | None:
    if real.is_relative_to(root):
        return None
    return f"it leads outside the project (to {real})"


def load_memory(cwd: Path, home: Path | None = None, refuse: Refusal | None = None) -> Memory:
    home = home if home is not None else Path.home()
    memory = Memory()
    importer = _Importer(home, refuse or (lambda _path, _scope: None), memory)
    root = git_root(cwd.resolve()) or cwd.resolve()
    piton_home, claude = user_config_dirs(home)
    candidates = [(piton_home / "AGENTS.md", "user"), (claude / "CLAUDE.md", "user")]
    rules = set(_rules(claude / "rules"))
    candidates += [(rule, "user") for rule in sorted(rules)]
    for folder in reversed(project_dirs(cwd)):
        candidates += [(folder / name, "project") for name in PROJECT_FILES]
        found = _rules(folder / ".claude" / "rules")
        rules.update(found)
        candidates += [(rule, "project") for rule in found]
    seen = importer.included  # a file imported above is not loaded again on its own
    for path, scope in candidates:
        try:
            if not path.is_file() or path.resolve() in seen:
                continue
            real = path.resolve()
            seen.add(real)
            # a project's file is the repository's: it may not lead (by a symlink) out of it
            problem = _outside(real, root) if scope == "project" else None
            problem = problem or (refuse(real, scope) if refuse is not None and scope == "project" else None)
            if problem is not None:
                memory.warnings.append(f"{path}: not loaded: {problem}")
                continue
            text = _read(path)
        except OSError as e:
            memory.warnings.append(f"{path}: cannot read it ({e.strerror or e}); skipped")
            continue
        within = root if scope == "project" else None
        importer.scope = scope
        if path in rules:
            text = scoped_rule(text)
        text, imports = importer.expand(text, path, within, [real])
        if text.strip() and not _only_mentions(text, path, importer.included):
            memory.files.append(MemoryFile(path, text, scope, tuple(imports)))
    return memory


def _rules(folder: Path) -> list[Path]:
    """The `*.md` files under a rules folder, sorted (links to folders are not followed)."""
    return sorted(Path(d, n) for d, _, names in os.walk(folder) for n in names if n.endswith(".md"))


def _only_mentions(text: str, source: Path, included: set[Path]) -> bool:
    """Whether a file says nothing but `@file` of files already in the prompt (a CLAUDE.md that is
    just `@AGENTS.md`): it adds nothing, so it is not shown again."""
    tokens = text.split()
    if not tokens or not all(t.startswith("@") for t in tokens):
        return False
    return all((source.parent / t[1:]).resolve() in included for t in tokens)


_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)


def scoped_rule(text: str) -> str:
    """A rules file without its frontmatter; one whose `paths:` names globs says so first, so that
    the model applies it to work on those files only."""
    match = _FRONTMATTER.match(text)
    if match is None:
        return text
    globs: list[str] = []
    lines = match.group(1).splitlines()
    for number, line in enumerate(lines):
        key, _, value = line.partition(":")
        if key.strip() != "paths":
            continue
        value = value.strip().strip("[]")
        globs += [g.strip().strip("\"'") for g in value.split(",") if g.strip()]
        for item in lines[number + 1 :]:  # a YAML list below the key
            if not item.strip().startswith("- "):
                break
            globs.append(item.strip()[2:].strip().strip("\"'"))
    body = text[match.end() :]
    if not globs:
        return body
    return f"(This rule applies only when working on files matching: {', '.join(globs)})\n{body}"
