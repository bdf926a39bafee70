"""Query parameters of the plots resource (``openapi.yaml`` is the contract)."""

from __future__ import annotations

import re
from functools import lru_cache

from marshmallow import Schema, fields, pre_load

from ..jobs.schemas import custom_cluster_schema_class

_INTEGER = re.compile(r"[+-]?\d+")


@lru_cache(maxsize=8)
def _plot_query_schema_class(limit_iterations: int) -> type[Schema]:
    class PlotQuerySchema(custom_cluster_schema_class(limit_iterations)):  # type: ignore[misc]
        """The custom-cluster request as query parameters (text, ``element``
        optional here); ``custom`` needs them, the other plots take none."""

        element = fields.String()

        @pre_load
        def _numbers(self, data, **kwargs):
            return {
                name: int(value)
                if name != "element" and isinstance(value, str) and _INTEGER.fullmatch(value)
                else value
                for name, value in data.items()
            }

    return PlotQuerySchema


def plot_query_schema(config) -> Schema:
    """The plot query schema with the iteration limit of ``config``."""
    return _plot_query_schema_class(config["SCA_MAX_ITERATIONS"])()
