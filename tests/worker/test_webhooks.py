"""Webhook delivery (sca_worker.webhooks) against a real receiver on 127.0.0.1, and the
event log (sca_worker.events) on a real Redis and in memory."""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest

from sca_worker import events, webhooks
from sca_worker.config import resolve
from sca_worker.store import Store
from sca_worker.webhooks import Allow, Refused, check_url
from tests.conftest import ROOT, free_port
from tests.receiver import Receiver, Trickler, fake_dns, verify
from tests.worker.conftest import make_job

SECRET = "a-secret-of-sixteen-chars"
LOOPBACK = Allow.parse("127.0.0.1")


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://10.1.2.3/",
        "http://192.168.0.1:8080/x",
        "http://127.0.0.1/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://localhost:9000/",
        "http://db.localhost/",
        "http://metadata.google.internal/",
        "ftp://example.com/",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
        "http:///x",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "",
        42,
        None,
    ],
)
def test_obviously_disallowed_urls_are_refused(url):
    with pytest.raises(Refused):
        check_url(url, Allow())


#: Loopback, link-local and local-use spellings that a resolver or a socket reads as such.
LOCAL_SPELLINGS = [
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://0/",
    "http://[::7f00:1]/",  # IPv4-compatible
    "http://[2002:7f00:1::1]/",  # 6to4
    "http://[::ffff:0:7f00:1]/",  # IPv4-translated
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64
    "http://[2001:0:c000:201::80ff:fffe]/",  # Teredo, client 127.0.0.1
]


@pytest.mark.parametrize("url", LOCAL_SPELLINGS)
def test_every_spelling_of_a_local_address_is_refused(url, monkeypatch):
    looked_up = fake_dns(monkeypatch, {})
    with pytest.raises(Refused, match="loopback, private"):
        check_url(url, Allow())
    with pytest.raises(Refused):
        webhooks.post(url, b"{}", {}, 1, Allow())
    assert looked_up == []  # an address is read, not looked up


@pytest.mark.parametrize(
    "answer",
    [
        ["127.0.0.1"],
        ["::ffff:0:7f00:1"],
        ["::7f00:1"],
        ["2002:7f00:1::1"],
        ["64:ff9b::a9fe:a9fe"],
        ["192.0.2.7", "::ffff:127.0.0.1"],  # one good answer does not vouch for the other
    ],
)
def test_a_name_answered_with_a_local_address_is_refused(answer, monkeypatch):
    fake_dns(monkeypatch, {"hooks.example.test": answer})
    allow = Allow.parse("*.example.test, 192.0.2.0/24")
    with pytest.raises(Refused, match="resolves to"):
        webhooks.resolve("hooks.example.test", 80, allow)
    with pytest.raises(Refused, match="resolves to"):
        webhooks.post("http://hooks.example.test/h", b"{}", {}, 1, allow)


def test_listed_networks_admit_their_addresses_in_every_spelling(monkeypatch):
    fake_dns(monkeypatch, {"hooks.example.test": ["192.0.2.7", "::ffff:192.0.2.8"]})
    allow = Allow.parse("*.example.test, 192.0.2.0/24")
    for host in ("192.0.2.7", "3221225991", "[::ffff:192.0.2.7]", "[2002:c000:207::1]"):
        assert check_url(f"http://{host}/h", allow)[1] == host.strip("[]")
    assert webhooks.target("http://hooks.example.test/h", allow)[4] == [
        "192.0.2.7",
        "::ffff:192.0.2.8",
    ]


def test_a_delivery_resolves_once_and_connects_to_what_it_checked(monkeypatch):
    """One lookup per attempt, and the connection goes to its checked answer: a name
    that rebinds (to the metadata address) after that lookup changes nothing."""
    table = {"hooks.example.test": ["127.0.0.1"]}
    looked_up = fake_dns(monkeypatch, table)
    answer = socket.getaddrinfo

    def rebinding(host, *args, **kwargs):
        addresses = answer(host, *args, **kwargs)
        table[host] = ["169.254.169.254"]
        return addresses

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    receiver = Receiver()
    try:
        url = receiver.url.replace("127.0.0.1", "hooks.example.test")
        allow = Allow.parse("*.example.test, 127.0.0.1")
        assert webhooks.post(url, b"{}", {}, 2, allow) == 200
        assert looked_up.count("hooks.example.test") == 1  # (the socket reads its literal)
        assert receiver.wait(1)[0]["headers"]["Host"].startswith("hooks.example.test:")
        with pytest.raises(Refused, match="169.254.169.254"):
            webhooks.post(url, b"{}", {}, 2, allow)
    finally:
        receiver.close()


