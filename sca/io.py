"""Reading matrices from .csv, .npy and .npz files (never with pickle)."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import SCAError


def _parse_csv(text: str, field: str):
    """Rows of numbers; a first row that is not numeric is returned as a header."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row and any(c.strip() for c in row)]
    if not rows:
        raise SCAError(f"{field}: the CSV is empty", field)
    header = None
    try:
        [float(c) for c in rows[0]]
    except ValueError:
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    if not rows:
        raise SCAError(f"{field}: the CSV has a header but no rows", field)
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise SCAError(f"{field}: row {i + 1} has {len(row)} values, expected {width}", field)
    try:
        values = np.array([[float(c) for c in row] for row in rows], dtype=float)
    except ValueError as exc:
        raise SCAError(f"{field}: non-numeric value in the CSV ({exc})", field) from None
    return values, header


def load_npy(raw: bytes, field: str) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise SCAError(f"{field}: not a readable .npy array without pickle ({exc})",
                       field) from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise SCAError(f"{field}: the .npy array must be numeric", field)
    return array


def load_npz(raw: bytes, field: str):
    """A scipy sparse matrix saved by ``save_npz``, or an archive of one array."""
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            names = set(archive.files)
            if {"data", "indices", "indptr", "shape", "format"} <= names:
                fmt = archive["format"].item()
                fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
                if fmt not in ("csr", "csc"):
                    raise SCAError(f"{field}: sparse format {fmt!r} not supported", field)
                cls = sp.csr_array if fmt == "csr" else sp.csc_array
                return cls((archive["data"], archive["indices"], archive["indptr"]),
                           shape=tuple(archive["shape"]))
            if {"row", "col", "data", "shape"} <= names:
                return sp.coo_array((archive["data"], (archive["row"], archive["col"])),
                                    shape=tuple(archive["shape"])).tocsr()
            if len(names) == 1:
                return archive[names.pop()]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise SCAError(f"{field}: not a readable .npz without pickle ({exc})", field) from None
    raise SCAError(f"{field}: the .npz must hold a sparse matrix or a single array", field)


def read_matrix(raw: bytes, name: str, field: str):
    """``(matrix, header)`` from file content; the format comes from ``name``'s suffix."""
    suffix = Path(name).suffix.lower()
    if suffix == ".npy":
        return load_npy(raw, field), None
    if suffix == ".npz":
        return load_npz(raw, field), None
    if suffix in (".csv", ".txt", ""):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SCAError(f"{field}: the CSV is not UTF-8 text", field) from None
        return _parse_csv(text, field)
    raise SCAError(f"{field}: unsupported file type {suffix!r} (use .csv, .npy or .npz)", field)


def read_matrix_file(path: str, field: str):
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SCAError(f"{field}: cannot read {path}: {exc.strerror}", field) from None
    return read_matrix(raw, path, field)


def read_ids(path: str) -> list[str]:
    """One id per line (blank lines ignored)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SCAError(f"ids: cannot read {path}: {exc.strerror}", "ids") from None
    return [line.strip() for line in lines if line.strip()]
