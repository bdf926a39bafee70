"""The queries on a finished job and its elements, as methods of :class:`sca_client.Client`.

:class:`ElementQueries` holds them apart from submitting
(:mod:`sca_client.client`) and following jobs (:mod:`sca_client.calls`):
custom clusters (Sec. 4.2), the most similar elements, new elements placed
into the job, and its plots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote


def listify(value):
    """``value.tolist()`` for an array, else ``value`` as it is (JSON-ready)."""
    tolist = getattr(value, "tolist", None)
    return tolist() if tolist is not None else value


class ElementQueries:
    """The queries on a finished job, for :class:`sca_client.Client` (which
    provides ``request``)."""

    request: Callable[..., Any]

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

    def labels(self, job_id: str, offset: int = 0, limit: int = 1000) -> dict:
        """One page of a finished job's per-element data.

        Parameters
        ----------
        job_id : str
            The job's id.
        offset : int, default 0
            The first element's 0-based index.
        limit : int, default 1000
            The most elements (at most 10,000).

        Returns
        -------
        dict
            ``offset``, ``limit``, ``n``, ``labels``, ``confidence`` and, when the job
            has them, ``membership`` and ``ids``: the same for a listed result and a
            paged one (``per_element: "paged"``, which lists no element).

        Raises
        ------
        InvalidInput
            When ``offset`` is beyond n or ``limit`` out of range (422 naming it).
        ServiceError
            On an error answer, as the subclass of its status (:class:`NotFound`,
            :class:`Conflict` while the job runs, ...).
        ServiceUnreachable
            When no HTTP answer came.
        """
        path = f"/v1/jobs/{quote(job_id, safe='')}/labels"
        return self.request("GET", path, params={"offset": offset, "limit": limit}).json()

    def iter_labels(self, job_id: str, page_size: int = 10_000):
        """Every page of a finished job's per-element data, in element order.

        Parameters
        ----------
        job_id : str
            The job's id.
        page_size : int, default 10000
            Elements per page (at most 10,000).

        Yields
        ------
        dict
            Each page, as :meth:`labels` returns it.
        """
        offset = 0
        while True:
            page = self.labels(job_id, offset, page_size)
            if not page["labels"]:
                return
            yield page
            offset += len(page["labels"])

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
            elements = [{kind: listify(row)} for row in elements]
        else:
            elements = [
                {key: listify(value) for key, value in element.items()} for element in elements
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
