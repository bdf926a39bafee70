"""Every documented error status, as application/problem+json naming the field."""

from __future__ import annotations

import http.client
import io
import json
import select
import socket

import numpy as np
import pytest
from werkzeug.exceptions import default_exceptions

from sca_service import create_app
from tests.conftest import BASEBALL_S, npy, wait_for
from tests.service.conftest import bounded, problem
from tests.service.serving import serve


def test_unreadable_json_is_400(client):
    problem(client.post("/v1/jobs", data="{not json", content_type="application/json"), 400, "body")


def test_unreadable_json_part_is_400(client):
    form = {
        "file": (io.BytesIO(b"1,0\n0,1\n"), "S.csv"),
        "input": "consensus",
        "options": "{broken",
    }
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 400, "options")


def test_wrong_media_type_is_415(client):
    problem(client.post("/v1/jobs", data="x", content_type="text/plain"), 415, "Content-Type")


def test_wrong_file_type_is_415(client):
    form = {"file": (io.BytesIO(b"..."), "S.xlsx"), "input": "consensus"}
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 415, "file")


def test_body_over_the_limit_is_413(make_client):
    client = make_client(SCA_MAX_BODY_BYTES=50)
    body = problem(client.post("/v1/jobs", json={"consensus": BASEBALL_S}), 413)
    assert body["title"]


@pytest.mark.parametrize(
    "config,body,field",
    [
        ({"SCA_MAX_N": 5}, {"consensus": BASEBALL_S}, "consensus"),
        ({"SCA_MAX_DENSE_N": 5}, {"consensus": BASEBALL_S}, "consensus"),
        ({"SCA_MAX_M": 1}, {"data": [[1, 2]] * 4, "snn": {"kappa": 1}}, "data"),
        (
            {"SCA_MAX_RUNS": 3},
            {"data": [[1, 2]] * 4, "ensemble": [{"algorithm": "kmeans", "k": [2, 3], "runs": 2}]},
            "ensemble",
        ),
        ({"SCA_MAX_RUNS": 1}, {"labels": [[0, 0], [0, 1], [1, 1]]}, "labels"),
    ],
)
def test_size_limits_are_413(make_client, config, body, field):
    problem(make_client(**config).post("/v1/jobs", json=body), 413, field)


def test_ensemble_runs_are_counted_before_the_ensemble_is_expanded(client):
    body = {
        "data": [[1.0], [2.0]],
        "ensemble": [{"algorithm": "kmeans", "k": [1, 2], "runs": 5_000_000}],
    }
    with bounded(megabytes=4):
        response = client.post("/v1/jobs", json=body)
    assert problem(response, 413, "ensemble")["detail"] == "at most 1000 runs (got 10000000)"


