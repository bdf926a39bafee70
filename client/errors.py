"""The errors of :mod:`sca_client`: every problem+json answer as a typed exception.

:func:`error_for` picks the :class:`ServiceError` subclass of a response's
status; each carries ``status``, ``type``, ``title``, ``detail``, ``errors``
and the whole ``problem``.  :mod:`sca_client` re-exports all of them.
"""

from __future__ import annotations

#: How to install what the client needs (``requests``), named wherever it is missing.
CLIENT_EXTRA = "pip install 'stochastic-clustering[client]'"


class ClientError(Exception):
    """Base of every error this client raises."""


class ServiceUnreachable(ClientError):
    """No HTTP answer (connection refused, DNS failure, timeout)."""


class ServiceError(ClientError):
    """An error answer of the service, with the fields of its problem+json body.

    Each subclass stands for one status (:data:`ERRORS`) and takes the same
    parameters.

    Parameters
    ----------
    status : int
        The HTTP status.
    problem : dict, optional
        The problem+json body (``type``, ``title``, ``detail``, ``errors``, ...).
    response : requests.Response, optional
        The answer itself.

    Attributes
    ----------
    status : int
        The HTTP status.
    type : str
        The problem's type (``"about:blank"`` when none).
    title : str
        The problem's title.
    detail : str
        The problem's detail.
    errors : dict
        The messages by field (422: ``InvalidInput``), else empty.
    problem : dict
        The whole problem+json body.
    response : requests.Response or None
        The answer itself.

    See Also
    --------
    error_for : The subclass of a response.
    """

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
    """409: the job has not succeeded (yet), or an idempotent request is still being accepted.

    The second case: a request with the same ``Idempotency-Key`` is still being
    accepted.
    """


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
    """503: the service's store or broker is unreachable, or it is too busy; retry later.

    For custom clusters: it already runs its most long queries.
    """


class ServerError(ServiceError):
    """Any other 5xx."""


class JobFailed(ServiceError):
    """The job ended ``failed``; the fields are those of the job's ``error``.

    Parameters
    ----------
    job : dict
        The failed job's document; its ``error`` gives ``status`` (500 when
        none) and the problem's fields.

    Attributes
    ----------
    job : dict
        The job's document.
    """

    def __init__(self, job: dict):
        self.job = job
        error = job.get("error") or {}
        super().__init__(int(error.get("status", 500)), error)


class JobCancelled(ClientError):
    """The job was cancelled before it finished.

    Parameters
    ----------
    job : dict
        The job's document.

    Attributes
    ----------
    job : dict
        The job's document.
    """

    def __init__(self, job: dict):
        self.job = job
        super().__init__(f"job {job.get('id')} was cancelled")


class NotFinished(ClientError):
    """:meth:`Job.result` on a job still queued or running.

    Parameters
    ----------
    job : dict
        The job's document.

    Attributes
    ----------
    job : dict
        The job's document.
    """

    def __init__(self, job: dict):
        self.job = job
        super().__init__(f"job {job.get('id')} is {job.get('status')}; wait() for it first")


class WaitTimeout(ClientError, TimeoutError):
    """:meth:`Job.wait` gave up before the job finished."""


ERRORS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: InvalidInput,
    429: TooManyRequests,
    503: ServiceUnavailable,
}


def error_for(response) -> ServiceError:
    """The typed error of a non-2xx response.

    A body that is not a problem+json object gives a problem of the response's
    reason and (the first 500 characters of) its text.

    Parameters
    ----------
    response : requests.Response
        The error answer.

    Returns
    -------
    ServiceError
        The subclass of its status (:data:`ERRORS`), :class:`ServerError` for
        another 5xx, :class:`ServiceError` itself for another status.
    """
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
