"""New elements placed into finished jobs: POST /v1/jobs/{id}/queries (embedded default)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sca import matching
from sca.planted import planted_runs, planted_truth
from tests.conftest import (
    BASEBALL_BODY,
    BASEBALL_IDS,
    BASEBALL_S,
    BASEBALL_TEAMS,
    wait_for,
)
from tests.service.conftest import finished_job, problem


@pytest.fixture
def baseball(client):
    return f"/v1/jobs/{finished_job(client)}"


def test_a_copy_of_rose_joins_her_team_and_the_job_is_unchanged(client, baseball):
    before = client.get(baseball).get_json()["result"]
    rose = BASEBALL_S[0]
    response = client.post(
        f"{baseball}/queries",
        json={
            "elements": [
                {"id": "Rose II", "consensus": rose, "self": 100},
                {"consensus": BASEBALL_S[4]},
            ],
            "min_size": 2,
            "max_size": 4,
            "limit": 3,
        },
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    out = response.get_json()
    assert out["n"] == 6 and out["k"] == 2 and len(out["elements"]) == 2
    first, second = out["elements"]
    team = next(i for i, c in enumerate(before["clusters"]) if "Rose" in c)
    assert first["id"] == "Rose II" and first["cluster"] == team
    assert first["similar"][0]["id"] == "Rose" and len(first["similar"]) == 3
    custom = first["custom_cluster"]
    assert custom["cluster"][0] == "Rose II" and "Rose" in custom["cluster"]
    assert set(custom["cluster"][1:]) <= set(
        BASEBALL_TEAMS[1] if "Rose" in BASEBALL_TEAMS[1] else BASEBALL_TEAMS[0]
    )
    assert 0.5 < first["confidence"] <= 1 and 0 < first["balancing"]["deviation"] < 0.5
    assert sum(first["cluster_mass"]) + first["balancing"]["self"] == pytest.approx(1.0)
    assert second["id"] == "new-1" and second["similar"][0]["id"] == "Ruth"
    assert second["cluster"] != first["cluster"]
    assert client.get(baseball).get_json()["result"] == before


def test_bad_new_elements_are_422_naming_the_field(client, baseball):
    cases = [
        ({"elements": [{"consensus": [1, 2, 3]}]}, "elements[0].consensus"),
        (
            {"elements": [{"consensus": BASEBALL_S[0]}, {"consensus": [-1] * 6}]},
            "elements[1].consensus",
        ),
        ({"elements": [{"labels": [0, 1]}]}, "elements[0].labels"),
        ({"elements": [{"data": [1.0, 2.0]}]}, "elements[0].data"),
        ({"elements": []}, "elements"),
        ({"elements": [{"consensus": BASEBALL_S[0]}] * 101}, "elements"),
        ({"elements": [{"consensus": BASEBALL_S[0], "labels": [1]}]}, "elements[0]"),
        ({"elements": [{"consensus": BASEBALL_S[0], "self": 0}]}, "elements[0].self"),
        ({"elements": [{"consensus": BASEBALL_S[0]}], "max_iterations": 0}, "max_iterations"),
        ({"elements": [{"consensus": BASEBALL_S[0]}], "colour": 1}, "colour"),
        ({"elements": [{"consensus": BASEBALL_S[0]}, {"consensus": [0] * 6}]}, "elements[1]"),
    ]
    for body, field in cases:
        response = client.post(f"{baseball}/queries", json=body)
        errors = problem(response, 422)["errors"]
        assert field in errors, (body, errors)


def test_queries_need_a_succeeded_job(idle_client, client):
    job_id = idle_client.post("/v1/jobs", json=BASEBALL_BODY).get_json()["id"]
    body = {"elements": [{"consensus": BASEBALL_S[0]}]}
    problem(idle_client.post(f"/v1/jobs/{job_id}/queries", json=body), 409)
    problem(client.post("/v1/jobs/nope/queries", json=body), 404)


def test_held_out_label_runs_land_in_their_true_clusters(client):
    rng = np.random.default_rng(11)
    truth = planted_truth(700, [3, 2, 1], rng)
    runs = planted_runs(truth, 10, 0.35, rng)
    keep, held = slice(0, 500), slice(500, 700)
    ids = [f"p{i}" for i in range(500)]
    job_id = finished_job(client, {"labels": runs[keep].tolist(), "ids": ids, "options": {"k": 3}})
    result = client.get(f"/v1/jobs/{job_id}").get_json()["result"]
    labels = np.array(result["labels"])
    mapping = matching(labels, truth[keep])
    in_job = np.mean(mapping[labels] == truth[keep])
    elements = [{"id": f"h{i}", "labels": row.tolist()} for i, row in enumerate(runs[held])]
    placed = []
    for start in range(0, 200, 100):
        out = client.post(
            f"/v1/jobs/{job_id}/queries",
            json={"elements": elements[start : start + 100], "custom": False},
        )
        assert out.status_code == 200, out.get_data(as_text=True)
        placed += [e["cluster"] for e in out.get_json()["elements"]]
    held_rate = np.mean(mapping[np.array(placed)] == truth[held])
    assert in_job > 0.9 and held_rate >= in_job - 0.05, (in_job, held_rate)


def test_players_answer_by_id(client, baseball):
    out = client.post(
        f"{baseball}/queries",
        json={"elements": [{"consensus": BASEBALL_S[3], "id": 7}], "custom": False},
    ).get_json()
    assert out["elements"][0]["id"] == 7 and "custom_cluster" not in out["elements"][0]
    assert out["elements"][0]["similar"][0]["id"] in BASEBALL_IDS


def test_client_query_and_sca_query_on_a_served_job(tmp_path, capsys):
    from sca.cli import main
    from sca_client import Client, InvalidInput
    from tests.service.serving import sca_serve

    with sca_serve() as base:
        job = Client(base).submit(consensus=BASEBALL_S, ids=BASEBALL_IDS)
        job.wait()
        out = job.query([BASEBALL_S[5]], kind="consensus", custom=False, limit=2)
        assert out["elements"][0]["similar"][0]["id"] == "Mays"
        with pytest.raises(InvalidInput) as err:
            job.query([{"labels": [1, 2]}])
        assert "elements[0].labels" in err.value.errors
        rows = tmp_path / "new.csv"
        rows.write_text("\n".join(",".join(map(str, row)) for row in BASEBALL_S[:2]) + "\n")
        names = tmp_path / "names.txt"
        names.write_text("Rose II\nCobb II\n")
        code = main(
            [
                "query",
                "--url",
                base,
                "--job",
                job.id,
                "--consensus",
                str(rows),
                "--ids",
                str(names),
                "--self",
                "100",
                "--max-size",
                "4",
                "--min-size",
                "2",
            ]
        )
        printed = capsys.readouterr()
        assert code == 0, printed.err
        answer = json.loads(printed.out)
        assert [e["id"] for e in answer["elements"]] == ["Rose II", "Cobb II"]
        assert answer["elements"][0]["similar"][0]["id"] == "Rose"
        assert main(["query", "--url", base, "--job", job.id, "--labels", str(rows)]) == 2
        assert "elements[0].labels" in capsys.readouterr().err


def test_shared_nearest_neighbours_place_a_flower_with_its_species(client, iris):
    X, species = iris
    job_id = finished_job(client, {"data": X.tolist(), "snn": {"kappa": 10}, "options": {"k": 3}})
    labels = np.array(client.get(f"/v1/jobs/{job_id}").get_json()["result"]["labels"])
    flowers = [0, 60, 120]
    out = client.post(
        f"/v1/jobs/{job_id}/queries",
        json={"elements": [{"data": (X[i] + 0.01).tolist()} for i in flowers], "limit": 3},
    )
    assert out.status_code == 200, out.get_data(as_text=True)
    for i, element in zip(flowers, out.get_json()["elements"]):
        assert element["cluster"] == labels[i]
        assert i in [r["id"] for r in element["similar"]]
    problem(
        client.post(f"/v1/jobs/{job_id}/queries", json={"elements": [{"data": [1.0, 2.0, 3.0]}]}),
        422,
        "elements[0].data",
    )


def test_persist_submits_a_new_version_and_leaves_the_job_alone(client, baseball):
    before = client.get(baseball).get_json()["result"]
    out = client.post(
        f"{baseball}/queries",
        json={
            "elements": [{"id": "Rookie", "consensus": [70, 60, 55, 5, 3, 6], "self": 100}],
            "persist": True,
            "custom": False,
        },
    ).get_json()
    version = out["version"]
    assert version["id"] != baseball.rsplit("/", 1)[1]
    job = wait_for(client.get, version["id"])
    assert job["status"] == "succeeded", job.get("error")
    assert job["result"]["n"] == 7
    rookie = next(c for c in job["result"]["clusters"] if "Rookie" in c)
    assert "Rose" in rookie and "Ott" not in rookie
    assert client.get(baseball).get_json()["result"] == before
    problem(
        client.post(
            f"{baseball}/queries",
            json={"elements": [{"consensus": BASEBALL_S[0]}] * 2, "persist": True},
        ),
        422,
        "persist",
    )
    problem(
        client.post(
            f"{baseball}/queries",
            json={"elements": [{"id": "Rose", "consensus": BASEBALL_S[0]}], "persist": True},
        ),
        422,
        "ids",
    )


def test_persist_appends_label_runs(client):
    rng = np.random.default_rng(3)
    runs = planted_runs(planted_truth(60, [1, 1], rng), 6, 0.1, rng)
    job_id = finished_job(client, {"labels": runs[:50].tolist()})
    out = client.post(
        f"/v1/jobs/{job_id}/queries",
        json={
            "elements": [{"labels": row.tolist()} for row in runs[50:]],
            "persist": True,
            "custom": False,
        },
    ).get_json()
    job = wait_for(client.get, out["version"]["id"])
    assert job["status"] == "succeeded" and job["result"]["n"] == 60
    placed = [e["cluster"] for e in out["elements"]]
    # Placed before, clustered with the others after: the same partition of the ten.
    after = np.array(job["result"]["labels"][50:])
    assert adjusted_rand_score(after, placed) == 1.0


def test_single_linkage_runs_place_new_rows_on_their_moon(client):
    from sklearn.datasets import make_moons

    X, moon = make_moons(200, noise=0.05, random_state=0)
    ensemble = [{"algorithm": "single", "k": [2, 3, 4, 5], "runs": 8}]
    job_id = finished_job(client, {"data": X.tolist(), "ensemble": ensemble})
    result = client.get(f"/v1/jobs/{job_id}").get_json()["result"]
    labels = np.array(result["labels"])
    assert result["k"] == 2 and adjusted_rand_score(moon, labels) == 1.0
    rows = [0, 50, 100, 150]
    out = client.post(
        f"/v1/jobs/{job_id}/queries",
        json={"elements": [{"data": (X[i] + 0.01).tolist()} for i in rows]},
    )
    assert out.status_code == 200, out.get_data(as_text=True)
    assert [e["cluster"] for e in out.get_json()["elements"]] == labels[rows].tolist()
