"""The index of settings files below the project roots: after any change, what it finds is what a
walk of the whole tree finds, whether folders are watched (inotify) or checked by their change time,
including changes made in the same clock tick as the last check and changes whose modification
time was set back."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
from pathlib import Path

import pytest

from piton.core.safety.settings_index import SettingsIndex, settings_below

DEEP = ("a", "b", "c")


def walked(roots: tuple[Path, ...]) -> set[Path]:
    """What a fresh walk of the whole tree finds (a new index reads every folder)."""
    found: set[Path] = set()
    for root in roots:
        index = SettingsIndex(root, watch=False)
        index.refresh()
        found |= index.found(roots)
    return found


class Both:
    """The two ways an index keeps up: watched folders (as Piton runs on Linux) and change times
    (elsewhere, and for folders it cannot watch)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.by_time = SettingsIndex(root, watch=False)

    def check(self) -> set[Path]:
        roots = (self.root,)
        self.by_time.refresh()
        expected = walked(roots)
        assert settings_below(roots) == expected
        assert self.by_time.found(roots) == expected
        return expected


def plant(folder: Path, name: str = "settings.json") -> Path:
    (folder / ".piton").mkdir(parents=True, exist_ok=True)
    (folder / ".piton" / name).write_text('{"permissions": {"allow": ["Bash"]}}')
    return folder / ".piton" / name


def test_a_file_planted_deep_in_an_existing_folder_at_once_after_a_check_is_found(tmp_path: Path) -> None:
    """The plant follows the check within the same clock tick: a folder's ctime may not have moved."""
    deep = tmp_path.joinpath(*DEEP)
    deep.mkdir(parents=True)
    both = Both(tmp_path)
    assert both.check() == set()
    planted = plant(deep)
    assert both.check() == {planted}


def test_setting_a_folders_modification_time_back_hides_nothing(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*DEEP)
    deep.mkdir(parents=True)
    old = os.stat(deep)
    both = Both(tmp_path)
    both.check()
    planted = plant(deep)
    for folder in (deep, deep / ".piton"):
        os.utime(folder, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert both.check() == {planted}


def test_a_tree_moved_in_or_renamed_is_found_at_its_new_place(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "pkg").mkdir(parents=True)
    both = Both(root)
    both.check()
    planted = plant(outside / "x" / "y")
    (outside / "x").rename(root / "pkg" / "x")  # made elsewhere, moved in whole
    assert both.check() == {root / "pkg" / "x" / "y" / ".piton" / "settings.json"}
    (root / "pkg").rename(root / "lib")  # every path below changes
    assert both.check() == {root / "lib" / "x" / "y" / ".piton" / "settings.json"}
    assert not planted.exists()


def test_a_folder_replaced_under_its_name_is_read_anew(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    both = Both(tmp_path)
    both.check()
    shutil.rmtree(tmp_path / "pkg")
    planted = plant(tmp_path / "pkg" / "sub")  # the same names, new folders
    assert both.check() == {planted}


def test_a_symlinked_settings_folder_counts_once_its_target_holds_settings(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".claude").symlink_to("../conf")
    both = Both(tmp_path)
    assert both.check() == set()
    (tmp_path / "conf" / "settings.local.json").write_text("{}")  # the link's own folder is unchanged
    assert both.check() == {tmp_path / "pkg" / ".claude"}


def test_nested_roots_each_see_a_change_in_the_folders_they_share(tmp_path: Path) -> None:
    """The workspace and an added folder inside it index the same folders: a change there is news
    to both."""
    inner = tmp_path / "inner"
    (inner / "deep").mkdir(parents=True)
    assert settings_below((tmp_path,)) == settings_below((inner,)) == set()
    planted = plant(inner / "deep")
    assert settings_below((tmp_path,)) == {planted}
    assert settings_below((inner,)) == {planted}
    assert settings_below((tmp_path, inner)) == {planted}


def test_a_roots_own_settings_files_are_not_below_it(tmp_path: Path) -> None:
    plant(tmp_path)
    below = plant(tmp_path / "pkg")
    assert settings_below((tmp_path,)) == {below}
    assert settings_below((tmp_path, tmp_path / "pkg")) == set()


def _step(rng: random.Random, root: Path, folders: list[Path]) -> None:
    """One random change of the kind commands make: folders made, removed, renamed and swapped for
    symlinks, settings files planted and removed, modification times set back."""
    folder = rng.choice(folders)
    action = rng.randrange(7)
    if action == 0:
        new = folder / rng.choice(["p", "q", ".git", ".piton", ".claude"])
        new.mkdir(exist_ok=True)
        folders.append(new)
    elif action == 1:
        plant(folder, rng.choice(["settings.json", "settings.local.json"]))
        folders.append(folder / ".piton")
    elif action == 2 and folder != root:
        shutil.rmtree(folder, ignore_errors=True)
    elif action == 3 and folder != root and folder.exists():
        target = folder.parent / f"moved{rng.randrange(1000)}"
        folder.rename(target)
        folders.append(target)
    elif action == 4 and folder.is_dir():
        link = folder / rng.choice([".piton", ".claude", "lnk"])
        if not os.path.lexists(link):
            link.symlink_to(rng.choice(folders))
    elif action == 5 and folder.is_dir():
        os.utime(folder, (0, 0))
    elif action == 6:
        for file in folder.glob("**/settings*.json"):
            file.unlink(missing_ok=True)


@pytest.mark.parametrize("seed", range(4))
def test_after_any_changes_it_finds_what_a_walk_finds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "root"
    root.mkdir()
    folders = [root]
    both = Both(root)
    for _ in range(80):
        for _ in range(rng.randrange(1, 4)):
            with contextlib.suppress(OSError):  # a folder removed by an earlier change of the round
                _step(rng, root, folders)
        folders = [f for f in folders if f.is_dir() and not f.is_symlink()] or [root]
        both.check()
