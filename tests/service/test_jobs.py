"""POST/GET/DELETE /v1/jobs on the embedded default (real stages, in-process store)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import scipy.sparse as sp

from tests.conftest import (
    BASEBALL_BODY,
    BASEBALL_CSV,
    BASEBALL_IDS,
    BASEBALL_PAPER,
    BASEBALL_S,
    BASEBALL_TEAMS,
    DATA,
    TWO_GROUPS,
    npy,
    wait_for,
)
from tests.service.conftest import IdleQueue


def submit(client, body=None, **kwargs):
    response = (
        client.post("/v1/jobs", json=body, **kwargs)
        if body is not None
        else client.post("/v1/jobs", **kwargs)
    )
    assert response.status_code == 202, response.get_json()
    return response


def test_submit_poll_baseball(client):
    response = submit(client, BASEBALL_BODY)
    accepted = response.get_json()
    assert response.headers["Location"] == f"/v1/jobs/{accepted['id']}"
    assert accepted["status"] in ("queued", "running", "succeeded")
    job = wait_for(client.get, accepted["id"])
    assert job["status"] == "succeeded" and job["progress"] == 1.0
    assert job["stage"] == "iteration" and job["cached"] is False
    assert set(job["timings"]) == {"balancing", "spectral", "iteration"}
    result = job["result"]
    assert result["k"] == 2
    assert sorted(map(sorted, result["clusters"])) == BASEBALL_TEAMS
    assert result["eigenvalues"][:3] == pytest.approx(BASEBALL_PAPER["eigenvalues"][:3], abs=1e-4)
    assert result["balancing"]["residual"] < 1e-10
    assert result["solutions"][0]["frequency"] == 1.0


def test_identical_request_is_answered_from_the_cache(client):
    first = wait_for(client.get, submit(client, BASEBALL_BODY).get_json()["id"])
    again = submit(client, BASEBALL_BODY).get_json()
    assert again["status"] == "succeeded"
    job = client.get(f"/v1/jobs/{again['id']}").get_json()
    assert job["cached"] is True and job["result"]["clusters"] == first["result"]["clusters"]


def test_iteration_options_reuse_balanced_matrix_and_spectrum(client):
    wait_for(client.get, submit(client, BASEBALL_BODY).get_json()["id"])
    body = dict(BASEBALL_BODY, options={"split": "gaps", "starts": 3, "trace": True})
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert job["status"] == "succeeded"
    assert set(job["timings"]) == {"iteration"}
    result = job["result"]
    assert len(result["membership"]) == 6 and len(result["membership"][0]) == 2
    assert result["trace"][0]["t"] == 0
    assert any(
        step["clusters"] and sorted(map(sorted, step["clusters"])) == BASEBALL_TEAMS
        for step in result["trace"]
    )


def test_options_k_is_honoured(client):
    body = dict(BASEBALL_BODY, options={"k": 3})
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert job["result"]["k"] == 3 and len(job["result"]["clusters"]) == 3


def test_sparse_consensus_without_ids(client):
    S = sp.coo_array(np.array(BASEBALL_S, dtype=float))
    body = {
        "consensus": {
            "n": 6,
            "rows": S.row.tolist(),
            "cols": S.col.tolist(),
            "values": S.data.tolist(),
        }
    }
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert sorted(map(sorted, job["result"]["clusters"])) == [[0, 1, 2], [3, 4, 5]]


def test_label_runs(client):
    labels = [[0, 0, 1], [0, 0, 1], [0, 1, 1], [1, 2, 0], [1, 2, 0], [1, 2, 2]]
    body = {"labels": labels, "options": {"k": 2}}
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert job["status"] == "succeeded"
    assert sorted(map(sorted, job["result"]["clusters"])) == [[0, 1, 2], [3, 4, 5]]


def test_data_with_ensemble_reports_runs(client):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.2, (8, 2)), rng.normal(4, 0.2, (8, 2))])
    body = {"data": X.tolist(), "ensemble": [{"algorithm": "kmeans", "k": [2, 3], "runs": 2}]}
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert job["status"] == "succeeded", job.get("error")
    assert job["ensemble"] == {"done": 4, "total": 4}
    assert set(job["timings"]) == {"ensemble", "balancing", "spectral", "iteration"}
    assert sorted(map(sorted, job["result"]["clusters"])) == [list(range(8)), list(range(8, 16))]


def test_data_with_snn(client):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 0.2, (8, 2)), rng.normal(4, 0.2, (8, 2))])
    body = {"data": X.tolist(), "snn": {"kappa": 4}, "options": {"k": 2}}
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert sorted(map(sorted, job["result"]["clusters"])) == [list(range(8)), list(range(8, 16))]


@pytest.mark.parametrize("fmt", ["npy", "npz", "csv", "sparse-npz"])
def test_multipart_upload(client, fmt):
    S = np.array(BASEBALL_S, dtype=float)
    if fmt == "npy":
        raw = npy(S)
    elif fmt == "npz":
        buffer = io.BytesIO()
        np.savez(buffer, S=S)
        raw = buffer.getvalue()
    elif fmt == "sparse-npz":
        buffer = io.BytesIO()
        sp.save_npz(buffer, sp.csr_matrix(S))
        raw = buffer.getvalue()
    else:
        raw = BASEBALL_CSV.read_bytes()
    suffix = "npz" if "npz" in fmt else fmt
    form = {
        "file": (io.BytesIO(raw), f"S.{suffix}"),
        "input": "consensus",
        "options": '{"split": "gaps"}',
    }
    if fmt != "csv":
        form["ids"] = json.dumps(BASEBALL_IDS)
    response = submit(client, data=form, content_type="multipart/form-data")
    job = wait_for(client.get, response.get_json()["id"])
    assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS


def test_multipart_data_csv_with_ensemble(client):
    raw = (DATA / "iris" / "X.csv").read_bytes()
    form = {
        "file": (io.BytesIO(raw), "X.csv"),
        "input": "data",
        "ensemble": '[{"algorithm": "kmeans", "k": 3, "runs": 3}]',
    }
    job = wait_for(
        client.get, submit(client, data=form, content_type="multipart/form-data").get_json()["id"]
    )
    assert job["status"] == "succeeded" and len(job["result"]["labels"]) == 150


def test_get_unknown_job_is_404(client):
    response = client.get("/v1/jobs/does-not-exist")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["errors"] == {"id": ["unknown job"]}


def test_delete_finished_job(client):
    job_id = submit(client, BASEBALL_BODY).get_json()["id"]
    wait_for(client.get, job_id)
    assert client.delete(f"/v1/jobs/{job_id}").status_code == 204
    assert client.get(f"/v1/jobs/{job_id}").status_code == 404
    assert client.delete(f"/v1/jobs/{job_id}").status_code == 404


def test_delete_queued_job_cancels_and_revokes(idle_client, idle_queue):
    response = submit(idle_client, BASEBALL_BODY)
    job_id = response.get_json()["id"]
    assert idle_queue.submitted == [job_id]
    assert idle_client.get(f"/v1/jobs/{job_id}").get_json()["status"] == "queued"
    cancelled = idle_client.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200 and cancelled.get_json()["status"] == "cancelled"
    # the task the API named before sending it, as the record holds it
    assert idle_queue.revoked == [(job_id, [idle_queue.tasks[job_id]])]
    assert idle_client.delete(f"/v1/jobs/{job_id}").status_code == 204


def test_the_record_names_its_task_before_the_task_is_sent(make_client):
    """The API names sca.start's task and writes it with the queued event, so the
    worker finds its own id in the record (no write after the task is sent)."""
    seen = {}

    class Recording(IdleQueue):
        def submit(self, job_id, task_id=None):
            seen[job_id] = (task_id, self.store.get_job(job_id).get("task_id"))
            return super().submit(job_id, task_id)

    queue = Recording()
    client = make_client(SCA_QUEUE=queue)
    queue.store = client.raw.application.extensions["sca"].store
    job_id = submit(client, BASEBALL_BODY).get_json()["id"]
    named, recorded = seen[job_id]
    assert named and recorded == named
    assert queue.store.get_job(job_id)["task_id"] == named


def test_failed_job_reports_a_problem(client):
    body = dict(BASEBALL_BODY, options={"max_iterations": 1, "seed": 99})
    job = wait_for(client.get, submit(client, body).get_json()["id"])
    assert job["status"] == "failed" and "result" not in job
    error = job["error"]
    assert error["status"] == 422 and error["stage"] == "iteration"
    assert "options.max_iterations" in error["errors"]


def test_papers_algorithm_and_k_range_are_options(client):
    wait_for(client.get, submit(client, BASEBALL_BODY).get_json()["id"])
    paper = dict(BASEBALL_BODY, options={"rule": "perron", "split": "gaps", "starts": 1})
    job = wait_for(client.get, submit(client, paper).get_json()["id"])
    assert job["status"] == "succeeded"
    assert set(job["timings"]) == {"spectral", "iteration"}  # balanced matrix reused
    assert job["result"]["rule"] == "perron" and job["result"]["k"] == 2
    assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
    ranged = dict(BASEBALL_BODY, options={"min_k": 3, "max_k": 4, "reconsensus": True, "starts": 4})
    job = wait_for(client.get, submit(client, ranged).get_json()["id"])
    assert job["status"] == "succeeded" and job["result"]["k"] in (3, 4)
    assert len(job["result"]["solutions"]) == 1  # re-consensus ends with one solution


@pytest.mark.parametrize(
    "options, field",
    [
        ({"rule": "elbow"}, "options.rule"),
        ({"min_k": 0}, "options.min_k"),
        ({"min_k": 7}, "options.min_k"),  # beyond n = 6
        ({"min_k": 3, "max_k": 2}, "options.max_k"),
        ({"reconsensus": "yes"}, "options.reconsensus"),
    ],
)
def test_bad_k_rule_options(client, options, field):
    response = client.post("/v1/jobs", json=dict(BASEBALL_BODY, options=options))
    assert response.status_code == 422
    assert response.content_type == "application/problem+json"
    assert field in response.get_json()["errors"]


def _store(client):
    return client.raw.application.extensions["sca"].store


def test_data_alone_runs_the_default_ensemble_on_standardised_columns(client):
    from sca.ensemble_spec import default_ensemble, ensemble_size

    job_id = submit(client, {"data": TWO_GROUPS}).get_json()["id"]
    job = wait_for(client.get, job_id)
    assert job["status"] == "succeeded", job.get("error")
    spec = default_ensemble(len(TWO_GROUPS))
    total = ensemble_size(spec)
    assert job["ensemble"] == {"done": total, "total": total}
    assert set(job["timings"]) == {"ensemble", "balancing", "spectral", "iteration"}
    assert sorted(map(sorted, job["result"]["clusters"])) == [list(range(5)), list(range(5, 10))]
    # The record says what ran: the default ensemble, its seed and the scale.
    record = _store(client).get_job(job_id)
    assert record["source"] == {"ensemble": spec, "ensemble_seed": 0, "scale": "standard"}
    scaling = _store(client).load_arrays(f"scaling:{record['hashes']['input']}")
    X = np.array(TWO_GROUPS)
    assert np.allclose(scaling["centre"], X.mean(axis=0))
    assert np.allclose(scaling["spread"], X.std(axis=0))


def test_data_alone_as_a_multipart_upload(client):
    buffer = io.StringIO()
    np.savetxt(buffer, np.array(TWO_GROUPS), delimiter=",")
    form = {"file": (io.BytesIO(buffer.getvalue().encode()), "X.csv"), "input": "data"}
    response = submit(client, data=form, content_type="multipart/form-data")
    job = wait_for(client.get, response.get_json()["id"])
    assert job["status"] == "succeeded", job.get("error")
    assert sorted(map(sorted, job["result"]["clusters"])) == [list(range(5)), list(range(5, 10))]


def test_scale_is_part_of_the_ensembles_cache_key(client):
    store = _store(client)
    ensemble = [{"algorithm": "kmeans", "k": [2, 3], "runs": 3}]

    def run(options):
        body = {"data": TWO_GROUPS, "ensemble": ensemble, "options": options}
        job_id = submit(client, body).get_json()["id"]
        job = wait_for(client.get, job_id)
        assert job["status"] == "succeeded", job.get("error")
        return job, store.get_job(job_id)

    standard, standard_record = run({})
    none, none_record = run({"scale": "none"})
    assert standard_record["source"]["scale"] == "standard"
    assert none_record["source"]["scale"] == "none"
    assert standard_record["hashes"]["input"] != none_record["hashes"]["input"]
    # the second job ran its own ensemble rather than reusing the first one's
    assert not none["cached"] and none["ensemble"] == {"done": 6, "total": 6}
    assert "ensemble" in none["timings"]
    for record in (standard_record, none_record):
        assert store.has(f"op:{record['hashes']['input']}")
    # the default scale named or left out is the same job: the cache answers
    again, again_record = run({"scale": "standard"})
    assert again["cached"] and again_record["hashes"] == standard_record["hashes"]


def test_new_elements_are_scaled_as_the_jobs_data_was(client):
    job_id = submit(client, {"data": TWO_GROUPS}).get_json()["id"]
    job = wait_for(client.get, job_id)
    assert job["status"] == "succeeded", job.get("error")
    labels = job["result"]["labels"]
    # In raw units, one near each group.  Left unscaled, (0.14, 11) would lie nearer
    # the standardised second group (about (1, 1)) than the first (about (-1, -1)).
    rows = [[0.14, 11.0], [0.93, 98.0]]
    out = client.post(
        f"/v1/jobs/{job_id}/queries", json={"elements": [{"data": row} for row in rows]}
    )
    assert out.status_code == 200, out.get_data(as_text=True)
    assert [e["cluster"] for e in out.get_json()["elements"]] == [labels[0], labels[5]]