def _post_chunked(url: str, chunks: int, size: int = 1 << 16):
    """POST ``chunks`` chunks of ``size`` bytes with Transfer-Encoding: chunked for as
    long as the server has not answered; ``(bytes sent, status, problem document)``."""
    host, port = url.rsplit("/", 1)[1].split(":")
    piece = b"%x\r\n%s\r\n" % (size, b" " * size)
    sent = 0
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
        connection.sendall(
            b"POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
            b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        try:
            while sent < chunks * size and not select.select([connection], [], [], 0)[0]:
                connection.sendall(piece)
                sent += size
        except OSError:  # the server answered and closed
            pass
        response = http.client.HTTPResponse(connection)
        response.begin()
        return sent, response.status, json.loads(response.read())


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit():
    """The limit is the application's (the WSGI input it reads), whatever the server."""
    limit = 1 << 20
    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_MAX_BODY_BYTES": limit})
    with serve(app) as url, bounded():
        sent, status, body = _post_chunked(url, chunks=1024)  # 64 MiB offered
    assert status == body["status"] == 413 and "body" in body["errors"]
    assert sent < 16 * limit  # answered once past the limit, not after the whole body


NAN_BODY = ('{"consensus": [[1, NaN], [NaN, 1]]}', "consensus")
INVALID = [
    ({"consensus": [[1, 2, 3], [2, 1, 3]]}, "consensus"),  # not square
    ({"consensus": [[1, 2], [3, 1]]}, "consensus"),  # asymmetric
    ({"consensus": [[1, -2], [-2, 1]]}, "consensus"),  # negative
    ({"consensus": [[0, 1], [1, 0]]}, "consensus"),  # zero diagonal
    ({"consensus": [[1]]}, "consensus"),  # 1 x 1
    ({"consensus": []}, "consensus"),  # empty
    ({"consensus": [[1, 2], [2]]}, "consensus"),  # ragged
    ({"consensus": [["a", "b"], ["c", "d"]]}, "consensus"),  # text
    ({"consensus": {"n": 2, "rows": [0, 5], "cols": [0, 1], "values": [1, 1]}}, "consensus.rows"),
    ({"consensus": {"n": 2, "rows": [0], "cols": [0]}}, "consensus.values"),
    ({"consensus": BASEBALL_S, "options": {"k": 7}}, "options.k"),  # k > n
    ({"consensus": BASEBALL_S, "options": {"k": 0}}, "options.k"),
    ({"consensus": BASEBALL_S, "options": {"k_hat": 9}}, "options.k_hat"),
    # the gap rule reads λ_j - λ_{j+1} for j >= 2: k_hat = 2 is refused at submission
    ({"consensus": BASEBALL_S, "options": {"rule": "gap", "k_hat": 2}}, "options.k_hat"),
    ({"consensus": BASEBALL_S, "options": {"split": "spectral"}}, "options.split"),
    ({"consensus": BASEBALL_S, "options": {"starts": "two"}}, "options.starts"),
    ({"consensus": BASEBALL_S, "options": {"colour": 1}}, "options.colour"),  # unknown option
    ({"consensus": BASEBALL_S, "extra": 1}, "extra"),  # unknown field
    ({"consensus": BASEBALL_S, "ids": ["a", "a", "b", "c", "d", "e"]}, "ids"),  # repeated ids
    ({"consensus": BASEBALL_S, "ids": ["a", "b"]}, "ids"),
    ({"consensus": BASEBALL_S, "labels": [[0], [1]]}, "input"),  # two inputs
    ({}, "input"),  # no input
    (
        {
            "data": [[1, 2], [3, 4]],
            "ensemble": [{"algorithm": "kmeans", "k": 2, "runs": 1}],
            "snn": {"kappa": 1},
        },
        "ensemble",
    ),  # both (neither is the default ensemble)
    ({"data": [[1, 2], [3, 4]], "options": {"scale": "minmax"}}, "options.scale"),
    ({"data": [[1, 2], [3, 4]], "options": {"scale": 1}}, "options.scale"),
    ({"consensus": BASEBALL_S, "snn": {"kappa": 2}}, "snn"),
    (
        {
            "data": [[-1.0, 2], [3, 4], [5, 6]],
            "ensemble": [{"algorithm": "nmf", "k": 2, "runs": 1}],
        },
        "data",
    ),  # NMF, negative data
    (
        {"data": [[1, 2], [3, 4]], "ensemble": [{"algorithm": "kmeans", "k": 5, "runs": 1}]},
        "ensemble",
    ),  # k > n
    (
        {"data": [[1, 2], [3, 4]], "ensemble": [{"algorithm": "pca", "k": 2, "runs": 1}]},
        "ensemble[0].algorithm",
    ),
    (
        {"data": [[1, 2], [3, 4]], "ensemble": [{"algorithm": "kmeans", "k": [], "runs": 1}]},
        "ensemble[0].k",
    ),
    ({"data": [[1, 2], [3, 4]], "snn": {"kappa": 2}}, "snn.kappa"),
    ({"data": [[1, 2], [3, float("inf")]], "snn": {"kappa": 1}}, "data"),
    ({"labels": [[0], [-1]]}, "labels"),  # element in no run
    ({"labels": [[0.5], [1]]}, "labels"),
]


@pytest.mark.parametrize("body,field", INVALID)
def test_invalid_values_are_422(client, body, field):
    problem(
        client.post("/v1/jobs", data=json.dumps(body), content_type="application/json"), 422, field
    )


def test_nan_in_json_is_422(client):
    raw, field = NAN_BODY
    problem(client.post("/v1/jobs", data=raw, content_type="application/json"), 422, field)


def test_body_must_be_an_object(client):
    problem(client.post("/v1/jobs", json=[1, 2]), 422, "body")


def _upload(client, name: str, raw: bytes, kind: str = "consensus", **parts):
    form = {"file": (io.BytesIO(raw), name), "input": kind, **parts}
    return client.post("/v1/jobs", data=form, content_type="multipart/form-data")


def test_pickled_npy_is_refused(client):
    buffer = io.BytesIO()
    np.save(buffer, np.array([[{"a": 1}]], dtype=object), allow_pickle=True)
    problem(_upload(client, "S.npy", buffer.getvalue()), 422, "file")


def test_corrupt_npy_and_npz_are_422(client):
    problem(_upload(client, "S.npy", b"\x93NUMPY garbage"), 422, "file")
    problem(_upload(client, "S.npz", b"PK\x03\x04 not a zip"), 422, "file")


def test_nan_in_npy_is_422(client):
    problem(
        _upload(client, "S.npy", npy(np.array([[1.0, np.nan], [np.nan, 1.0]]))), 422, "consensus"
    )


def test_text_in_csv_is_422(client):
    problem(
        _upload(client, "X.csv", b"a,b\n1,2\n3,oops\n", "data", snn='{"kappa": 1}'), 422, "file"
    )


def test_multipart_without_file_or_input(client):
    problem(
        client.post("/v1/jobs", data={"input": "consensus"}, content_type="multipart/form-data"),
        422,
        "file",
    )
    problem(_upload(client, "S.csv", b"1,0\n0,1\n", kind="matrix"), 422, "input")


def test_unknown_job_is_404_for_every_route(client):
    problem(client.get("/v1/jobs/nope"), 404, "id")
    problem(client.delete("/v1/jobs/nope"), 404, "id")
    problem(client.post("/v1/jobs/nope/custom-clusters", json={"element": 0}), 404, "id")
    problem(client.get("/v1/jobs/nope/elements/0/similar"), 404, "id")


def test_queries_on_an_unfinished_job_are_409(idle_client):
    job_id = idle_client.post("/v1/jobs", json={"consensus": BASEBALL_S}).get_json()["id"]
    problem(
        idle_client.post(f"/v1/jobs/{job_id}/custom-clusters", json={"element": 0}), 409, "status"
    )
    problem(idle_client.get(f"/v1/jobs/{job_id}/elements/0/similar"), 409, "status")


def test_query_errors(client):
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S}).get_json()["id"]
    wait_for(client.get, job_id)
    base = f"/v1/jobs/{job_id}"
    problem(client.post(f"{base}/custom-clusters", json={"element": 9}), 404, "element")
    problem(client.post(f"{base}/custom-clusters", json={"element": "Ruth"}), 404, "element")
    problem(
        client.post(f"{base}/custom-clusters", json={"element": 0, "min_size": 0}), 422, "min_size"
    )
    problem(
        client.post(f"{base}/custom-clusters", json={"element": 0, "min_size": 4, "max_size": 3}),
        422,
        "max_size",
    )
    problem(client.post(f"{base}/custom-clusters", json={"element": [0]}), 422, "element")
    problem(client.post(f"{base}/custom-clusters", json={"element": 0, "k": 7}), 422, "k")
    problem(client.post(f"{base}/custom-clusters", json={"element": 0, "bogus": 1}), 422, "bogus")
    problem(
        client.post(f"{base}/custom-clusters", data="{", content_type="application/json"),
        400,
        "body",
    )
    problem(client.post(f"{base}/custom-clusters", data="x", content_type="text/plain"), 415)
    problem(
        client.post(
            f"{base}/custom-clusters",
            json={"element": 0, "min_size": 2, "max_size": 2, "max_iterations": 1},
        ),
        422,
        "max_iterations",
    )
    problem(client.get(f"{base}/elements/6/similar"), 404, "element")
    problem(client.get(f"{base}/elements/0/similar?method=manhattan"), 422, "method")
    problem(client.get(f"{base}/elements/0/similar?method=euclidean"), 422, "method")
    problem(client.get(f"{base}/elements/0/similar?limit=0"), 422, "limit")
    problem(client.get(f"{base}/elements/0/similar?limit=x"), 422, "limit")
    problem(client.get(f"{base}/elements/0/similar?sort=asc"), 422, "sort")


