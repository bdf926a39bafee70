"""The four stages of a job as plain functions over a store.

Each stage loads its artifacts, calls the core, saves its artifacts and
updates the job record.  The Celery tasks (:mod:`worker.tasks`) and the
embedded runner (:mod:`worker.embedded`) both call :func:`execute`, which
adds what every stage needs: it skips jobs no longer active, marks the stage
as running, times it and turns any failure into a failed job with a
problem+json ``error``.  Stages write content-addressed artifacts, so
running one twice is harmless.
"""

from __future__ import annotations

import logging
import time

import numpy as np

import sca

from . import inputs
from .jobs import ACTIVE, jsonable, now
from .store import ArtifactMissing, ArtifactStore

log = logging.getLogger(__name__)

PROBLEM_BASE = "https://sca.invalid/problems/"

try:  # errors of a store that is unreachable for a while (retried, never a failed job)
    from redis.exceptions import ConnectionError as _RedisConnectionError
    from redis.exceptions import TimeoutError as _RedisTimeoutError

    TRANSIENT: tuple = (_RedisConnectionError, _RedisTimeoutError)
except ImportError:  # pragma: no cover - redis is a dependency
    TRANSIENT = ()


def _keys(record) -> dict:
    h = record["hashes"]
    return {"input": f"input:{h['input']}", "op": f"op:{h['input']}",
            "P": f"P:{h['balance']}", "balance": f"balance:{h['balance']}",
            "spectrum": f"spectrum:{h['spectrum']}", "result": f"result:{h['result']}",
            "run": f"run:{h['input']}:"}


def artifact_keys(record) -> dict:
    """Names of a job's artifacts in the store (see :mod:`worker.jobs`)."""
    return _keys(record)


# -- planning ------------------------------------------------------------------------------
def plan(store: ArtifactStore, job_id: str) -> dict | None:
    """The stages a job still needs, given what the cache holds.

    Returns ``{"stages": [...], "runs": [run descriptors]}`` (no stages when
    the result is cached: the job is then finished here), or None when the
    job is gone or no longer active.
    """
    record = store.get_job(job_id)
    if record is None or record["status"] not in ACTIVE:
        return None
    keys = _keys(record)
    if store.has(keys["result"]):
        store.touch(keys["result"], keys["P"], keys["input"])
        store.update_job(job_id, {"status": "succeeded", "stage": "iteration", "cached": True,
                                  "updated": now()}, expect=ACTIVE)
        return {"stages": [], "runs": []}
    store.touch(keys["input"], keys["op"], keys["P"], keys["balance"], keys["spectrum"])
    need_balance = not store.has(keys["P"])
    need_spectral = need_balance or not store.has(keys["spectrum"])
    need_ensemble = (need_balance and "ensemble" in record["stages"]
                     and not store.has(keys["op"]))
    stages = (["ensemble"] if need_ensemble else []) + (["balancing"] if need_balance else [])
    stages += (["spectral"] if need_spectral else []) + ["iteration"]
    runs = []
    if need_ensemble:
        source = record["source"]
        runs = sca.ensemble_plan(source["ensemble"], source.get("ensemble_seed", 0))
        store.update_job(job_id, {"runs_total": len(runs), "runs_done": 0})
    return {"stages": stages, "runs": runs}


# -- the stages ----------------------------------------------------------------------------
def ensemble_run(store: ArtifactStore, record: dict, index: int, run: dict) -> None:
    """One clustering of the ensemble; its labels become an artifact."""
    keys = _keys(record)
    name = f"{keys['run']}{index}"
    if store.has(keys["op"]):  # a late run of an ensemble already collected (takeover)
        return
    if not store.has(name):
        X = store.load_arrays(keys["input"])["X"]
        store.save_arrays(name, {"labels": sca.ensemble_run(X, run)})
    store.incr_job(record["id"], "runs_done")


def ensemble_collect(store: ArtifactStore, record: dict, total: int) -> None:
    """The chord's callback: the membership operator S = H H^T of all runs."""
    keys = _keys(record)
    names = [f"{keys['run']}{i}" for i in range(total)]
    labels = np.column_stack([store.load_arrays(name)["labels"] for name in names])
    store.save_arrays(keys["op"], sca.operator_state(sca.membership_operator(labels)))
    store.delete(*names)


def source_operator(store: ArtifactStore, record: dict):
    keys = _keys(record)
    if "ensemble" in record["stages"]:
        return sca.operator_from_state(store.load_arrays(keys["op"]))
    arrays = store.load_arrays(keys["input"])
    return inputs.build_operator(record["kind"], arrays, record["source"])


def balancing(store: ArtifactStore, record: dict) -> None:
    """Sinkhorn-Knopp: P = D S D, saved with its convergence figures."""
    keys = _keys(record)
    S = source_operator(store, record)
    balanced = sca.balance(S)
    store.save_arrays(keys["P"], sca.operator_state(balanced.P))
    store.save_json(keys["balance"], sca.balance_dict(balanced))


