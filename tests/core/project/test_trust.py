"""Workspace trust: the decision, the remembered answers, and the user's trustedFolders patterns."""

from __future__ import annotations

import json
import os
from pathlib import Path

from piton.core.project.trust import (
    Grant,
    TrustStore,
    decide,
    default_store_path,
    matches,
)
from piton.skills.catalog import discover

RULE = Grant(".piton/settings.json", "allow Bash(npm test:*)")
SKILL = Grant(".piton/skills/ship/SKILL.md", "skill ship: allowed-tools Bash")


def test_an_unknown_folder_grants_nothing_and_asks_about_everything(project: Path) -> None:
    trust = decide(project, [RULE, SKILL])
    assert (trust.trusted, trust.how, trust.pending, trust.ignored) == (
        False,
        "unknown",
        [RULE, SKILL],
        [RULE, SKILL],
    )
    assert not trust.honours(RULE)
    lines, question = trust.question()
    assert lines[1:3] == [f"  {RULE}", f"  {SKILL}"] and str(project) in question
    notice = trust.notice()
    assert notice is not None and str(RULE) in notice and "--trust-workspace" in notice


def test_yes_is_remembered_by_real_path_and_covers_what_was_shown(project: Path, tmp_path: Path) -> None:
    decide(project, [RULE]).answer(True)
    stored = json.loads(default_store_path().read_text())
    assert list(stored["folders"]) == [os.path.realpath(project)]
    link = tmp_path / "link"
    link.symlink_to(project)
    again = decide(link, [RULE, SKILL])  # the same folder by another name; a skill planted since
    assert again.how == "remembered" and again.honours(RULE) and not again.honours(SKILL)
    assert again.pending == [SKILL]
    assert "added since you trusted it" in (again.notice() or "")
    assert decide(project, [RULE, SKILL]).answer(True).honours(SKILL)
    assert decide(project, [RULE, SKILL]).pending == []


def test_a_no_holds_for_the_session_and_the_next_start_asks_again(project: Path) -> None:
    declined = decide(project, [RULE]).answer(False)
    assert (declined.how, declined.trusted, declined.pending) == ("declined", False, [])
    assert "the next start asks again" in declined.describe()
    again = decide(project, [RULE])
    assert again.how == "unknown" and again.pending == [RULE]
    trusted = decide(project, [RULE]).answer(True)
    no_to_more = decide(project, [RULE, SKILL]).answer(False)
    assert trusted.trusted and no_to_more.how == "remembered" and no_to_more.honours(RULE)
    assert no_to_more.pending == []  # not asked again in this session
    later = decide(project, [RULE, SKILL])
    assert later.honours(RULE) and not later.honours(SKILL) and later.pending == [SKILL]


def test_a_remembered_answer_can_be_forgotten(project: Path) -> None:
    store = TrustStore()
    decide(project, [RULE], store=store).answer(True)
    assert store.forget(project) and not store.forget(project)
    assert decide(project, [RULE]).how == "unknown"


def test_a_subfolder_of_a_trusted_folder_is_not_trusted(project: Path) -> None:
    decide(project, [RULE]).answer(True)
    sub = project / "sub"
    sub.mkdir()
    assert decide(sub, [RULE]).how == "unknown"


def test_the_flag_and_the_setting_trust_what_the_folder_granted_when_first_trusted(project: Path) -> None:
    flagged = decide(project, [RULE], flag=True)
    assert flagged.how == "flag" and flagged.ignored == [] and flagged.notice() is None
    again = decide(project, [RULE, SKILL], flag=True)  # the skill appeared since: a session wrote it
    assert again.trusted and again.honours(RULE) and again.ignored == [SKILL]
    assert "added since it was first trusted (--trust-workspace)" in (again.notice() or "")
    assert not decide(project, [RULE]).trusted, "the flag trusts for its run only"
    assert again.answer(True).honours(SKILL), "a yes in the REPL approves the added grant"
    setting = decide(project, [SKILL, RULE], trusted_folders=[f"{project.parent}/*"])
    assert setting.how == "setting" and setting.honours(SKILL) and setting.honours(RULE)
    other = project.parent / "other"
    other.mkdir()
    assert decide(other, [SKILL], trusted_folders=[f"{project.parent}/*"], first_use=False).honours(SKILL)
    assert decide(other, [RULE], trusted_folders=[f"{project.parent}/*"]).honours(RULE), (
        "a look that remembers nothing (piton doctor) leaves the first use to the first session"
    )


