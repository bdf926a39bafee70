"""A Python client of the clustering service (HTTP only, over ``requests``).

Examples
--------
>>> from sca.client import Client                                  # doctest: +SKIP
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

from .progress import StageProgress

ACTIVE = ("queued", "running")


class ClientError(Exception):
    """Base of every error this client raises."""


class ServiceUnreachable(ClientError):
    """No HTTP answer (connection refused, DNS failure, timeout)."""


class ServiceError(ClientError):
    """An error answer of the service, with the fields of its problem+json body."""

    def __init__(self, status: int, problem: dict | None = None, response=None):
        problem = dict(problem or {})
        self.status = status
        self.problem = problem
        self.type = problem.get("type", "about:blank")
        self.title = problem.get("title", "")
        self.detail = problem.get("detail", "")
        self.errors = problem.get("errors") or {}
        self.response = response
        super().__init__(f"{status} {self.title}: {self.detail}".strip())


class BadRequest(ServiceError):
    """400: the body is not readable."""


class Unauthorized(ServiceError):
    """401: no or unknown credentials."""


class Forbidden(ServiceError):
    """403: the credentials do not allow this."""


class NotFound(ServiceError):
    """404: unknown job, element or plot."""


class Conflict(ServiceError):
    """409: the job has not succeeded (yet)."""


class Gone(ServiceError):
    """410: the job's cached matrices expired; resubmit."""


class PayloadTooLarge(ServiceError):
    """413: over a size limit."""


class UnsupportedMediaType(ServiceError):
    """415: wrong content type."""


class InvalidInput(ServiceError):
    """422: invalid values; ``errors`` names each field."""


class TooManyRequests(ServiceError):
    """429: over a rate or quota limit."""


class ServiceUnavailable(ServiceError):
    """503: the service's store or broker is unreachable, or (custom clusters) it
    already runs its most long queries; retry later."""


class ServerError(ServiceError):
    """Any other 5xx."""


class JobFailed(ServiceError):
    """The job ended ``failed``; the fields are those of the job's ``error``."""

    def __init__(self, job: dict):
        self.job = job
        error = job.get("error") or {}
        super().__init__(int(error.get("status", 500)), error)


class JobCancelled(ClientError):
    """The job was cancelled before it finished."""

    def __init__(self, job: dict):
        self.job = job
        super().__init__(f"job {job.get('id')} was cancelled")


class NotFinished(ClientError):
    """:meth:`Job.result` on a job still queued or running."""

    def __init__(self, job: dict):
        self.job = job
        super().__init__(f"job {job.get('id')} is {job.get('status')}; wait() for it first")


class WaitTimeout(ClientError, TimeoutError):
    """:meth:`Job.wait` gave up before the job finished."""


ERRORS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
          410: Gone, 413: PayloadTooLarge, 415: UnsupportedMediaType, 422: InvalidInput,
          429: TooManyRequests, 503: ServiceUnavailable}


