"""Every name the service gives a Redis key: one function per family.

A *name* is relative to the store's prefix (``SCA_KEY_PREFIX``, ``sca:`` by
default): :meth:`sca_worker.store.Store.key` turns it into the Redis key, and
every method of the store takes names.  The one exception is kombu's
:func:`unacked` hash, which the broker keeps outside any prefix.

========================== =============================== ======================
name                       what                            written by
========================== =============================== ======================
``job:<id>``               a job's record (hash)           API, workers
``job:<id>:tasks``         the Celery tasks of a job (set) workers
``job:<id>:events``        a job's progress events         API, workers
                           (stream)
``<name>:chunk:<i>``       chunk ``i`` of a large artifact the store
``input:<h>``, ``P:<h>``   content-addressed artifacts     API, workers
...                        (:func:`artifact_keys`)
``ids:<id>``               a job's element ids (JSON)      API; deleted by
                                                           :mod:`sca_worker.cleanup`
``refs:<h_input>``         the jobs using an input (set)   API
``lock:<name>``            a lock shared by every process  the store
``webhook:<id>``           a webhook awaiting delivery     workers, API
``plot:<id>:<plot>``       a drawn plot (bytes)            API
``jobs:<owner>``           an owner's jobs, newest first   API
                           (sorted set)
``idem:<owner>:<hash>``    an idempotency key's answer     API
``rate:<owner>:<second>``  requests of a key in a second   API
``active:<owner>``         a key's queued/running jobs     API
                           (set)
``metrics:<histogram>``    a histogram's counters (hash)   API, workers
``census``                 the last census of jobs and     API
                           artifacts (JSON), and
``census:claim``           who takes the next one
``heartbeats``             ``<job>|<task>`` by last beat   workers
                           (sorted set)
``alive``                  active jobs by last sign of     API, workers
                           life (sorted set)
``takeover:<id>``          one takeover per job and        workers
                           timeout
``queue``                  the broker's waiting messages   Celery (kombu)
``ready-probe``            ``/readyz``'s write test        API
========================== =============================== ======================
"""

from __future__ import annotations

from collections.abc import Mapping

from sca.pipeline import TASKS, parts

#: The family of job records (``job:<id>``), as the metrics count them.
JOB = "job"


def job(job_id: str) -> str:
    """A job's record."""
    return f"{JOB}:{job_id}"


def job_tasks(job_id: str) -> str:
    """The ids of the Celery tasks a job has in flight."""
    return f"{job(job_id)}:tasks"


def job_events(job_id: str) -> str:
    """A job's progress events (see :mod:`sca_worker.events`)."""
    return f"{job(job_id)}:events"


def chunk(name: str, index: int) -> str:
    """Chunk ``index`` of the artifact ``name`` (see :meth:`Store.save_bytes`)."""
    return f"{name}:chunk:{index}"


#: The content hash of each stage of the core, where it is not named as the stage.
HASH_NAMES = {"balancing": "balance", "spectral": "spectrum", "iteration": "result"}


def artifact_keys(record: Mapping) -> dict:
    """Names of a job's artifacts, from its content hashes (see :mod:`sca_worker.jobs`):
    those of its input and ensemble, and each artifact a stage of the core keeps
    (:data:`sca.pipeline.STAGES`), under the content hash of the stage that makes it."""
    h = record["hashes"]
    keys = {
        "input": f"input:{h['input']}",
        "op": f"op:{h['input']}",
        "models": f"models:{h['input']}",
        # A data job's fitted scale (sca.inputs.Scaling), for its runs and new elements
        "scaling": f"scaling:{h['input']}",
        # Runs belong to the job that made them: an identical job racing it
        # collects (and deletes) its own, never its twin's.
        "run": f"run:{h['input']}:{record['id']}:",
    }
    for task in TASKS:
        for stage in parts(task):
            keys.update({name: f"{name}:{h[HASH_NAMES.get(task, task)]}" for name in stage.keeps})
    return keys


def element_ids(job_id: str) -> str:
    """A job's element ids (JSON), when it was submitted with some."""
    return f"ids:{job_id}"


def refs(h_input: str) -> str:
    """The jobs that use the input ``h_input`` (see :mod:`sca_worker.cleanup`)."""
    return f"refs:{h_input}"


def lock(name: str) -> str:
    """The lock ``name`` (see :meth:`Store.lock`)."""
    return f"lock:{name}"


def webhook(job_id: str) -> str:
    """What a finished job's webhook delivery needs (see :mod:`sca_worker.webhooks`)."""
    return f"webhook:{job_id}"


def plot(job_id: str, plot_name: str, fmt: str) -> str:
    """A drawn plot of a job, in the format ``fmt``."""
    return f"plot:{job_id}:{plot_name}.{fmt}"


def owner_jobs(owner: str | None) -> str:
    """An API key's jobs by submission time."""
    return f"jobs:{owner or 'anonymous'}"


def idempotency(owner: str, digest: str) -> str:
    """The answer to a request with an idempotency key (``digest``: its hash)."""
    return f"idem:{owner}:{digest}"


def rate(owner: str, second: int) -> str:
    """The requests of an API key in one second."""
    return f"rate:{owner}:{second}"


def active(owner: str) -> str:
    """The queued or running jobs of an API key."""
    return f"active:{owner}"


def histogram(name: str) -> str:
    """The counters of a histogram (see :mod:`sca_worker.metrics`)."""
    return f"metrics:{name}"


def census() -> str:
    """The last census of the store (see :func:`sca_worker.metrics.shared_census`)."""
    return "census"


def census_claim() -> str:
    """Held by the process taking the census, for the census interval."""
    return "census:claim"


def heartbeats() -> str:
    """``<job id>|<task id>`` of every task held by a worker, by its last beat."""
    return "heartbeats"


def alive() -> str:
    """Active jobs by their last sign of life (see :mod:`sca_worker.heartbeat`)."""
    return "alive"


def takeover(job_id: str) -> str:
    """Taken while a job is being resumed (one takeover per job and timeout)."""
    return f"takeover:{job_id}"


def queue() -> str:
    """The broker's list of waiting messages (Celery's ``task_default_queue``)
    under the prefix: deployments sharing one Redis database never take each
    other's tasks."""
    return "queue"


def ready_probe() -> str:
    """The value ``/readyz`` writes to learn whether Redis takes writes."""
    return "ready-probe"


def unacked() -> str:
    """kombu's hash of the messages delivered to workers and not yet
    acknowledged: a full Redis key, outside the prefix."""
    return "unacked"
