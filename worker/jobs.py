"""Jobs: their records, content hashes and the names of their artifacts.

A job is a hash in the store (see :mod:`sca_worker.store`) created by the API
before any task runs, so an unknown id is simply absent (the API answers 404;
Celery would call it PENDING).  The heavy data live in content-addressed
artifacts shared by every job with the same input:

========================  ===============================================
``input:<h_input>``       the request's arrays (``.npz``)
``run:<h_input>:<job>:<i>`` labels of the job's ensemble run ``i`` (until collected)
``op:<h_input>``          the similarity operator S built by the ensemble
``P:<h_balance>``         the balanced operator P = D S D
``balance:<h_balance>``   JSON ``{iterations, residual, n_components}``
``spectrum:<h_spectrum>`` JSON ``{eigenvalues, k, lambda2, gap, rule}``
``result:<h_result>``     JSON result with element indices (not ids)
``scaling:<h_input>``     a data job's fitted ``scale`` (columns' centre, spread)
========================  ===============================================

(their names are made by :func:`sca_worker.store.keys.artifact_keys`).

``h_input`` covers the arrays and the ``source`` (for raw data the ensemble,
the default one included, or the SNN, and ``scale``: a cached ensemble
never serves another scale).  ``h_balance`` covers the input, ``h_spectrum`` adds
``k`` and ``k_hat``, ``h_result`` adds the iteration options.  So an
identical request finds ``result:`` at once, and one that differs only in
iteration options (``seed, starts, stable, max_iterations, split, trace``)
reuses ``P:`` and ``spectrum:``.  ``scope`` separates caches of different
owners when the API needs it.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone

import numpy as np

from sca.options import options_for
from sca.pipeline import TASKS, parts

from .store.keys import HASH_NAMES

#: A job's stages: the ensemble's runs (raw data clustered by an ensemble), then
#: the core's (:data:`sca.pipeline.STAGES`).
STAGES = ("ensemble", *TASKS)
ACTIVE = ("queued", "running")

#: A job's options of each of the core's stages with the core's defaults (the
#: registry, :mod:`sca.options`), and the ensemble's seed.
STAGE_OPTIONS = {
    task: {o.name: o.default for o in options_for("job", stages=[s.name for s in parts(task)])}
    for task in TASKS
}
SPECTRAL_OPTIONS = STAGE_OPTIONS["spectral"]
ITERATION_OPTIONS = STAGE_OPTIONS["iteration"]
ENSEMBLE_OPTIONS = {o.name: o.default for o in options_for("job", stages=("ensemble",))}
DEFAULT_OPTIONS = {
    **{k: v for o in STAGE_OPTIONS.values() for k, v in o.items()},
    **ENSEMBLE_OPTIONS,
}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_job_id() -> str:
    return uuid.uuid4().hex


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            a = np.ascontiguousarray(part)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(memoryview(a).cast("B"))  # type: ignore[arg-type]  # ndarray is a buffer
        else:
            h.update(json.dumps(part, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\x00")
    return h.hexdigest()


def normalise_options(options: Mapping | None) -> dict:
    """All options with defaults filled in, so omitted and explicit defaults hash alike."""
    merged = dict(DEFAULT_OPTIONS)
    merged.update({k: v for k, v in (options or {}).items() if v is not None})
    return merged


def content_hashes(
    kind: str, arrays: Mapping[str, np.ndarray], source: Mapping, options: Mapping, scope: str = ""
) -> dict:
    """The cache keys of a job: the input's and one per stage (see the module docstring).

    ``source`` holds what shapes S besides the arrays: the ensemble spec and
    seed, or the SNN parameters.
    """
    h_input = _digest(
        "input",
        scope,
        kind,
        dict(source),
        *[x for name in sorted(arrays) for x in (name, arrays[name])],
    )
    hashes = {"input": h_input}
    previous = h_input
    for task in TASKS:  # each stage's hash covers the one before it and its own options
        name = HASH_NAMES.get(task, task)
        covered: list = (
            [{k: options[k] for k in STAGE_OPTIONS[task]}] if STAGE_OPTIONS[task] else []
        )
        if task == "spectral":
            # The noise rule's null draws follow the seed, so its spectrum depends on it.
            covered.append(options["seed"] if options["rule"] == "noise" else None)
        previous = hashes[name] = _digest(name, previous, *covered)
    return hashes


def job_stages(kind: str, source: Mapping) -> list[str]:
    """Stages a job runs: the ensemble only when raw data is clustered by an ensemble."""
    if kind == "data" and source.get("ensemble") is not None:
        return list(STAGES)
    return list(STAGES[1:])


def new_record(
    job_id: str,
    kind: str,
    n: int,
    source: Mapping,
    options: Mapping,
    hashes: Mapping,
    runs_total: int = 0,
    owner: str | None = None,
) -> dict:
    stamp = now()
    return {
        "id": job_id,
        "status": "queued",
        "stage": None,
        "created": stamp,
        "updated": stamp,
        "kind": kind,
        "n": int(n),
        "source": dict(source),
        "options": dict(options),
        "hashes": dict(hashes),
        "stages": job_stages(kind, source),
        "runs_total": int(runs_total),
        "runs_done": 0,
        "cached": False,
        "owner": owner,
        "task_id": None,
        "error": None,
    }


def progress(record: Mapping) -> float:
    """Fraction of the job done: stages finished plus the share of ensemble runs done."""
    if record["status"] == "succeeded":
        return 1.0
    stages = record.get("stages") or list(STAGES)
    stage = record.get("stage")
    if stage not in stages:
        return 0.0
    index = stages.index(stage)
    fraction = 0.0
    if stage == "ensemble" and record.get("runs_total"):
        fraction = min(1.0, record.get("runs_done", 0) / record["runs_total"])
    return round((index + fraction) / len(stages), 4)


def timings(record: Mapping) -> dict:
    """Seconds spent per stage (summed over parallel tasks), from ``t:<stage>`` fields."""
    return {
        stage: round(float(record[f"t:{stage}"]), 6) for stage in STAGES if f"t:{stage}" in record
    }


def jsonable(value):
    """Arrays, numpy scalars and NaN/inf made JSON-safe (NaN and inf become None)."""
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
