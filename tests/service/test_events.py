"""``GET /v1/jobs/{id}/events`` and webhooks on the embedded default, over real HTTP
(werkzeug's server, and the waitress front of ``sca serve``)."""

from __future__ import annotations

import threading
import time

import pytest
import requests

import sca_client as c
from sca_client.events import parse
from sca_service import create_app, front
from tests.conftest import BASEBALL_BODY, Terminal
from tests.receiver import Receiver, fake_dns, verify
from tests.service.conftest import KEY_A, KEY_B, Gate, IdleQueue
from tests.service.serving import serve

SECRET = "callback-secret-0123456789"


def _app(**config):
    return create_app({"TESTING": True, "REDIS_URL": None, **config})


def _gated(**config):
    app = _app(**config)
    backend = app.extensions["sca"]
    backend.queue = Gate(backend.queue)
    return app, backend.queue


def events_of(url: str, job_id: str, last: str | None = None, **headers) -> list:
    if last:
        headers["Last-Event-ID"] = last
    with requests.get(
        f"{url}/v1/jobs/{job_id}/events", headers=headers, stream=True, timeout=60
    ) as response:
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].startswith("text/event-stream")
        return list(parse(response.iter_lines(decode_unicode=True)))


def _order(event_id: str) -> tuple[int, int]:
    stamp, seq = event_id.split("-")
    return int(stamp), int(seq)


def test_events_of_a_job_and_resuming_after_an_id(iris):
    with serve(_app()) as url:
        body = {"data": iris[0].tolist(), "ensemble": [{"algorithm": "kmeans", "k": 3, "runs": 10}]}
        job_id = requests.post(f"{url}/v1/jobs", json=body, timeout=30).json()["id"]
        stream = events_of(url, job_id)
        assert stream[0].retry == 2000
        seen = [e for e in stream if e.id]
        names = [(e.event, e.data.get("stage"), e.data.get("state")) for e in seen]
        assert names[0] == ("queued", None, None)
        assert names[1] == ("stage", "ensemble", "started")
        runs = [e.data["done"] for e in seen if e.event == "progress"]
        assert runs == list(range(1, 11))
        assert names[-8:] == [
            ("stage", "ensemble", "finished"),
            ("stage", "balancing", "started"),
            ("stage", "balancing", "finished"),
            ("stage", "spectral", "started"),
            ("stage", "spectral", "finished"),
            ("stage", "iteration", "started"),
            ("stage", "iteration", "finished"),
            ("succeeded", "iteration", None),
        ]
        assert len(names) == 2 + 10 + 8  # queued, ensemble started, a progress per run, ...
        assert seen[-1].event == "succeeded" and seen[-1].data["progress"] == 1.0
        assert [_order(e.id) for e in seen] == sorted({_order(e.id) for e in seen})
        progress = [e.data["progress"] for e in seen]
        assert progress == sorted(progress)
        finished = [e for e in seen if e.data.get("state") == "finished"]
        assert all(e.data["seconds"] > 0 for e in finished)

        middle = len(seen) // 2  # resume after an event: exactly the rest, once
        rest = [e for e in events_of(url, job_id, seen[middle].id) if e.id]
        assert [(e.id, e.event, e.data) for e in rest] == [
            (e.id, e.event, e.data) for e in seen[middle + 1 :]
        ]
        after_end = [e for e in events_of(url, job_id, seen[-1].id) if e.event != "message"]
        assert [(e.id, e.event) for e in after_end] == [(None, "succeeded")]

        bad = requests.get(
            f"{url}/v1/jobs/{job_id}/events", headers={"Last-Event-ID": "1; DROP"}, timeout=10
        )
        assert bad.status_code == 422 and "Last-Event-ID" in bad.json()["errors"]


def test_events_need_the_jobs_key():
    with serve(_app(SCA_API_KEYS=f"{KEY_A},{KEY_B}")) as url:
        job = c.Client(url, api_key=KEY_A).submit(**BASEBALL_BODY)
        path = f"{url}/v1/jobs/{job.id}/events"
        assert requests.get(path, timeout=10).status_code == 401
        other = requests.get(path, headers={"Authorization": f"Bearer {KEY_B}"}, timeout=10)
        assert other.status_code == 404
        own = events_of(url, job.id, Authorization=f"Bearer {KEY_A}")
        assert own[-1].event == "succeeded"


