"""The kinds of input, declared once: their names in a request, the names of
their stored arrays, and their help (:mod:`sca.options`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SCAError


@dataclass(frozen=True)
class InputKind:
    """One kind of input: its name in a request, the name of its array in a job's
    stored input, what it is, and what its columns are (``columns``)."""

    name: str
    array: str
    doc: str
    cli_doc: str
    integer: bool = False
    columns: str = "columns"
    #: How it may be named instead of sent (:mod:`sca.storage`), or None.
    reference: str | None = None


INPUTS = (
    InputKind(
        "data",
        "X",
        "Raw data, rows = elements; clustered by `ensemble` (default: k-means at several k, "
        "`sca.ensemble_spec.default_ensemble`) or `snn`, after the `scale` option.",
        "raw data CSV/.npy, rows = elements (a header row is skipped); clustered by "
        "--ensemble (default: k-means at several k) or --snn, after --scale",
        columns="features",
    ),
    InputKind(
        "consensus",
        "S",
        "A symmetric nonnegative similarity matrix with a positive diagonal.",
        "consensus matrix S.csv|S.npy|S.npz (a CSV header row gives the ids)",
    ),
    InputKind(
        "labels",
        "labels",
        "Ensemble label runs, rows = elements, one column per run (negative = left out).",
        "label runs RUNS.csv|RUNS.npy (memory-mapped), or a directory holding an npy stack "
        "or a .zarr store (read as a Dask array), one row per element, one column per run",
        integer=True,
        columns="runs",
        reference='Or named by reference, `{"root": ..., "path": ...}`: an npy stack '
        "directory, a .npy file or a .zarr store under a storage root of `SCA_DATA_ROOTS` "
        "(`sca.storage`); read where it is computed, never uploaded.",
    ),
)
INPUT_NAMES = tuple(kind.name for kind in INPUTS)
INPUT_KINDS = {kind.name: kind for kind in INPUTS}


def one_input(given) -> str:
    """The one input kind among ``given`` (names whose value is not None).

    Raises :class:`SCAError` (field ``input``) unless exactly one is given.
    """
    present = [name for name in INPUT_NAMES if name in given]
    if len(present) != 1:
        raise SCAError(
            f"give exactly one input: data (with ensemble, snn or neither), consensus or "
            f"labels; got {present or 'none'}",
            "input",
        )
    return present[0]