def test_the_allow_list_admits_only_what_it_lists():
    assert check_url("https://hooks.example.com/a?b=1", Allow()) == (
        "https",
        "hooks.example.com",
        443,
        "/a?b=1",
    )
    assert check_url("http://93.184.215.14:8080/", Allow())[2] == 8080
    allow = Allow.parse("*.example.com, 127.0.0.1, 10.0.0.0/8")
    assert check_url("http://127.0.0.1:5000/h", allow)[1] == "127.0.0.1"
    assert check_url("http://10.2.3.4/h", allow)[1] == "10.2.3.4"
    assert check_url("http://a.example.com/h", allow)[1] == "a.example.com"
    for url in (
        "http://example.org/",
        "http://93.184.215.14/",
        "http://127.0.0.2/",
        "http://169.254.169.254/",
    ):
        with pytest.raises(Refused, match="SCA_WEBHOOK_ALLOW"):
            check_url(url, allow)


def test_a_name_is_checked_on_its_address_at_delivery():
    """DNS rebinding: a name allowed by pattern that resolves to loopback is refused at
    delivery, before any connection; listing the network admits it."""
    receiver = Receiver()
    try:
        url = receiver.url.replace("127.0.0.1", "localhost")
        with pytest.raises(Refused, match="resolves to"):
            webhooks.post(url, b"{}", {}, 2, Allow.parse("localhost"))
        assert receiver.requests == []
        assert webhooks.post(url, b"{}", {}, 2, Allow.parse("localhost,127.0.0.0/8")) == 200
        assert receiver.wait(1)[0]["headers"]["Host"].startswith("localhost:")
    finally:
        receiver.close()


def test_redirects_are_not_followed():
    receiver = Receiver(statuses=(302,), headers={"Location": "/elsewhere"})
    try:
        assert webhooks.post(receiver.url, b"{}", {}, 2, LOOPBACK) == 302
        time.sleep(0.2)
        assert [r["path"] for r in receiver.requests] == ["/hook"]
    finally:
        receiver.close()


def test_a_receiver_that_does_not_answer_costs_the_timeout_only():
    receiver = Receiver(delay=10)
    try:
        start = time.monotonic()
        with pytest.raises(OSError):
            webhooks.post(receiver.url, b"{}", {}, 0.5, LOOPBACK)
        assert time.monotonic() - start < 2
    finally:
        receiver.close()


@pytest.mark.parametrize(
    "head, rest",
    [
        (b"HTTP/1.1 200 OK\r\n", b"Content-Length: 2\r\n\r\nok"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", b"o" * 40),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\no\r\n" * 20),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"o" * 40),
    ],
)
def test_an_answer_trickled_past_the_deadline_is_not_a_delivery(head, rest):
    """``200 OK`` at once and the rest a byte every 0.2 s: the attempt fails at the
    deadline (total, not per read); the same answer sent whole is a delivery."""
    slow, fast = (
        Trickler(head, rest, 0.2),
        Trickler(head, rest + b"0\r\n\r\n" * (b"chunked" in head), 0),
    )
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="no whole answer within 1 s"):
            webhooks.post(slow.url, b"{}", {}, 1.0, LOOPBACK)
        assert time.monotonic() - start < 2
        if b"close" not in head:  # (that one ends when the receiver closes: not here)
            assert webhooks.post(fast.url, b"{}", {}, 1.0, LOOPBACK) == 200
    finally:
        slow.close()
        fast.close()


def test_a_trickled_answer_is_tried_again(redis_store):
    receiver = Trickler(b"HTTP/1.1 200 OK\r\n", b"Content-Length: 2\r\n\r\nok", 0.2)
    settings = resolve(
        {"SCA_WEBHOOK_ALLOW": "127.0.0.1", "SCA_WEBHOOK_TIMEOUT": 0.5, "SCA_WEBHOOK_RETRIES": 1}
    )
    try:
        record = make_job(redis_store)
        record["callback"] = {"url": receiver.url, "secret": SECRET}
        webhooks.prepare(redis_store, record, "succeeded")
        assert webhooks.attempt(redis_store, record["id"], "succeeded", 1, settings) is False
        job = redis_store.get_job(record["id"])
        assert job["callback_state"] == "retrying"
        assert job["callback_error"].startswith("TimeoutError")
    finally:
        receiver.close()


