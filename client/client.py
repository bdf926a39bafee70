"""A Python client of the clustering service (HTTP only, over ``requests``).

Examples
--------
>>> from sca_client import Client                                  # doctest: +SKIP
>>> client = Client("http://127.0.0.1:8000")                       # doctest: +SKIP
>>> job = client.submit(consensus=S, ids=["Rose", "Cobb", ...])    # doctest: +SKIP
>>> job.wait(progress=True)        # a bar by stage on a terminal   # doctest: +SKIP
>>> job.result()["clusters"]                                       # doctest: +SKIP
[['Rose', 'Cobb', 'Fisk'], ['Ott', 'Ruth', 'Mays']]
>>> job.custom_cluster("Rose", max_size=3)["cluster"]              # doctest: +SKIP
['Rose', 'Cobb', 'Fisk']
>>> job.similar("Ott", limit=2)["ranked"]                          # doctest: +SKIP

Every error response (``application/problem+json``) is raised as a
:class:`ServiceError` subclass chosen by status (:class:`NotFound`,
:class:`Conflict`, :class:`InvalidInput` ...) carrying ``status``, ``type``,
``title``, ``detail``, ``errors`` and the whole ``problem``.  A job that
fails raises :class:`JobFailed` from :meth:`Job.wait` and :meth:`Job.result`.
"""

from __future__ import annotations

import io
import json
import time
from urllib.parse import quote

from sca.options import one_input
from sca.progress import StageProgress

from .errors import (
    Conflict,
    JobCancelled,
    JobFailed,
    NotFinished,
    ServiceUnreachable,
    WaitTimeout,
    error_for,
)
from .events import follow

ACTIVE = ("queued", "running")


def _listify(value):
    tolist = getattr(value, "tolist", None)
    return tolist() if tolist is not None else value


