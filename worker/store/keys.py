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
``uses:<h>``               the jobs using the artifacts    API, workers
                           under a content hash (sorted
                           set)
``written``                the npy stacks written for      workers; pruned by
                           jobs run on Dask: directory ->  :mod:`sca_worker.cleanup`
                           the artifacts naming it (hash)
``webhook:<id>``           a webhook awaiting delivery     workers, API
``webhooks``               ``<job>:<status>`` deliveries   workers, API
                           by when due (sorted set)
``plot:<id>:<plot>``       a drawn plot (bytes)            API
``jobs:<owner>``           an owner's jobs, newest first   API
                           (sorted set)
``deleted-jobs:<owner>``   an owner's deleted jobs (sorted API
                           set)
``idem:<owner>:<hash>``    an idempotency key's answer     API
``rate:<owner>:<second>``  requests of a key in a second   API
``active:<owner>``         a key's queued/running jobs     API
                           (set)
``share:<owner>``          a key's running stage tasks by  workers
                           lease end (sorted set)
``share:<owner>:waiting``  its tasks waiting for a slot    workers
                           (sorted set)
``usage:<owner>:<hour>``   bytes stored for a key's jobs   API
                           of one hour
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


#: What separates an artifact's name from the index of one of its chunks.
CHUNK_INFIX = ":chunk:"


def chunk(name: str, index: int) -> str:
    """Chunk ``index`` of the artifact ``name`` (see :meth:`Store.save_bytes`)."""
    return f"{name}{CHUNK_INFIX}{index}"


#: The content hash of each stage of the core, where it is not named as the stage.
HASH_NAMES = {"balancing": "balance", "spectral": "spectrum", "iteration": "result"}


def shared_artifacts(record: Mapping) -> dict[str, dict[str, str]]:
    """A job's artifacts that identical jobs share, by the content hash they are
    kept under (see :mod:`sca_worker.jobs`): ``{hash: {artifact: name}}``.  Those of
    its input and ensemble are under ``h_input``, and each artifact a stage of the
    core keeps (:data:`sca.pipeline.STAGES`) under the hash of the stage that makes it."""
    h = record["hashes"]
    found = {
        h["input"]: {
            "input": f"input:{h['input']}",
            "op": f"op:{h['input']}",
            "models": f"models:{h['input']}",
            # A data job's fitted scale (sca.inputs.Scaling), for its runs and new elements
            "scaling": f"scaling:{h['input']}",
        }
    }
    for task in TASKS:
        digest = h[HASH_NAMES.get(task, task)]
        for stage in parts(task):
            found.setdefault(digest, {}).update({name: f"{name}:{digest}" for name in stage.keeps})
    return found


def artifact_keys(record: Mapping) -> dict:
    """Names of a job's artifacts: those it shares (:func:`shared_artifacts`), and
    ``run``, the prefix of its ensemble's runs."""
    keys = {name: key for named in shared_artifacts(record).values() for name, key in named.items()}
    # Runs belong to the job that made them: an identical job racing it
    # collects (and deletes) its own, never its twin's.
    keys["run"] = f"run:{record['hashes']['input']}:{record['id']}:"
    return keys


def element_ids(job_id: str) -> str:
    """A job's element ids (JSON), when it was submitted with some."""
    return f"ids:{job_id}"


def refs(digest: str) -> str:
    """The jobs that use the artifacts kept under the content hash ``digest``, by
    the time each was listed (sorted set; see :mod:`sca_worker.cleanup`)."""
    # Not refs:<h>, the sets of jobs per input an earlier release scanned under a
    # lock: a sorted set under that name would meet them until they expire.
    return f"uses:{digest}"


def written() -> str:
    """The directories of npy stacks written for jobs run on Dask, each with the
    names of the artifacts that read it (JSON; see :mod:`sca_worker.cleanup`)."""
    return "written"


def webhook(job_id: str) -> str:
    """What a finished job's webhook delivery needs (see :mod:`sca_worker.webhooks`)."""
    return f"webhook:{job_id}"


def webhooks() -> str:
    """The webhook queue: ``<job id>:<status>`` of each pending delivery by the
    time its next attempt is due (a claimed one: when its claim lapses)."""
    return "webhooks"


def plot(job_id: str, plot_name: str, fmt: str) -> str:
    """A drawn plot of a job, in the format ``fmt``."""
    return f"plot:{job_id}:{plot_name}.{fmt}"


def owner_jobs(owner: str | None) -> str:
    """An API key's jobs by submission time."""
    return f"jobs:{owner or 'anonymous'}"


def deleted_jobs(owner: str | None) -> str:
    """An API key's deleted jobs, scored as they were in :func:`owner_jobs`."""
    return f"deleted-jobs:{owner or 'anonymous'}"


def idempotency(owner: str, digest: str) -> str:
    """The answer to a request with an idempotency key (``digest``: its hash)."""
    return f"idem:{owner}:{digest}"


def rate(owner: str, second: int) -> str:
    """The requests of an API key in one second."""
    return f"rate:{owner}:{second}"


def active(owner: str) -> str:
    """The queued or running jobs of an API key."""
    return f"active:{owner}"


def share(owner: str) -> str:
    """The stage tasks of an API key running now (see :mod:`sca_worker.share`)."""
    return f"share:{owner}"


def share_waiting(owner: str) -> str:
    """The stage tasks of an API key waiting for one of its slots."""
    return f"{share(owner)}:waiting"


def usage(owner: str, hour: int) -> str:
    """The bytes stored for an API key's jobs submitted in one hour (since the epoch)."""
    return f"usage:{owner}:{hour}"


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