def test_routing_errors_are_problems(client):
    problem(client.raw.get("/v1/nowhere"), 404)
    body = problem(client.raw.put("/v1/jobs"), 405)
    assert body["title"] == "Method Not Allowed"
    assert "POST" in client.raw.put("/v1/jobs").headers["Allow"]


@pytest.mark.parametrize("code", sorted(c for c in default_exceptions if c >= 400))
def test_every_http_exception_is_a_problem(code):
    app = create_app({"TESTING": True, "REDIS_URL": None})

    @app.get("/boom")
    def boom():
        raise default_exceptions[code]()

    response = app.test_client().get("/boom")
    problem(response, code)
    app.extensions["sca"].queue.shutdown()


def test_unexpected_exception_is_a_generic_500(caplog):
    app = create_app({"TESTING": False, "REDIS_URL": None})

    @app.get("/crash")
    def crash():
        raise RuntimeError("secret internals")

    response = app.test_client().get("/crash")
    body = problem(response, 500)
    assert "secret" not in body["detail"]
    assert "secret internals" in caplog.text
    app.extensions["sca"].queue.shutdown()


def test_multipart_over_the_limit_is_413(make_client):
    client = make_client(SCA_MAX_BODY_BYTES=100)
    form = {"file": (io.BytesIO(b"1,0\n0,1\n" * 50), "S.csv"), "input": "consensus"}
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 413)