class Client:
    """The service at ``url`` (e.g. ``http://127.0.0.1:8000``).

    Parameters
    ----------
    url : str
        Base URL of the service.
    timeout : float, default 30.0
        Seconds for each HTTP request.
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>`` when the service asks for keys.
    headers : dict, optional
        Sent with every request (e.g. credentials).
    session : requests.Session, optional
        The session the requests go through; a new one when None.

    See Also
    --------
    Job : The handle :meth:`submit` returns.
    """

    def __init__(
        self,
        url: str,
        timeout: float = 30.0,
        api_key: str | None = None,
        headers: dict | None = None,
        session=None,
    ):
        import requests  # the client extra: absent, `sca submit` names it (sca_client.submit)

        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        if headers:
            self.session.headers.update(headers)

    # -- HTTP ------------------------------------------------------------------------------
    def request(self, method: str, path: str, **kwargs):
        """One request; raises :class:`ServiceError` subclasses on error answers.

        Parameters
        ----------
        method : str
            The HTTP method (``"GET"``, ``"POST"``, ...).
        path : str
            The path below the base URL (``"/v1/jobs"``).
        **kwargs : dict, optional
            Passed to ``requests.Session.request`` (``json``, ``params``,
            ``headers``, ...); ``timeout`` defaults to the client's.

        Returns
        -------
        requests.Response
            The answer, of a status below 400.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        import requests  # the client extra (see __init__)

        kwargs.setdefault("timeout", self.timeout)
        try:
            response = self.session.request(method, self.url + path, **kwargs)
        except requests.RequestException as exc:
            raise ServiceUnreachable(f"{method} {self.url + path}: {exc}") from exc
        if response.status_code >= 400:
            raise error_for(response)
        return response

    def health(self) -> dict:
        """The service's health (``GET /healthz``).

        Returns
        -------
        dict
            The health document.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        return self.request("GET", "/healthz").json()

    # -- jobs ------------------------------------------------------------------------------
    def submit(
        self,
        consensus=None,
        *,
        data=None,
        labels=None,
        ensemble=None,
        snn=None,
        ids=None,
        options: dict | None = None,
        upload: bool = False,
        idempotency_key: str | None = None,
        conflict_timeout: float = 60.0,
    ) -> Job:
        """Submit a job with exactly one input; returns its :class:`Job`.

        Arrays may be numpy arrays or nested lists.  ``upload=True`` sends
        the matrix as an ``.npy`` file (``multipart/form-data``), which is
        much smaller than JSON for large inputs.

        Parameters
        ----------
        consensus : array_like of shape (n, n), optional
            A consensus or similarity matrix.
        data : array_like of shape (n, m), optional
            Raw data, one row per element.
        labels : array_like of int, shape (n, r), optional
            Label runs, one column per clustering.
        ensemble : list of dict, optional
            With ``data``: the ensemble, ``[{"algorithm", "k", "runs"}, ...]``.
        snn : int or dict, optional
            With ``data``: the shared-nearest-neighbour measure's κ, or
            ``{"kappa", "metric"}``.
        ids : sequence of str, optional
            The elements' names.
        options : dict, optional
            Clustering options (``k``, ``rule``, ``seed``, ...).
        upload : bool, default False
            Send the matrix as an ``.npy`` file rather than JSON.
        idempotency_key : str, optional
            Any text naming this submission (e.g. ``str(uuid.uuid4())``): it makes
            sending it again safe, the service answering a repeat with the first
            job, not a second one.
        conflict_timeout : float, default 60.0
            While the first request with the same ``idempotency_key`` is still
            being accepted (409), the request is repeated after ``Retry-After``
            for up to this many seconds.

        Returns
        -------
        Job
            The accepted job.

        Raises
        ------
        sca.SCAError
            With ``field="input"`` unless exactly one input is given.
        InvalidInput
            When the service refuses a value (422); ``errors`` names each field.
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        inputs = {
            name: value
            for name, value in (("consensus", consensus), ("data", data), ("labels", labels))
            if value is not None
        }
        kind = one_input(inputs)  # an SCAError, a ValueError, unless exactly one is given
        matrix = inputs[kind]
        extra = {"ensemble": ensemble, "snn": snn, "ids": _listify(ids), "options": options}
        extra = {k: v for k, v in extra.items() if v is not None}
        if upload:
            import numpy as np  # only for an upload: `sca submit --help` stays light

            buffer = io.BytesIO()
            np.save(buffer, np.asarray(matrix), allow_pickle=False)
            form = {"input": kind, **{k: json.dumps(v) for k, v in extra.items()}}
            body = {"data": form, "files": {"file": ("input.npy", buffer.getvalue())}}
        else:
            body = {"json": {kind: _listify(matrix), **extra}}
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        deadline = time.monotonic() + conflict_timeout
        while True:
            try:
                response = self.request("POST", "/v1/jobs", headers=headers, **body)
                break
            except Conflict as exc:  # the same key's first request is still being accepted
                if not idempotency_key or time.monotonic() >= deadline:
                    raise
                time.sleep(retry_after(exc.response, 1.0))
        accepted = response.json()
        return Job(self, accepted["id"], accepted)

    def list_jobs(self, limit: int = 10, starting_after: str | None = None) -> dict:
        """One page of the caller's jobs, newest first (``GET /v1/jobs``).

        Parameters
        ----------
        limit : int, default 10
            Jobs per page.
        starting_after : str, optional
            The cursor of the page before (its ``next_cursor``).

        Returns
        -------
        dict
            ``{data, has_more, next_cursor, ...}``; ``data`` holds job documents
            without their result.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        params: dict[str, int | str] = {"limit": limit}
        if starting_after is not None:
            params["starting_after"] = starting_after
        return self.request("GET", "/v1/jobs", params=params).json()

    def jobs(self, page_size: int = 100, starting_after: str | None = None):
        """Every job of the caller, newest first (an iterator over the pages).

        Parameters
        ----------
        page_size : int, default 100
            Jobs fetched per request.
        starting_after : str, optional
            Start after this cursor.

        Yields
        ------
        dict
            Each job document, without its result.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        while True:
            page = self.list_jobs(page_size, starting_after)
            yield from page["data"]
            if not page["has_more"]:
                return
            starting_after = page["next_cursor"]

    def job(self, job_id: str) -> Job:
        """A handle on an existing job (no request is made).

        Parameters
        ----------
        job_id : str
            The job's id.

        Returns
        -------
        Job
            The handle.
        """
        return Job(self, job_id)

    def status(self, job_id: str) -> dict:
        """The job document (``GET /v1/jobs/{id}``).

        Parameters
        ----------
        job_id : str
            The job's id.

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
        return self.request("GET", f"/v1/jobs/{quote(job_id, safe='')}").json()

    def wait(
        self,
        job_id: str,
        progress: bool = False,
        timeout: float | None = None,
        interval: float = 0.25,
        stream=None,
        events: bool | None = None,
    ) -> dict:
        """Wait until the job leaves queued/running; returns the succeeded job document.

        Polls are conditional (``If-None-Match``: an unchanged job costs a 304
        without a body, not counted against the request rate) and follow the
        service's ``Retry-After`` (``interval`` when it sends none).

        Parameters
        ----------
        job_id : str
            The job's id.
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
        """
        bar = StageProgress(stream, enabled=None if progress else False)
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout

        def show(job):
            bar.update(
                job.get("stage") if job["status"] != "queued" else "queued",
                job.get("progress", 0.0),
                _detail(job),
            )

        path, tag = f"/v1/jobs/{quote(job_id, safe='')}", None
        job: dict = {}  # the first GET has no If-None-Match, so never answers 304
        try:
            if progress if events is None else events:
                try:
                    follow(self, job_id, lambda event: show(event.data), deadline)
                except TimeoutError:
                    raise WaitTimeout(f"job {job_id} still active after {timeout} s") from None
            while True:  # after the stream's terminal event this reads the job once
                response = self.request("GET", path, headers={"If-None-Match": tag} if tag else {})
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

    def result(self, job_id: str) -> dict:
        """The result of a succeeded job (:class:`NotFinished` while it runs).

        Parameters
        ----------
        job_id : str
            The job's id.

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
        job = self.status(job_id)
        if job["status"] in ACTIVE:
            raise NotFinished(job)
        if job["status"] == "failed":
            raise JobFailed(job)
        if job["status"] == "cancelled":
            raise JobCancelled(job)
        return job["result"]

    def cancel(self, job_id: str) -> dict | None:
        """Cancel an active job (its document) or delete a finished one (None).

        Parameters
        ----------
        job_id : str
            The job's id.

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
        response = self.request("DELETE", f"/v1/jobs/{quote(job_id, safe='')}")
        return response.json() if response.status_code == 200 else None

    # -- queries ---------------------------------------------------------------------------
    def custom_cluster(
        self,
        job_id: str,
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
        job_id : str
            The job's id.
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
            ``element``, ``cluster``, ``ranked``, ``iterations`` and ``k``, elements
            named by the job's ids.

        Raises
        ------
        InvalidInput
            When no cluster of admissible size was found (422); ``errors`` names
            the bound to change.
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.

        See Also
        --------
        sca.custom_cluster : The algorithm (Meyer & Wessell, Sec. 5.3).
        """
        body = {
            "element": element,
            "min_size": min_size,
            "max_size": max_size,
            "max_iterations": max_iterations,
            "k": k,
            "limit": limit,
        }
        body = {k_: v for k_, v in body.items() if v is not None}
        return self.request(
            "POST", f"/v1/jobs/{quote(job_id, safe='')}/custom-clusters", json=body
        ).json()

    def similar(self, job_id: str, element, limit: int = 6, method: str = "sca") -> dict:
        """The elements most similar to ``element``, most similar first.

        Parameters
        ----------
        job_id : str
            The job's id.
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
            ``element``, ``method`` and ``ranked`` (``{"id", "score"}``, with
            ``distance`` for raw data's methods).

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        path = f"/v1/jobs/{quote(job_id, safe='')}/elements/{quote(str(element), safe='')}/similar"
        return self.request("GET", path, params={"limit": limit, "method": method}).json()

    def query(
        self,
        job_id: str,
        elements,
        min_size: int | None = None,
        max_size: int | None = None,
        max_iterations: int | None = None,
        k: int | None = None,
        limit: int | None = None,
        custom: bool | None = None,
        kind: str | None = None,
    ) -> dict:
        """Place new elements into a finished job (``POST /v1/jobs/{id}/queries``).

        The job is not changed.

        Parameters
        ----------
        job_id : str
            The job's id.
        elements : list of dict or array_like
            A list of dicts in the job's input kind (``{"data": row}``,
            ``{"labels": [...]}``, ``{"consensus": row, "self": s}``, each with an
            optional ``"id"``), or, with ``kind``, a matrix with one new element
            per row.
        min_size : int, optional
            The smallest size of each custom cluster.
        max_size : int, optional
            The largest size of each custom cluster.
        max_iterations : int, optional
            The most steps of each custom clustering.
        k : int, optional
            Clusters per split of the custom clustering.
        limit : int, optional
            Length of ``similar`` and of each custom cluster's ranking.
        custom : bool, optional
            Whether to run the custom clustering (the service's default: yes).
        kind : {"data", "labels", "consensus"}, optional
            With a kind, ``elements`` is a matrix with one new element per row.

        Returns
        -------
        dict
            Each element's ``cluster`` among the job's, ``confidence``, ``similar``
            elements and ``custom_cluster``.

        Raises
        ------
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Unauthorized`, :class:`TooManyRequests`, ...).
        ServiceUnreachable
            When no HTTP answer came.

        See Also
        --------
        sca.place : How each element is placed.
        """
        if kind is not None:
            elements = [{kind: _listify(row)} for row in elements]
        else:
            elements = [
                {key: _listify(value) for key, value in element.items()} for element in elements
            ]
        body = {
            "elements": elements,
            "min_size": min_size,
            "max_size": max_size,
            "max_iterations": max_iterations,
            "k": k,
            "limit": limit,
            "custom": custom,
        }
        body = {k_: v for k_, v in body.items() if v is not None}
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/queries", json=body).json()

    def plot(self, job_id: str, name: str, fmt: str = "png", **query) -> bytes:
        """A plot of a finished job as PNG or SVG bytes (``custom`` takes ``element=...``).

        Parameters
        ----------
        job_id : str
            The job's id.
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
        path = f"/v1/jobs/{quote(job_id, safe='')}/plots/{quote(name, safe='')}.{fmt}"
        params = {k: v for k, v in query.items() if v is not None}
        return self.request("GET", path, params=params).content


def retry_after(response, default: float) -> float:
    """The seconds of a response's ``Retry-After`` (``default`` without one)."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return default


def _detail(job: dict) -> str:
    if job["status"] == "queued":
        return "waiting for a worker"
    ensemble = job.get("ensemble")
    if job.get("stage") == "ensemble" and ensemble:
        return f"{ensemble['done']}/{ensemble['total']} runs"
    return job["status"]


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

    def __init__(self, client: Client, job_id: str, accepted: dict | None = None):
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
