"""A submitted job of the clustering service, and waiting for a job to finish.

:class:`Job` is a handle on one job: each of its methods is the
:class:`~sca_client.client.Client` method of the same name for that job.
:func:`wait_for` is :meth:`Client.wait <sca_client.client.Client.wait>`'s loop:
conditional polls, or the job's event stream, until the job leaves
:data:`ACTIVE`.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from sca.progress import StageProgress

from .errors import JobCancelled, JobFailed, WaitTimeout
from .events import follow

#: The statuses of a job that has not finished.
ACTIVE = ("queued", "running")


def retry_after(response, default: float) -> float:
    """The seconds of a response's ``Retry-After`` (``default`` without one)."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return default


def stage_detail(job: dict) -> str:
    """What a job is doing, in a few words, for a progress bar."""
    if job["status"] == "queued":
        return "waiting for a worker"
    ensemble = job.get("ensemble")
    if job.get("stage") == "ensemble" and ensemble:
        return f"{ensemble['done']}/{ensemble['total']} runs"
    return job["status"]


def wait_for(
    client: Any,
    job_id: str,
    progress: bool = False,
    timeout: float | None = None,
    interval: float = 0.25,
    stream=None,
    events: bool | None = None,
) -> dict:
    """:meth:`sca_client.Client.wait` for ``client``: its parameters, answer and errors
    are documented there once."""
    bar = StageProgress(stream, enabled=None if progress else False)
    start = time.monotonic()
    deadline = None if timeout is None else start + timeout

    def show(job):
        bar.update(
            job.get("stage") if job["status"] != "queued" else "queued",
            job.get("progress", 0.0),
            stage_detail(job),
        )

    path, tag = f"/v1/jobs/{quote(job_id, safe='')}", None
    job: dict = {}  # the first GET has no If-None-Match, so never answers 304
    try:
        if progress if events is None else events:
            try:
                follow(client, job_id, lambda event: show(event.data), deadline)
            except TimeoutError:
                raise WaitTimeout(f"job {job_id} still active after {timeout} s") from None
        while True:  # after the stream's terminal event this reads the job once
            response = client.request("GET", path, headers={"If-None-Match": tag} if tag else {})
            if response.status_code != 304:
                job, tag = response.json(), response.headers.get("ETag")
            show(job)
            if job["status"] not in ACTIVE:
                break
            now = time.monotonic()
            if deadline is not None and now > deadline:
                raise WaitTimeout(f"job {job_id} still {job['status']} after {timeout} s")
            delay = retry_after(response, interval)
            time.sleep(delay if deadline is None else min(delay, deadline - now + 0.01))
    finally:
        bar.close()
    if job["status"] == "failed":
        raise JobFailed(job)
    if job["status"] == "cancelled":
        raise JobCancelled(job)
    return job


