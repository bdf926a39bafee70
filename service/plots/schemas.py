"""Query parameters of the plots resource (``openapi.yaml`` is the contract)."""

from __future__ import annotations

from marshmallow import ValidationError, fields, validate, validates_schema

from ..jobs.schemas import BaseSchema


class PlotQuerySchema(BaseSchema):
    """``custom`` takes the custom-cluster query; the other plots take none."""

    element = fields.String(load_default=None)
    min_size = fields.Integer(load_default=None, validate=validate.Range(min=1))
    max_size = fields.Integer(load_default=None, validate=validate.Range(min=1))
    max_iterations = fields.Integer(load_default=None, validate=validate.Range(min=1))
    k = fields.Integer(load_default=None, validate=validate.Range(min=1))
    limit = fields.Integer(load_default=None, validate=validate.Range(min=1))

    @validates_schema
    def _check(self, data, **kwargs):
        if data.get("max_size") is not None and data["max_size"] < (data.get("min_size") or 1):
            raise ValidationError("must be at least min_size", "max_size")
