"""Turning a POST /v1/jobs request into validated input arrays.

A JSON body carries its matrix inline; a ``multipart/form-data`` body carries
it as a file part ``file`` (``.npy``, ``.npz`` or ``.csv``), says what it is
in the text part ``input`` (``data | consensus | labels``) and may add the
JSON parts ``options``, ``ensemble``, ``snn`` and ``ids``.  Both end as a
:class:`JobInput`, whose ``source`` says what clusters raw data (the
default ensemble when neither ``ensemble`` nor ``snn`` is given).  Files
are read with ``allow_pickle=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from flask import current_app, request
from marshmallow import ValidationError

from sca.ensemble_spec import ensemble_size
from sca.io import Declared, read_matrix
from sca.options import INPUT_KINDS
from sca.pipeline import data_source
from sca.storage import parse_roots
from sca_worker.inputs import REFERENCE, reference_arrays, referenced, sparse_arrays

from ..body import is_json, read_json
from ..errors import ProblemError, invalid
from ..options import INPUT_LIMITS
from . import callbacks
from .schemas import INPUTS, ReferenceSchema, SparseConsensusSchema, job_request_schema

JSON_PARTS = ("options", "ensemble", "snn", "ids")
FILE_TYPES = (".npy", ".npz", ".csv")


@dataclass
class JobInput:
    kind: str
    arrays: dict
    source: dict = field(default_factory=dict)
    ids: list | None = None
    options: dict = field(default_factory=dict)
    callback: dict | None = None


def json_body(send: str = "application/json") -> dict:
    """The JSON object of the request: 415 (naming what to ``send``) for another
    media type, 400 for unreadable JSON, 422 for JSON that is not an object or
    nests too deep (:func:`sca_service.body.read_json`)."""
    mimetype = request.mimetype
    if not is_json(mimetype):
        raise ProblemError(
            415,
            "Unsupported Media Type",
            f"send {send}",
            errors={"Content-Type": [f"unsupported: {mimetype or 'none'}"]},
        )
    body = read_json(request.get_data(cache=True), "body")
    if body is None:
        raise ProblemError(
            400, "Bad Request", "the body is not valid JSON", errors={"body": ["not valid JSON"]}
        )
    if not isinstance(body, dict):
        raise invalid("body", "the body must be a JSON object")
    return body


def parse_job_request() -> JobInput:
    """The request's input; raises :class:`ProblemError` (400/413/415/422)."""
    if request.mimetype == "multipart/form-data":
        loaded, kind, arrays, callback = _multipart()
    else:
        body = json_body(send="application/json or multipart/form-data")
        callback = callbacks.take(body)
        loaded = job_request_schema(current_app.config).load(body)
        kind = next(name for name in INPUTS if loaded.get(name) is not None)
        arrays = _json_arrays(kind, loaded[kind])
    source = {}
    if kind == "data":
        # What runs, recorded: the ensemble (the default one when none is given) or
        # the SNN, and the scale; the job's cache keys follow from it.
        options = loaded["options"]
        source = data_source(
            arrays["X"], loaded.get("ensemble"), loaded.get("snn"), options.get("scale")
        )
        if "ensemble" in source:
            source["ensemble_seed"] = options.get("ensemble_seed") or 0
    check_sizes(kind, arrays, source)
    return JobInput(kind, arrays, source, loaded.get("ids"), loaded["options"], callback)


def _matrix(value, name: str, integer: bool = False) -> np.ndarray:
    try:
        a = np.array(value)
    except (ValueError, TypeError):
        raise invalid(name, f"{name} must be a matrix: a list of rows of equal length") from None
    if a.dtype.kind not in "iuf" or a.dtype == object:
        raise invalid(name, f"{name} must hold numbers only")
    if a.ndim != 2:
        raise invalid(name, f"{name} must be a non-empty list of rows (2-D), got {a.ndim}-D")
    if integer:
        return a
    return a.astype(float, copy=False)


def _json_arrays(kind: str, value) -> dict:
    if kind == "consensus" and isinstance(value, dict):
        try:
            sparse = SparseConsensusSchema().load(value)
        except ValidationError as exc:
            raise ValidationError({"consensus": exc.messages}) from None
        if not len(sparse["rows"]) == len(sparse["cols"]) == len(sparse["values"]):
            raise invalid("consensus", "rows, cols and values must have equal length")
        return sparse_arrays(sparse["n"], sparse["rows"], sparse["cols"], sparse["values"])
    spec = INPUT_KINDS[kind]
    if spec.reference is not None and isinstance(value, dict):
        try:
            named = ReferenceSchema().load(value)
        except ValidationError as exc:
            raise ValidationError({kind: exc.messages}) from None
        roots = parse_roots(current_app.config["SCA_DATA_ROOTS"])
        return reference_arrays(roots, named["root"], named["path"], kind)
    return {spec.array: _matrix(value, kind, integer=spec.integer)}


