"""The rest of the hostile-input catalogue (the first part is test_errors.py):
each case asserts the exact status and the field named."""

from __future__ import annotations

import io
import json
import zipfile
from urllib.parse import quote

import numpy as np
import pytest

from tests.conftest import BASEBALL_S, npy, wait_for
from tests.service.conftest import bounded, problem

CASES = [
    ({"consensus": BASEBALL_S, "options": {"k_hat": 7}}, "options.k_hat"),  # k_hat > n
    ({"consensus": BASEBALL_S, "options": {"k": True}}, "options.k"),  # bool for int
    ({"consensus": BASEBALL_S, "options": {"k": 2.0}}, "options.k"),  # float for int
    ({"consensus": BASEBALL_S, "options": {"k": 2**70}}, "options.k"),  # huge
    ({"consensus": BASEBALL_S, "options": []}, "options"),
    ({"consensus": [[1, 0, 0], [0, 0, 0], [0, 0, 1]]}, "consensus"),  # zero row
    ({"consensus": [[]]}, "consensus"),  # empty row
    ({"consensus": "[[1]]"}, "consensus"),  # string
    (
        {"consensus": {"n": 2, "rows": [0, 1, 0], "cols": [0, 1, 1], "values": [1, 1, -1]}},
        "consensus",
    ),  # sparse negative
    (
        {"consensus": {"n": 2, "rows": [0, 1, 0], "cols": [0, 1, 1], "values": [1, 1, 0.5]}},
        "consensus",
    ),  # sparse asymmetric
    ({"data": [[1, 2], [3, -1e400]], "snn": {"kappa": 1}}, "data"),  # -inf
    (
        {
            "data": [[1, 2], [3, 4], [5, 6]],
            "ensemble": [{"algorithm": "kmeans", "k": 2, "runs": 0}],
        },
        "ensemble[0].runs",
    ),
    ({"labels": [[0, 1], [1]]}, "labels"),  # ragged
    ({"labels": [["a"], ["b"]]}, "labels"),  # text
    ({"consensus": BASEBALL_S, "ids": [1, 2, 3, 1, 5, 6]}, "ids"),  # repeat (ints)
    ({"consensus": BASEBALL_S, "ids": [[1], 2, 3, 4, 5, 6]}, "ids[0]"),
    ("abc", "body"),  # not an object
    (json.loads("[" * 500 + "]" * 500), "body"),  # deep nesting
]


@pytest.mark.parametrize("body,field", CASES)
def test_hostile_json_is_422(client, body, field):
    problem(
        client.post("/v1/jobs", data=json.dumps(body), content_type="application/json"), 422, field
    )


@pytest.mark.parametrize(
    "raw",
    [
        '{"consensus": [[1, Infinity], [Infinity, 1]]}',
        '{"consensus": [[1, -Infinity], [-Infinity, 1]]}',
    ],
)
def test_infinity_in_json_is_422(client, raw):
    problem(client.post("/v1/jobs", data=raw, content_type="application/json"), 422, "consensus")


def test_null_body_is_400(client):
    problem(client.post("/v1/jobs", data="null", content_type="application/json"), 400, "body")


@pytest.mark.parametrize(
    "name,raw,kind,parts,field",
    [
        ("S.npy", npy(np.array([[1.0, np.inf], [np.inf, 1.0]])), "consensus", {}, "consensus"),
        ("S.npy", npy(np.array([[1.0, -np.inf], [-np.inf, 1.0]])), "consensus", {}, "consensus"),
        ("X.npy", npy(np.zeros((0, 3))), "data", {"snn": '{"kappa": 1}'}, "data"),
        ("X.csv", b"", "data", {"snn": '{"kappa": 1}'}, "file"),
        ("S.npy", npy(np.array([[1.0, 2.0], [3.0, 1.0]])), "consensus", {}, "consensus"),
        ("S.npy", npy(np.ones((2, 3))), "consensus", {}, "consensus"),
    ],
)
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
    problem(
        client.post(
            f"/v1/jobs/{job_id}/custom-clusters", json={"element": 0, "max_iterations": 51}
        ),
        422,
        "max_iterations",
    )


