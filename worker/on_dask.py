"""Jobs run on a Dask cluster: the label matrix stays on the cluster's workers.

With ``SCA_DASK_SCHEDULER`` set, ``sca.start`` hands a job of label runs to
that cluster (:func:`wanted`): always when its labels were named by reference
(:mod:`sca.storage`), and when it has at least ``SCA_DASK_MIN_ELEMENTS``
elements.  The Celery task connects a :class:`dask.distributed.Client`, opens
the labels as a Dask array (each Dask worker reads its own blocks from the
shared storage; uploaded labels are sent from the store), and walks the core's
stages (:func:`sca.pipeline.walk`) on it: every product of the consensus
operator runs on the cluster (docs/scale.md).  Around the walk it does what
:func:`sca_worker.stages.execute` does around a stage: the job's ``stage``
events and timings, and a failed job with a problem+json ``error`` for any
failure.  The job's artifacts are the usual ones (``balance``, ``spectrum``,
``result``), so the job document, its plots and its queries read as for any job.

A referenced job's labels and balancing vector are written as npy stacks
(:func:`sca.storage.write_labels`) under ``<results>/<result hash>/``, where
``<results>`` is the root ``SCA_RESULTS_ROOT`` names or, unset, a directory
``sca-results`` beside the input; the stored P then names those files and
the input (:func:`stored_state`) instead of holding the label matrix, and the
queries read them from there (:func:`sca_worker.inputs.stored_operator`).
When such a job has more than ``SCA_RESULT_LIST_MAX`` elements (:func:`paged`)
its result lists no element: it is :func:`sca.pipeline.paged_result`, whose
labels, confidences and (with several starts) membership are written as npy
stacks in the same directory and named in the result's ``written`` (a root and
a path, :func:`results_reference`), for ``GET /v1/jobs/{id}/labels`` to page.
The directory is listed for :func:`sca_worker.cleanup.sweep` once the artifacts
that read it are stored, and deleted with them.

A watcher thread follows the job while the cluster computes: a job cancelled
meanwhile closes the client, which releases the cluster's work for it at once;
a scheduler that cannot be reached for ``SCA_DASK_TIMEOUT`` seconds fails the
job with the ``dask-unavailable`` problem, never leaving it running.
"""

from __future__ import annotations

import logging
import os
import posixpath
import threading
import time
from collections.abc import Mapping

import numpy as np

import sca
from sca import storage

from . import events, inputs, stages
from .cleanup import release, wrote
from .jobs import ACTIVE, jsonable, now
from .problems import TRANSIENT, problem, problem_for, store_full
from .store import Store
from .store import keys as store_keys
from .store.keys import artifact_keys

log = logging.getLogger(__name__)

#: Rows per block of uploaded labels sent to the cluster.
BLOCK_ROWS = 1 << 18
#: Seconds between two looks of the watcher at the job and the client.
WATCH_INTERVAL = 0.25
#: The folder of a referenced job's written labels beside its input (no results root).
RESULTS = "sca-results"
#: The core's diagnostics stage (its result listed), run after the walk's iteration.
DIAGNOSTICS = next(stage for stage in sca.pipeline.STAGES if stage.name == "diagnostics")


def wanted(record: Mapping, steps: Mapping, settings: Mapping) -> bool:
    """Whether ``sca.start`` runs this planned job on the Dask cluster."""
    if not settings.get("SCA_DASK_SCHEDULER") or not steps.get("stages"):
        return False
    if record["kind"] != "labels":  # only label runs have a Dask form (sca.membership_operator)
        return False
    return bool(record.get("reference")) or int(record["n"]) >= settings["SCA_DASK_MIN_ELEMENTS"]


def unavailable(address: str, detail: str, stage: str | None) -> dict:
    """The problem of a job whose Dask cluster could not be reached or went away."""
    return problem(
        "dask-unavailable",
        "Dask cluster unavailable",
        503,
        f"the Dask scheduler at {address} {detail}; submit the job again once it is back",
        stage,
    )


class Watcher(threading.Thread):
    """Closes the client when the job stops being active or the scheduler stays away."""

    def __init__(self, store: Store, job_id: str, client, timeout: float):
        super().__init__(daemon=True, name=f"dask-watch-{job_id}")
        self.store, self.job_id, self.client, self.timeout = store, job_id, client, timeout
        self.done = threading.Event()
        self.lost: str | None = None
        self.inactive = False

    def run(self) -> None:
        away_since = None
        while not self.done.wait(WATCH_INTERVAL):
            try:
                record = self.store.get_job(self.job_id)
            except TRANSIENT:
                record = {"status": "running"}  # Redis away: the job may well go on
            if record is None or record["status"] not in ACTIVE:
                self.inactive = True
                break
            if self.client.status == "running":
                away_since = None
            else:
                away_since = away_since or time.monotonic()
                if time.monotonic() - away_since > self.timeout:
                    self.lost = f"went away (client {self.client.status})"
                    break
        if self.inactive or self.lost:
            self.client.close(timeout=self.timeout)

    def stop(self) -> None:
        self.done.set()
        self.join(self.timeout + 5)


