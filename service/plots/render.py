"""Drawing a plot within a time budget, in a process of its own.

A figure is drawn by matplotlib in one call that cannot be interrupted, so a
thread that draws cannot be stopped: a drawing that takes minutes would burn
a core long after its client left, and drawing under one lock per API
process (matplotlib's caches are shared between threads) made every other
caller's plot wait behind it.  Here each drawing runs in a child process
forked from the API process (it sees the job's arrays already in memory,
nothing is copied or pickled on the way in), which sends back the image
bytes through a pipe:

* the child is killed when it has not answered within
  ``SCA_PLOT_TIME_BUDGET`` seconds, and the request is answered 503 with
  ``Retry-After`` (type ``plot-budget-exceeded``);
* at most ``SCA_MAX_PLOT_RENDERS`` drawings run at once per API process; a
  request waits for one to end (the job page asks for its plots at once),
  and one that finds them all taken for ``SCA_PLOT_TIME_BUDGET`` seconds is
  answered 503 with ``Retry-After`` (type ``plot-renders-busy``);
* drawings in separate processes share no matplotlib state, so no lock is
  needed between them.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import threading
from collections.abc import Callable

from sca_worker.problems import PROBLEM_BASE

from ..errors import ProblemError

log = logging.getLogger(__name__)

_FORK = multiprocessing.get_context("fork")


class PlotFailed(Exception):
    """The drawing raised an error other than the plot being unavailable."""


def _child(draw: Callable[[], bytes], unavailable: type[Exception], pipe) -> None:
    try:
        pipe.send(("image", draw()))
    except unavailable as exc:
        pipe.send(("unavailable", str(exc)))
    except BaseException as exc:  # any error of the drawing is the parent's to report
        pipe.send(("error", repr(exc)))
    finally:
        pipe.close()


class Renderer:
    """Draws within ``budget`` seconds, at most ``slots`` drawings at a time."""

    def __init__(self, budget: float, slots: int):
        self.budget, self.slots = budget, slots
        self._slots = threading.BoundedSemaphore(slots) if slots > 0 else None

    def _busy(self, kind: str, message: str) -> ProblemError:
        wait = max(1, math.ceil(self.budget))
        return ProblemError(
            503,
            "Service Unavailable",
            message,
            type=PROBLEM_BASE + kind,
            headers={"Retry-After": str(wait)},
        )

    def run(self, draw: Callable[[], bytes], unavailable: type[Exception]) -> bytes:
        """The bytes ``draw()`` returns in a forked child; ``unavailable`` (the
        plot cannot be drawn) is raised again here, with its message."""
        if self._slots is None or not self._slots.acquire(timeout=self.budget):
            raise self._busy(
                "plot-renders-busy",
                f"this API process already draws {self.slots} plots "
                f"(SCA_MAX_PLOT_RENDERS); retry later",
            )
        try:
            return self._fork(draw, unavailable)
        finally:
            self._slots.release()

    def _fork(self, draw, unavailable) -> bytes:
        reader, writer = _FORK.Pipe(duplex=False)
        child = _FORK.Process(target=_child, args=(draw, unavailable, writer), daemon=True)
        child.start()
        writer.close()
        try:
            answer = reader.recv() if reader.poll(self.budget) else None
        except EOFError:  # the child died without answering
            answer = ("error", f"the drawing process ended with {child.exitcode}")
        finally:
            reader.close()
            if child.is_alive():
                child.kill()
            child.join()
        if answer is None:
            raise self._busy(
                "plot-budget-exceeded",
                f"the plot was not drawn within {self.budget:g} s (SCA_PLOT_TIME_BUDGET)",
            )
        kind, payload = answer
        if kind == "unavailable":
            raise unavailable(payload)
        if kind == "error":
            raise PlotFailed(payload)
        return payload


def init_app(app) -> None:
    app.extensions["sca_plots"] = Renderer(
        app.config["SCA_PLOT_TIME_BUDGET"], app.config["SCA_MAX_PLOT_RENDERS"]
    )
