"""Problem+json documents (RFC 9457) of failures, for the worker and the API alike.

A failed job's ``error`` and the API's error responses share these shapes:
:func:`problem_for` maps an exception to one, :func:`problem` builds any
other.  :data:`TRANSIENT` lists the errors of a store that is unreachable for
a while (a task retries them; the API answers 503); :func:`store_full` tells a
write Redis refused because its memory reached ``maxmemory`` (a task waits for
room; the API answers 503 ``store-full``).
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError

import sca

from .store import ArtifactMissing

PROBLEM_BASE = "https://sca.invalid/problems/"

#: Errors of a store that is unreachable for a while (retried, never a failed job).
TRANSIENT: tuple = (RedisConnectionError, RedisTimeoutError)

#: Seconds a client is told to wait (``Retry-After``) when Redis is full.
FULL_RETRY_AFTER = 30


def store_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or the error it wraps: kombu re-raises Redis's as its own)
    is Redis refusing a write for lack of memory (``OOM command not allowed``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OutOfMemoryError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


_SCA_KINDS = {
    sca.BalancingError: ("balancing-not-converged", "Balancing did not converge"),
    sca.IterationError: ("iteration-not-converged", "No stable clustering"),
    sca.DeadlineExceeded: ("time-budget-exceeded", "Over the time budget"),
}


def problem(
    kind: str, title: str, status: int, detail: str, stage: str | None = None, **members
) -> dict:
    """A problem document of type ``PROBLEM_BASE + kind`` (``stage`` when a job's stage failed)."""
    out = {"type": PROBLEM_BASE + kind, "title": title, "status": status, "detail": detail}
    if stage is not None:
        out["stage"] = stage
    out.update(members)
    return out


def problem_for(exc: BaseException, stage: str | None = None) -> dict:
    """The problem of ``exc``: 422 for the core's errors (naming the field), 410 for
    an artifact gone, 503 for a full Redis, 504 for a time limit, 500 for anything else."""
    if isinstance(exc, sca.SCAError):
        kind, title = _SCA_KINDS.get(type(exc), ("invalid-input", "Invalid input"))
        return problem(kind, title, 422, str(exc), stage, errors={exc.field or "input": [str(exc)]})
    if isinstance(exc, ArtifactMissing):
        return problem(
            "artifact-missing",
            "Artifact missing",
            410,
            f"an intermediate result expired or was deleted ({exc}); resubmit",
            stage,
        )
    if store_full(exc):
        return problem(
            "store-full",
            "Store full",
            503,
            "Redis is full (its used memory reached maxmemory) and refused a write; "
            "retry later: room comes back as finished jobs expire or are deleted, "
            "or when maxmemory is raised",
            stage,
        )
    where = f"the {stage} stage" if stage else "the request"
    if type(exc).__name__ in ("SoftTimeLimitExceeded", "TimeLimitExceeded"):
        return problem(
            "time-limit", "Time limit exceeded", 504, f"{where} exceeded its time limit", stage
        )
    return problem(
        "internal-error",
        "Stage failed",
        500,
        f"{where} failed unexpectedly ({type(exc).__name__}); see the worker log",
        stage,
    )
