"""The HTTP client of the clustering service and the ``sca submit`` and ``sca query``
commands (``sca_client``; the ``client`` extra installs ``requests``).

Examples
--------
>>> from sca_client import Client                                  # doctest: +SKIP
>>> job = Client("http://127.0.0.1:8000").submit(consensus=S)      # doctest: +SKIP
>>> job.wait(progress=True)["result"]["clusters"]                  # doctest: +SKIP

:mod:`sca_client.client` holds :class:`Client` (its calls on jobs in
:mod:`sca_client.calls`, its queries on a finished job in
:mod:`sca_client.queries`), :mod:`sca_client.job` :class:`Job`,
:mod:`sca_client.errors` the typed errors of problem+json answers,
:mod:`sca_client.events` the job's event stream, :mod:`sca_client.submit` and
:mod:`sca_client.query` the commands, which the core's command line finds
through the ``sca.commands`` entry points (pyproject.toml).  This package
depends on the core (:mod:`sca`) only, never on the worker or the service.
"""

from .client import Client
from .errors import (
    ERRORS,
    BadRequest,
    ClientError,
    Conflict,
    Forbidden,
    Gone,
    InvalidInput,
    JobCancelled,
    JobFailed,
    NotFinished,
    NotFound,
    PayloadTooLarge,
    ServerError,
    ServiceError,
    ServiceUnavailable,
    ServiceUnreachable,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
    WaitTimeout,
    error_for,
)
from .job import ACTIVE, Job

__all__ = [
    "ACTIVE",
    "ERRORS",
    "BadRequest",
    "Client",
    "ClientError",
    "Conflict",
    "Forbidden",
    "Gone",
    "InvalidInput",
    "Job",
    "JobCancelled",
    "JobFailed",
    "NotFinished",
    "NotFound",
    "PayloadTooLarge",
    "ServerError",
    "ServiceError",
    "ServiceUnavailable",
    "ServiceUnreachable",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "WaitTimeout",
    "error_for",
]