def results_reference(settings: Mapping, reference: Mapping, record: Mapping) -> dict:
    """Where a referenced job's labels and balancing vector are written, as a
    storage root and a path in it (what a paged result names: never a path of
    this machine): under the root ``SCA_RESULTS_ROOT`` names, else in
    ``sca-results`` beside the input."""
    digest = artifact_keys(record)["result"].rsplit(":", 1)[-1]
    name = settings.get("SCA_RESULTS_ROOT")
    if name:
        return {"root": name, "path": digest}
    return {"root": reference["root"], "path": posixpath.join(_folder(reference), RESULTS, digest)}


def results_location(settings: Mapping, reference: Mapping, record: Mapping) -> str:
    """:func:`results_reference` as a location on the machines that share it: the
    results root's own, or the input's location's folder for the input's path's."""
    name = settings.get("SCA_RESULTS_ROOT")
    if not name and "://" in reference["location"]:
        raise sca.SCAError(
            "labels at an object-storage URL need SCA_RESULTS_ROOT, a directory root that "
            "the Dask workers share, for the job's labels",
            "labels.root",
        )
    written = results_reference(settings, reference, record)
    if name:
        base, path = storage.parse_roots(settings["SCA_DATA_ROOTS"])[name], written["path"]
    else:
        base = os.path.dirname(reference["location"].rstrip("/"))
        path = posixpath.relpath(written["path"], _folder(reference) or ".")
    return os.path.join(base, *path.split("/"))


def _folder(reference: Mapping) -> str:
    """The folder of the input's path in its root ("" at the root's top)."""
    return posixpath.dirname(posixpath.normpath(reference["path"].replace("\\", "/")))


def stored_state(P, reference: Mapping, location: str) -> dict:
    """The stored P of a referenced job: the input's location and the written
    balancing vector (P = D S D), not the label matrix."""
    storage.write_labels(P.scale, os.path.join(location, "scale"))
    return {
        "kind": np.array(inputs.STORED),
        "input": np.array(reference["location"]),
        "scale": np.array(os.path.join(location, "scale")),
        "labels": np.array(os.path.join(location, "labels")),
        "spans": np.asarray(P.spans),  # each run's labels 0..spans-1, for the queries
    }


def _labels(arrays: Mapping):
    """The job's label matrix as a Dask array on the cluster."""
    if inputs.reference(arrays) is not None:
        return inputs.referenced(arrays, distributed=True)
    import dask.array as da

    return da.from_array(np.asarray(arrays["labels"]), chunks=(BLOCK_ROWS, -1))


class _Stages:
    """The job's stage events and timings as the walk reports its stages."""

    def __init__(self, store: Store, job_id: str):
        self.store, self.job_id = store, job_id
        self.current: str | None = None
        self.start = 0.0

    def __call__(self, stage: str, fraction: float = 0.0) -> None:
        self.finish()
        if not stages.stage_started(self.store, self.job_id, stage):
            raise _Inactive()
        self.current, self.start = stage, time.perf_counter()

    def finish(self) -> dict | None:
        if self.current is None:
            return None
        current = stages.stage_finished(
            self.store, self.job_id, self.current, time.perf_counter() - self.start
        )
        self.current = None
        return current


class _Inactive(Exception):
    """The job was cancelled or failed elsewhere while it ran."""


