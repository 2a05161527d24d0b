"""Garbage collection around start-up (`piton.collection`), in this process: each test leaves it on."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.collection import pause_collection, resume_collection
from piton.testing.script import reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here


@pytest.fixture(autouse=True)
def collecting() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_start_up_pauses_collection_and_resumes_it_with_its_objects_frozen() -> None:
    paused = pause_collection()
    assert paused and not gc.isenabled()
    made = [[n] for n in range(1000)]  # what start-up made and keeps
    frozen = gc.get_freeze_count()
    resume_collection(paused)
    assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(made)
    resume_collection(paused)  # again, as a caller's `finally` does after the first: nothing more
    assert gc.isenabled()


def test_collection_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    paused = pause_collection()
    resume_collection(paused)
    assert not paused and not gc.isenabled()


@pytest.mark.parametrize(
    "args",
    [
        ["-p", "hello"],
        # the Agent SDKs' control protocol: no message on stdin, so the session opens and ends
        ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
    ],
    ids=["print", "control-protocol"],
)
def test_a_run_through_the_command_collects_again_once_its_session_is_open(
    args: list[str], fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("hi"))
    done = piton_here(*args)
    assert done.returncode == 0, done.stderr
    assert gc.isenabled()  # never left off for the rest of a long session