def test_trusted_folder_patterns(tmp_path: Path) -> None:
    work = Path.home() / "work"
    (work / "a" / "b").mkdir(parents=True)
    assert matches(work / "a", ["~/work/*"]) and not matches(work / "a" / "b", ["~/work/*"])
    assert all(matches(p, ["~/work/**"]) for p in (work, work / "a", work / "a" / "b"))
    assert matches(work, [str(work) + "/"]) and not matches(work / "a", [str(work)])
    assert not matches(work / "a", ["work/*", "*", "a"]), "relative patterns name nothing"
    (tmp_path / "alias").symlink_to(work)
    assert matches(work, [str(tmp_path / "alias")]), "a pattern naming a symlink to the folder"


def test_a_broken_store_is_read_as_empty_and_an_unwritable_one_still_holds_the_answer(
    project: Path, tmp_path: Path
) -> None:
    path = default_store_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert decide(project, [RULE]).how == "unknown"
    decide(project, [RULE]).answer(True)
    assert decide(project, [RULE]).how == "remembered"
    blocked = tmp_path / "file"
    blocked.write_text("")
    store = TrustStore(blocked / "trusted-folders.json")  # its folder is a file: nothing can be saved
    decide(project, [RULE], store=store).answer(True)
    assert store.problem is not None and "holds for this session" in store.problem
    assert decide(project, [RULE], store=store).how == "remembered"


def test_the_notice_names_a_few_grants_and_counts_the_rest(project: Path) -> None:
    grants = [Grant(".piton/settings.json", f"allow Bash(cmd{i}:*)") for i in range(5)]
    notice = decide(project, grants).notice()
    assert notice is not None and "allow Bash(cmd2:*); and 2 more" in notice and "cmd3" not in notice


def test_a_project_skill_grants_only_when_the_catalog_says_so(project: Path) -> None:
    for root in (project, Path.home()):
        folder = root / ".piton" / "skills" / ("ship" if root == project else "mine")
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text("---\ndescription: d\nallowed-tools: Bash\n---\nDo it.\n")
    catalog = discover(project, bundled=project / "none")
    assert [s.name for s in catalog.granting()] == ["ship"], "only the project's skills need trust"
    assert catalog.activate("ship", "").allowed_tools == ()
    assert catalog.activate("mine", "").allowed_tools == ("Bash",), "the user's own skills keep granting"
    catalog.granted = {catalog.skills["ship"].path}
    assert catalog.activate("ship", "").allowed_tools == ("Bash",)


def test_a_deeply_nested_store_is_named_once_trusts_nothing_and_is_replaced_by_the_next_answer(
    project: Path,
) -> None:
    path = default_store_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "folders": ' + "[" * 5000 + "]" * 5000 + "}")  # a RecursionError, once
    problem = f"your answers about trusted folders in {path} were ignored: it nests deeper than 64 levels"
    quiet = decide(project, [])
    assert (quiet.how, quiet.notice()) == ("unknown", problem)
    trust = decide(project, [RULE])
    assert trust.how == "unknown" and not trust.honours(RULE)
    notice = trust.notice()
    assert notice is not None and notice.endswith(f"; {problem}") and notice.count(str(path)) == 1
    lines, _ = trust.question()
    assert lines[-1] == f"({problem}; your answer now replaces them)"
    trust.answer(True)
    again = decide(project, [RULE])
    assert again.how == "remembered" and again.notice() is None
    assert json.loads(path.read_text())["folders"][os.path.realpath(project)]["trusted"] is True


def test_a_store_of_another_shape_is_named_too(project: Path) -> None:
    path = default_store_path()
    path.parent.mkdir(parents=True)
    path.write_text('["not", "the", "store"]')
    assert decide(project, []).notice() == (
        f"your answers about trusted folders in {path} were ignored: not the shape Piton writes"
    )
