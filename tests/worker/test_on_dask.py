"""Which jobs go to the Dask cluster, and where their labels are written
(sca_worker.on_dask; the jobs themselves: tests/integration/test_dask_service.py)."""

from __future__ import annotations

import pytest

import sca
from sca_worker import on_dask
from sca_worker.config import resolve
from sca_worker.store.keys import artifact_keys

SETTINGS = resolve({"SCA_DASK_SCHEDULER": "tcp://127.0.0.1:8786", "SCA_DASK_MIN_ELEMENTS": 1000})
STEPS = {"stages": ["balancing", "spectral", "iteration"], "runs": [], "n": 10}
RECORD = {"id": "j", "kind": "labels", "n": 10}


@pytest.mark.parametrize(
    ("record", "settings", "steps", "expected"),
    [
        ({**RECORD, "reference": True}, SETTINGS, STEPS, True),
        (RECORD, SETTINGS, STEPS, False),  # uploaded, below the threshold
        ({**RECORD, "n": 1000}, SETTINGS, STEPS, True),  # uploaded, at the threshold
        ({**RECORD, "kind": "consensus", "n": 5000}, SETTINGS, STEPS, False),
        ({**RECORD, "reference": True}, resolve({}), STEPS, False),  # no scheduler
        ({**RECORD, "reference": True}, SETTINGS, {**STEPS, "stages": []}, False),  # cached
    ],
)
def test_what_goes_to_the_cluster(record, settings, steps, expected):
    assert on_dask.wanted(record, steps, settings) is expected


def test_labels_are_written_beside_the_input_or_under_the_results_root(tmp_path):
    location = str(tmp_path / "cohorts" / "run7" / "labels")
    reference = {"root": "cohorts", "path": "run7/labels", "location": location}
    record = {
        **RECORD,
        "hashes": {"input": "i1", "balance": "b2", "spectrum": "s3", "result": "r4"},
    }
    result = artifact_keys(record)["result"].rsplit(":", 1)[-1]
    assert result == "r4"
    beside = on_dask.results_location(SETTINGS, reference, record)
    assert beside == str(tmp_path / "cohorts" / "run7" / "sca-results" / result)
    rooted = resolve(
        {**SETTINGS, "SCA_DATA_ROOTS": f"out={tmp_path / 'out'}", "SCA_RESULTS_ROOT": "out"}
    )
    assert on_dask.results_location(rooted, reference, record) == str(tmp_path / "out" / result)
    with pytest.raises(sca.SCAError) as caught:
        on_dask.results_location(SETTINGS, {"location": "s3://bucket/labels.zarr"}, record)
    assert caught.value.field == "labels.root"


def test_written_results_are_named_by_a_root_and_a_path():
    reference = {"root": "cohorts", "path": "run7/labels/", "location": "/x/run7/labels"}
    record = {**RECORD, "hashes": {"input": "i", "balance": "b", "spectrum": "s", "result": "r"}}
    beside = on_dask.results_reference(SETTINGS, reference, record)
    assert beside == {"root": "cohorts", "path": "run7/sca-results/r"}
    top = on_dask.results_reference(SETTINGS, {**reference, "path": "labels.npy"}, record)
    assert top == {"root": "cohorts", "path": "sca-results/r"}
    rooted = {**SETTINGS, "SCA_RESULTS_ROOT": "out"}
    assert on_dask.results_reference(rooted, reference, record) == {"root": "out", "path": "r"}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({**RECORD, "reference": True, "n": 1_000_001}, True),
        ({**RECORD, "reference": True, "n": 1_000_000}, False),  # at the threshold: listed
        ({**RECORD, "n": 5_000_000}, False),  # uploaded: always listed
    ],
)
def test_results_above_the_list_threshold_are_paged(record, expected):
    assert on_dask.paged(record, SETTINGS) is expected
