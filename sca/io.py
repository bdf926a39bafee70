"""Reading matrices from .csv, .npy and .npz files (never with pickle).

A file says what it holds before it holds it: a ``.npy`` header declares
shape and dtype, a ``.npz`` is a zip of such arrays, a CSV's first row gives
its width.  :func:`read_matrix` reads that much first and hands it, as a
:class:`Declared`, to the caller's ``check`` before any array is allocated
or decompressed, so that a few compressed bytes declaring a huge array are
refused for the price of their headers.  Declarations are checked against
the data present too: a header promising more than its file holds is an
error, not an allocation.
"""

from __future__ import annotations

import csv
import io
import itertools
import lzma
import math
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .errors import SCAError

#: Bytes each entry takes once read (numbers are held as 8-byte floats or ints).
ENTRY_BYTES = 8
#: The .npy header readers by format version (numpy writes 3.0 only for
#: structured dtypes with non-Latin-1 field names, never for a numeric matrix).
_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
#: What reading a damaged .npy or zip may raise.
_UNREADABLE = (
    ValueError,
    OSError,
    EOFError,
    RuntimeError,
    NotImplementedError,
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
)
_SPARSE_INDEX = {"csr": ("indices", "indptr"), "csc": ("indices", "indptr"), "coo": ("row", "col")}


@dataclass(frozen=True)
class Declared:
    """What a file declares before its arrays are read.

    ``entries`` counts the entries of every array to be read (for a CSV an
    upper bound: lines x width of its first row); ``shape`` is the matrix's
    shape where the file states it exactly (``.npy``, ``.npz``; None for CSV).
    """

    entries: int
    shape: tuple[int, ...] | None = None
    sparse: bool = False

    @property
    def nbytes(self) -> int:
        return self.entries * ENTRY_BYTES


Check = Callable[[Declared], None]


def _parse_csv(text: str, field: str, check: Check | None):
    """Rows of numbers; a first row that is not numeric is returned as a header.

    The matrix is filled row by row, so memory is the matrix's, not a list
    of strings per cell.
    """
    reader = csv.reader(io.StringIO(text, newline=""))  # lines end in \n, \r\n or \r
    rows = (row for row in reader if row and any(c.strip() for c in row))
    try:
        return _fill_csv(
            rows, text.count("\n") + text.count("\r") - text.count("\r\n") + 1, field, check
        )
    except csv.Error as exc:
        raise SCAError(f"{field}: not a readable CSV ({exc})", field) from None


def _fill_csv(rows, lines: int, field: str, check: Check | None):
    """The CSV's ``rows`` (of at most ``lines``) as a matrix, and its header."""
    first = next(rows, None)
    if first is None:
        raise SCAError(f"{field}: the CSV is empty", field)
    _comma_separated(first, field)
    header = None
    try:
        [float(c) for c in first]
    except ValueError:
        header, first = [c.strip() for c in first], next(rows, None)
        if first is not None:
            _comma_separated(first, field)
    if first is None:
        raise SCAError(f"{field}: the CSV has a header but no rows", field)
    width = len(first)
    if check is not None:
        check(Declared(lines * width))
    values = np.empty((lines, width))
    count = 0
    for count, row in enumerate(itertools.chain([first], rows), 1):
        if len(row) != width:
            raise SCAError(f"{field}: row {count} has {len(row)} values, expected {width}", field)
        try:
            values[count - 1] = [float(c) for c in row]
        except ValueError:
            column = next(j for j, c in enumerate(row) if not _is_number(c))
            raise SCAError(
                f"{field}: row {count}, column {column + 1} holds a non-numeric value: "
                f"{row[column][:40]!r}",
                field,
            ) from None
    return values[:count], header


