"""Raw data: its check, the ``scale`` option fitted on it, and the SNN measure.

Raw data (rows = elements) reaches S through an ensemble (:mod:`sca.ensemble`)
or the shared-nearest-neighbour measure (:func:`snn_operator`, Sec. 4.4,
"Using a single measure"); its columns are scaled first (:func:`fit_scaling`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import SCAError
from ..operators import FactoredOperator
from ..options import SCALINGS, SNN_METRICS


def check_data(X, field: str = "data") -> np.ndarray:
    """Raw data: a finite 2-D array, rows = elements (at least two)."""
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError) as exc:
        raise SCAError(f"{field} must be a numeric matrix: {exc}", field) from None
    if X.ndim != 2:
        raise SCAError(f"{field} must be 2-D (rows = elements), got shape {X.shape}", field)
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise SCAError(f"{field} needs at least 2 rows and 1 column, got shape {X.shape}", field)
    if not np.all(np.isfinite(X)):
        raise SCAError(f"{field} has NaN or infinite entries", field)
    return X


def column_scaler(how: str = "standard", centre: bool = True):
    """An unfitted scikit-learn transformer for the ``scale`` option.

    ``"standard"``: :class:`~sklearn.preprocessing.StandardScaler` (each
    column centred and divided by its standard deviation; a constant column
    only centred), so that no feature dominates the ensemble's distances by
    its unit alone.  ``"none"``: the identity.  New elements
    (:mod:`sca.placement`) are transformed with the scaler fitted on the data
    they join, never refitted on themselves.  ``centre=False`` only divides
    (data that must stay nonnegative, see :func:`fit_scaling`).
    """
    # scikit-learn loads when raw data is scaled, not when sca is imported
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    if how not in SCALINGS:
        raise SCAError(f"scale must be one of {SCALINGS}, got {how!r}", "options.scale")
    return StandardScaler(with_mean=centre) if how == "standard" else FunctionTransformer()


@dataclass(frozen=True, eq=False)
class Scaling:
    """The ``scale`` option fitted on a job's raw data: ``(X - centre) / spread``.

    Kept with the clustering (:meth:`arrays`), so that new elements are
    transformed as the data they join was, never refitted on themselves.
    """

    centre: np.ndarray
    spread: np.ndarray

    def transform(self, X) -> np.ndarray:
        """Rows of raw data (``m`` features each) as the ensemble or SNN saw the job's."""
        return (np.asarray(X, dtype=float) - self.centre) / self.spread

    def arrays(self) -> dict[str, np.ndarray]:
        return {"centre": self.centre, "spread": self.spread}

    @classmethod
    def from_arrays(cls, arrays) -> Scaling:
        return cls(np.asarray(arrays["centre"], dtype=float), np.asarray(arrays["spread"], float))


def fit_scaling(X, how: str = "standard", centre: bool = True) -> Scaling:
    """The ``scale`` option (:func:`column_scaler`) fitted on checked raw data X.

    ``centre=False`` divides the columns without centring them: for NMF
    runs, which need nonnegative data (:func:`sca.ensemble_spec.needs_nonnegative`);
    k-means, the other algorithm, is blind to a shift.
    """
    m = X.shape[1]
    if how == "none":
        column_scaler(how)  # the check of the option's value
        return Scaling(np.zeros(m), np.ones(m))
    scaler = column_scaler(how, centre=centre).fit(X)
    return Scaling(scaler.mean_ if centre else np.zeros(m), np.asarray(scaler.scale_, dtype=float))


def check_snn(X, kappa, metric: str = "euclidean") -> np.ndarray:
    """Validate data and parameters of the shared-nearest-neighbour measure."""
    X = check_data(X)
    n = X.shape[0]
    if not isinstance(kappa, (int, np.integer)) or isinstance(kappa, bool) or not 1 <= kappa < n:
        raise SCAError(
            f"snn kappa must be an integer in [1, n-1] = [1, {n - 1}], got {kappa!r}", "snn.kappa"
        )
    if metric not in SNN_METRICS:
        raise SCAError(f"snn metric must be one of {SNN_METRICS}, got {metric!r}", "snn.metric")
    return X


def snn_operator(X, kappa: int, metric: str = "euclidean") -> FactoredOperator:
    """Shared-nearest-neighbour similarity (Sec. 4.4, "Using a single measure").

    ``s_ij = |N_i ∩ N_j|`` where ``N_g`` is ``g`` together with its ``kappa``
    nearest neighbours under ``metric``.  The paper writes ``|N_i ∪ N_j|``,
    but a union grows as i and j share *fewer* neighbours, which inverts the
    similarity; the intersection (the number of shared neighbours) is the
    measure of the cited work and the one used here.  Including ``g`` in its
    own neighbourhood gives ``s_ii = kappa + 1 > 0``.  With ``A`` the sparse
    neighbourhood indicator, ``S = A A^T``: a factored operator.

    Parameters
    ----------
    X : array_like of shape (n, m)
        The raw data, one row per element.
    kappa : int
        The neighbours of each element (κ), ``1 <= kappa < n``.
    metric : str, default "euclidean"
        The distance of the neighbours (a metric of
        :class:`sklearn.neighbors.NearestNeighbors`).

    Returns
    -------
    FactoredOperator
        ``S = A A^T`` with ``A`` the ``n x n`` neighbourhood indicator.

    Raises
    ------
    SCAError
        When ``X`` is not finite numeric data (``field="data"``), ``kappa`` is
        out of range (``"snn.kappa"``) or ``metric`` unknown (``"snn.metric"``).

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 4.4.
    """
    from sklearn.neighbors import NearestNeighbors

    X = check_snn(X, kappa, metric)
    n = X.shape[0]
    _, neighbours = NearestNeighbors(n_neighbors=int(kappa) + 1, metric=metric).fit(X).kneighbors(X)
    rows = np.repeat(np.arange(n), kappa + 1)
    A = sp.csr_array((np.ones(rows.size), (rows, neighbours.ravel())), shape=(n, n))
    A.data[:] = 1.0  # an element listed twice (duplicate points) counts once
    A = A + sp.eye_array(n, format="csr")  # make sure g is in N_g
    A.data[:] = 1.0
    return FactoredOperator(A)