class Job:
    """A submitted job: ``wait``, ``result`` and the queries on it.

    Each method is the :class:`Client` method of the same name for this job.

    Parameters
    ----------
    client : Client
        The client the job was submitted with.
    job_id : str
        The job's id.
    accepted : dict, optional
        The service's answer to the submission.

    Attributes
    ----------
    id : str
        The job's id.
    accepted : dict
        The service's answer to the submission (empty when not submitted here).
    """

    def __init__(self, client: Any, job_id: str, accepted: dict | None = None):
        self.client = client
        self.id = job_id
        self.accepted = accepted or {}

    def __repr__(self):
        return f"Job({self.id!r})"

    def status(self) -> dict:
        """The job document (``GET /v1/jobs/{id}``).

        Returns
        -------
        dict
            The job: ``status``, ``stage``, ``progress`` and, once succeeded, ``result``.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.status(self.id)

    def wait(
        self,
        progress: bool = False,
        timeout: float | None = None,
        interval: float = 0.25,
        stream=None,
        events: bool | None = None,
    ) -> dict:
        """Wait until the job leaves queued/running; returns the succeeded job document.

        Parameters
        ----------
        progress : bool, default False
            Draw a bar by stage on ``stream`` (standard error) when it is a terminal.
        timeout : float, optional
            Seconds to wait at most; None waits as long as the job runs.
        interval : float, default 0.25
            Seconds between polls when the service sends no ``Retry-After``.
        stream : file-like, optional
            Where the bar is drawn; standard error when None.
        events : bool, optional
            Follow the job's Server-Sent Events (``GET /v1/jobs/{id}/events``)
            rather than polling; default: ``progress``.

        Returns
        -------
        dict
            The succeeded job's document, with its ``result``.

        Raises
        ------
        JobFailed
            When the job ended ``failed``; its fields are those of the job's ``error``.
        JobCancelled
            When the job was cancelled.
        WaitTimeout
            When ``timeout`` passed first.
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.

        See Also
        --------
        Client.wait : The same, by job id.
        """
        return self.client.wait(self.id, progress, timeout, interval, stream, events)

    def result(self) -> dict:
        """The result of the succeeded job (:class:`NotFinished` while it runs).

        Returns
        -------
        dict
            The job's result (``k``, ``clusters``, ``labels``, ...).

        Raises
        ------
        NotFinished
            While the job is queued or running.
        JobFailed
            When the job ended ``failed``.
        JobCancelled
            When the job was cancelled.
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.result(self.id)

    def custom_cluster(
        self,
        element,
        min_size: int = 1,
        max_size: int | None = None,
        max_iterations: int | None = None,
        k: int | None = None,
        limit: int | None = None,
    ) -> dict:
        """The custom cluster of ``element`` (paper, Fig. 5.2).

        Parameters
        ----------
        element : str or int
            The target element: its id, or its 0-based index.
        min_size : int, default 1
            The smallest size of the target's cluster.
        max_size : int, optional
            The largest size of the target's cluster (the service's default: n).
        max_iterations : int, optional
            The most steps (the service's default: 1000).
        k : int, optional
            Clusters per split (the service's default: the job's k).
        limit : int, optional
            Rank only the ``limit`` closest elements.

        Returns
        -------
        dict
            ``element``, ``cluster``, ``ranked``, ``iterations`` and ``k``.

        Raises
        ------
        InvalidInput
            When no cluster of admissible size was found (422).
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.

        See Also
        --------
        Client.custom_cluster : The same, by job id.
        """
        return self.client.custom_cluster(
            self.id, element, min_size, max_size, max_iterations, k, limit
        )

    def similar(self, element, limit: int = 6, method: str = "sca") -> dict:
        """The elements most similar to ``element``, most similar first.

        Parameters
        ----------
        element : str or int
            The element: its id, or its 0-based index.
        limit : int, default 6
            How many elements.
        method : {"sca", "euclidean", "cosine"}, default "sca"
            By the element's row of the balanced P (``"sca"``), or by the raw
            data's 2-norm or cosine distance.

        Returns
        -------
        dict
            ``element``, ``method`` and ``ranked``.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.similar(self.id, element, limit, method)

    def query(self, elements, **options) -> dict:
        """New elements placed into this job (:meth:`Client.query`).

        Parameters
        ----------
        elements : list of dict or array_like
            The new elements, as for :meth:`Client.query`.
        **options : dict, optional
            ``min_size``, ``max_size``, ``max_iterations``, ``k``, ``limit``,
            ``custom`` and ``kind``, as for :meth:`Client.query`.

        Returns
        -------
        dict
            Each element's ``cluster``, ``confidence``, ``similar`` elements and
            ``custom_cluster``.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.query(self.id, elements, **options)

    def labels(self, offset: int = 0, limit: int = 1000) -> dict:
        """One page of the job's per-element data (:meth:`Client.labels`).

        Parameters
        ----------
        offset : int, default 0
            The first element's 0-based index.
        limit : int, default 1000
            The most elements (at most 10,000).

        Returns
        -------
        dict
            ``offset``, ``limit``, ``n``, ``labels``, ``confidence`` (and
            ``membership``, ``ids`` when the job has them).
        """
        return self.client.labels(self.id, offset, limit)

    def iter_labels(self, page_size: int = 10_000):
        """Every page of the job's per-element data (:meth:`Client.iter_labels`).

        Parameters
        ----------
        page_size : int, default 10000
            Elements per page (at most 10,000).

        Returns
        -------
        iterator of dict
            Each page, as :meth:`labels` returns it, in element order.
        """
        return self.client.iter_labels(self.id, page_size)

    def plot(self, name: str, fmt: str = "png", **query) -> bytes:
        """A plot of the finished job as PNG or SVG bytes.

        Parameters
        ----------
        name : {"spectrum", "trace", "consensus", "histogram", "membership", "custom"}
            The plot.
        fmt : {"png", "svg"}, default "png"
            The image format.
        **query : dict, optional
            The ``custom`` plot's query: ``element`` and, optionally, ``min_size``,
            ``max_size``, ``max_iterations``, ``k``, ``limit`` (None values are
            left out).

        Returns
        -------
        bytes
            The image.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.plot(self.id, name, fmt, **query)

    def cancel(self) -> dict | None:
        """Cancel the job while active (its document) or delete it once finished (None).

        Returns
        -------
        dict or None
            The cancelled job's document, or None when a finished job was deleted.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.client.cancel(self.id)
