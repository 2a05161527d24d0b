"""How programs that run another command read their arguments: the table of wrappers (`timeout`,
`env`, `sudo`, `flock`, `xargs`…) and a getopt-style reader of their options, so that the command a
wrapper runs is found where the program itself would find it (`timeout -s KILL 5 rm x` runs `rm x`).

Shared by the reading of what a line runs (`shellrun.py`) and of whether it only looks
(`readonly.py`). Long options are matched by any unambiguous abbreviation, as getopt does; an option
not in a wrapper's table makes the reading unsure rather than wrong.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from piton.core.safety.shellsplit import RESERVED, Word

_NUMBER = re.compile(r"-?\d+")


class Spec(NamedTuple):
    """How a program that runs another command reads its arguments, getopt style."""

    short: str = ""  # short options; a letter followed by ":" takes a value ("::": only attached)
    long: str = ""  # long options, space-separated; "name=" takes a value
    positionals: int = 0  # words between its options and the command (timeout's duration)
    numbers: bool = False  # its positionals are there only if they are numbers (chrt's priority, nice -5)
    strings: str = ""  # options whose value is a command line it runs (flock -c, su -c, env -S)
    stops: str = ""  # options with which it runs no command (command -v, taskset -p)
    no_words: bool = False  # it never runs its other words (script, su): only its command strings


RUNNERS: dict[str, Spec] = {
    "builtin": Spec(),
    "busybox": Spec(),
    "toybox": Spec(),
    "nohup": Spec(),
    "command": Spec("pvV", stops="v V"),
    "exec": Spec("cla:"),
    "time": Spec("f:o:apqv", "format= output= append portability quiet verbose"),
    "nice": Spec("n:", "adjustment=", positionals=1, numbers=True),
    "ionice": Spec("c:n:p:P:u:t", "class= classdata= pid= pgid= uid= ignore", stops="p P u pid pgid uid"),
    "timeout": Spec("s:k:v", "signal= kill-after= foreground preserve-status verbose", positionals=1),
    "env": Spec(
        "iu:C:S:0va:",
        "ignore-environment unset= chdir= split-string= null debug argv0= block-signal default-signal "
        "ignore-signal list-signal-handling",
        strings="S split-string",
    ),
    "stdbuf": Spec("i:o:e:", "input= output= error="),
    "setsid": Spec("cfw", "ctty fork wait"),
    "flock": Spec(
        "sexnouFvw:E:c:",
        "shared exclusive nonblock nb unlock close no-fork verbose timeout= wait= conflict-exit-code= "
        "command=",
        positionals=1,
        strings="c command",
    ),
    "script": Spec(
        "ac:eE:fqI:O:B:T:t::m:o:",
        "append command= echo= return flush force quiet log-in= log-out= log-io= log-timing= timing "
        "logging-format= output-limit=",
        strings="c command",
        no_words=True,
    ),
    "chrt": Spec(
        "abdefimoprRvT:P:D:",
        "all-tasks batch deadline ext fifo idle max other pid rr reset-on-fork verbose sched-runtime= "
        "sched-period= sched-deadline=",
        positionals=1,
        numbers=True,
        stops="p m pid max",
    ),
    "taskset": Spec("acp", "all-tasks cpu-list pid", positionals=1, stops="p pid"),
    "sudo": Spec(
        "AbEeHiKklnPSsVvBNg:h:p:r:t:T:U:u:C:D:R:",
        "askpass background bell chdir= close-from= preserve-env edit group= set-home host= login "
        "remove-timestamp reset-timestamp list non-interactive preserve-groups prompt= chroot= role= stdin "
        "shell type= command-timeout= other-user= user= validate",
        stops="e l v K V edit list validate remove-timestamp",
    ),
    "doas": Spec("nsLu:C:", stops="L C"),
    "su": Spec(
        "c:flmps:g:G:w:P",
        "command= session-command= fast login preserve-environment shell= group= supp-group= "
        "whitelist-environment= pty",
        strings="c command session-command",
        no_words=True,
    ),
    "watch": Spec(
        "bcCd::egn:ptxq:wr",
        "beep color no-color differences errexit chgexit interval= precise no-title exec equexit= no-wrap "
        "no-rerun",
    ),
    "xargs": Spec(
        "0a:d:E:e::I:i::L:l::n:oprP:s:tx",
        "null arg-file= delimiter= eof replace max-lines max-args= open-tty interactive no-run-if-empty "
        "max-procs= max-chars= process-slot-var= verbose exit show-limits",
    ),
}


class Options(NamedTuple):
    """What a wrapper's options were found to be."""

    end: int  # where the command (or the rest of the words) begins
    keys: set[str]
    strings: list[Word]
    stops: bool
    sure: bool  # every word up to `end` was read as an option, its value or a positional


