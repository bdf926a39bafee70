"""Label matrices named by reference: storage roots, and chunked arrays opened by path.

A label matrix of n elements x r runs (Meyer & Wessell, Sec. 1) too large to
send may be named instead: a *root*, one of the directories (or object-store
prefixes) an operator configured, and a *path* relative to it.  A reference
never reaches outside its root: absolute paths, ``..`` and symbolic links
that lead out are refused, as are unknown roots, each with the field at
fault (``labels.root``, ``labels.path``).

Roots are written ``name=location`` separated by commas (``SCA_DATA_ROOTS``
in the service: ``cohorts=/data/cohorts,scratch=/tmp/x``); a location is a
local directory or, where the ``fsspec`` package and its filesystem are
installed, a URL (``s3://bucket/prefix``).

Formats, by what the path names:

* a directory of ``0.npy``, ``1.npy``, ... (a Dask *npy stack*, as written by
  :func:`dask.array.to_npy_stack` or :func:`write_labels`), concatenated by rows:
  every numbered file is a block (empty the directory before writing a stack of
  fewer blocks into it);
* a ``.npy`` file, read memory-mapped in blocks of rows;
* a ``.zarr`` store, when the ``zarr`` package is installed (also at a URL).

Each opens as a :class:`dask.array.Array` whose blocks are read where they are
computed (a Dask worker reads its own blocks from the shared storage): the
headers are read here, the data never, and no ``pickle`` is loaded (the
``info`` file of an npy stack is not read; the ``.npy`` headers say the same).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Mapping

import numpy as np

from .errors import SCAError

#: Rows per block when a single ``.npy`` file is opened.
BLOCK_ROWS = 1 << 20
_NPY = ".npy"
_ZARR = ".zarr"


def parse_roots(text: str | None) -> dict[str, str]:
    """The roots of ``name=location,name=location`` (empty for None or "").

    Raises ``ValueError`` naming the entry at fault (a setting's error, not a request's).
    """
    roots: dict[str, str] = {}
    for entry in (text or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, sep, location = entry.partition("=")
        name, location = name.strip(), location.strip()
        if not sep or not name or not location or not name.replace("-", "_").isidentifier():
            raise ValueError(
                f"a storage root is name=location (a word, then a path), not {entry!r}"
            )
        if name in roots:
            raise ValueError(f"storage root {name!r} is named twice")
        if not _is_url(location) and not os.path.isabs(location):
            raise ValueError(f"storage root {name}={location}: the location must be absolute")
        roots[name] = location.rstrip("/") or "/"
    return roots


def _is_url(location: str) -> bool:
    return "://" in location


def resolve(roots: Mapping[str, str], root, path, field: str = "labels") -> str:
    """The location of ``path`` under root ``root``, checked to stay inside it.

    Raises :class:`SCAError` with field ``<field>.root`` for an unknown root and
    ``<field>.path`` for an absolute path, one with ``..``, one that leads out
    of the root through a symbolic link, or one that names nothing.
    """
    if not isinstance(root, str) or root not in roots:
        known = ", ".join(sorted(roots)) or "none are configured (SCA_DATA_ROOTS)"
        raise SCAError(
            f"{field}.root must name a storage root ({known}); got {root!r}", f"{field}.root"
        )
    where = f"{field}.path"
    if not isinstance(path, str) or not path.strip():
        raise SCAError(f"{where} must be a non-empty path relative to the root", where)
    if path.startswith(("/", "\\")) or os.path.isabs(path) or _is_url(path) or "\x00" in path:
        raise SCAError(f"{where} must be relative to the root, got {path!r}", where)
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise SCAError(f"{where} may not contain '..', got {path!r}", where)
    base = roots[root]
    if _is_url(base):
        location = posixpath.join(base, *[p for p in parts if p not in ("", ".")])
        if not _url_exists(location):
            raise SCAError(f"{where}: nothing at {path!r} in root {root!r}", where)
        return location
    real_base = os.path.realpath(base)
    location = os.path.realpath(os.path.join(real_base, *parts))
    if not _inside(location, real_base):
        raise SCAError(f"{where}: {path!r} leads out of root {root!r}", where)
    if not os.path.exists(location):
        raise SCAError(f"{where}: nothing at {path!r} in root {root!r}", where)
    if os.path.isdir(location):  # a stack's or a store's files may be links too
        for top, dirs, names in os.walk(location):
            for name in (*dirs, *names):
                if not _inside(os.path.realpath(os.path.join(top, name)), real_base):
                    raise SCAError(f"{where}: {path!r} links out of root {root!r}", where)
    return location


def _inside(location: str, base: str) -> bool:
    return location == base or location.startswith(base.rstrip(os.sep) + os.sep)


def _fsspec():
    try:
        import fsspec
    except ImportError:  # pragma: no cover - fsspec comes with dask[array]
        raise SCAError("object storage needs the fsspec package", "labels.root") from None
    return fsspec


def _url_exists(location: str) -> bool:
    fs, _, paths = _fsspec().get_fs_token_paths(location)
    return bool(fs.exists(paths[0]))


def _stack_files(directory: str) -> list[str]:
    """The files of an npy stack in order (``0.npy``, ``1.npy``, ...)."""
    numbered = [
        name
        for name in os.listdir(directory)
        if name.endswith(_NPY) and name[: -len(_NPY)].isdigit()
    ]
    numbered.sort(key=lambda name: int(name[: -len(_NPY)]))
    if [int(name[: -len(_NPY)]) for name in numbered] != list(range(len(numbered))):
        raise SCAError(
            f"labels.path: {os.path.basename(directory)!r} is a directory but not an npy "
            "stack (0.npy, 1.npy, ...)",
            "labels.path",
        )
    return [os.path.join(directory, name) for name in numbered]


def _header(path: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of a ``.npy`` file from its header (no data, no pickle)."""
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        except ValueError as exc:
            raise SCAError(f"labels.path: not a .npy file ({exc})", "labels.path") from None
    if dtype.hasobject:
        raise SCAError("labels.path: the file holds Python objects, not labels", "labels.path")
    return tuple(shape), dtype


