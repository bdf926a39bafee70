"""Exceptions raised by the core.

Every error a caller can provoke with bad input is an :class:`SCAError`
(a ``ValueError``) whose ``field`` names the input at fault, so the command
line and the service can report it without parsing messages.  Numerical
failures carry the partial result, the way ``ArpackNoConvergence`` does.
"""

from __future__ import annotations


def field_summary(errors) -> str:
    """One line from messages by field (``{"data": ["Not a list."], ...}``):
    ``"data: Not a list. ids: Missing."``, each field's messages ending in one
    full stop, whatever the messages end with."""
    return " ".join(
        f"{field}: {' '.join(m.rstrip() for m in messages).rstrip('.;, ')}."
        for field, messages in errors.items()
    )


class SCAError(ValueError):
    """Invalid input or parameter; ``field`` names the offending input."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field

    def line(self) -> str:
        """The error as a command line prints it: ``error [field]: what``, the
        field said once (messages usually begin with it, for the API's detail)."""
        text = str(self)
        if not self.field:
            return f"error: {text}"
        return f"error [{self.field}]: {text.removeprefix(f'{self.field}: ')}"


class BalancingError(SCAError):
    """Sinkhorn-Knopp stopped at its iteration cap before the tolerance.

    ``partial`` is the :class:`~sca.balance.BalanceResult` reached so far.
    """

    def __init__(self, message: str, partial=None, field: str = "options.max_iterations"):
        super().__init__(message, field)
        self.partial = partial


class IterationError(SCAError):
    """The iteration stage hit its cap without a stable clustering.

    ``partial`` holds the last clustering seen (labels or ``None``); ``field``
    is the iteration cap that was reached.
    """

    def __init__(self, message: str, partial=None, field: str = "options.max_iterations"):
        super().__init__(message, field)
        self.partial = partial


class DeadlineExceeded(IterationError):
    """The iteration reached its caller's deadline before an answer.

    A time budget rather than an iteration cap ended it: ``partial`` holds
    the last clustering seen and ``iterations`` the steps taken, so a caller
    can say how much of the asked-for work fit.
    """

    def __init__(
        self, message: str, partial=None, iterations: int = 0, field: str = "options.max_iterations"
    ):
        super().__init__(message, partial, field)
        self.iterations = iterations
