"""A progress bar by stage for terminals (standard library only).

:class:`StageProgress` draws one line on ``stream`` (standard error by
default), rewritten in place::

    ensemble   [##########..........]  50%  25/50 runs

It draws nothing unless the stream is a terminal (``isatty()``), so piped or
logged output stays clean; ``enabled=True`` forces it (tests).
"""

from __future__ import annotations

import sys
import time


class StageProgress:
    """Report ``(stage, fraction)`` updates as a one-line bar.

    Parameters
    ----------
    stream : file-like, optional
        Where to draw; default ``sys.stderr``.
    enabled : bool, optional
        Draw even when the stream is not a terminal (True) or never (False);
        default: only on a terminal.
    width : int
        Characters of the bar itself.
    min_interval : float
        Seconds between two redraws of the same stage (a new stage always
        redraws).
    """

    def __init__(
        self, stream=None, enabled: bool | None = None, width: int = 24, min_interval: float = 0.1
    ):
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.width = width
        self.min_interval = min_interval
        self._stage: str | None = None
        self._drawn = 0.0
        self._length = 0

    def __call__(self, stage: str, fraction: float = 0.0, detail: str = "") -> None:
        self.update(stage, fraction, detail)

    def update(self, stage: str | None, fraction: float = 0.0, detail: str = "") -> None:
        """Show ``stage`` at ``fraction`` (0..1) of that stage, with an optional detail."""
        if not self.enabled:
            return
        now = time.monotonic()
        if stage == self._stage and fraction < 1.0 and now - self._drawn < self.min_interval:
            return
        self._stage, self._drawn = stage, now
        fraction = min(1.0, max(0.0, float(fraction)))
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        line = f"{(stage or 'queued'):<10} [{bar}] {fraction * 100:4.0f}%"
        if detail:
            line += f"  {detail}"
        pad = max(0, self._length - len(line))
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._length = len(line)

    def close(self, message: str = "") -> None:
        """End the line (with a final message, e.g. ``done in 3.2 s``)."""
        if not self.enabled or (self._length == 0 and not message):
            return
        if message:
            pad = max(0, self._length - len(message))
            self.stream.write("\r" + message + " " * pad)
        self.stream.write("\n")
        self.stream.flush()
        self._length = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
