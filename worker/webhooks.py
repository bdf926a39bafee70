"""Webhooks: a job's summary POSTed to its ``callback_url`` when it finishes.

A job submitted with ``callback_url`` is announced once it has succeeded,
failed or been cancelled.  The request is a JSON ``POST`` (the
:func:`summary` of the job) signed like Stripe's: the header

    SCA-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of f"{t}.{body}">

keyed with the job's ``callback_secret`` or else the service's
``SCA_WEBHOOK_SECRET``; ``SCA-Delivery`` (``<job id>:<status>``) and the
body's ``job`` are the same for every attempt (``sent``, ``t`` and the
signature change), so a receiver can drop repeats.  What a delivery needs is kept under
``webhook:<job id>`` until it is delivered or given up, so deleting a job
right after it finished does not lose its webhook.

Delivery never runs on an API thread.  :func:`dispatch` hands the job to
the store's dispatcher: a Celery task (``sca.webhook``, retried with
exponential backoff) with Redis, the embedded runner's thread pool (retries
scheduled by timers) without.  Each attempt:

* takes only ``http`` and ``https`` URLs without credentials;
* resolves the host at delivery time and connects to an address it checked
  (no second lookup, so DNS rebinding cannot swap it): loopback, private,
  link-local (169.254.169.254, the cloud metadata address), shared, reserved
  and multicast addresses are refused unless ``SCA_WEBHOOK_ALLOW`` lists them;
* follows no redirect (any answer but 2xx is a failure, tried again);
* ends within ``SCA_WEBHOOK_TIMEOUT`` seconds, however slowly the receiver answers.

``SCA_WEBHOOK_ALLOW`` (comma-separated host name patterns such as
``hooks.example.com`` or ``*.example.com``, and addresses or networks such as
``127.0.0.1`` or ``10.0.0.0/8``): unset, any host with public addresses; set,
only hosts whose name matches a pattern or whose address is in a listed
network, and an address outside the listed networks must still be public.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .jobs import now, timings
from .store import ArtifactMissing, Store, keys

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "SCA-Signature"
MAX_URL = 2048
#: Names refused whatever they resolve to (unless allowed by name).
LOCAL_NAMES = ("localhost", "*.localhost", "*.local", "*.internal", "metadata", "*.arpa")
#: Seconds between attempts: ``backoff * 2**attempt``, at most this.
MAX_BACKOFF = 600.0


class Refused(ValueError):
    """A callback URL that may not be called; the message says why."""


@dataclass
class Allow:
    """The parsed ``SCA_WEBHOOK_ALLOW``."""

    names: list = field(default_factory=list)
    networks: list = field(default_factory=list)

    @classmethod
    def parse(cls, text: str | None) -> Allow:
        allow = cls()
        for item in (text or "").split(","):
            item = item.strip().lower()
            if not item:
                continue
            try:
                allow.networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
            except ValueError:
                allow.names.append(item.rstrip("."))
        return allow

    def __bool__(self) -> bool:
        return bool(self.names or self.networks)

    def name_allowed(self, host: str) -> bool:
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self.names)

    def address_allowed(self, address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)


def _address(text: str):
    address = ipaddress.ip_address(text.split("%", 1)[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def address_permitted(address, allow: Allow) -> bool:
    """Whether an address may be called: listed, or public."""
    address = _address(str(address))
    if allow.address_allowed(address):
        return True
    return address.is_global and not address.is_multicast


def check_url(url, allow: Allow) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of a callback URL that is not obviously
    disallowed; :class:`Refused` otherwise.  Names are resolved at delivery."""
    if not isinstance(url, str) or not url:
        raise Refused("must be an http or https URL")
    if len(url) > MAX_URL or any(ord(c) <= 32 or ord(c) == 127 for c in url):
        raise Refused(f"must be a URL of at most {MAX_URL} characters without spaces")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("must be an http or https URL")
    if parts.username is not None or parts.password is not None:
        raise Refused("must not carry credentials (sign with callback_secret instead)")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("has no host")
    port = port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        address = _address(host)
    except ValueError:
        address = None
    if address is not None:
        if not address_permitted(address, allow):
            raise Refused(
                f"{host} is a loopback, private, link-local or reserved address "
                f"(not in SCA_WEBHOOK_ALLOW)"
            )
        if allow and not allow.address_allowed(address):
            raise Refused(f"{host} is not in SCA_WEBHOOK_ALLOW")
    elif allow:
        if not allow.name_allowed(host):
            raise Refused(f"{host} is not in SCA_WEBHOOK_ALLOW")
    elif any(fnmatch.fnmatchcase(host, pattern) for pattern in LOCAL_NAMES):
        raise Refused(f"{host} is a local name (not in SCA_WEBHOOK_ALLOW)")
    return parts.scheme, host, port, path