def test_signature_and_readme_snippet():
    """The README's verification snippet runs as written and accepts the service's signature."""
    readme = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "def verify" in b)
    namespace: dict = {}
    exec(block, namespace)  # noqa: S102 - the documentation's own code
    body = b'{"type":"job.succeeded"}'
    header = webhooks.sign(SECRET, int(time.time()), body)
    assert namespace["verify"](SECRET, header, body) and verify(SECRET, header, body)
    assert not namespace["verify"]("another-secret-here", header, body)
    assert not namespace["verify"](SECRET, header, body + b" ")
    old = webhooks.sign(SECRET, int(time.time()) - 3600, body)
    assert not namespace["verify"](SECRET, old, body)


def test_attempts_note_their_outcome(redis_store):
    receiver = Receiver(statuses=(500, 204))
    settings = resolve({"SCA_WEBHOOK_ALLOW": "127.0.0.1", "SCA_WEBHOOK_RETRIES": 1})
    try:
        record = make_job(redis_store)
        redis_store.update_job(record["id"], {"callback": {"url": receiver.url, "secret": SECRET}})
        webhooks.prepare(redis_store, redis_store.get_job(record["id"]), "cancelled")
        assert webhooks.attempt(redis_store, record["id"], "succeeded", 1, settings) is None
        assert webhooks.attempt(redis_store, record["id"], "cancelled", 1, settings) is False
        assert redis_store.get_job(record["id"])["callback_state"] == "retrying"
        assert webhooks.attempt(redis_store, record["id"], "cancelled", 2, settings) is True
        job = redis_store.get_job(record["id"])
        assert (job["callback_state"], job["callback_attempts"]) == ("delivered", 2)
        assert webhooks.attempt(redis_store, record["id"], "cancelled", 3, settings) is None
        first, second = receiver.wait(2)
        assert first["headers"]["SCA-Delivery"] == f"{record['id']}:cancelled"
        assert verify(SECRET, second["headers"]["SCA-Signature"], second["body"])
        assert receiver.payload(1)["job"]["status"] == "cancelled"
        assert "secret" not in second["body"].decode()
        assert receiver.payload(0)["job"] == receiver.payload(1)["job"]
    finally:
        receiver.close()


def test_a_webhook_outlives_its_deleted_job(redis_store):
    """Deleting a job right after it finished (a cancel, then a delete) keeps its
    webhook; a given-up delivery leaves nothing behind."""
    receiver = Receiver()
    settings = resolve({"SCA_WEBHOOK_ALLOW": "127.0.0.1", "SCA_WEBHOOK_RETRIES": 0})
    try:
        record = make_job(redis_store)
        record["callback"] = {"url": receiver.url, "secret": SECRET}
        webhooks.prepare(redis_store, record, "cancelled")
        redis_store.delete_job(record["id"])
        assert webhooks.attempt(redis_store, record["id"], "cancelled", 1, settings) is True
        assert receiver.payload(0)["job"]["id"] == record["id"]
        assert not redis_store.has(f"webhook:{record['id']}")
        record["callback"]["url"] = f"http://127.0.0.1:{free_port()}/hook"  # nobody there
        webhooks.prepare(redis_store, record, "cancelled")
        assert webhooks.attempt(redis_store, record["id"], "cancelled", 1, settings) is None
        assert not redis_store.has(f"webhook:{record['id']}")
    finally:
        receiver.close()


@pytest.mark.parametrize("kind", ["redis", "in_process"])
def test_event_log_resumes_after_an_id(kind, redis_store):
    store = redis_store if kind == "redis" else Store.in_process()
    record = make_job(store)
    job_id = record["id"]
    ids = [
        events.emit(store, job_id, "stage", stage="balancing", state=state)
        for state in ("started", "finished")
    ]
    ids.append(events.emit(store, job_id, "succeeded"))
    assert all(events.EVENT_ID.match(i) for i in ids) and len(set(ids)) == 3
    everything = events.read(store, job_id)
    assert [e[0] for e in everything] == ids
    assert [e[1] for e in events.read(store, job_id, ids[0])] == ["stage", "succeeded"]
    assert events.read(store, job_id, ids[-1]) == []
    found = []
    reader = threading.Thread(
        target=lambda: found.extend(events.read(store, job_id, ids[-1], wait=5))
    )
    reader.start()
    time.sleep(0.3)
    late = events.emit(store, job_id, "progress", done=1, total=2)
    reader.join(6)
    assert [e[0] for e in found] == [late]  # a waiting reader wakes for it
    store.delete_job(job_id)
    assert events.read(store, job_id) == []
