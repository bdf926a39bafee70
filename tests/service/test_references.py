"""Label runs named by reference (``{"labels": {"root", "path"}}``) on the embedded
default, without a Dask scheduler: the job reads them in its worker, memory-mapped
or chunked, and answers as the uploaded labels do.  A bad reference is a 422 naming
its field."""

from __future__ import annotations

import shutil

import dask.array as da
import numpy as np
import pytest

from sca.planted import planted_runs, planted_truth
from tests.conftest import wait_for
from tests.service.conftest import problem
from tests.storage_roots import storage_root


@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(5)
    return planted_runs(planted_truth(900, [1, 1, 1], rng), 10, 0.3, rng)


@pytest.fixture
def root(tmp_path, labels):
    return storage_root(tmp_path, labels, 300)


@pytest.fixture
def referencing(make_client, root):
    return make_client(SCA_DATA_ROOTS=f"cohorts={root}", SCA_MAX_N=100)


def _finished(client, body) -> dict:
    response = client.post("/v1/jobs", json=body)
    assert response.status_code == 202, response.get_json()
    return wait_for(client.get, response.get_json()["id"])


@pytest.mark.parametrize("path", ["labels.npy", "stack"])
def test_a_reference_clusters_as_the_uploaded_labels(make_client, referencing, labels, path):
    uploaded = _finished(make_client(), {"labels": labels.tolist()})
    named = _finished(referencing, {"labels": {"root": "cohorts", "path": path}})
    assert named["status"] == uploaded["status"] == "succeeded"
    for field in ("k", "clusters", "labels", "confidence", "cluster_confidence"):
        assert named["result"][field] == uploaded["result"][field], field
    # The elements are bounded by nothing (SCA_MAX_N is 100 here): they are never sent.
    job_id = named["id"]
    placed = referencing.post(
        f"/v1/jobs/{job_id}/queries", json={"elements": [{"labels": labels[5].tolist()}]}
    )
    assert placed.status_code == 200
    assert placed.get_json()["elements"][0]["cluster"] == named["result"]["labels"][5]


def test_the_cache_key_follows_the_referenced_files(referencing, root, labels):
    body = {"labels": {"root": "cohorts", "path": "stack"}}
    first = _finished(referencing, body)
    assert _finished(referencing, body)["cached"] is True
    shutil.rmtree(root / "stack")
    da.to_npy_stack(root / "stack", da.from_array(labels[:600], chunks=(300, -1)))
    again = _finished(referencing, body)
    assert again["cached"] is False and again["result"]["n"] == 600 != first["result"]["n"]


@pytest.mark.parametrize(
    ("reference", "field"),
    [
        ({"root": "elsewhere", "path": "labels.npy"}, "labels.root"),
        ({"root": "cohorts", "path": "../outside.npy"}, "labels.path"),
        ({"root": "cohorts", "path": "/etc/passwd"}, "labels.path"),
        ({"root": "cohorts", "path": "escape.npy"}, "labels.path"),
        ({"root": "cohorts", "path": "missing.npy"}, "labels.path"),
        ({"root": "cohorts", "path": "floats.npy"}, "labels"),
        ({"root": "cohorts"}, "labels.path"),
        ({"root": "cohorts", "path": "labels.npy", "extra": 1}, "labels.extra"),
    ],
)
def test_a_bad_reference_is_refused_naming_its_field(referencing, reference, field):
    problem(referencing.post("/v1/jobs", json={"labels": reference}), 422, field)


def test_without_roots_every_root_is_unknown(client):
    body = {"labels": {"root": "cohorts", "path": "labels.npy"}}
    found = problem(client.post("/v1/jobs", json=body), 422, "labels.root")
    assert "SCA_DATA_ROOTS" in found["detail"]


def test_a_referenced_job_keeps_its_input_where_it_is(referencing, labels):
    job = _finished(referencing, {"labels": {"root": "cohorts", "path": "labels.npy"}})
    response = referencing.post(
        f"/v1/jobs/{job['id']}/queries",
        json={"elements": [{"labels": labels[0].tolist()}], "persist": True},
    )
    problem(response, 422, "persist")
