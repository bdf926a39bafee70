"""Problem+json documents (RFC 9457) of failures, for the worker and the API alike.

A failed job's ``error`` and the API's error responses share these shapes:
:func:`problem_for` maps an exception to one, :func:`problem` builds any
other.  :data:`TRANSIENT` lists the errors of a store that is unreachable for
a while (a task retries them; the API answers 503).
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import sca

from .store import ArtifactMissing

PROBLEM_BASE = "https://sca.invalid/problems/"

#: Errors of a store that is unreachable for a while (retried, never a failed job).
TRANSIENT: tuple = (RedisConnectionError, RedisTimeoutError)

_SCA_KINDS = {
    sca.BalancingError: ("balancing-not-converged", "Balancing did not converge"),
    sca.IterationError: ("iteration-not-converged", "No stable clustering"),
    sca.DeadlineExceeded: ("time-budget-exceeded", "Over the time budget"),
}


def problem(kind: str, title: str, status: int, detail: str, stage: str | None = None,
            **members) -> dict:
    """A problem document of type ``PROBLEM_BASE + kind`` (``stage`` when a job's stage failed)."""
    out = {"type": PROBLEM_BASE + kind, "title": title, "status": status, "detail": detail}
    if stage is not None:
        out["stage"] = stage
    out.update(members)
    return out


def problem_for(exc: BaseException, stage: str | None = None) -> dict:
    """The problem of ``exc``: 422 for the core's errors (naming the field), 410 for
    an artifact gone, 504 for a time limit, 500 for anything else."""
    if isinstance(exc, sca.SCAError):
        kind, title = _SCA_KINDS.get(type(exc), ("invalid-input", "Invalid input"))
        return problem(kind, title, 422, str(exc), stage,
                       errors={exc.field or "input": [str(exc)]})
    if isinstance(exc, ArtifactMissing):
        return problem("artifact-missing", "Artifact missing", 410,
                       f"an intermediate result expired or was deleted ({exc}); resubmit",
                       stage)
    where = f"the {stage} stage" if stage else "the request"
    if type(exc).__name__ in ("SoftTimeLimitExceeded", "TimeLimitExceeded"):
        return problem("time-limit", "Time limit exceeded", 504,
                       f"{where} exceeded its time limit", stage)
    return problem("internal-error", "Stage failed", 500,
                   f"{where} failed unexpectedly ({type(exc).__name__}); see the worker log",
                   stage)