def test_several_field_errors_read_as_sentences(client):
    answer = client.post("/v1/jobs", json={"consensus": [[1]], "ids": 3, "bogus": 1})
    assert answer.status_code == 422
    problem = answer.get_json()
    assert set(problem["errors"]) >= {"ids", "bogus"}
    detail = problem["detail"]
    assert ".;" not in detail and ";" not in detail and ".." not in detail
    for field in problem["errors"]:
        assert f"{field}: " in detail
    assert detail.endswith(".")


def test_a_json_body_over_its_limit_is_413_before_it_is_parsed(make_client):
    """A JSON body parsed takes about ten times its size in Python objects: it has
    its own limit, far below the uploads' one, checked on Content-Length."""
    limit = 16 * 2**20  # the default
    client = make_client(SCA_MAX_JSON_BYTES=limit)
    row = "[" + ",".join(["0"] * 1023) + ",1]"
    raw = ('{"consensus": [' + ",".join([row] * (limit // len(row) + 64)) + "]}").encode()
    assert limit < len(raw) < 2 * limit
    with bounded(seconds=1.0, megabytes=48):
        body = problem(
            client.post("/v1/jobs", data=raw, content_type="application/json"), 413, "body"
        )
    assert "SCA_MAX_JSON_BYTES" in body["detail"]
    small = make_client(SCA_MAX_JSON_BYTES=200)
    for path in ("/v1/jobs", "/v1/jobs/nope/custom-clusters", "/v1/jobs/nope/queries"):
        answer = small.post(path, data=b" " * 201, content_type="application/json")
        problem(answer, 413, "body")


def test_a_chunked_json_body_is_refused_past_the_json_limit():
    limit = 1 << 20
    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_MAX_JSON_BYTES": limit})
    with serve(app) as url, bounded():
        sent, status, body = _post_chunked(url, chunks=1024)  # 64 MiB offered
    assert status == body["status"] == 413 and "body" in body["errors"]
    assert sent < 16 * limit


def test_json_parts_of_an_upload_have_the_json_limit_and_its_file_does_not(make_client):
    client = make_client(SCA_MAX_JSON_BYTES=1000)
    S = np.kron(np.eye(2), np.ones((20, 20))) + 0.01  # 12.8 kB as .npy
    ids = json.dumps([f"element {i:04d}" for i in range(40)])
    assert len(ids) > 400
    form = {"file": (io.BytesIO(npy(S)), "S.npy"), "input": "consensus", "ids": ids}
    response = client.post("/v1/jobs", data=form, content_type="multipart/form-data")
    assert response.status_code == 202, response.get_data(as_text=True)
    big = json.dumps([f"element {i:04d} " + "x" * 30 for i in range(40)])
    form = {"file": (io.BytesIO(npy(S)), "S.npy"), "input": "consensus", "ids": big}
    problem(client.post("/v1/jobs", data=form, content_type="multipart/form-data"), 413, "ids")
