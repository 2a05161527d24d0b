"""The limits on waiting for the API: read from the environment, told when unreadable."""

from __future__ import annotations

import email.utils
import time

import pytest

from piton.core.providers.waits import Waits, retry_after, say_seconds


def test_the_defaults_bound_every_wait_within_a_minute() -> None:
    waits, problems = Waits.from_env({})
    assert problems == []
    assert waits == Waits()
    assert (waits.connect_s, waits.response_s, waits.idle_s, waits.max_retry_wait_s) == (5, 60, 60, 60)
    assert (waits.max_retries, waits.attempts) == (4, 5)


def test_every_limit_has_a_variable_in_milliseconds() -> None:
    waits, problems = Waits.from_env(
        {
            "PITON_CONNECT_TIMEOUT_MS": "1500",
            "API_TIMEOUT_MS": "120000",
            "PITON_STREAM_IDLE_TIMEOUT_MS": " 250.5 ",
            "PITON_MAX_RETRY_WAIT_MS": "0",
            "PITON_MAX_RETRIES": "0",
        }
    )
    assert problems == []
    assert waits == Waits(
        connect_s=1.5, response_s=120.0, idle_s=0.2505, max_retry_wait_s=0.0, max_retries=0, backoff_s=1.0
    )


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        (
            "PITON_CONNECT_TIMEOUT_MS",
            "5s",
            "PITON_CONNECT_TIMEOUT_MS='5s' is not a number of milliseconds (more than 0); using 5000",
        ),
        (
            "API_TIMEOUT_MS",
            "0",
            "API_TIMEOUT_MS='0' is not a number of milliseconds (more than 0); using 60000",
        ),
        (
            "PITON_STREAM_IDLE_TIMEOUT_MS",
            "-1",
            "PITON_STREAM_IDLE_TIMEOUT_MS='-1' is not a number of milliseconds (more than 0); using 60000",
        ),
        (
            "PITON_MAX_RETRY_WAIT_MS",
            "inf",
            "PITON_MAX_RETRY_WAIT_MS='inf' is not a number of milliseconds (0 or more); using 60000",
        ),
        ("PITON_MAX_RETRIES", "2.5", "PITON_MAX_RETRIES='2.5' is not a whole number (0 or more); using 4"),
        ("PITON_MAX_RETRIES", "-1", "PITON_MAX_RETRIES='-1' is not a whole number (0 or more); using 4"),
    ],
)
def test_an_unreadable_value_is_one_line_naming_the_variable_and_the_default_stays(
    name: str, value: str, line: str
) -> None:
    waits, problems = Waits.from_env({"PITON_MAX_RETRY_WAIT_MS": "30000", name: value})
    assert problems == [line]
    assert "\n" not in line
    if name != "PITON_MAX_RETRY_WAIT_MS":
        assert waits == Waits(max_retry_wait_s=30.0)  # the readable ones still apply
    else:
        assert waits == Waits()


def test_an_empty_variable_is_no_setting() -> None:
    assert Waits.from_env({"API_TIMEOUT_MS": "", "PITON_MAX_RETRIES": "  "}) == (Waits(), [])


def test_backoff_doubles_with_up_to_a_quarter_of_jitter_and_never_passes_the_cap() -> None:
    waits = Waits(backoff_s=1.0, max_retry_wait_s=6.0)
    for _ in range(50):
        assert 1.0 <= waits.backoff(1) <= 1.25
        assert 2.0 <= waits.backoff(2) <= 2.5
        assert 4.0 <= waits.backoff(3) <= 5.0
        assert waits.backoff(4) == 6.0
        assert waits.backoff(40) == 6.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after": "3600"}, 3600.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after": "-5"}, 0.0),
        ({"retry-after": "later"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_reads_milliseconds_then_seconds(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers) == seconds


def test_retry_after_may_be_a_date() -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    asked = retry_after({"retry-after": when})
    assert asked is not None and 115 <= asked <= 121


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.0, "0 s"),
        (0.05, "0.05 s"),
        (0.3, "0.3 s"),
        (1.24, "1.2 s"),
        (2.0, "2 s"),
        (45.2, "45 s"),
        (3600, "60 min"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, said: str) -> None:
    assert say_seconds(seconds) == said
