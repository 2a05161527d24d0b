"""Which command lines only look: the classification behind Bash's read-only calls (run without
asking, side by side, and in a read-only sandbox). Each line that is not read-only here was shown
to write, run a program or change state in real bash, coreutils, git and ripgrep."""

from __future__ import annotations

import pytest

from piton.core.safety.readonly import Reading, classify, is_read_only_command


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
    assert is_read_only_command(command)


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
    assert not is_read_only_command(command)


def test_what_a_line_names_and_whether_it_reads_whole_trees() -> None:
    assert classify("cat a.py b.py") == Reading(True, False, ("a.py", "b.py"))
    assert classify("grep -f patterns.txt x") == Reading(True, False, ("patterns.txt", "x"))
    assert classify("git show HEAD:secrets/key.pem") == Reading(True, False, ("secrets/key.pem",))
    assert classify("sleep 1; echo /etc/shadow") == Reading(True, False, ())
    assert classify("grep -rn password .").reads_trees and classify("rg token").reads_trees
    assert classify("find . -name x").reads_trees and not classify("ls -lrt").reads_trees
    assert classify("cat $FILE").paths is None, "bash expands it: the path cannot be known"
    assert classify("cd secrets && cat key").paths is None, "relative to a directory a cd changed"