def load_balanced(store: ArtifactStore, record: dict):
    """``(S, P)`` from the stored balanced operator (its state minus the scaling is S)."""
    state = store.load_arrays(_keys(record)["P"])
    P = sca.operator_from_state(state)
    S = sca.operator_from_state({k: v for k, v in state.items() if k != "scale"})
    return S, P


def spectral(store: ArtifactStore, record: dict) -> None:
    """Eigenvalues of P and k (the user's, or from the largest gap)."""
    keys = _keys(record)
    _, P = load_balanced(store, record)
    options = record["options"]
    found = sca.spectrum(P, k=options.get("k"), k_hat=options.get("k_hat"),
                         min_k=options.get("min_k", 2), max_k=options.get("max_k"),
                         rule=options.get("rule", "gap"))
    store.save_json(keys["spectrum"], sca.spectrum_dict(found))


def iteration(store: ArtifactStore, record: dict) -> None:
    """The stochastic iteration; the result (with element indices) is cached."""
    keys = _keys(record)
    S, P = load_balanced(store, record)
    spec = store.load_json(keys["spectrum"])
    o = record["options"]
    found = sca.iterate(P, spec["k"], seed=o["seed"], starts=o["starts"], stable=o["stable"],
                        max_iterations=o["max_iterations"], split=o["split"], trace=o["trace"],
                        reconsensus=o.get("reconsensus", False))
    result = sca.result_dict(S, P, store.load_json(keys["balance"]), spec, found)
    store.save_json(keys["result"], jsonable(result))
    store.update_job(record["id"], {"status": "succeeded", "updated": now()}, expect=ACTIVE)


STAGE_FUNCTIONS = {"ensemble": ensemble_run, "ensemble_collect": ensemble_collect,
                   "balancing": balancing, "spectral": spectral, "iteration": iteration}


# -- running a stage -----------------------------------------------------------------------
def problem_for(exc: BaseException, stage: str) -> dict:
    """The problem+json ``error`` of a job that failed in ``stage``."""
    if isinstance(exc, sca.SCAError):
        kind, title = {
            sca.BalancingError: ("balancing-not-converged", "Balancing did not converge"),
            sca.IterationError: ("iteration-not-converged", "No stable clustering"),
        }.get(type(exc), ("invalid-input", "Invalid input"))
        field = exc.field or "input"
        return {"type": PROBLEM_BASE + kind, "title": title, "status": 422,
                "detail": str(exc), "stage": stage, "errors": {field: [str(exc)]}}
    if isinstance(exc, ArtifactMissing):
        return {"type": PROBLEM_BASE + "artifact-missing", "title": "Artifact missing",
                "status": 410, "stage": stage,
                "detail": f"an intermediate result expired or was deleted ({exc}); resubmit"}
    if type(exc).__name__ in ("SoftTimeLimitExceeded", "TimeLimitExceeded"):
        return {"type": PROBLEM_BASE + "time-limit", "title": "Time limit exceeded",
                "status": 504, "stage": stage,
                "detail": f"the {stage} stage exceeded its time limit"}
    return {"type": PROBLEM_BASE + "internal-error", "title": "Stage failed", "status": 500,
            "stage": stage, "detail": f"the {stage} stage failed unexpectedly "
                                      f"({type(exc).__name__}); see the worker log"}


def fail(store: ArtifactStore, job_id: str, problem: dict) -> bool:
    return store.update_job(job_id, {"status": "failed", "error": problem, "updated": now()},
                            expect=ACTIVE)


def execute(store: ArtifactStore, job_id: str, stage: str, *args) -> bool:
    """Run one stage function of an active job; False when the job should go no further."""
    record = store.get_job(job_id)
    if record is None or record["status"] not in ACTIVE:
        return False
    public_stage = "ensemble" if stage == "ensemble_collect" else stage
    if not store.update_job(job_id, {"status": "running", "stage": public_stage,
                                     "updated": now()}, expect=ACTIVE):
        return False
    start = time.perf_counter()
    try:
        STAGE_FUNCTIONS[stage](store, record, *args)
    except TRANSIENT:
        raise  # Redis away for a moment: the task retries; the job is not failed
    except Exception as exc:  # every failure ends the job with a problem, not a traceback
        if not isinstance(exc, sca.SCAError):
            log.exception("job %s: stage %s failed", job_id, stage)
        fail(store, job_id, problem_for(exc, public_stage))
        return False
    finally:
        store.incr_job(job_id, f"t:{public_stage}", time.perf_counter() - start)
    current = store.get_job(job_id)
    if current is None or current.get("status") in (None, "cancelled"):
        from .cleanup import release  # cancelled or deleted meanwhile: drop what it wrote

        if current is not None and "status" not in current:
            store.delete_job(job_id)  # only the counters above re-created a deleted job
        release(store, record if current is None or "status" not in current else current)
        return False
    return True
