"""Request and response schemas of the jobs resource (``openapi.yaml`` is the contract).

Every schema refuses unknown fields (``unknown = RAISE``).  Matrices are
taken as raw JSON here and converted with numpy in :mod:`.uploads`;
validating millions of cells field by field would cost more than the job.
The options, the custom-cluster and the similar query come from the core's
registry (:mod:`sca.options`, through :mod:`sca_service.options`); value
limits come from the app config, so those schemas are built per set of
limits (:func:`job_request_schema`, :func:`custom_cluster_schema`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from sca import options as registry
from sca.errors import SCAError
from sca.pipeline import check_id

from ..options import BaseSchema, StrictBoolean, schema_class

INPUTS = registry.INPUT_NAMES


#: One field for each input kind (:data:`sca.options.INPUTS`), its value checked by
#: the core (:mod:`sca.inputs`): the base of the job and new-element schemas.
InputsSchema: Any = BaseSchema.from_dict(
    {name: fields.Raw() for name in INPUTS}, name="InputsSchema"
)

_LIMITS = ("SCA_MAX_K", "SCA_MAX_K_HAT", "SCA_MAX_ITERATIONS", "SCA_MAX_STARTS")


def _int(minimum=None, maximum=None, **kwargs):
    return fields.Integer(strict=True, validate=validate.Range(min=minimum, max=maximum), **kwargs)


class EnsembleItemSchema(BaseSchema):
    algorithm = fields.String(required=True, validate=validate.OneOf(registry.ALGORITHMS))
    k = fields.Raw(required=True)
    runs = _int(1, required=True)

    @validates_schema
    def _check_k(self, data, **kwargs):
        k = data.get("k")
        ks = [k] if not isinstance(k, list) else k
        if not ks or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in ks):
            raise ValidationError("must be a positive integer or a non-empty list of them", "k")


class SnnSchema(BaseSchema):
    kappa = _int(1, required=True)
    metric = fields.String(load_default="euclidean", validate=validate.OneOf(registry.SNN_METRICS))


class ReferenceSchema(BaseSchema):
    """An input named by reference: a storage root of ``SCA_DATA_ROOTS`` and a path in it."""

    root = fields.String(required=True, validate=validate.Length(min=1, max=200))
    path = fields.String(required=True, validate=validate.Length(min=1, max=4096))


class SparseConsensusSchema(BaseSchema):
    n = _int(2, required=True)
    rows = fields.List(fields.Integer(strict=True), required=True)
    cols = fields.List(fields.Integer(strict=True), required=True)
    values = fields.List(fields.Float(allow_nan=True), required=True)


#: The most elements of one page of a job's per-element data (``GET .../labels``).
MAX_PAGE = 10_000


class LabelsPageSchema(BaseSchema):
    """A page of a job's per-element data: ``limit`` elements from index ``offset``."""

    offset = fields.Integer(load_default=0, validate=validate.Range(min=0))
    limit = fields.Integer(load_default=1000, validate=validate.Range(min=1, max=MAX_PAGE))


#: The similar-elements query (query-string text: integers are parsed).
SimilarQuerySchema = schema_class(
    "similar", "similar", {}, "SimilarQuerySchema", strict=False, omitted="default"
)


@lru_cache(maxsize=8)
def custom_cluster_schema_class(limit_iterations: int) -> type[Schema]:
    """The custom-cluster request with ``max_iterations`` at most ``limit_iterations``.

    Omitted values are left out, so the core's defaults apply.
    """
    return schema_class(
        "custom",
        "custom",
        {"SCA_MAX_ITERATIONS": limit_iterations},
        "CustomClusterRequestSchema",
        omitted="absent",
    )


def custom_cluster_schema(config) -> Schema:
    """The POST custom-clusters schema with the iteration limit of ``config``."""
    return custom_cluster_schema_class(config["SCA_MAX_ITERATIONS"])()