def resolve(host: str, port: int, allow: Allow) -> list[str]:
    """The permitted addresses of ``host`` now (:class:`Refused` when there is none)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"{host} does not resolve ({exc})") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    permitted = [a for a in addresses if address_permitted(a, allow)]
    if not permitted:
        raise Refused(
            f"{host} resolves to {', '.join(addresses)}: loopback, private, "
            f"link-local or reserved (not in SCA_WEBHOOK_ALLOW)"
        )
    return permitted


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``SCA-Signature`` header value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


# -- one attempt ----------------------------------------------------------------------------
class _Pinned(http.client.HTTPConnection):
    """An HTTP connection to one checked address (the Host header keeps the name)."""

    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self):
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTLS(_Pinned):
    default_port = 443

    def connect(self):
        super().connect()
        context = ssl.create_default_context()
        self.sock = context.wrap_socket(self.sock, server_hostname=self.host)


def post(url: str, body: bytes, headers: dict, timeout: float, allow: Allow) -> int:
    """POST ``body`` to ``url`` (checked, resolved and pinned as the module says); the
    status.  Raises :class:`Refused` or ``OSError`` / ``http.client.HTTPException``."""
    scheme, host, port, path = check_url(url, allow)
    address = resolve(host, port, allow)[0]
    kind = _PinnedTLS if scheme == "https" else _Pinned
    connection = kind(host, port, address, timeout)
    # A receiver answering a byte at a time is cut off at the deadline.
    timer = threading.Timer(timeout, _shut, (connection,))
    timer.daemon = True
    timer.start()
    try:
        connection.request(
            "POST",
            path,
            body=body,
            headers={"Content-Type": "application/json", "User-Agent": "sca-webhook", **headers},
        )
        response = connection.getresponse()
        response.read(65536)
        return response.status
    finally:
        timer.cancel()
        connection.close()


def _shut(connection) -> None:
    try:
        if connection.sock is not None:
            connection.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def summary(record: dict, status: str) -> dict:
    """The job as its webhook shows it: no result (``links.self`` has it)."""
    job = {
        "id": record["id"],
        "status": status,
        "stage": record.get("stage"),
        "created": record.get("created"),
        "updated": record.get("updated"),
        "timings": timings(record),
        "cached": bool(record.get("cached")),
        "links": {"self": f"/v1/jobs/{record['id']}"},
    }
    if status == "failed" and record.get("error"):
        job["error"] = record["error"]
    return job


def prepare(store: Store, record: dict, status: str) -> None:
    """Keep what the delivery needs under ``webhook:<job id>`` (until delivered or
    given up, at most the job TTL), so that deleting the job does not drop it."""
    store.save_json(
        keys.webhook(record["id"]),
        {
            "url": record["callback"]["url"],
            "secret": record["callback"].get("secret"),
            "status": status,
            "job": summary(record, status),
            "result": keys.artifact_keys(record)["result"] if status == "succeeded" else None,
        },
    )


def _with_result(store: Store, pending: dict) -> dict:
    """The job of a succeeded job's webhook with ``k`` and the cluster sizes, read
    here, on a worker, once (later attempts send the same body)."""
    job = pending["job"]
    if pending.get("result") and "k" not in job:
        try:
            result = store.load_json(pending["result"])
            job["k"] = result.get("k")
            job["sizes"] = [len(members) for members in result.get("clusters", [])]
        except Exception:  # noqa: BLE001 - deleted or expired meanwhile: the summary says less
            job["k"] = None
        store.save_json(keys.webhook(job["id"]), pending)
    return job


def attempt(store: Store, job_id: str, status: str, number: int, settings) -> bool | None:
    """Deliver a job's webhook once (attempt ``number``, from 1).  True: delivered;
    False: failed, try again; None: nothing (more) to deliver."""
    try:
        pending = store.load_json(keys.webhook(job_id))
    except ArtifactMissing:  # delivered, given up, or expired
        return None
    if pending["status"] != status:
        return None
    secret = pending.get("secret") or settings.get("SCA_WEBHOOK_SECRET")
    if not secret:
        _give_up(store, job_id, number, "no callback_secret and no SCA_WEBHOOK_SECRET")
        return None
    payload = {"type": f"job.{status}", "job": _with_result(store, pending), "sent": now()}
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
        "SCA-Delivery": f"{job_id}:{status}",
    }
    try:
        code = post(
            pending["url"],
            body,
            headers,
            float(settings["SCA_WEBHOOK_TIMEOUT"]),
            Allow.parse(settings.get("SCA_WEBHOOK_ALLOW")),
        )
        error = None if 200 <= code < 300 else f"HTTP {code}"
    except Refused as exc:
        error = f"refused: {exc}"
    except (OSError, http.client.HTTPException) as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    if error is None:
        store.delete(keys.webhook(job_id))
        _note(store, job_id, "delivered", number, None)
        return True
    if number > int(settings["SCA_WEBHOOK_RETRIES"]):
        _give_up(store, job_id, number, error)
        return None
    _note(store, job_id, "retrying", number, error)
    log.warning("job %s: webhook attempt %d failed: %s", job_id, number, error)
    return False


def _give_up(store: Store, job_id: str, number: int, error: str) -> None:
    store.delete(keys.webhook(job_id))
    _note(store, job_id, "failed", number, error)
    log.warning("job %s: webhook given up after attempt %d: %s", job_id, number, error)
    return None


def _note(store: Store, job_id: str, state: str, number: int, error: str | None) -> None:
    try:
        store.update_job(
            job_id, {"callback_state": state, "callback_attempts": number, "callback_error": error}
        )
    except Exception as exc:  # noqa: BLE001 - a note only
        log.warning("job %s: webhook state not recorded: %s", job_id, type(exc).__name__)


def backoff(retries: int, settings) -> float:
    """Seconds before attempt ``retries + 2``."""
    return min(MAX_BACKOFF, float(settings["SCA_WEBHOOK_BACKOFF"]) * 2**retries)


# -- handing deliveries over -------------------------------------------------------------------
def attach(store: Store, send) -> None:
    """Deliver this store's webhooks with ``send(job_id, status)`` (which must not block)."""
    store.send_webhook = send


def via_celery(store: Store, celery) -> None:
    """Webhooks of ``store`` go to the ``sca.webhook`` task of ``celery``."""
    attach(
        store,
        lambda job_id, status: celery.send_task(
            "sca.webhook", kwargs={"job_id": job_id, "status": status}
        ),
    )


def dispatch(store: Store, record: dict, status: str) -> None:
    """Hand a finished job's webhook to the store's dispatcher (none: logged)."""
    if not record.get("callback"):
        return
    send = store.send_webhook
    if send is None:
        log.warning("job %s: no webhook dispatcher here; its webhook is not sent", record["id"])
        return
    try:
        prepare(store, record, status)
        send(record["id"], status)
    except Exception as exc:  # noqa: BLE001 - the job is finished whatever happens here
        log.warning("job %s: webhook not dispatched: %s", record["id"], exc)
        _note(store, record["id"], "failed", 0, f"not dispatched: {type(exc).__name__}")
