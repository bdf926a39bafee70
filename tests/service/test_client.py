"""sca_client and ``sca submit`` against the API served over real HTTP."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

import sca_client as c
from sca_service import create_app
from tests.conftest import (
    BASEBALL_CSV,
    BASEBALL_IDS,
    BASEBALL_S,
    BASEBALL_TEAMS,
    Terminal,
    baseball_paper_ranking,
    free_port,
)
from tests.service.conftest import IdleQueue
from tests.service.serving import serve


def _app(**config):
    return create_app({"TESTING": True, "REDIS_URL": None, **config})


@pytest.fixture(scope="module")
def url():
    with serve(_app()) as base:
        yield base


def test_submit_wait_result_and_queries(url):
    api = c.Client(url)
    assert api.health() == {"status": "ok"}
    job = api.submit(consensus=np.array(BASEBALL_S), ids=BASEBALL_IDS, options={"starts": 3})
    terminal = Terminal()
    document = job.wait(progress=True, stream=terminal, interval=0.02)
    assert document["status"] == "succeeded"
    assert terminal.getvalue().endswith("\n") and "%" in terminal.getvalue()
    result = job.result()
    assert sorted(map(sorted, result["clusters"])) == BASEBALL_TEAMS
    custom = job.custom_cluster("Rose", max_size=3)
    assert sorted(custom["cluster"]) == BASEBALL_TEAMS[0]
    similar = job.similar("Ott", limit=2)
    paper = baseball_paper_ranking("Ott")[:2]  # the "sca" method ranks by Ott's row of P
    assert [r["id"] for r in similar["ranked"]] == [name for name, _ in paper]
    assert [round(r["score"], 4) for r in similar["ranked"]] == [score for _, score in paper]
    assert job.plot("spectrum", "png")[:4] == b"\x89PNG"
    assert b"Rose" in job.plot("custom", "svg", element="Rose", max_size=3)
    pages = list(job.iter_labels(page_size=4))
    assert [len(page["labels"]) for page in pages] == [4, 2]
    assert [label for page in pages for label in page["labels"]] == result["labels"]
    assert [i for page in pages for i in page["ids"]] == BASEBALL_IDS
    assert job.labels(offset=5)["confidence"] == result["confidence"][5:]
    with pytest.raises(c.InvalidInput) as caught:
        api.labels(job.id, limit=0)
    assert "limit" in caught.value.errors


def test_wait_draws_nothing_off_a_terminal(url):
    job = c.Client(url).submit(consensus=BASEBALL_S)
    quiet = io.StringIO()
    job.wait(progress=True, stream=quiet, interval=0.02)
    assert quiet.getvalue() == ""


def test_upload_sends_an_npy_file(url, iris):
    api = c.Client(url)
    X, _ = iris
    job = api.submit(data=X, snn={"kappa": 10}, options={"k": 3}, upload=True)
    job.wait(timeout=60, interval=0.05)
    assert job.result()["k"] == 3
    ranked = job.similar(0, limit=3, method="euclidean")["ranked"]
    # a similarity in [0, 1] like every score, larger nearer; the distance beside it
    assert len(ranked) == 3 and ranked[0]["score"] >= ranked[-1]["score"]
    assert ranked[0]["distance"] <= ranked[-1]["distance"]


def test_errors_are_typed_with_the_problem_fields(url):
    api = c.Client(url)
    with pytest.raises(c.NotFound) as info:
        api.status("nope")
    assert info.value.status == 404 and info.value.problem["status"] == 404
    with pytest.raises(c.InvalidInput) as info:
        api.submit(consensus=[[1, 2], [3, 1]])
    assert info.value.status == 422 and info.value.errors
    assert info.value.type.endswith("invalid-input") and info.value.detail
    job = api.submit(consensus=BASEBALL_S, ids=BASEBALL_IDS)
    job.wait(interval=0.02)
    with pytest.raises(c.NotFound) as info:
        job.similar("Nobody")
    assert "element" in info.value.errors
    with pytest.raises(c.InvalidInput):
        job.custom_cluster("Rose", min_size=0)
    with pytest.raises(ValueError):
        api.submit(consensus=BASEBALL_S, labels=[[0], [1]])


def test_labels_named_by_reference_are_sent_as_json(url, tmp_path):
    """A reference goes as JSON (also with ``upload``); this service has no roots."""
    api = c.Client(url)
    for upload in (False, True):
        with pytest.raises(c.InvalidInput) as info:
            api.submit(labels={"root": "cohorts", "path": "labels.npy"}, upload=upload)
        assert "labels.root" in info.value.errors


def test_unreachable_service_is_its_own_error():
    with pytest.raises(c.ServiceUnreachable):
        c.Client(f"http://127.0.0.1:{free_port()}", timeout=2).health()


def test_queued_failed_and_slow_jobs():
    app = _app(SCA_QUEUE=IdleQueue())
    with serve(app) as base:
        job = c.Client(base).submit(consensus=BASEBALL_S)
        with pytest.raises(c.NotFinished):
            job.result()
        with pytest.raises(c.Conflict) as info:
            job.similar(0)
        assert info.value.errors == {"status": ["queued"]}
        with pytest.raises(c.WaitTimeout):
            job.wait(timeout=0.2, interval=0.05)
        job.cancel()
        with pytest.raises(c.JobCancelled):
            job.wait()
    with serve(_app()) as base:  # a job that really fails: no stable clustering in 1 step
        job = c.Client(base).submit(consensus=BASEBALL_S, options={"max_iterations": 1})
        with pytest.raises(c.JobFailed) as info:
            job.wait(interval=0.02)
        failed = info.value
        assert (failed.status, failed.title) == (422, "No stable clustering")
        assert failed.type.endswith("iteration-not-converged")
        assert failed.errors == {"options.max_iterations": [failed.detail]}
        assert failed.job["status"] == "failed" and failed.job["error"]["stage"] == "iteration"
        with pytest.raises(c.JobFailed):
            job.result()


def test_api_key_is_sent_as_a_bearer_token():
    api = c.Client("http://127.0.0.1:1", api_key="k-123", headers={"X-Trace": "1"})
    assert api.session.headers["Authorization"] == "Bearer k-123"
    assert api.session.headers["X-Trace"] == "1"


def test_sca_submit_prints_the_finished_job(url, tmp_path, capsys):
    from sca_service.cli import main

    assert (
        main(
            [
                "submit",
                "--url",
                url,
                "--consensus",
                str(BASEBALL_CSV),
                "--starts",
                "2",
                "--plots",
                str(tmp_path / "plots"),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    job = json.loads(captured.out)
    assert job["status"] == "succeeded"
    assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "consensus.png",
        "histogram.png",
        "membership.png",
        "spectrum.png",
        "trace.png",
    ]
    assert "\r" not in captured.err  # no bar: standard error is not a terminal here


def test_sca_submit_reports_service_errors(url, tmp_path, capsys):
    from sca_service.cli import main

    bad = tmp_path / "S.csv"
    bad.write_text("1,2\n3,1\n")
    assert main(["submit", "--url", url, "--consensus", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "422" in err and "consensus" in err

    assert (
        main(
            ["submit", "--url", f"http://127.0.0.1:{free_port()}", "--consensus", str(BASEBALL_CSV)]
        )
        == 3
    )
    assert "cannot reach" in capsys.readouterr().err


def test_sca_submit_sends_data_alone(url, tmp_path, capsys):
    from sca_service.cli import main

    path = tmp_path / "X.csv"
    groups = [[0.1, 10], [0.2, 12], [0.15, 11], [0.12, 13], [0.18, 9]]
    groups += [[0.9, 95], [0.95, 99], [0.92, 97], [0.88, 101], [0.91, 96]]
    np.savetxt(path, np.array(groups), delimiter=",")
    for extra in ((), ("--scale", "none", "--upload")):
        assert main(["submit", "--url", url, "--data", str(path), *extra]) == 0
        job = json.loads(capsys.readouterr().out)
        assert job["status"] == "succeeded", job.get("error")
        assert job["ensemble"]["done"] == job["ensemble"]["total"] > 0
        clusters = job["result"]["clusters"]
        if not extra:  # standardised, the two groups; in their units, every row placed
            assert sorted(map(sorted, clusters)) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
        assert sorted(i for cluster in clusters for i in cluster) == list(range(10))


def test_a_client_without_its_extra_says_how_to_install_it(monkeypatch):
    """``make serve`` installs the server alone; the client's first line then names
    the extra rather than failing deep inside with ``No module named 'requests'``."""
    monkeypatch.setitem(sys.modules, "requests", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"client extra .*stochastic-clustering\[client\]"):
        c.Client("http://127.0.0.1:9")
