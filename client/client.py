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

from sca.options import one_input

from .calls import JobCalls
from .errors import (
    CLIENT_EXTRA,
    Conflict,
    ServiceUnreachable,
    error_for,
)
from .job import Job, retry_after
from .queries import ElementQueries, listify


class Client(JobCalls, ElementQueries):
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

    Raises
    ------
    ImportError
        When ``requests`` (the ``client`` extra) is not installed; the message
        says how to install it.

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
        try:
            import requests  # the client extra: optional, so imported on first use
        except ImportError as exc:
            raise ImportError(
                f"sca_client.Client needs the client extra (requests is missing): {CLIENT_EXTRA}"
            ) from exc

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
        labels : array_like of int, shape (n, r), or dict, optional
            Label runs, one column per clustering; or ``{"root": ..., "path":
            ...}``, label runs named by reference under a storage root of the
            service (``SCA_DATA_ROOTS``), sent as JSON even with ``upload``.
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
        extra = {"ensemble": ensemble, "snn": snn, "ids": listify(ids), "options": options}
        extra = {k: v for k, v in extra.items() if v is not None}
        if upload and not isinstance(matrix, dict):  # a reference is never uploaded
            import numpy as np  # only for an upload: `sca submit --help` stays light

            buffer = io.BytesIO()
            np.save(buffer, np.asarray(matrix), allow_pickle=False)
            form = {"input": kind, **{k: json.dumps(v) for k, v in extra.items()}}
            body = {"data": form, "files": {"file": ("input.npy", buffer.getvalue())}}
        else:
            body = {"json": {kind: listify(matrix), **extra}}
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

    # -- queries ---------------------------------------------------------------------------
