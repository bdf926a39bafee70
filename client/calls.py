"""Following and listing jobs, as methods of :class:`sca_client.Client`.

:class:`JobCalls` holds them apart from submitting (:mod:`sca_client.client`)
and from the queries on a finished job (:mod:`sca_client.queries`): a page of
the caller's jobs or all of them, a job's document, waiting for it, its
result, and cancelling or deleting it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from .errors import JobCancelled, JobFailed, NotFinished
from .job import ACTIVE, Job, wait_for


class JobCalls:
    """The calls on the caller's jobs, for :class:`sca_client.Client` (which
    provides ``request``)."""

    request: Callable[..., Any]

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
        return wait_for(self, job_id, progress, timeout, interval, stream, events)

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
