"""Request and response schemas of the jobs resource (``openapi.yaml`` is the contract).

Every schema refuses unknown fields (``unknown = RAISE``).  Matrices are
taken as raw JSON here and converted with numpy in :mod:`.uploads`;
validating millions of cells field by field would cost more than the job.
Value limits come from the app config, so the schemas that have them are
built per set of limits (:func:`job_request_schema`,
:func:`custom_cluster_schema`).  Allowed names (splits, rules, algorithms,
metrics, methods) are the core's own.
"""

from __future__ import annotations

from functools import lru_cache

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from sca.custom import METHODS as NEIGHBOUR_METHODS
from sca.ensemble import ALGORITHMS
from sca.inputs import SNN_METRICS
from sca.iteration import SPLITS
from sca.spectral import RULES

INPUTS = ("data", "consensus", "labels")
METHODS = ("sca", *NEIGHBOUR_METHODS)


class BaseSchema(Schema):
    class Meta:
        unknown = RAISE


def _int(minimum=None, maximum=None, **kwargs):
    return fields.Integer(strict=True, validate=validate.Range(min=minimum, max=maximum),
                          **kwargs)


class StrictBoolean(fields.Boolean):
    """A JSON boolean: true or false only.  marshmallow's own compares with ``in``,
    where ``1 == True``, so 1 and 1.0 would pass as true."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


def _bool():
    """An optional JSON boolean (not "yes", 1 or "on")."""
    return StrictBoolean(load_default=None, allow_none=True)


class EnsembleItemSchema(BaseSchema):
    algorithm = fields.String(required=True, validate=validate.OneOf(ALGORITHMS))
    k = fields.Raw(required=True)
    runs = _int(1, required=True)

    @validates_schema
    def _check_k(self, data, **kwargs):
        k = data.get("k")
        ks = [k] if not isinstance(k, list) else k
        if not ks or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                             for v in ks):
            raise ValidationError("must be a positive integer or a non-empty list of them", "k")


class SnnSchema(BaseSchema):
    kappa = _int(1, required=True)
    metric = fields.String(load_default="euclidean", validate=validate.OneOf(SNN_METRICS))


class SparseConsensusSchema(BaseSchema):
    n = _int(2, required=True)
    rows = fields.List(fields.Integer(strict=True), required=True)
    cols = fields.List(fields.Integer(strict=True), required=True)
    values = fields.List(fields.Float(allow_nan=True), required=True)


class SimilarQuerySchema(BaseSchema):
    limit = fields.Integer(load_default=6, validate=validate.Range(min=1))
    method = fields.String(load_default="sca", validate=validate.OneOf(METHODS))


@lru_cache(maxsize=8)
def custom_cluster_schema_class(limit_iterations: int) -> type[Schema]:
    """The custom-cluster request with ``max_iterations`` at most ``limit_iterations``.

    Omitted values are left out, so the core's defaults apply.
    """

    class CustomClusterRequestSchema(BaseSchema):
        element = fields.Raw(required=True)
        min_size = _int(1)
        max_size = _int(1, allow_none=True)
        max_iterations = _int(1, limit_iterations)
        k = _int(1, allow_none=True)
        limit = _int(1, allow_none=True)

        @validates_schema
        def _check(self, data, **kwargs):
            element = data.get("element")
            if "element" in data and (isinstance(element, bool)
                                      or not isinstance(element, (str, int))):
                raise ValidationError("must be an element id (string) or index (integer)",
                                      "element")
            if (data.get("max_size") is not None and data.get("min_size") is not None
                    and data["max_size"] < data["min_size"]):
                raise ValidationError("must be at least min_size", "max_size")

    return CustomClusterRequestSchema


def custom_cluster_schema(config) -> Schema:
    """The POST custom-clusters schema with the iteration limit of ``config``."""
    return custom_cluster_schema_class(config["SCA_MAX_ITERATIONS"])()


@lru_cache(maxsize=8)
def _schemas(limit_k, limit_k_hat, limit_iterations, limit_starts):
    class OptionsSchema(BaseSchema):
        k = _int(1, limit_k, load_default=None, allow_none=True)
        k_hat = _int(1, limit_k_hat, load_default=None, allow_none=True)
        stable = _int(1, limit_iterations, load_default=None, allow_none=True)
        max_iterations = _int(1, limit_iterations, load_default=None, allow_none=True)
        seed = _int(0, 2**32 - 1, load_default=None, allow_none=True)
        ensemble_seed = _int(0, 2**32 - 1, load_default=None, allow_none=True)
        starts = _int(1, limit_starts, load_default=None, allow_none=True)
        split = fields.String(load_default=None, allow_none=True,
                              validate=validate.OneOf(SPLITS))
        trace = _bool()
        rule = fields.String(load_default=None, allow_none=True,
                             validate=validate.OneOf(RULES))
        min_k = _int(1, limit_k, load_default=None, allow_none=True)
        max_k = _int(1, limit_k, load_default=None, allow_none=True)
        reconsensus = _bool()

        @validates_schema
        def _check(self, data, **kwargs):
            if data.get("min_k") is not None and data.get("max_k") is not None \
                    and data["max_k"] < data["min_k"]:
                raise ValidationError("must be at least min_k", "max_k")

    class JobRequestSchema(BaseSchema):
        data = fields.Raw()
        consensus = fields.Raw()
        labels = fields.Raw()
        ensemble = fields.List(fields.Nested(EnsembleItemSchema), validate=validate.Length(min=1))
        snn = fields.Nested(SnnSchema)
        ids = fields.List(fields.Raw())
        options = fields.Nested(OptionsSchema, load_default=dict)

        @validates_schema
        def _check_inputs(self, data, **kwargs):
            given = [name for name in INPUTS if data.get(name) is not None]
            if len(given) != 1:
                raise ValidationError(
                    f"give exactly one of data, consensus or labels (got {given or 'none'})",
                    "input")
            if "data" in given:
                if ("ensemble" in data) == ("snn" in data):
                    raise ValidationError("data needs exactly one of ensemble or snn",
                                          "ensemble")
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
    return _schemas(config["SCA_MAX_K"], config["SCA_MAX_K_HAT"], config["SCA_MAX_ITERATIONS"],
                    config["SCA_MAX_STARTS"])