def _upload(client, name: str, raw: bytes, kind: str = "consensus", **parts):
    form = {"file": (io.BytesIO(raw), name), "input": kind, **parts}
    return client.post("/v1/jobs", data=form, content_type="multipart/form-data")


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def zero_bomb() -> bytes:
    """A .npz of a 125,000 x 1,000 array of zeros: 1 GB once read, 4 MB sent."""
    shape, block = (125_000, 1_000), bytes(1 << 24)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("X.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f8", "fortran_order": False, "shape": shape}
            )
            left = shape[0] * shape[1] * 8
            while left:
                member.write(block[:left])
                left -= min(left, len(block))
    return buffer.getvalue()


def test_a_compressed_array_is_refused_from_its_header(client, zero_bomb):
    with bounded():
        problem(_upload(client, "X.npz", zero_bomb, "data", snn='{"kappa": 1}'), 413, "file")


def test_a_small_array_bytes_limit_refuses_a_small_file(make_client):
    client = make_client(SCA_MAX_ARRAY_BYTES=8 * 36 - 1)
    problem(_upload(client, "S.npy", npy(np.array(BASEBALL_S))), 413, "file")
    client = make_client(SCA_MAX_ARRAY_BYTES=8 * 36)
    response = _upload(client, "S.npy", npy(np.array(BASEBALL_S)))
    assert response.status_code == 202
    wait_for(client.get, response.get_json()["id"])


def _npy_header(shape, descr: str = "<f8") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


CSR = dict(
    data=np.ones(2), indptr=np.array([0, 1, 2]), shape=np.array([2, 2]), format=np.array("csr")
)
BAD_FILES = {
    "npy-800GB-header-64-bytes": ("S.npy", _npy_header((10**6, 10**5)) + bytes(64), 422),
    "npz-two-arrays": ("S.npz", _npz(X=np.zeros(1), Y=np.zeros(1)), 422),
    "csr-index-out-of-range": ("S.npz", _npz(**CSR, indices=np.array([0, 7])), 422),
    "csr-float-indices": ("S.npz", _npz(**CSR, indices=np.array([0.0, 1.0])), 422),
    "csr-pointers-backwards": (
        "S.npz",
        _npz(**dict(CSR, indptr=np.array([0, 2, 1])), indices=np.array([0, 1])),
        422,
    ),
    "coo-negative-row": (
        "S.npz",
        _npz(row=np.array([0, -1]), col=np.array([0, 1]), data=np.ones(2), shape=np.array([2, 2])),
        422,
    ),
    "coo-2^40-rows": (
        "S.npz",
        _npz(row=np.array([0]), col=np.array([0]), data=np.ones(1), shape=np.array([2**40, 2**40])),
        413,
    ),
    "coo-text-data": (
        "S.npz",
        _npz(row=np.array([0]), col=np.array([0]), data=np.array(["x"]), shape=np.array([2, 2])),
        422,
    ),
    "csv-field-over-128KB": ("S.csv", b"1," + b"1" * 200_000 + b"\n1,1\n", 422),
}


@pytest.mark.parametrize("name,raw,status", BAD_FILES.values(), ids=BAD_FILES)
def test_hostile_file_contents_are_refused_within_bounds(client, name, raw, status):
    with bounded():
        problem(_upload(client, name, raw), status, "file")


def test_json_nested_100000_deep_is_422_before_parsing(client):
    raw = '{"consensus": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with bounded():
        problem(client.post("/v1/jobs", data=raw, content_type="application/json"), 422, "body")
    form = {
        "file": (io.BytesIO(b"1,0\n0,1\n"), "S.csv"),
        "input": "consensus",
        "options": "[" * 100_000 + "]" * 100_000,
    }
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 422, "options")


def test_brackets_inside_strings_do_not_count_as_depth(client):
    # Counted naively, the brackets inside these ids would nest 40 deep and more;
    # escaped backslashes and quotes must not end (or start) a string early.
    ids = ["[" * 40, "]" * 40 + "[" * 40, "\\", "\\" * 3 + '"' + "[" * 40, '"{' * 40, "x"]
    raw = json.dumps({"consensus": BASEBALL_S, "ids": ids})
    response = client.post("/v1/jobs", data=raw, content_type="application/json")
    assert response.status_code == 202, response.get_json()
    assert wait_for(client.get, response.get_json()["id"])["status"] == "succeeded"


def test_sparse_index_beyond_int64_is_422(client):
    body = {"consensus": {"n": 2, "rows": [0, 2**70], "cols": [0, 1], "values": [1, 1]}}
    with bounded():
        problem(client.post("/v1/jobs", json=body), 422, "consensus.rows")


