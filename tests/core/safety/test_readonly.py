"""Which command lines only look: the classification behind Bash's read-only calls (side by side,
in a read-only sandbox, asked about in plan mode). Each line that is not read-only here was shown
to write, run a program or change state in real bash, coreutils, git and ripgrep."""

from __future__ import annotations

import pytest

from piton.core.safety.readonly import classify


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "sleep 2; echo done",
        "cat a.py | grep -n def | wc -l",
        "cd src && git diff HEAD~1 | head -50",
        "git status",
        "git --no-pager log -p",
        "timeout 5 ls",
        "LC_ALL=C sort names.txt",
        "{ ls; }",
        "if true; then ls; fi",
        "/usr/bin/ls",
        "echo hi 2>/dev/null",
        "ls -lrt",
        "tail -n 20 build.log",
    ],
)
def test_lines_that_only_look(command: str) -> None:
    assert classify(command).read_only


@pytest.mark.parametrize(
    "command",
    [
        # writing by redirection, or options that write
        "echo hi > notes.txt",
        "sort -o out.txt in.txt",
        "sort -rno out.txt in.txt",
        "sort --out=x in",  # GNU tools take any unambiguous prefix of a long option
        "sort -T . big.txt",
        "find . -name '*.pyc' -delete",
        "find . -fprint list.txt",
        "git diff --output=patch.txt",
        "tree -R -H . .",
        "date --se 2000-01-01",
        "file --comp magic",
        # options and expansions that run other programs
        "sort -S 1 --compress-program=./evil.sh big",
        "rg --pre ./p.sh hello",
        "rg --hostname-bin=./h.sh --hyperlink-format=default x",
        "git grep --open-files=./x.sh a",
        "git log --ext-diff -p",
        "git -c diff.external=./x.sh diff",
        "git -C ../other status",
        "printf -v 'a[$(touch p)]' x",
        "test -v 'a[$(touch p)]'",
        "[ -v 'a[$(touch p)]' ]",
        "ls $(touch x)",
        "ls `id`",
        "cat <<EOF\nx\nEOF",
        # expansions that can turn into options
        "sort {-o,out1} in",
        "find . {-delete,-print}",
        "sort *",
        "rg hello *",
        # assignments that change what runs
        "GIT_EXTERNAL_DIFF='touch /tmp/pwn;true' git diff",
        "GIT_CONFIG_PARAMETERS=\"'diff.external=/tmp/x.sh'\" git diff",
        "RIPGREP_CONFIG_PATH=rgrc rg hello",
        "LD_PRELOAD=./x.so ls",
        "PATH=. ls",
        "env PATH=. ls",
        "X=1",
        # wrappers that run something else, as someone else, or write
        "env -S 'touch pwn' ls",
        "env -S'touch pwn' ls",
        "env --split-string='touch pwn' ls",
        "command time -o out ls",
        "env time -o out ls",
        "sudo ls",
        "env sudo -u root cat /etc/shadow",
        "ionice -c3 -p 1234",
        # programs that may be anything
        "./ls",
        "scripts/git status",
        "/tmp/ls",
        "/usr/bin/../../tmp/ls",
        "$CMD",
        "python3 -c 'print(1)'",
        "npm test",
        "git push",
        "git branch new-branch",
        "",
    ],
)
def test_lines_that_do_more_than_look(command: str) -> None:
    assert not classify(command).read_only


@pytest.mark.parametrize(
    "command",
    [
        "cd src",
        "{ cd private; cat secret.txt; }",
        "if cd private; then cat secret.txt; fi",
        "command cd private && cat secret.txt",
        "LANG=C cd private; cat secret.txt",
        "c\\d private; cat secret.txt",
        "pushd src",
        "ls; popd",
    ],
)
def test_lines_that_change_the_shells_directory_are_told_apart(command: str) -> None:
    assert classify(command).changes_directory
    assert not classify("env -C private cat secret.txt").read_only, "env -C is not a plain look"
    assert not classify("ls; cat x").changes_directory


@pytest.mark.parametrize(
    "command",
    [
        "env --s='bash -c \"echo PWNED\"' echo",  # an abbreviation of --split-string
        "env -vS'bash -c \"echo PWNED\"' echo hi",  # -S inside a cluster of short options
        "env --chdir=private cat secret.txt",
        'cat "pri\\\nvate/secret.txt"',  # bash drops a backslash-newline inside double quotes
    ],
)
def test_what_bash_reads_differently_is_not_read_only(command: str) -> None:
    assert not classify(command).read_only


@pytest.mark.parametrize(
    "command",
    [
        'cat "$f"',  # not exact: any expansion
        "ls $HOME",
        "echo 'a[$(touch p)]'; echo $[_]",
        "timeout --bogus 1 ls",  # options we cannot read
        "flock lock cat x",  # wrappers that do more than wait, time or renice
        "setsid -f ls",
        "xargs cat",
        "find . -exec cat {} +",
    ],
)
def test_a_line_that_cannot_be_judged_is_never_read_only(command: str) -> None:
    assert not classify(command).read_only


def test_plain_wrappers_keep_a_look_a_look() -> None:
    for command in ("stdbuf -o0 ls", "timeout .5 cat a", "nice -n 5 grep x y", "env -u X ls"):
        assert classify(command).read_only, command