def run(store: Store, job_id: str, settings: Mapping) -> bool | None:
    """Every stage of a job on the Dask cluster; False when the job went no further,
    None when its labels have no Dask form (uploaded runs that leave elements out:
    the caller runs it as any other job)."""
    from dask.distributed import Client

    record = store.get_job(job_id)
    if record is None or record["status"] not in ACTIVE:
        return False
    if not record.get("reference"):
        uploaded = store.load_arrays(artifact_keys(record)["input"])["labels"]
        if uploaded.min() < 0:
            return None
    address, timeout = settings["SCA_DASK_SCHEDULER"], settings["SCA_DASK_TIMEOUT"]
    progress = _Stages(store, job_id)
    try:
        client = Client(address, timeout=timeout, set_as_default=True)
    except Exception as exc:  # unreachable, or no scheduler's address at all
        log.warning("job %s: no Dask scheduler at %s: %s", job_id, address, exc)
        stages.fail(store, job_id, unavailable(address, f"could not be reached ({exc})", None))
        return False
    watcher = Watcher(store, job_id, client, timeout)
    watcher.start()
    try:
        log.info("job %s: on the Dask cluster at %s (%d elements)", job_id, address, record["n"])
        _walk(store, record, settings, progress)
    except Exception as exc:
        connected = client.status == "running"  # before the client is closed here
        watcher.stop()
        client.close(timeout=timeout)
        if isinstance(exc, TRANSIENT) or store_full(exc):
            raise
        stage = progress.current
        progress.current = None
        if watcher.inactive or isinstance(exc, _Inactive):
            release(store, store.get_job(job_id) or record)
            return False
        reason = (str(exc).splitlines() or [""])[0]
        if watcher.lost or _is_comm(exc) or not connected:
            detail = watcher.lost or f"went away ({type(exc).__name__}: {reason})"
            stages.fail(store, job_id, unavailable(address, detail, stage))
        elif isinstance(exc, OSError):  # a block of the labels unreadable where it was read
            unreadable = sca.SCAError(
                f"labels.path: cannot read the labels: {reason}", "labels.path"
            )
            stages.fail(store, job_id, problem_for(unreadable, stage))
        else:
            if not isinstance(exc, sca.SCAError):
                log.exception("job %s: on Dask, stage %s failed", job_id, stage)
            stages.fail(store, job_id, problem_for(exc, stage))
        return False
    watcher.stop()
    client.close(timeout=timeout)
    return _succeed(store, job_id, progress)


def _is_comm(exc: BaseException) -> bool:
    from distributed.comm.core import CommClosedError

    return isinstance(exc, (CommClosedError, TimeoutError)) or (
        type(exc).__name__ in ("CancelledError", "FutureCancelledError")
    )


def paged(record: Mapping, settings: Mapping) -> bool:
    """Whether a job's result is paged (:func:`sca.pipeline.paged_result`): its
    labels named by reference (so there is a root to write them in) and more
    elements than ``SCA_RESULT_LIST_MAX``.  Uploaded labels are listed, as their
    size is bounded by the upload's."""
    return bool(record.get("reference")) and int(record["n"]) > settings["SCA_RESULT_LIST_MAX"]


def _walk(store: Store, record: dict, settings: Mapping, progress: _Stages) -> None:
    keys = artifact_keys(record)
    arrays = store.load_arrays(keys["input"])
    S = sca.membership_operator(_labels(arrays))
    done = sca.pipeline.walk(
        {"S": S, "source": None, "scaled": None}, record["options"], "iteration", progress=progress
    )
    reference = inputs.reference(arrays)
    if reference is None:
        done.update(DIAGNOSTICS.run(done, {}))  # the diagnostics, listed
        store.save_arrays(keys["P"], sca.operator_state(done["P"]))
        for name in ("balance", "spectrum", "result"):
            store.save_json(keys[name], jsonable(done[name]))
        return
    location = results_location(settings, reference, record)
    store.hdel(store_keys.written(), location)  # no sweep of an older listing meanwhile
    if paged(record, settings):
        result, written = sca.pipeline.paged_result(
            S, done["P"], done["balance"], done["choice"], done["iteration"]
        )
        result["written"] = {**results_reference(settings, reference, record), "arrays": []}
        for name, array in written.items():
            storage.write_labels(array, os.path.join(location, name))
            result["written"]["arrays"].append(name)
    else:
        result = DIAGNOSTICS.run(done, {})["result"]
        storage.write_labels(done["iteration"].labels, os.path.join(location, "labels"))
    store.save_arrays(keys["P"], stored_state(done["P"], reference, location))
    store.save_json(keys["balance"], jsonable(done["balance"]))
    store.save_json(keys["spectrum"], jsonable(done["spectrum"]))
    store.save_json(keys["result"], jsonable(result))
    wrote(store, location, keys["P"], keys["result"])


def _succeed(store: Store, job_id: str, progress: _Stages) -> bool:
    current = progress.finish()
    done = store.update_and_get(job_id, {"status": "succeeded", "updated": now()}, expect=ACTIVE)
    if done is None:  # cancelled or failed meanwhile: drop what it wrote
        release(store, current or store.get_job(job_id) or {"id": job_id})
        return False
    events.finished(store, job_id, "succeeded", done[1])
    return True
