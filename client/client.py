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
    timeout : float
        Seconds for each HTTP request.
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>`` when the service asks for keys.
    headers : dict, optional
        Sent with every request (e.g. credentials).
    session : requests.Session, optional
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
        """One request; raises :class:`ServiceError` subclasses on error answers."""
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
        much smaller than JSON for large inputs.  ``idempotency_key`` (any
        text naming this submission, e.g. ``str(uuid.uuid4())``) makes sending
        it again safe: the service answers a repeat with the first job, not a
        second one; while the first is still being accepted (409) the request
        is repeated after ``Retry-After`` for up to ``conflict_timeout`` seconds.
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
        """One page of the caller's jobs, newest first (``GET /v1/jobs``):
        ``{data, has_more, next_cursor, ...}``; ``data`` holds job documents
        without their result."""
        params: dict[str, int | str] = {"limit": limit}
        if starting_after is not None:
            params["starting_after"] = starting_after
        return self.request("GET", "/v1/jobs", params=params).json()

    def jobs(self, page_size: int = 100, starting_after: str | None = None):
        """Every job of the caller, newest first (an iterator over the pages)."""
        while True:
            page = self.list_jobs(page_size, starting_after)
            yield from page["data"]
            if not page["has_more"]:
                return
            starting_after = page["next_cursor"]

    def job(self, job_id: str) -> Job:
        """A handle on an existing job (no request is made)."""
        return Job(self, job_id)

    def status(self, job_id: str) -> dict:
        """The job document (``GET /v1/jobs/{id}``)."""
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

        With ``progress`` a bar by stage is drawn on ``stream`` (standard
        error) when it is a terminal.  ``events`` (default: ``progress``)
        follows the job's Server-Sent Events (``GET /v1/jobs/{id}/events``)
        rather than polling.  Polls are conditional (``If-None-Match``: an
        unchanged job costs a 304 without a body, not counted against the
        request rate) and follow the service's ``Retry-After`` (``interval``
        when it sends none).  Raises :class:`JobFailed`, :class:`JobCancelled`
        or :class:`WaitTimeout`.
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
        """The result of a succeeded job (:class:`NotFinished` while it runs)."""
        job = self.status(job_id)
        if job["status"] in ACTIVE:
            raise NotFinished(job)
        if job["status"] == "failed":
            raise JobFailed(job)
        if job["status"] == "cancelled":
            raise JobCancelled(job)
        return job["result"]

    def cancel(self, job_id: str) -> dict | None:
        """Cancel an active job (its document) or delete a finished one (None)."""
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
        """The custom cluster of ``element`` (paper, Fig. 5.2)."""
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
        """The elements most similar to ``element``, most similar first."""
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

        ``elements`` is a list of dicts in the job's input kind (``{"data": row}``,
        ``{"labels": [...]}``, ``{"consensus": row, "self": s}``, each with an
        optional ``"id"``), or, with ``kind`` ("data", "labels" or
        "consensus"), a matrix with one new element per row.  Returns each
        element's ``cluster`` among the job's, ``confidence``, ``similar``
        elements and ``custom_cluster``; the job is not changed.
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
        """A plot of a finished job as PNG or SVG bytes (``custom`` takes ``element=...``)."""
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
    """A submitted job: ``wait``, ``result`` and the queries on it."""

    def __init__(self, client: Client, job_id: str, accepted: dict | None = None):
        self.client = client
        self.id = job_id
        self.accepted = accepted or {}

    def __repr__(self):
        return f"Job({self.id!r})"

    def status(self) -> dict:
        return self.client.status(self.id)

    def wait(
        self,
        progress: bool = False,
        timeout: float | None = None,
        interval: float = 0.25,
        stream=None,
        events: bool | None = None,
    ) -> dict:
        return self.client.wait(self.id, progress, timeout, interval, stream, events)

    def result(self) -> dict:
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
        return self.client.custom_cluster(
            self.id, element, min_size, max_size, max_iterations, k, limit
        )

    def similar(self, element, limit: int = 6, method: str = "sca") -> dict:
        return self.client.similar(self.id, element, limit, method)

    def query(self, elements, **options) -> dict:
        """New elements placed into this job (:meth:`Client.query`)."""
        return self.client.query(self.id, elements, **options)

    def plot(self, name: str, fmt: str = "png", **query) -> bytes:
        return self.client.plot(self.id, name, fmt, **query)

    def cancel(self) -> dict | None:
        return self.client.cancel(self.id)
