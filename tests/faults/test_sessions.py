"""Sessions under faults, through the real `piton` command against the fake API: a corpus of damaged
transcripts (each must load valid, say exactly what was wrong, resume, and say it only once), two
processes continuing one session at once, and a disk that fills up during a run.

The corpus (tests/faults/corpus/<session id>.jsonl; each starts from the same four-message
conversation: a prompt, a Read call, its result, an answer):
  torn-last-line        the last line cut off mid-write (no newline)
  garbage-line          the tool result's line replaced by text that is not JSON
  wrong-schema-version  a last line written by a newer Piton (schema_version 2)
  deep-nesting          a line of 100,000 `[` (json raises RecursionError), then two good lines
  lone-surrogates       `\\ud800` and `\\udfff` escapes in a prompt and a tool result
  interleaved-writers   two processes' turns (three tool calls each) interleaved line by line
  orphan-tool-result    a tool result answering no call
  missing-tool-result   a call whose result line never made it
  truncated-compaction  an older-format compaction line cut in half, followed by more lines
  dangling-compaction   a compaction naming a message no line holds
  nul-bytes             a line of 4,096 NUL bytes (a crash on some filesystems), then more lines
  invalid-utf8          bytes that are not UTF-8 inside an answer
  empty                 0 bytes
  header-only           only the session line
  legacy-whole-history-compaction, legacy-stubs-compaction   the older compaction formats
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.session import SessionStore, load_session
from piton.testing.script import Reply, ToolCall, reply
from tests.cli.test_piton_command import PITON, piton, user_texts
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S, piton_here

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    load: list[str]  # the warnings of loading it as it is
    resume: list[str] | None = None  # what resuming it says, when not the same
    after: list[str] = field(default_factory=list)  # what loading it says once it was resumed
    text: str | None = None  # a text the history holds, made valid


def _mine(name: str, *texts: str) -> list[str]:
    return [f"{name}.jsonl: {t}" for t in texts]


CASES = {
    "torn-last-line": Case(
        _mine("torn-last-line", "last line is corrupt (an interrupted write?); skipped it"),
        resume=_mine(
            "torn-last-line",
            "last line is corrupt (an interrupted write?); moved it to torn-last-line.jsonl.corrupt",
        ),
    ),
    "garbage-line": Case(
        _mine(
            "garbage-line",
            "line 4 is corrupt (an interrupted write?); skipped it",
            "1 tool call without a result marked unfinished",
        )
    ),
    "wrong-schema-version": Case(
        _mine("wrong-schema-version", "last line has schema_version 2; skipped it"),
        after=_mine("wrong-schema-version", "line 6 has schema_version 2; skipped it"),
    ),
    "deep-nesting": Case(_mine("deep-nesting", "line 6 is nested too deeply to read; skipped it")),
    "lone-surrogates": Case([], text="read ma\ufffdin.py"),
    "interleaved-writers": Case(
        _mine(
            "interleaved-writers",
            "6 tool results without a call dropped; 6 tool calls without a result marked unfinished",
        )
    ),
    "orphan-tool-result": Case(_mine("orphan-tool-result", "1 tool result without a call dropped")),
    "missing-tool-result": Case(
        _mine("missing-tool-result", "1 tool call without a result marked unfinished")
    ),
    "truncated-compaction": Case(
        _mine("truncated-compaction", "line 6 is corrupt (an interrupted write?); skipped it")
    ),
    "dangling-compaction": Case(
        _mine("dangling-compaction", "line 6 is an unreadable compaction; kept the history before it")
    ),
    "nul-bytes": Case(_mine("nul-bytes", "line 6 is corrupt (an interrupted write?); skipped it")),
    "invalid-utf8": Case([], text="It prints h\ufffd\ufffdi."),
    "empty": Case([]),
    "header-only": Case([]),
    "legacy-whole-history-compaction": Case([], text="Summary: main.py prints hi."),
    "legacy-stubs-compaction": Case([]),
}


def test_the_corpus_is_what_the_cases_describe() -> None:
    assert sorted(p.stem for p in CORPUS.glob("*.jsonl")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_damaged_session_loads_valid_and_says_exactly_what_was_wrong(name: str) -> None:
    case = CASES[name]
    loaded = load_session(CORPUS / f"{name}.jsonl", name)
    assert is_valid(loaded.messages)
    assert loaded.warnings == case.load
    if case.text is not None:
        assert case.text in [m.text for m in loaded.messages]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_damaged_session_resumes_through_piton_and_says_so_once(
    name: str, fake_api: FakeAnthropicAPI, project: Path
) -> None:
    case = CASES[name]
    path = SessionStore().project_dir(project) / f"{name}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / f"{name}.jsonl", path)
    fake_api.add(reply("Going on."))
    done = piton_here("-p", "go on", "--resume", name)
    assert (done.returncode, done.stdout) == (0, "Going on.\n"), done.stderr
    said = case.resume if case.resume is not None else case.load
    assert done.stderr.splitlines() == [f"piton: {w}" for w in said]
    [body] = fake_api.bodies  # the fake rejects a history the API would reject
    assert user_texts(body)[-1] == "go on"
    after = load_session(path, name)
    assert after.warnings == case.after
    assert is_valid(after.messages) and after.messages[-1].text == "Going on."
    assert path.read_bytes().endswith(b"\n")


# -- two writers -------------------------------------------------------------------------------------


def reads_three_files(b_asked: threading.Event) -> Any:
    """A reply for whichever process asks: read `<writer>1.txt` … `<writer>3.txt`, one at a time,
    then say so. Writer a's second step waits until b has asked something: a is mid-run (and has
    the session open) while b opens it."""

    def answer(body: dict[str, Any]) -> Reply:
        me = next(t for t in reversed(user_texts(body)) if t.startswith("writer "))[len("writer ")]
        done = sum(
            1
            for m in body["messages"]
            for b in m["content"]
            if b["type"] == "tool_result" and b["tool_use_id"].startswith(f"toolu_{me}")
        )
        if me == "b":
            b_asked.set()
        elif done == 1:
            b_asked.wait(CEILING_S)  # a waits longer than that for an answer: see its API_TIMEOUT_MS
        if done < 3:
            call = ToolCall("Read", {"file_path": f"{me}{done + 1}.txt"}, id=f"toolu_{me}{done + 1}")
            return reply(call)
        return reply(f"writer {me} read them all.")

    return answer


def test_two_continues_of_one_session_at_once_fork_and_lose_nothing(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    for name in ("a1", "a2", "a3", "b1", "b2", "b3"):
        (project / f"{name}.txt").write_text(f"contents of {name}\n")
    fake_api.add(reply("First answer."))
    first = json.loads(piton_here("-p", "first question", "--output-format", "json").stdout)
    session_id = first["session_id"]
    b_asked = threading.Event()
    fake_api.add(*[reads_three_files(b_asked) for _ in range(8)])
    a = subprocess.Popen(
        [PITON, "-p", "writer a: read a1.txt to a3.txt", "--continue", "--output-format", "json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "API_TIMEOUT_MS": str(round(2 * CEILING_S * 1000))},
    )
    fake_api.wait_for_requests(3)  # a is waiting on its second step
    b = piton("-p", "writer b: read b1.txt to b3.txt", "--continue", "--output-format", "json")
    a_out, a_err = a.communicate(timeout=CEILING_S)
    assert (a.returncode, a_err) == (0, "")
    assert b.returncode == 0
    a_result, b_result = json.loads(a_out), json.loads(b.stdout)
    assert a_result["session_id"] == session_id
    fork = b_result["session_id"]
    assert b.stderr == (
        f"piton: session {session_id} is in use by another piton (pid {a.pid}); "
        f"continuing in a new session {fork}\n"
    )
    store = SessionStore()
    original = load_session(store.project_dir(project) / f"{session_id}.jsonl", session_id)
    # the fork starts from the session as it was then: a's prompt and first step were in it
    forked = load_session(store.project_dir(project) / f"{fork}.jsonl", fork)
    for loaded, prompts, reads in (
        (original, ["writer a: read a1.txt to a3.txt"], ["a1", "a2", "a3"]),
        (
            forked,
            ["writer a: read a1.txt to a3.txt", "writer b: read b1.txt to b3.txt"],
            ["a1", "b1", "b2", "b3"],
        ),
    ):
        assert loaded.warnings == [] and is_valid(loaded.messages)
        assert [m.text for m in loaded.messages if m.role == "user" and m.text] == [
            "first question",
            *prompts,
        ]
        results = [str(b.content) for m in loaded.messages for b in m.tool_results]
        assert results == [f"     1\tcontents of {name}" for name in reads]  # as Read numbers lines
    assert original.messages[-1].text == "writer a read them all."
    assert forked.messages[-1].text == "writer b read them all."


_HOLDER = """
import os, sys
from pathlib import Path
from piton.core.conversation.session import SessionLog
log = SessionLog(Path(sys.argv[1]), sys.argv[2])
assert log.acquire()
log.record("resumed", pid=os.getpid())
print("holding", flush=True)
sys.stdin.read()
"""


def test_the_repl_continues_a_session_in_use_in_a_new_one(project: Path) -> None:
    from piton.testing.scripted import ScriptedProvider
    from tests.cli.test_repl import ENTER, Session, run

    store = SessionStore()
    log = store.create(project, "claude-sonnet-5-5")
    log.append_message(Message.user("first question"))
    log.append_message(Message(role="assistant", content=[TextBlock(text="first answer")]))
    log.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(log.path), log.session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        before = log.path.read_bytes()
        provider = ScriptedProvider(reply("In the new session."))

        async def script(s: Session) -> None:
            await s.type("and now?" + ENTER)
            await s.idle()

        s = run(project, provider, script, continue_latest=True)
    finally:
        holder.kill()
        holder.wait(timeout=CEILING_S)
    assert s.repl.runtime is not None
    fork = s.repl.runtime.log.session_id
    assert fork != log.session_id
    said = f"piton: session {log.session_id} is in use by another piton (pid {holder.pid}); continuing in a new session {fork}"
    assert said in " ".join(s.screen.split())
    assert [m.text for m in provider.requests[0].messages] == ["first question", "first answer", "and now?"]
    assert log.path.read_bytes() == before
    forked = load_session(store.project_dir(project) / f"{fork}.jsonl", fork)
    assert [m.text for m in forked.messages] == [
        "first question",
        "first answer",
        "and now?",
        "In the new session.",
    ]


# -- a full disk -------------------------------------------------------------------------------------


def test_a_full_disk_is_one_warning_and_the_run_goes_on(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("First."), reply("A long answer. " * 200), reply("Third."))
    session_id = json.loads(piton_here("-p", "first", "--output-format", "json").stdout)["session_id"]
    path = SessionStore().project_dir(project) / f"{session_id}.jsonl"
    room = path.stat().st_size + 1_000  # the lines of opening it and of the prompt fit, the answer not

    def nearly_full() -> None:  # the file may not grow past `room`, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    done = piton("-p", "second", "--resume", session_id, preexec_fn=nearly_full)
    assert (done.returncode, done.stdout) == (0, "A long answer. " * 200 + "\n")
    assert done.stderr.splitlines() == [
        f"piton: cannot write the session log {path}: File too large; the session up to here is intact, "
        "and the rest is saved once the log can be written again",
        f"piton: the end of this session could not be saved in {path}: File too large; --resume continues "
        "it from before that",
    ]
    loaded = load_session(path, session_id)
    assert loaded.warnings == [] and is_valid(loaded.messages)
    assert [m.text for m in loaded.messages] == ["first", "First.", "second"]
    third = piton_here("-p", "third", "--resume", session_id)
    assert (third.returncode, third.stdout, third.stderr) == (0, "Third.\n", "")
    assert user_texts(fake_api.bodies[2]) == ["first", "second", "third"]


def test_a_session_log_that_cannot_be_created_does_not_stop_the_run(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Answered anyway."))
    folder = SessionStore().project_dir(project)
    folder.parent.mkdir(parents=True)
    folder.write_text("")  # a file where the project's sessions folder should be
    done = piton_here("-p", "q")
    assert (done.returncode, done.stdout) == (0, "Answered anyway.\n")
    found = re.search(r"log (\S+): File exists", done.stderr)
    assert found is not None and Path(found[1]).parent == folder
    path = found[1]
    assert done.stderr.splitlines() == [
        f"piton: cannot write the session log {path}: File exists; the conversation goes on, and is saved "
        "once the log can be written",
        f"piton: this session could not be saved in {path}: File exists",
    ]
