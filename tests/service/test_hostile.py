"""The rest of the hostile-input catalogue (the first part is test_errors.py):
each case asserts the exact status and the field named."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.conftest import BASEBALL_S, npy, wait_for
from tests.service.conftest import problem

CASES = [
    ({"consensus": BASEBALL_S, "options": {"k_hat": 7}}, "options.k_hat"),       # k_hat > n
    ({"consensus": BASEBALL_S, "options": {"k": True}}, "options.k"),            # bool for int
    ({"consensus": BASEBALL_S, "options": {"k": 2.0}}, "options.k"),             # float for int
    ({"consensus": BASEBALL_S, "options": {"k": 2 ** 70}}, "options.k"),         # huge
    ({"consensus": BASEBALL_S, "options": []}, "options"),
    ({"consensus": [[1, 0, 0], [0, 0, 0], [0, 0, 1]]}, "consensus"),             # zero row
    ({"consensus": [[]]}, "consensus"),                                          # empty row
    ({"consensus": "[[1]]"}, "consensus"),                                       # string
    ({"consensus": {"n": 2, "rows": [0, 1, 0], "cols": [0, 1, 1], "values": [1, 1, -1]}},
     "consensus"),                                                               # sparse negative
    ({"consensus": {"n": 2, "rows": [0, 1, 0], "cols": [0, 1, 1], "values": [1, 1, 0.5]}},
     "consensus"),                                                               # sparse asymmetric
    ({"data": [[1, 2], [3, -1e400]], "snn": {"kappa": 1}}, "data"),              # -inf
    ({"data": [[1, 2], [3, 4], [5, 6]],
      "ensemble": [{"algorithm": "kmeans", "k": 2, "runs": 0}]}, "ensemble[0].runs"),
    ({"labels": [[0, 1], [1]]}, "labels"),                                       # ragged
    ({"labels": [["a"], ["b"]]}, "labels"),                                      # text
    ({"consensus": BASEBALL_S, "ids": [1, 2, 3, 1, 5, 6]}, "ids"),               # repeat (ints)
    ({"consensus": BASEBALL_S, "ids": [[1], 2, 3, 4, 5, 6]}, "ids[0]"),
    ("abc", "body"),                                                             # not an object
    (json.loads("[" * 500 + "]" * 500), "body"),                                 # deep nesting
]


@pytest.mark.parametrize("body,field", CASES)
def test_hostile_json_is_422(client, body, field):
    problem(client.post("/v1/jobs", data=json.dumps(body), content_type="application/json"),
            422, field)


@pytest.mark.parametrize("raw", ['{"consensus": [[1, Infinity], [Infinity, 1]]}',
                                 '{"consensus": [[1, -Infinity], [-Infinity, 1]]}'])
def test_infinity_in_json_is_422(client, raw):
    problem(client.post("/v1/jobs", data=raw, content_type="application/json"), 422, "consensus")


def test_null_body_is_400(client):
    problem(client.post("/v1/jobs", data="null", content_type="application/json"), 400, "body")


@pytest.mark.parametrize("name,raw,kind,parts,field", [
    ("S.npy", npy(np.array([[1.0, np.inf], [np.inf, 1.0]])), "consensus", {}, "consensus"),
    ("S.npy", npy(np.array([[1.0, -np.inf], [-np.inf, 1.0]])), "consensus", {}, "consensus"),
    ("X.npy", npy(np.zeros((0, 3))), "data", {"snn": '{"kappa": 1}'}, "data"),
    ("X.csv", b"", "data", {"snn": '{"kappa": 1}'}, "file"),
    ("S.npy", npy(np.array([[1.0, 2.0], [3.0, 1.0]])), "consensus", {}, "consensus"),
    ("S.npy", npy(np.ones((2, 3))), "consensus", {}, "consensus"),
])
def test_hostile_files_are_422(client, name, raw, kind, parts, field):
    form = {"file": (io.BytesIO(raw), name), "input": kind, **parts}
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 422, field)


def test_disconnected_consensus_is_accepted_and_split_by_component(client):
    blocks = [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    response = client.post("/v1/jobs", json={"consensus": blocks})
    assert response.status_code == 202
    job = wait_for(client.get, response.get_json()["id"])
    assert job["status"] == "succeeded"
    assert sorted(map(sorted, job["result"]["clusters"])) == [[0, 1], [2, 3]]


def test_custom_cluster_iterations_are_limited(make_client):
    client = make_client(SCA_MAX_ITERATIONS=50)
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S}).get_json()["id"]
    wait_for(client.get, job_id)
    problem(client.post(f"/v1/jobs/{job_id}/custom-clusters",
                        json={"element": 0, "max_iterations": 51}), 422, "max_iterations")