@lru_cache(maxsize=8)
def _schemas(*limits):
    OptionsSchema = schema_class("clustering", "job", dict(zip(_LIMITS, limits)), "OptionsSchema")

    class JobRequestSchema(InputsSchema):
        ensemble = fields.List(fields.Nested(EnsembleItemSchema), validate=validate.Length(min=1))
        snn = fields.Nested(SnnSchema)
        ids = fields.List(fields.Raw())
        options = fields.Nested(OptionsSchema, load_default=dict)

        @validates_schema
        def _check_inputs(self, data, **kwargs):
            try:
                given = [
                    registry.one_input([name for name in INPUTS if data.get(name) is not None])
                ]
            except SCAError as exc:
                raise ValidationError(str(exc), exc.field) from None
            if "data" in given:
                # neither: sca.ensemble_spec.default_ensemble (sca.pipeline.data_source)
                if "ensemble" in data and "snn" in data:
                    raise ValidationError("data takes ensemble or snn, not both", "ensemble")
            else:
                for name in ("ensemble", "snn"):
                    if name in data:
                        raise ValidationError("only allowed with data", name)
            for i, item in enumerate(data.get("ids") or []):
                if isinstance(item, bool) or not isinstance(item, (str, int)):
                    raise ValidationError({i: ["must be a string or an integer"]}, "ids")

    return JobRequestSchema()


def job_request_schema(config) -> Schema:
    """The POST /v1/jobs schema with the value limits of ``config``."""
    return _schemas(*(config[name] for name in _LIMITS))


#: New elements placed by one ``POST /v1/jobs/{id}/queries`` (422 beyond).
MAX_QUERY_ELEMENTS = 100


class NewElementSchema(InputsSchema):
    """One new element, in its job's input kind: a row of ``data`` (features), its
    ``labels`` (one per run) or its ``consensus`` row (with ``self``, its own entry)."""

    id = fields.Raw(load_default=None, allow_none=True)
    self = fields.Float(allow_none=True, validate=validate.Range(min=0, min_inclusive=False))

    @validates_schema
    def _check(self, data, **kwargs):
        given = [name for name in INPUTS if data.get(name) is not None]
        if len(given) != 1:
            raise ValidationError(
                f"give exactly one of {', '.join(INPUTS)} (got {given or 'none'})",
                "_schema",
            )
        for name in given:
            if not isinstance(data[name], list):
                raise ValidationError("must be a list of numbers", name)
        if data.get("self") is not None and "consensus" not in given:
            raise ValidationError("only allowed with consensus", "self")
        element = data.get("id")
        if element is not None and (
            isinstance(element, bool) or not isinstance(element, (str, int))
        ):
            raise ValidationError("must be a string or an integer", "id")
        if element is not None:
            try:
                check_id(element, "id")
            except SCAError as exc:
                raise ValidationError(str(exc), "id") from None


@lru_cache(maxsize=8)
def new_elements_schema_class(limit_iterations: int) -> type[Schema]:
    """The new-elements query with ``max_iterations`` at most ``limit_iterations``."""

    class NewElementsRequestSchema(BaseSchema):
        elements = fields.List(
            fields.Nested(NewElementSchema),
            required=True,
            validate=validate.Length(min=1, max=MAX_QUERY_ELEMENTS),
        )
        custom = StrictBoolean(load_default=True)
        persist = StrictBoolean(load_default=False)
        min_size = _int(1, load_default=1)
        max_size = _int(1, allow_none=True, load_default=None)
        max_iterations = _int(1, limit_iterations, load_default=1000)
        k = _int(1, allow_none=True, load_default=None)
        limit = _int(1, load_default=6)

        @validates_schema
        def _check(self, data, **kwargs):
            if data.get("max_size") is not None and data["max_size"] < data.get("min_size", 1):
                raise ValidationError("must be at least min_size", "max_size")

    return NewElementsRequestSchema


def new_elements_schema(config) -> Schema:
    """The POST queries schema with the iteration limit of ``config``."""
    return new_elements_schema_class(config["SCA_MAX_ITERATIONS"])()