def _read_rows(path: str, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo:hi`` of a ``.npy`` file, read memory-mapped (where the block is computed)."""
    return np.array(np.load(path, mmap_mode="r", allow_pickle=False)[lo:hi])


def _read_file(path: str) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def open_labels(location: str, field: str = "labels"):
    """The label matrix at ``location`` (from :func:`resolve`) as a lazy Dask array.

    Parameters
    ----------
    location : str
        A directory holding an npy stack, a ``.npy`` file or a ``.zarr`` store.
    field : str, default "labels"
        The name the errors give the input (``<field>.path``).

    Returns
    -------
    dask.array.Array of shape (n, r)
        Chunked by rows; nothing is read until it is computed.

    Raises
    ------
    SCAError
        When the format is not one of the above (or ``zarr`` is not installed
        for a ``.zarr`` store), or the array is not an ``n x r`` integer matrix
        with n >= 2.
    """
    import dask
    import dask.array as da

    where = f"{field}.path"
    if location.rstrip("/").endswith(_ZARR):
        try:
            import zarr  # noqa: F401
        except ImportError:
            raise SCAError(f"{where}: reading .zarr needs the zarr package", where) from None
        try:
            array = da.from_zarr(location)
        # zarr's "no array here" errors (zarr 2 raises TypeError for a group)
        except (ValueError, OSError, KeyError, TypeError) as error:
            raise SCAError(f"{where}: not a zarr array ({error})", where) from None
    elif _is_url(location):
        raise SCAError(f"{where}: at a URL only .zarr stores are read", where)
    elif os.path.isdir(location):
        array = open_stack(location, field)
    elif location.endswith(_NPY):
        shape, dtype = _header(location)
        n = shape[0] if shape else 0
        read = dask.delayed(_read_rows)
        blocks = [
            da.from_delayed(
                read(location, lo, min(lo + BLOCK_ROWS, n)),
                (min(BLOCK_ROWS, n - lo),) + shape[1:],
                dtype=dtype,
            )
            for lo in range(0, n, BLOCK_ROWS)
        ]
        array = da.concatenate(blocks, axis=0) if blocks else da.zeros(shape, dtype=dtype)
    else:
        raise SCAError(f"{where}: name an npy stack directory, a .npy file or a .zarr store", where)
    return check_shape(array, field)


def open_stack(location: str, field: str = "labels"):
    """The npy stack at ``location`` (a vector or a matrix) as a lazy Dask array,
    one chunk per block file; nothing is read until it is computed."""
    import dask
    import dask.array as da

    where = f"{field}.path"
    blocks = []
    for path in _stack_files(location):
        shape, dtype = _header(path)
        blocks.append(da.from_delayed(dask.delayed(_read_file)(path), shape, dtype=dtype))
    if not blocks:
        raise SCAError(f"{where}: the npy stack has no blocks", where)
    if len({(b.ndim, b.shape[1:], b.dtype) for b in blocks}) != 1:
        raise SCAError(f"{where}: the npy stack's blocks differ in columns or dtype", where)
    return da.concatenate(blocks, axis=0)


def stack_blocks(location: str) -> list[tuple[str, int]]:
    """The files of the array at ``location`` with their rows, in order: each
    block of an npy stack, or a ``.npy`` file as one (headers only are read)."""
    if os.path.isdir(location):
        return [(path, _header(path)[0][0]) for path in _stack_files(location)]
    if location.endswith(_NPY) and not _is_url(location):
        return [(location, _header(location)[0][0])]
    raise SCAError(
        "labels.path: read by blocks only from an npy stack or a .npy file", "labels.path"
    )


def stack_rows(location: str, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo:hi`` of the npy stack at ``location``: only the blocks that hold
    them are opened, each memory-mapped, so a page of a stack of any size costs
    the page (the blocks' sizes come from their headers)."""
    parts, start = [], 0
    for path in _stack_files(location):
        if start >= hi:
            break
        size = _header(path)[0][0]
        if start + size > lo:
            block = np.load(path, mmap_mode="r", allow_pickle=False)
            parts.append(np.array(block[max(lo - start, 0) : min(hi - start, size)]))
        start += size
    if not parts:
        shape, dtype = _header(_stack_files(location)[0])
        return np.empty((0,) + shape[1:], dtype=dtype)
    return np.concatenate(parts)


def check_shape(array, field: str = "labels"):
    """An opened label matrix as :func:`sca.inputs.check_labels` would take it, as far as
    its shape and dtype tell (its values are checked when its operator is built)."""
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.shape[0] < 2 or array.shape[1] < 1:
        raise SCAError(
            f"{field} must be n x r (elements x runs) with n >= 2, got {array.shape}", field
        )
    if array.dtype.kind not in "iu":
        raise SCAError(f"{field} must hold integers, got dtype {array.dtype}", field)
    if array.chunks[1] != (array.shape[1],):  # one chunk across the runs
        array = array.rechunk({1: -1})
    return array


def load_labels(location: str) -> np.ndarray:
    """The label matrix at ``location`` in this process: a ``.npy`` file memory-mapped,
    another format read whole (through the active Dask scheduler)."""
    if location.endswith(_NPY) and not _is_url(location):
        return np.load(location, mmap_mode="r", allow_pickle=False)
    return np.asarray(open_labels(location).compute())


def load_stack(location: str) -> np.ndarray:
    """An npy stack written by :func:`write_labels` (a vector or a matrix), read whole."""
    return np.concatenate([_read_file(path) for path in _stack_files(location)])


def fingerprint(location: str) -> str:
    """What identifies the array at ``location`` for a job's cache key: its files'
    names, sizes and modification times (not its bytes, which may be terabytes).
    An array rewritten in place keeps its key only if all three stay the same."""
    digest = hashlib.sha256(location.encode())
    if _is_url(location):
        fs, _, paths = _fsspec().get_fs_token_paths(location)
        for path, info in sorted(fs.find(paths[0], detail=True).items()):
            digest.update(
                f"{path}:{info.get('size')}:{info.get('mtime', info.get('LastModified'))}".encode()
            )
        return digest.hexdigest()
    files = [location]
    if os.path.isdir(location):
        files = sorted(
            os.path.join(top, name) for top, _, names in os.walk(location) for name in names
        )
    for path in files:
        stat = os.stat(path)
        digest.update(
            f"{os.path.relpath(path, location)}:{stat.st_size}:{stat.st_mtime_ns}".encode()
        )
    return digest.hexdigest()


def write_labels(labels, location: str, block_rows: int = BLOCK_ROWS) -> None:
    """Write a vector or matrix (NumPy or Dask) as an npy stack at ``location``.

    A Dask array is written by the scheduler that computes it (on a cluster,
    each worker writes its own blocks: the location must be storage they
    share); :func:`open_labels` reads it back.
    """
    import dask.array as da

    array = (
        labels if hasattr(labels, "dask") else da.from_array(np.asarray(labels), chunks=block_rows)
    )
    os.makedirs(location, exist_ok=True)
    da.to_npy_stack(location, array, axis=0)