def error_for(response) -> ServiceError:
    """The typed error of a non-2xx response."""
    try:
        problem = response.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        problem = {"title": response.reason or "Error", "detail": response.text[:500]}
    cls = ERRORS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else ServiceError
    return cls(response.status_code, problem, response)


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

    def __init__(self, url: str, timeout: float = 30.0, api_key: str | None = None,
                 headers: dict | None = None, session=None):
        import requests

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
        import requests

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
    def submit(self, consensus=None, *, data=None, labels=None, ensemble=None, snn=None,
               ids=None, options: dict | None = None, upload: bool = False) -> "Job":
        """Submit a job with exactly one input; returns its :class:`Job`.

        Arrays may be numpy arrays or nested lists.  ``upload=True`` sends
        the matrix as an ``.npy`` file (``multipart/form-data``), which is
        much smaller than JSON for large inputs.
        """
        inputs = {name: value for name, value in (("consensus", consensus), ("data", data),
                                                  ("labels", labels)) if value is not None}
        if len(inputs) != 1:
            raise ValueError(f"give exactly one of consensus, data, labels; got {sorted(inputs)}")
        (kind, matrix), = inputs.items()
        extra = {"ensemble": ensemble, "snn": snn, "ids": _listify(ids), "options": options}
        extra = {k: v for k, v in extra.items() if v is not None}
        if upload:
            import numpy as np

            buffer = io.BytesIO()
            np.save(buffer, np.asarray(matrix), allow_pickle=False)
            form = {"input": kind, **{k: json.dumps(v) for k, v in extra.items()}}
            response = self.request("POST", "/v1/jobs", data=form,
                                    files={"file": ("input.npy", buffer.getvalue())})
        else:
            response = self.request("POST", "/v1/jobs", json={kind: _listify(matrix), **extra})
        accepted = response.json()
        return Job(self, accepted["id"], accepted)

    def job(self, job_id: str) -> "Job":
        """A handle on an existing job (no request is made)."""
        return Job(self, job_id)

    def status(self, job_id: str) -> dict:
        """The job document (``GET /v1/jobs/{id}``)."""
        return self.request("GET", f"/v1/jobs/{quote(job_id, safe='')}").json()

    def wait(self, job_id: str, progress: bool = False, timeout: float | None = None,
             interval: float = 0.25, stream=None) -> dict:
        """Poll until the job leaves queued/running; returns the succeeded job document.

        With ``progress`` a bar by stage is drawn on ``stream`` (standard
        error) when it is a terminal.  Raises :class:`JobFailed`,
        :class:`JobCancelled` or :class:`WaitTimeout`.
        """
        bar = StageProgress(stream, enabled=None if progress else False)
        start = time.monotonic()
        try:
            while True:
                job = self.status(job_id)
                bar.update(job.get("stage") if job["status"] != "queued" else "queued",
                           job.get("progress", 0.0), _detail(job))
                if job["status"] not in ACTIVE:
                    break
                if timeout is not None and time.monotonic() - start > timeout:
                    raise WaitTimeout(f"job {job_id} still {job['status']} after {timeout} s")
                time.sleep(interval)
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
    def custom_cluster(self, job_id: str, element, min_size: int = 1,
                       max_size: int | None = None, max_iterations: int | None = None,
                       k: int | None = None, limit: int | None = None) -> dict:
        """The custom cluster of ``element`` (paper, Fig. 5.2)."""
        body = {"element": element, "min_size": min_size, "max_size": max_size,
                "max_iterations": max_iterations, "k": k, "limit": limit}
        body = {k_: v for k_, v in body.items() if v is not None}
        return self.request("POST", f"/v1/jobs/{quote(job_id, safe='')}/custom-clusters",
                            json=body).json()

    def similar(self, job_id: str, element, limit: int = 6, method: str = "sca") -> dict:
        """The elements most similar to ``element``, most similar first."""
        path = (f"/v1/jobs/{quote(job_id, safe='')}/elements/"
                f"{quote(str(element), safe='')}/similar")
        return self.request("GET", path, params={"limit": limit, "method": method}).json()

    def plot(self, job_id: str, name: str, fmt: str = "png", **query) -> bytes:
        """A plot of a finished job as PNG or SVG bytes (``custom`` takes ``element=...``)."""
        path = f"/v1/jobs/{quote(job_id, safe='')}/plots/{quote(name, safe='')}.{fmt}"
        params = {k: v for k, v in query.items() if v is not None}
        return self.request("GET", path, params=params).content


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

    def wait(self, progress: bool = False, timeout: float | None = None,
             interval: float = 0.25, stream=None) -> dict:
        return self.client.wait(self.id, progress, timeout, interval, stream)

    def result(self) -> dict:
        return self.client.result(self.id)

    def custom_cluster(self, element, min_size: int = 1, max_size: int | None = None,
                       max_iterations: int | None = None, k: int | None = None,
                       limit: int | None = None) -> dict:
        return self.client.custom_cluster(self.id, element, min_size, max_size,
                                          max_iterations, k, limit)

    def similar(self, element, limit: int = 6, method: str = "sca") -> dict:
        return self.client.similar(self.id, element, limit, method)

    def plot(self, name: str, fmt: str = "png", **query) -> bytes:
        return self.client.plot(self.id, name, fmt, **query)

    def cancel(self) -> dict | None:
        return self.client.cancel(self.id)
