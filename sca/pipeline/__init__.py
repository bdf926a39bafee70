"""The whole algorithm: its stages declared once, and results as JSON-ready dicts.

The command line, the estimator and the service's worker all run the table
of stages of :mod:`sca.pipeline.stages` and shape their answers with
:mod:`sca.pipeline.results` (element ids: :mod:`sca.pipeline.ids`), so
their results have the same shape; :mod:`sca.pipeline.answers` shapes the
answers of the queries on a clustering.
:mod:`sca.pipeline.runs` walks them end to end;
:mod:`sca.pipeline.source` reaches the consensus operator from the input;
:mod:`sca.pipeline.paged` shapes the result of a chunked operator without
listing its elements.
"""

from .answers import custom_dict, custom_result, similar_dict
from .ids import MAX_ID_BYTES, check_id, check_ids, namer, resolve_element, with_ids
from .paged import PAGED, paged_result
from .results import balance_dict, result_dict, spectrum_dict, spectrum_fields, timed
from .runs import cluster, clustering, prepare, run_stages
from .source import RawData, build_operator, data_source, null_reference
from .stages import (
    DEFAULTS,
    ITERATION_OPTIONS,
    STAGES,
    TASKS,
    Stage,
    iteration,
    iteration_dict,
    parts,
    walk,
)

__all__ = [
    "DEFAULTS",
    "ITERATION_OPTIONS",
    "STAGES",
    "TASKS",
    "RawData",
    "Stage",
    "balance_dict",
    "build_operator",
    "MAX_ID_BYTES",
    "PAGED",
    "check_id",
    "check_ids",
    "cluster",
    "clustering",
    "custom_dict",
    "custom_result",
    "data_source",
    "iteration",
    "iteration_dict",
    "namer",
    "null_reference",
    "paged_result",
    "parts",
    "prepare",
    "resolve_element",
    "result_dict",
    "run_stages",
    "similar_dict",
    "spectrum_dict",
    "spectrum_fields",
    "timed",
    "walk",
    "with_ids",
]
