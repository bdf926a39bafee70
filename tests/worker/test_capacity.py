"""Telling a full Redis from other errors, and waiting for room (the process-level
test is tests/integration/test_redis_full.py)."""

from __future__ import annotations

import pytest
from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError, OutOfMemoryError, ResponseError

from sca_worker import capacity
from sca_worker.problems import problem_for, store_full

OOM = "command not allowed when used memory > 'maxmemory'."


def _wrapped() -> OperationalError:
    """What kombu raises for a publish that Redis refused."""
    try:
        try:
            raise OutOfMemoryError(OOM)
        except OutOfMemoryError as exc:
            raise OperationalError(str(exc)) from exc
    except OperationalError as exc:
        return exc


def test_a_full_redis_is_told_from_other_errors():
    assert store_full(OutOfMemoryError(OOM)) and store_full(_wrapped())
    for other in (ResponseError("WRONGTYPE"), ConnectionError("refused"), ValueError(), None):
        assert not store_full(other)
    problem = problem_for(_wrapped(), "balancing")
    assert problem["status"] == 503 and problem["type"].endswith("/store-full")
    assert "maxmemory" in problem["detail"] and problem["stage"] == "balancing"


@pytest.fixture
def no_sleep(monkeypatch):
    monkeypatch.setattr(capacity, "POLL_SECONDS", 0)


def _refused(times: int, then):
    calls = []

    def action():
        calls.append(1)
        if len(calls) <= times:
            raise OutOfMemoryError(OOM)
        return then

    return action, calls


def test_with_room_runs_again_until_redis_takes_it(no_sleep):
    action, calls = _refused(3, "done")
    assert capacity.with_room(action, pytest.fail, 60, "test") == "done"
    assert len(calls) == 4


def test_with_room_gives_up_after_the_wait_and_retries_the_give_up(no_sleep):
    action, calls = _refused(10**6, None)
    give_up, tries = _refused(2, "failed")
    assert capacity.with_room(action, lambda exc: give_up(), 0, "test") == "failed"
    assert len(calls) == 1 and len(tries) == 3


def test_with_room_raises_other_errors_at_once(no_sleep):
    def broken():
        raise ResponseError("WRONGTYPE")

    with pytest.raises(ResponseError):
        capacity.with_room(broken, pytest.fail, 60, "test")