#: Separators that a spreadsheet may write instead of commas.
_OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _comma_separated(row: list, field: str) -> None:
    """Refuse a row that is one cell holding another separator: a file written with
    semicolons or tabs would otherwise read as a header of one column."""
    if len(row) != 1:
        return
    for separator, name in _OTHER_SEPARATORS.items():
        if separator in row[0]:
            raise SCAError(
                f"{field}: the CSV separates its values with {name}, not commas "
                f"(first row {row[0][:40]!r}); save it as comma-separated values",
                field,
            )


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _header(fp, size: int, field: str, label: str = "") -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of the .npy array at ``fp`` (a stream of ``size`` bytes),
    read from its header alone; the data must all be there.  ``label`` names
    the array within its file in messages."""
    where = f"{field}{label}"
    try:
        reader = _HEADERS.get(np.lib.format.read_magic(fp))
        if reader is None:
            raise ValueError("unsupported .npy format version")
        shape, _, dtype = reader(fp)
    except _UNREADABLE as exc:
        raise SCAError(
            f"{where}: not a readable .npy array without pickle ({exc})", field
        ) from None
    if any(length < 0 for length in shape):
        raise SCAError(f"{where}: the .npy header declares the shape {shape}", field)
    need, held = math.prod(shape) * dtype.itemsize, size - fp.tell()
    if held < need:
        raise SCAError(
            f"{where}: the array is truncated: its header declares {shape} of "
            f"{dtype} ({need} bytes) but {held} bytes follow",
            field,
        )
    return shape, dtype


def _numeric(dtype: np.dtype, kinds: str, what: str, field: str) -> None:
    """Refuse a dtype outside ``kinds`` (numpy's kind letters)."""
    if dtype.hasobject:
        raise SCAError(f"{field}: {what} holds Python objects, not readable without pickle", field)
    if dtype.kind not in kinds or dtype.fields is not None:
        kind = "numeric" if "f" in kinds else "integer" if "i" in kinds else "text"
        raise SCAError(f"{field}: {what} must be {kind}, got dtype {dtype}", field)


def load_npy(raw: bytes, field: str, check: Check | None = None) -> np.ndarray:
    fp = io.BytesIO(raw)
    shape, dtype = _header(fp, len(raw), field)
    _numeric(dtype, "biuf", "the .npy array", field)
    if check is not None:
        check(Declared(math.prod(shape), shape))
    fp.seek(0)
    try:
        return np.lib.format.read_array(fp, allow_pickle=False)
    except _UNREADABLE as exc:
        raise SCAError(
            f"{field}: not a readable .npy array without pickle ({exc})", field
        ) from None


class _Archive:
    """The members of an .npz, by name without ``.npy``, each with its declared
    shape and dtype; an array is decompressed only when :meth:`read` asks."""

    def __init__(self, raw: bytes, field: str):
        self.field = field
        self.zip = zipfile.ZipFile(io.BytesIO(raw))
        self.members = {}
        for info in self.zip.infolist():
            if not info.filename.endswith(".npy"):
                raise SCAError(
                    f"{field}: the .npz holds {info.filename!r}, not a .npy array", field
                )
            with self.zip.open(info) as fp:
                shape, dtype = _header(fp, info.file_size, field, f" ({info.filename})")
            self.members[info.filename[:-4]] = (info, shape, dtype)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.members[name][1]

    def read(self, name: str, kinds: str = "biuf", what: str | None = None) -> np.ndarray:
        info, shape, dtype = self.members[name]
        _numeric(dtype, kinds, what or f"the array {name!r}", self.field)
        with self.zip.open(info) as fp:
            return np.lib.format.read_array(fp, allow_pickle=False)

    def small(self, name: str, entries: int, kinds: str) -> np.ndarray:
        """A member that must hold at most ``entries`` entries (a shape, a format)."""
        if math.prod(self.shape(name)) > entries:
            raise SCAError(
                f"{self.field}: the .npz entry {name!r} has shape {self.shape(name)}", self.field
            )
        return self.read(name, kinds, f"the sparse {name}")


def _sparse(archive: _Archive, check: Check | None):
    """The scipy sparse matrix saved by ``save_npz`` (CSR, CSC or COO), checked
    entry by entry: indices within the shape, pointers in order."""
    field, names = archive.field, set(archive.members)
    if "format" in names:
        fmt = archive.small("format", 1, "SU").item()
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
    else:
        fmt = "coo"
    if fmt not in _SPARSE_INDEX:
        raise SCAError(f"{field}: sparse format {fmt!r} not supported", field)
    parts = ("data", *_SPARSE_INDEX[fmt])
    if not set(parts) <= names:
        raise SCAError(f"{field}: a {fmt} matrix needs the arrays {', '.join(parts)}", field)
    shape = tuple(int(v) for v in archive.small("shape", 2, "iu").ravel())
    if len(shape) != 2 or min(shape) < 0:
        raise SCAError(f"{field}: the sparse shape must be two lengths, got {shape}", field)
    if check is not None:
        check(Declared(sum(math.prod(archive.shape(name)) for name in parts), shape, True))
    data = archive.read("data", what="sparse data")
    first, second = (archive.read(name, "iu", f"sparse {name}") for name in parts[1:])
    if fmt == "coo":
        return sp.coo_array((data, (first, second)), shape=shape)
    matrix = (sp.csr_array if fmt == "csr" else sp.csc_array)((data, first, second), shape=shape)
    matrix.check_format(full_check=True)
    return matrix


def load_npz(raw: bytes, field: str, check: Check | None = None):
    """A scipy sparse matrix saved by ``save_npz``, or an archive of one array."""
    try:
        archive = _Archive(raw, field)
        names = set(archive.members)
        if {"data", "shape"} <= names and names & {"indices", "row"}:
            return _sparse(archive, check)
        if len(names) == 1:
            (name,) = names
            _numeric(archive.members[name][2], "biuf", "the .npz array", field)
            if check is not None:
                check(Declared(math.prod(archive.shape(name)), archive.shape(name)))
            return archive.read(name)
    except SCAError:
        raise
    except _UNREADABLE as exc:
        raise SCAError(f"{field}: not a readable .npz without pickle ({exc})", field) from None
    raise SCAError(f"{field}: the .npz must hold a sparse matrix or a single array", field)


def read_matrix(raw: bytes, name: str, field: str, check: Check | None = None):
    """``(matrix, header)`` from file content; the format comes from ``name``'s suffix.

    ``check(declared)`` is called with what the file declares (:class:`Declared`)
    before its arrays are read; it raises to refuse them.
    """
    suffix = Path(name).suffix.lower()
    if suffix == ".npy":
        return load_npy(raw, field, check), None
    if suffix == ".npz":
        return load_npz(raw, field, check), None
    if suffix in (".csv", ".txt", ""):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SCAError(f"{field}: the CSV is not UTF-8 text", field) from None
        return _parse_csv(text, field, check)
    raise SCAError(f"{field}: unsupported file type {suffix!r} (use .csv, .npy or .npz)", field)


def read_matrix_file(path: str, field: str):
    """``(matrix, header)`` from a file; a ``.npy`` is memory-mapped, not read
    (an n x r label matrix of 10^7 elements stays on disk until used)."""
    if Path(path).suffix.lower() == ".npy":
        return map_npy(path, field), None
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SCAError(f"{field}: cannot read {path}: {exc.strerror}", field) from None
    return read_matrix(raw, path, field)


def map_npy(path: str, field: str) -> np.ndarray:
    """A numeric ``.npy`` file memory-mapped read-only, its header checked first."""
    try:
        with open(path, "rb") as fp:
            size = fp.seek(0, 2)
            fp.seek(0)
            shape, dtype = _header(fp, size, field)
    except OSError as exc:
        raise SCAError(f"{field}: cannot read {path}: {exc.strerror}", field) from None
    _numeric(dtype, "biuf", "the .npy array", field)
    if math.prod(shape) == 0:
        return np.zeros(shape, dtype=dtype)
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except _UNREADABLE as exc:
        raise SCAError(
            f"{field}: not a readable .npy array without pickle ({exc})", field
        ) from None


def read_ids(path: str) -> list[str]:
    """One id per line (blank lines ignored)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SCAError(f"ids: cannot read {path}: {exc.strerror}", "ids") from None
    return [line.strip() for line in lines if line.strip()]