def read_options(spec: Spec, args: list[Word]) -> Options:
    """The options at the start of `args`, as the wrapper `spec` describes would read them."""
    longs = spec.long.split()
    keys: set[str] = set()
    strings: list[Word] = []
    i, left, done, sure = 0, spec.positionals, False, True
    while i < len(args):
        text = args[i].text
        sure &= not args[i].live
        if spec.numbers and left and _NUMBER.fullmatch(text):
            left, i = left - 1, i + 1
        elif text == "--" and not done:
            done, i = True, i + 1
        elif not done and text.startswith("-") and len(text) > 1:
            i, pairs, known = _option(spec, longs, args, i)
            sure &= known
            for key, value in pairs:
                keys.add(key)
                if key in spec.strings.split():
                    strings.append(value or Word(""))
        elif left and not spec.numbers:
            left, i = left - 1, i + 1
        else:
            break
    stops = bool(keys & set(spec.stops.split()))
    return Options(i, keys, strings, stops, sure)


def _option(
    spec: Spec, longs: list[str], args: list[Word], i: int
) -> tuple[int, list[tuple[str, Word | None]], bool]:
    """The option word at `i` (a long one, or a cluster of short ones): where the next word is, the
    options with their values, and whether all of them are known."""
    word = args[i]
    nxt = args[i + 1] if i + 1 < len(args) else Word("")
    if word.text.startswith("--"):
        name, eq, value = word.text[2:].partition("=")
        found = [o for o in longs if o.rstrip("=") == name] or [o for o in longs if o.startswith(name)]
        if len(found) != 1:
            return i + 1, [], False
        option = found[0]
        if option.endswith("=") and not eq:
            return i + 2, [(option[:-1], nxt)], True
        return i + 1, [(option.rstrip("="), Word(value, word.live))], True
    pairs: list[tuple[str, Word | None]] = []
    for j, letter in enumerate(word.text[1:], start=1):
        at = spec.short.find(letter)
        if at < 0 or letter == ":":
            return i + 1, pairs, False
        if spec.short[at + 1 : at + 2] != ":":
            pairs.append((letter, None))
        elif spec.short[at + 2 : at + 3] == ":" or j + 1 < len(word.text):
            return i + 1, [*pairs, (letter, Word(word.text[j + 1 :], word.live))], True
        else:
            return i + 2, [*pairs, (letter, nxt)], True
    return i + 1, pairs, True


def unwrap(words: list[str]) -> list[str] | None:
    """The command that reserved words, assignments and wrappers in front of `words` lead to
    (`timeout 5 ls` -> `ls`); None when a wrapper runs something else (a string, nothing, words from
    its input) or has options this module cannot read."""
    rest = [Word(w) for w in words]
    while rest:
        head = rest[0].text
        name, eq, _ = head.partition("=")
        if head in RESERVED or (eq and name.isidentifier()):
            rest = rest[1:]
            continue
        spec = RUNNERS.get(head)
        if spec is None:
            break
        opts = read_options(spec, rest[1:])
        if not opts.sure or opts.strings or opts.stops or spec.no_words or head == "xargs":
            return None
        rest = rest[1 + opts.end :]
        while head == "env" and rest and "=" in rest[0].text:
            rest = rest[1:]
    return [w.text for w in rest]
