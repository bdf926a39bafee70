"""The time budget and the slots of long queries, per API process.

A custom cluster iterates x_t = x_{t-1} P until the element's cluster has a
size within bounds (Fig. 5.2), so one request can ask for minutes of work
(``max_iterations`` up to ``SCA_MAX_ITERATIONS``, each step a product with
P).  Queries run in the API's own threads, so two bounds keep such requests
from holding them, whichever WSGI server runs the app:

* every custom-cluster query (and the custom plot, which runs one) ends
  within ``SCA_QUERY_TIME_BUDGET`` seconds: the core stops at the deadline
  with :class:`sca.DeadlineExceeded`, answered 422 naming ``max_iterations``.
  Not 503: the request itself asks for more steps than fit, and the same
  request retried would run out of time the same way; the problem says how
  many steps fit, so the caller can ask for fewer or for wider sizes;
* a query still running after :data:`SHORT_QUERY` seconds is long and needs
  one of ``SCA_MAX_LONG_QUERIES`` slots; when they are all taken it is
  answered 503 with ``Retry-After`` (by then a slot has freed), so most API
  threads stay free for the short queries (``similar``, most custom
  clusters: a few products with P) that never need a slot.

``similar`` is one product with P (or one pass over the raw data), bounded
by the size limits; it has no loop to stop and needs neither bound.
"""

from __future__ import annotations

import math
import threading
import time

import sca
from sca_worker.problems import PROBLEM_BASE

from ..errors import ProblemError

#: Seconds a query may run without a slot: a few dozen steps of a custom
#: cluster with the default sizes (which takes one step) at n = 10^4.  Each
#: refused request costs this much work, so it is kept small.
SHORT_QUERY = 0.05


class QueryBudget:
    """Runs queries within ``budget`` seconds, at most ``slots`` long ones at a time."""

    def __init__(self, budget: float, slots: int):
        self.budget = budget
        self.slots = slots
        self._slots = threading.BoundedSemaphore(slots) if slots > 0 else None

    def run(self, query):
        """``query(deadline)``: the answer, or :class:`sca.DeadlineExceeded` at the budget.

        The query first runs to a short deadline without a slot; one that
        needs longer takes a slot and runs again, from the start, to the
        full budget.  The rerun repeats at most :data:`SHORT_QUERY` seconds
        of work and keeps the core's interface to one deadline.
        """
        start = time.monotonic()
        end = start + self.budget
        short = start + SHORT_QUERY
        if end <= short:
            return query(end)
        try:
            return query(short)
        except sca.DeadlineExceeded:
            pass
        if self._slots is None or not self._slots.acquire(blocking=False):
            wait = math.ceil(self.budget)
            raise ProblemError(
                503,
                "Service Unavailable",
                f"this API process already runs {self.slots} long queries "
                f"(SCA_MAX_LONG_QUERIES); retry after {wait} s",
                type=PROBLEM_BASE + "long-queries-busy",
                headers={"Retry-After": str(wait)},
            )
        try:
            return query(end)
        finally:
            self._slots.release()


def init_app(app) -> None:
    app.extensions["sca_queries"] = QueryBudget(
        app.config["SCA_QUERY_TIME_BUDGET"], app.config["SCA_MAX_LONG_QUERIES"]
    )