@pytest.mark.parametrize("value", [1, 0, 1.0, "true"])
def test_trace_must_be_a_json_boolean(client, value):
    problem(
        client.post("/v1/jobs", json={"consensus": BASEBALL_S, "options": {"trace": value}}),
        422,
        "options.trace",
    )


def test_a_consensus_whose_sums_overflow_is_422(client):
    huge = [[v * 1e306 for v in row] for row in BASEBALL_S]  # entries up to 1e308
    body = problem(client.post("/v1/jobs", json={"consensus": huge}), 422, "consensus")
    assert "constant" in body["detail"]
    sparse = {"n": 2, "rows": [0, 1], "cols": [0, 1], "values": [1e308, 1e308]}
    problem(client.post("/v1/jobs", json={"consensus": sparse}), 422, "consensus")


SLASHED = ["a/b", "/lead", "trail/", "x//y", "../up", "Mays"]


def test_ids_with_slashes_can_be_queried(client):
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S, "ids": SLASHED}).get_json()[
        "id"
    ]
    assert wait_for(client.get, job_id)["status"] == "succeeded"
    for element in SLASHED:
        response = client.get(f"/v1/jobs/{job_id}/elements/{quote(element, safe='')}/similar")
        assert response.status_code == 200, (element, response.get_json())
        assert response.get_json()["element"] == element
    unencoded = client.raw.get(f"/v1/jobs/{job_id}/elements/a/b/similar?limit=1")
    assert unencoded.get_json()["element"] == "a/b"


#: Ids that cannot be shown, drawn or written in a path, as JSON text (a lone
#: surrogate is valid JSON), each in fourth place.
BAD_IDS = {
    "lone surrogate": '"\\ud800"',
    "low surrogate": '"x\\udfff"',
    "control character": '"bell\\u0007"',
    "delete": '"\\u007f"',
    "257 bytes": json.dumps("x" * 257),
    "200 KB": json.dumps("y" * 200_000),
    "129 two-byte characters": json.dumps("\u00e9" * 129),
}


@pytest.mark.parametrize("text", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_ids_that_cannot_be_shown_are_422_naming_the_id(client, text):
    ids = '["Rose", "Cobb", "Ruth", ' + text + ', "Mays", "Aaron"]'
    raw = '{"consensus": ' + json.dumps(BASEBALL_S) + ', "ids": ' + ids + "}"
    body = problem(
        client.post("/v1/jobs", data=raw, content_type="application/json"), 422, "ids[3]"
    )
    assert len(body["detail"]) < 1000


def test_the_longest_id_and_an_astral_character_are_accepted(client):
    ids = ["Rose", "Cobb", "Ruth", "\u00e9" * 128, "Mays \U0001f600", "\U0001f601"]
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S, "ids": ids}).get_json()["id"]
    job = wait_for(client.get, job_id)
    assert job["status"] == "succeeded"
    assert sorted(sum(job["result"]["clusters"], [])) == sorted(ids)


@pytest.mark.parametrize("cell", ["bell\x07", "z" * 300], ids=["control", "long"])
def test_a_csv_header_of_bad_ids_is_422_naming_the_id(client, cell):
    header = ",".join(["a", "b", cell, "d", "e", "f"])
    rows = "\n".join(",".join(map(str, row)) for row in BASEBALL_S)
    form = {"file": (io.BytesIO(f"{header}\n{rows}\n".encode()), "S.csv"), "input": "consensus"}
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 422, "ids[2]")


def test_an_ids_part_of_a_multipart_upload_is_checked(client):
    form = {
        "file": (io.BytesIO(npy(np.array(BASEBALL_S, dtype=float))), "S.npy"),
        "input": "consensus",
        "ids": '["a", "b", "c", "d", "\\ud800", "f"]',
    }
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 422, "ids[4]")


@pytest.mark.parametrize("persist", [False, True])
def test_a_new_elements_bad_id_is_422_naming_it(client, persist):
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S, "ids": SLASHED}).get_json()[
        "id"
    ]
    assert wait_for(client.get, job_id)["status"] == "succeeded"
    raw = (
        '{"elements": [{"consensus": '
        + json.dumps(BASEBALL_S[0])
        + ', "id": "\\ud800"}], "persist": '
        + json.dumps(persist)
        + "}"
    )
    problem(
        client.post(f"/v1/jobs/{job_id}/queries", data=raw, content_type="application/json"),
        422,
        "elements[0].id",
    )
