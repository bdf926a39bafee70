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
    """Invalid input or parameter; ``field`` names the offending input.

    It is a ``ValueError``.

    Parameters
    ----------
    message : str
        What is wrong, in words (usually beginning with the field's name).
    field : str, optional
        The input at fault, as the API names it (``"options.k"``,
        ``"consensus"``, ``"input"``, ...); None when no one input is.

    Attributes
    ----------
    field : str or None
        The ``field`` given.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field

    def line(self) -> str:
        """The error as a command line prints it: ``error [field]: what``.

        The field is said once (messages usually begin with it, for the API's detail).

        Returns
        -------
        str
            ``error [field]: what``, or ``error: what`` without a field.
        """
        text = str(self)
        if not self.field:
            return f"error: {text}"
        return f"error [{self.field}]: {text.removeprefix(f'{self.field}: ')}"


class BalancingError(SCAError):
    """Sinkhorn-Knopp stopped at its iteration cap before the tolerance.

    ``partial`` is the :class:`~sca.balance.BalanceResult` reached so far.

    Parameters
    ----------
    message : str
        What happened, in words.
    partial : BalanceResult, optional
        The balancing reached at the cap.
    field : str, default "options.max_iterations"
        The cap that was reached.

    Attributes
    ----------
    partial : BalanceResult or None
        The ``partial`` given.

    See Also
    --------
    sca.balance : Raises it.
    """

    def __init__(self, message: str, partial=None, field: str = "options.max_iterations"):
        super().__init__(message, field)
        self.partial = partial


class IterationError(SCAError):
    """The iteration stage hit its cap without a stable clustering.

    ``partial`` holds the last clustering seen (labels or ``None``); ``field``
    is the iteration cap that was reached.

    Parameters
    ----------
    message : str
        What happened, in words.
    partial : ndarray of int, optional
        The last clustering seen, as labels.
    field : str, default "options.max_iterations"
        The cap that was reached.

    Attributes
    ----------
    partial : ndarray of int or None
        The ``partial`` given.

    See Also
    --------
    sca.iterate : Raises it.
    """

    def __init__(self, message: str, partial=None, field: str = "options.max_iterations"):
        super().__init__(message, field)
        self.partial = partial

    @classmethod
    def unsettled(cls, stable: int, max_iterations: int) -> IterationError:
        """No start of the iteration settled within its cap.

        Parameters
        ----------
        stable : int
            The steps a clustering had to stay the same.
        max_iterations : int
            The cap that was reached.

        Returns
        -------
        IterationError
        """
        return cls(
            f"no start settled on a clustering stable for {stable} steps within "
            f"{max_iterations} iterations",
            partial=None,
        )


class DeadlineExceeded(IterationError):
    """The iteration reached its caller's deadline before an answer.

    A time budget rather than an iteration cap ended it: ``partial`` holds
    the last clustering seen and ``iterations`` the steps taken, so a caller
    can say how much of the asked-for work fit.

    Parameters
    ----------
    message : str
        What happened, in words.
    partial : ndarray of int, optional
        The last clustering seen, as labels.
    iterations : int, default 0
        The steps taken before the deadline.
    field : str, default "options.max_iterations"
        The field a caller reports the error under.

    Attributes
    ----------
    partial : ndarray of int or None
        The ``partial`` given.
    iterations : int
        The ``iterations`` given.
    """

    def __init__(
        self, message: str, partial=None, iterations: int = 0, field: str = "options.max_iterations"
    ):
        super().__init__(message, partial, field)
        self.iterations = iterations
