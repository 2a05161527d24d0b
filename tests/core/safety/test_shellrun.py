"""Deny rules see what a line runs: the table of ways to run `rm` (or `git push`) past a rule.

Each line is decided under `bypassPermissions` (which runs whatever no rule denies or asks about):
`deny` means the rule saw the command; `ask` means the line runs something that cannot be read here
(in a `-p` run nobody can answer, so it is refused too); `allow` is either harmless text or one of
the ways out of reach that the README states (a script file, `python -c`, `make`).
Every `deny` and `ask` line that can run on a test machine was checked to really remove the file in
bash (tests/adversarial/test_rules.py runs a selection through `piton -p`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from piton.builtin_tools.bash import Bash
from piton.core.safety.permissions import Permissions
from piton.core.safety.shellrun import effect
from piton.core.safety.wrappers import unwrap

CLOSED = r"""rm x
/bin/rm x
\rm x
r''m x
"rm" x
r\m x
2>/dev/null rm x
command rm x
command -p rm x
builtin eval rm x
exec rm x
exec -a foo rm x
nohup rm x
time rm x
time -p rm x
nice rm x
nice -n 5 rm x
nice -5 rm x
nice --adjustment=5 rm x
ionice -c 3 rm x
ionice -c3 -n7 rm x
timeout 5 rm x
timeout .5 rm x
timeout 5s rm x
timeout -s KILL 5 rm x
timeout --signal=KILL 5 rm x
timeout --sig KILL 5 rm x
timeout -k 1 5 rm x
env rm x
env -i X=1 rm x
env -u HOME rm x
env -S 'rm x'
env -S'rm x'
env --split-string='rm x'
env -iS 'rm x'
X=1 rm x
stdbuf -o0 rm x
stdbuf -o L -e 0 rm x
setsid -w rm x
flock lockfile rm x
flock -w 5 lockfile rm x
flock lockfile -c 'rm x'
script -q -c 'rm x' /dev/null
chrt -o 0 rm x
chrt -b 0 rm x
taskset 1 rm x
taskset -c 0 rm x
sudo rm x
sudo -u root rm x
doas rm x
busybox rm x
bash -c 'rm x'
bash -c -- 'rm x'
bash -ec 'rm x'
bash -o pipefail -c 'rm x'
bash --norc -c 'rm x'
sh -c 'rm x'
dash -c 'rm x'
zsh -c 'rm x'
busybox sh -c 'rm x'
bash -c "bash -c 'rm x'"
timeout 5 bash -c 'rm x'
eval rm x
eval 'rm x'
trap 'rm x' EXIT
trap -- 'rm x' EXIT
xargs rm <<< x
echo x | xargs rm
printf x | xargs -0 rm -f
find . -name x -exec rm {} +
find . -name x -exec rm {} \;
find . -name x -execdir rm -f {} \;
f(){ rm x; }; f
function f { rm x; }; f
{ rm x; }
(rm x)
if true; then rm x; fi
true && rm x
ls >/dev/null; rm x
! rm x
for f in x; do rm $f; done
rm $(echo x)
rm "$(echo x)"
echo $(rm x)
echo "$(rm x)"
echo `rm x`
cat <(rm x)
nice timeout 5 env X=1 rm x
PS4='$(rm x)' bash -xc true
PS4='$(rm x)'; set -x; true
env 'BASH_FUNC_f%%=() { rm x; }' bash -c f
GIT_SSH_COMMAND='rm x' git fetch
shopt -s expand_aliases; alias r=rm""".splitlines()
UNCHECKABLE = [
    *r"""echo rm x | bash