def test_a_stream_through_waitress_is_bounded_in_time_and_number():
    """Events leave at once through the waitress front; a stream sends keep-alive
    comments, ends after SCA_EVENTS_MAX_SECONDS, and past SCA_MAX_EVENT_STREAMS a
    stream is refused with 503 while other requests are still answered."""
    app, gate = _gated(
        SCA_EVENTS_HEARTBEAT=0.4, SCA_EVENTS_MAX_SECONDS=2.0, SCA_MAX_EVENT_STREAMS=1
    )
    server = front.create_server(app, front.listen("127.0.0.1", 0), app.config, threads=3)
    stop = threading.Event()
    thread = threading.Thread(
        target=front.serve_until, args=(server, lambda: not stop.is_set()), daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.socket.getsockname()[1]}"
    try:
        job_id = requests.post(f"{url}/v1/jobs", json=BASEBALL_BODY, timeout=10).json()["id"]
        start = time.monotonic()
        lines = []
        with requests.get(f"{url}/v1/jobs/{job_id}/events", stream=True, timeout=10) as first:
            assert first.status_code == 200
            for line in first.iter_lines(decode_unicode=True):
                lines.append((round(time.monotonic() - start, 2), line))
                if line == "event: queued":  # the first event arrives while the stream is open
                    assert time.monotonic() - start < 1.0
                    assert requests.get(f"{url}/healthz", timeout=5).status_code == 200
                    second = requests.get(f"{url}/v1/jobs/{job_id}/events", timeout=5)
                    assert second.status_code == 503 and second.headers["Retry-After"]
        lasted = time.monotonic() - start
        assert 1.9 < lasted < 4, lines
        assert sum(line == ": keep-alive" for _, line in lines) >= 3, lines
        last_id = [line for _, line in lines if line.startswith("id: ")][-1][4:]

        # A client that leaves is noticed at the next keep-alive and frees its slot.
        import socket

        raw = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        raw.sendall(f"GET /v1/jobs/{job_id}/events HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert b"200 OK" in raw.recv(4096)
        raw.close()
        # The slot is free again; the job runs while a resumed stream follows it.
        deadline = time.monotonic() + 3
        while True:
            resumed = requests.get(
                f"{url}/v1/jobs/{job_id}/events",
                timeout=10,
                stream=True,
                headers={"Last-Event-ID": last_id},
            )
            if resumed.status_code == 200:
                break
            assert time.monotonic() < deadline, "the departed client's stream was not closed"
            time.sleep(0.1)
        threading.Timer(0.3, gate.release).start()
        with resumed:
            rest = list(parse(resumed.iter_lines(decode_unicode=True)))
        assert rest[-1].event == "succeeded" and rest[-1].id
        assert "queued" not in [e.event for e in rest]
        assert ("stage", "balancing") in [(e.event, e.data.get("stage")) for e in rest]
    finally:
        stop.set()
        thread.join(10)
        app.extensions["sca"].queue.shutdown()


def test_client_wait_follows_the_stream_and_falls_back_to_polling():
    app, gate = _gated()
    with serve(app) as url:
        job = c.Client(url).submit(**BASEBALL_BODY)
        threading.Timer(0.5, gate.release).start()
        terminal = Terminal()
        start = time.monotonic()
        # Polling every 60 s would take a minute: only the stream answers this soon.
        assert job.wait(progress=True, stream=terminal, interval=60)["status"] == "succeeded"
        assert time.monotonic() - start < 20
        assert "iteration" in terminal.getvalue() and "100%" in terminal.getvalue()
    with serve(_app(SCA_MAX_EVENT_STREAMS=0)) as url:  # every stream refused: polling
        job = c.Client(url).submit(**BASEBALL_BODY, options={"seed": 5})
        assert job.wait(progress=True, stream=Terminal(), interval=0.05)["status"] == "succeeded"
    app, gate = _gated()
    with serve(app) as url:
        job = c.Client(url).submit(**BASEBALL_BODY, options={"seed": 6})
        with pytest.raises(c.WaitTimeout):
            job.wait(progress=True, stream=Terminal(), timeout=1.5)
        threading.Timer(0.2, lambda: job.cancel()).start()
        with pytest.raises(c.JobCancelled):
            job.wait(progress=True, stream=Terminal(), interval=60)


def test_webhooks_from_the_embedded_runner():
    receiver = Receiver(statuses=(500, 200))
    app = _app(SCA_WEBHOOK_ALLOW="127.0.0.1", SCA_WEBHOOK_BACKOFF=0.2)
    try:
        with serve(app) as url:
            body = {**BASEBALL_BODY, "callback_url": receiver.url, "callback_secret": SECRET}
            job = requests.post(f"{url}/v1/jobs", json=body, timeout=10).json()
            first, second = receiver.wait(2)
            assert second["at"] - first["at"] >= 0.15  # the backoff
            for request in (first, second):
                assert verify(SECRET, request["headers"]["SCA-Signature"], request["body"])
            payload = receiver.payload(1)
            assert payload["type"] == "job.succeeded" and payload["job"]["id"] == job["id"]
            assert payload["job"]["k"] == 2 and sorted(payload["job"]["sizes"]) == [3, 3]
            deadline = time.monotonic() + 10
            while True:
                document = requests.get(f"{url}/v1/jobs/{job['id']}", timeout=10).json()
                if document["callback"]["state"] == "delivered" or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert document["callback"] == {
                "url": receiver.url,
                "state": "delivered",
                "attempts": 2,
                "error": None,
            }
            assert SECRET not in str(document)
    finally:
        receiver.close()


def test_embedded_webhooks_never_take_the_job_threads():
    """Four jobs call a receiver that never answers within SCA_WEBHOOK_TIMEOUT: the
    next job still runs at once on the two job threads."""
    silent = Receiver(delay=30)
    app = _app(SCA_WEBHOOK_ALLOW="127.0.0.1", SCA_WEBHOOK_TIMEOUT=3, SCA_WEBHOOK_RETRIES=0)
    try:
        with serve(app) as url:
            for seed in range(4):
                body = {
                    **BASEBALL_BODY,
                    "options": {"seed": 500 + seed},
                    "callback_url": silent.url,
                    "callback_secret": SECRET,
                }
                assert requests.post(f"{url}/v1/jobs", json=body, timeout=10).status_code == 202
            silent.wait(2, timeout=10)
            start = time.monotonic()
            body = {**BASEBALL_BODY, "options": {"seed": 599}}
            job = requests.post(f"{url}/v1/jobs", json=body, timeout=10).json()
            while requests.get(f"{url}/v1/jobs/{job['id']}", timeout=10).json()["status"] in (
                "queued",
                "running",
            ):
                assert time.monotonic() - start < 2.5, "the job waited behind webhooks"
                time.sleep(0.05)
    finally:
        silent.close()


@pytest.mark.parametrize(
    "extra, field",
    [
        (
            {"callback_url": "http://169.254.169.254/latest", "callback_secret": SECRET},
            "callback_url",
        ),
        ({"callback_url": "http://10.0.0.7/hook", "callback_secret": SECRET}, "callback_url"),
        ({"callback_url": "http://localhost:8000/hook", "callback_secret": SECRET}, "callback_url"),
        ({"callback_url": "gopher://example.com/", "callback_secret": SECRET}, "callback_url"),
        ({"callback_url": ["https://example.com/"], "callback_secret": SECRET}, "callback_url"),
        ({"callback_url": "https://example.com/hook"}, "callback_secret"),
        (
            {"callback_url": "https://example.com/hook", "callback_secret": "short"},
            "callback_secret",
        ),
        ({"callback_secret": SECRET}, "callback_secret"),
    ],
)
def test_callbacks_refused_at_submission(make_client, extra, field, monkeypatch):
    fake_dns(monkeypatch, {"example.com": ["192.0.2.1"]})
    client = make_client(SCA_WEBHOOK_ALLOW="example.com,192.0.2.0/24")
    response = client.post("/v1/jobs", json={**BASEBALL_BODY, **extra})
    assert response.status_code == 422, response.get_data(as_text=True)
    assert list(response.get_json()["errors"]) == [field]


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/h",
        "http://0177.0.0.1/h",
        "http://0x7f.1/h",
        "http://127.1/h",
        "http://0/h",
        "http://loopback.example.test/h",
        "http://[::7f00:1]/h",
        "http://[2002:7f00:1::1]/h",
        "http://[::ffff:0:7f00:1]/h",
        "http://[64:ff9b::a9fe:a9fe]/h",
        "http://v6.example.test/h",
    ],
)
def test_every_spelling_of_a_local_callback_is_refused_at_submission(client, url, monkeypatch):
    """Each spelling of loopback or the metadata address, and names answered with
    one, is a 422 naming callback_url; nothing is queued."""
    fake_dns(
        monkeypatch,
        {"loopback.example.test": ["127.0.0.1"], "v6.example.test": ["::ffff:0:7f00:1"]},
    )
    response = client.post(
        "/v1/jobs", json={**BASEBALL_BODY, "callback_url": url, "callback_secret": SECRET}
    )
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.headers["Content-Type"] == "application/problem+json"
    assert list(response.get_json()["errors"]) == ["callback_url"]


def test_a_callback_as_a_form_part(make_client, monkeypatch):
    fake_dns(monkeypatch, {"hooks.example.com": ["192.0.2.1"], "example.org": ["192.0.2.2"]})
    allowed = make_client(
        SCA_WEBHOOK_ALLOW="*.example.com,192.0.2.0/24",
        SCA_WEBHOOK_SECRET="x" * 20,
        SCA_QUEUE=IdleQueue(),
    )  # nothing runs, so nothing is sent
    form = {
        "file": (open(__file__, "rb"), "S.csv"),
        "input": "consensus",
        "callback_url": "https://example.org/hook",
    }
    response = allowed.post("/v1/jobs", data=form, content_type="multipart/form-data")
    assert response.status_code == 422 and "callback_url" in response.get_json()["errors"]
    accepted = allowed.post(
        "/v1/jobs", json={**BASEBALL_BODY, "callback_url": "https://hooks.example.com/h"}
    )
    assert accepted.status_code == 202