def _multipart():
    form, files = request.form, request.files
    upload = files.get("file")
    if upload is None:
        raise invalid("file", "a multipart request needs a file part 'file' (.npy, .npz, .csv)")
    kind = form.get("input")
    if kind not in INPUTS:
        raise invalid("input", f"the part 'input' must be one of {', '.join(INPUTS)}")
    body = {kind: "file"}
    for name in JSON_PARTS:
        text = form.get(name)
        if text is not None:
            body[name] = read_json(text.encode("utf-8", "surrogatepass"), name)
        elif name in files:
            body[name] = read_json(files[name].read(), name)
    unknown = set(form) - {"input", *JSON_PARTS, *callbacks.FIELDS}
    if unknown:
        raise invalid(sorted(map(str, unknown))[0], "unknown form part")
    callback = callbacks.take({name: form[name] for name in callbacks.FIELDS if name in form})
    loaded = job_request_schema(current_app.config).load(body)
    arrays, header = read_file(upload.filename or "", upload.read(), kind)
    if kind == "consensus" and header is not None and loaded.get("ids") is None:
        loaded["ids"] = header  # a consensus CSV's header row names the elements
    return loaded, kind, arrays, callback


def read_file(filename: str, raw: bytes, kind: str) -> tuple[dict, list | None]:
    """Arrays of an uploaded ``.npy``, ``.npz`` or ``.csv`` file, and a CSV header if any.

    Reading is the core's (:func:`sca.io.read_matrix`, never with pickle); the
    size limits are checked on what the file declares before it is read.
    """
    suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix not in FILE_TYPES:
        raise ProblemError(
            415,
            "Unsupported Media Type",
            "the file must be .npy, .npz or .csv",
            errors={"file": [f"unsupported file type {suffix or filename!r}"]},
        )
    matrix, header = read_matrix(raw, filename, "file", lambda declared: check_file(kind, declared))
    if sp.issparse(matrix):
        if kind != "consensus":
            raise invalid("file", "a sparse matrix is only accepted as a consensus")
        if matrix.shape[0] != matrix.shape[1]:
            raise invalid("file", f"consensus must be square, got shape {matrix.shape}")
        coo = sp.coo_array(matrix)
        return sparse_arrays(coo.shape[0], coo.row, coo.col, coo.data), None
    a = np.asarray(matrix)
    if a.dtype.kind not in "iufb" or a.ndim != 2:
        raise invalid(
            "file", f"the file must hold a 2-D numeric array, got {a.dtype} with shape {a.shape}"
        )
    spec = INPUT_KINDS[kind]
    return {spec.array: a if spec.integer else a.astype(float, copy=False)}, header


def check_file(kind: str, declared: Declared) -> None:
    """The size limits on what an uploaded file declares, before it is read
    (413 naming ``file``): its arrays' bytes, and the matrix's shape."""
    limit = current_app.config["SCA_MAX_ARRAY_BYTES"]
    if declared.nbytes > limit:
        too_large(
            "file",
            f"the file's arrays may take at most {limit} bytes at 8 per entry "
            f"(got {declared.entries} entries)",
        )
    if declared.shape is not None and len(declared.shape) == 2:
        check_shape("file", kind, declared.shape, dense=not declared.sparse)


def check_sizes(kind: str, arrays: dict, source: dict) -> None:
    """The configured size limits on an input (413 naming the field), the
    ensemble's runs counted before the ensemble is expanded."""
    if "n" in arrays:  # a sparse consensus
        check_shape(kind, kind, (int(arrays["n"]), int(arrays["n"])), dense=False)
    elif REFERENCE in arrays:  # never sent: its runs are bounded, not its elements
        check_shape(kind, kind, (0, referenced(arrays, distributed=True).shape[1]))
    else:
        check_shape(kind, kind, arrays[INPUT_KINDS[kind].array].shape)
    if source.get("ensemble") is not None:
        runs, limit = ensemble_size(source["ensemble"]), current_app.config["SCA_MAX_RUNS"]
        if runs > limit:
            too_large("ensemble", f"at most {limit} runs (got {runs})")


def check_shape(name: str, kind: str, shape: tuple[int, int], dense: bool = True) -> None:
    """The limits on the elements (rows) and the features, runs or dense size
    of a ``kind`` input of ``shape`` (413 naming ``name``)."""
    config, spec, limits = current_app.config, INPUT_KINDS[kind], INPUT_LIMITS[kind]
    n, m = shape
    if "dense" in limits and dense and n > config[limits["dense"]]:
        too_large(
            name,
            f"a dense {kind} may have at most {config[limits['dense']]} "
            f"rows (got {n}); send it sparse",
        )
    if "columns" in limits and m > config[limits["columns"]]:
        too_large(name, f"at most {config[limits['columns']]} {spec.columns} (got {m})")
    if n > config["SCA_MAX_N"]:
        too_large(name, f"at most {config['SCA_MAX_N']} elements (got {n})")


def too_large(name: str, message: str):
    raise ProblemError(413, "Content Too Large", message, errors={name: [message]})