echo 'rm x' | sh
bash < script.sh
bash script.sh
source ./script.sh
. ./script.sh
$(echo rm) x
`echo rm` x
$CMD x
r? x
r[m] x
eval "$CMD"
echo 'a[$(rm x)]' >/dev/null; (( _ ))
echo 'a[$(rm x)]' >/dev/null; [[ _ -eq 1 ]]
echo 'a[$(rm x)]' >/dev/null; echo $[_]
printf -v 'a[$(rm x)]' y
hash -p /bin/rm ls; ls x
PATH=.:$PATH cleanup
BASH_ENV=./script.sh bash -c true""".splitlines(),
    "cat <<EOF | bash\nrm x\nEOF",
    "bash <<'EOF'\nrm x\nEOF",
]
OUT_OF_REACH = [
    "python3 -c 'import os; os.remove(\"x\")'",
    "perl -e 'unlink \"x\"'",
    "./script.sh",
    "make clean",
]
HARMLESS = [
    'echo "rm"',
    "echo rm x",
    "grep rm file",
    "git rm --cached x",
    "ls rm",
    "printf 'rm x\\n'",
    "cat rm.txt",
    'echo "$HOME" rm',
    "command -v rm",
    "git commit -m 'rm x'",
    "find . -name rm",
    "echo x | xargs echo",
    "man rm",
]
GIT_PUSH = {
    "git push": "deny",
    "git -C . push": "deny",
    "git -c k=v push": "deny",
    "git --git-dir=.git push": "deny",
    "git --git-dir .git --work-tree . push origin main": "deny",
    "git --no-pager push": "deny",
    "git -c alias.p=push p": "ask",  # a setting can make git run anything
    "echo push | xargs git": "ask",
    "x=push; git $x": "ask",
    "git status": "allow",
    "git -C . status": "allow",
    "git log --grep push": "allow",
}


def decide(command: str, rule: str = "Bash(rm:*)") -> str:
    p = Permissions.from_texts("bypassPermissions", deny=(rule,), project=Path("/w"), home=Path("/h"))
    return p.decide(Bash(), command).behavior


def test_the_table_counts() -> None:
    assert (len(CLOSED), len(UNCHECKABLE), len(OUT_OF_REACH)) == (93, 21, 4)


@pytest.mark.parametrize("command", CLOSED)
def test_a_deny_rule_sees_the_command_through_wrappers_shells_and_substitutions(command: str) -> None:
    assert decide(command) == "deny"


@pytest.mark.parametrize("command", UNCHECKABLE)
def test_a_line_whose_commands_cannot_be_read_asks(command: str) -> None:
    assert decide(command) == "ask"
    p = Permissions.from_texts("bypassPermissions", project=Path("/w"), home=Path("/h"))
    assert p.decide(Bash(), command).behavior == "allow", "without command rules there is nothing to check"


@pytest.mark.parametrize("command", OUT_OF_REACH)
def test_programs_that_run_what_their_files_or_arguments_say_are_out_of_reach(command: str) -> None:
    assert decide(command) == "allow"  # stated in the README: the sandbox is the boundary


@pytest.mark.parametrize("command", HARMLESS)
def test_a_deny_rule_does_not_fire_on_harmless_text(command: str) -> None:
    assert decide(command) == "allow"


@pytest.mark.parametrize(("command", "expected"), GIT_PUSH.items())
def test_git_is_read_without_its_global_options(command: str, expected: str) -> None:
    assert decide(command, "Bash(git push:*)") == expected


def test_an_ask_rule_sees_as_much_as_a_deny_rule() -> None:
    p = Permissions.from_texts("bypassPermissions", ask=("Bash(git push:*)",), project=Path("/w"))
    assert p.decide(Bash(), "timeout .5 git -C . push").behavior == "ask"
    assert p.decide(Bash(), "git status").behavior == "allow"


def test_commands_that_go_on_with_unknown_words_match_only_what_they_may_become() -> None:
    assert decide("cat $FILE") == "allow", "a cat is a cat, whatever it reads"
    assert decide("rm $FILE") == "deny"
    assert decide("git $x", "Bash(git push:*)") == "ask"
    assert decide("npm $x", "Bash(git push:*)") == "allow"
    assert decide("npm test $x", "Bash(npm test)") == "ask", "an exact rule may match once $x is empty"
    assert decide("git $x", "Bash(git * main)") == "ask"


def test_what_a_line_runs() -> None:
    e = effect("timeout --sig KILL .5 flock lock -c 'git -C sub push' && echo $(id -u)")
    assert "git push" in e.commands and "id -u" in e.commands and e.open == ("echo",) and e.complete
    assert effect("cat <<'EOF'\n$(rm x)\nEOF\nls").commands == ("cat", "ls"), "a quoted here-document is data"
    assert not effect("cat <<EOF\n$(rm x)\nEOF").complete, "an unquoted one expands"
    assert effect("xargs -I{} git {} < list").open == ("git",)
    assert not effect("timeout --bogus 5 ls").complete, "an option we do not know may take a value"


@pytest.mark.parametrize(
    ("words", "inner"),
    [
        ("timeout 5 ls", "ls"),
        ("nice -n 5 env -u X LANG=C ls -l", "ls -l"),
        ("X=1 { ls", "ls"),
        ("flock lock ls", "ls"),
        ("flock lock -c ls", None),  # a string of its own
        ("command -v ls", None),  # runs nothing
        ("env -S ls", None),
        ("xargs ls", None),  # with words from its input
        ("timeout --bogus 5 ls", None),
    ],
)
def test_unwrap_gives_the_plain_command_or_nothing(words: str, inner: str | None) -> None:
    found = unwrap(words.split())
    assert (" ".join(found) if found is not None else None) == inner
