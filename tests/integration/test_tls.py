"""TLS to Redis (``rediss://``) with real processes: a throwaway CA and server
certificate, ``redis-server`` listening on a TLS port only, a ``celery -A worker
worker`` and the API both verifying the server against that CA.  A plain
``redis://`` connection to the same port, or a CA that did not sign the server's
certificate, leaves the API not ready (503), so the job's success proves TLS."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import BASEBALL_BODY, BASEBALL_TEAMS, answers, free_port, stop_process
from tests.integration.faults import Api, Worker, worker_env

#: Options of the API: no keys (anonymous) and short Redis timeouts, so that 503s come fast.
OPEN = {"SCA_API_KEYS": "", "SCA_ALLOW_ANONYMOUS": 1, "SCA_REDIS_TIMEOUT": 3}


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"openssl {' '.join(args)} failed:\n{result.stderr}")


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA (EC P-256 key, valid one day): its certificate and key."""
    if shutil.which("openssl") is None:
        pytest.fail("the TLS test needs the openssl command")
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.name, cwd=directory)
    _openssl(
        "req",
        "-x509",
        "-new",
        "-key",
        key.name,
        "-subj",
        f"/CN={name}",
        "-days",
        "1",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        "-out",
        cert.name,
        cwd=directory,
    )
    return cert, key


def make_server_cert(directory: Path, ca_cert: Path, ca_key: Path) -> tuple[Path, Path]:
    """A server certificate for 127.0.0.1 / localhost signed by the CA: certificate, key."""
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.crt"
    ext = directory / "server.ext"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key.name, cwd=directory)
    _openssl(
        "req", "-new", "-key", key.name, "-subj", "/CN=127.0.0.1", "-out", csr.name, cwd=directory
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        csr.name,
        "-CA",
        str(ca_cert),
        "-CAkey",
        str(ca_key),
        "-set_serial",
        "1",
        "-days",
        "1",
        "-extfile",
        ext.name,
        "-out",
        cert.name,
        cwd=directory,
    )
    return cert, key


def rediss_url(port: int, ca_cert: Path) -> str:
    return f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required&ssl_ca_certs={ca_cert}"


class TlsRedis:
    """``redis-server`` with TLS on a free port and no plain-text port at all."""

    def __init__(self, directory: Path):
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("no redis-server binary: `make install-test` installs one")
        self.ca_cert, ca_key = make_ca(directory, "test-ca")
        self.other_ca, _ = make_ca(directory, "other-ca")  # signed nothing here
        cert, key = make_server_cert(directory, self.ca_cert, ca_key)
        self.port = free_port()
        self.url = rediss_url(self.port, self.ca_cert)
        log = directory / "redis.log"
        with open(log, "w") as out:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [
                    binary,
                    "--port",
                    "0",
                    "--tls-port",
                    str(self.port),
                    "--tls-cert-file",
                    str(cert),
                    "--tls-key-file",
                    str(key),
                    "--tls-ca-cert-file",
                    str(self.ca_cert),
                    "--tls-auth-clients",
                    "no",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(directory),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 15
        while not answers(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(
                    f"redis-server did not answer over TLS on port {self.port}: is it "
                    f"built with TLS support (BUILD_TLS=yes)?  Its log:\n"
                    f"{log.read_text()[-2000:]}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            stop_process(self.process, 15)


@pytest.fixture
def tls_redis(tmp_path):
    server = TlsRedis(tmp_path)
    yield server
    server.stop()


def test_rediss_broker_backend_and_store_with_a_verified_ca(tls_redis, tmp_path):
    # Not served without TLS, nor to a client verifying against another CA.
    for url in (
        f"redis://127.0.0.1:{tls_redis.port}/0",
        rediss_url(tls_redis.port, tls_redis.other_ca),
    ):
        api = Api(url, f"sca-tls-{uuid.uuid4().hex[:6]}:", **OPEN)
        try:
            response = api.request("get", "/readyz")
            assert response.status_code == 503, (url, response.status_code, response.text)
            checks = response.json()["checks"]
            assert checks["store"].startswith("unreachable"), (url, checks)
            assert checks["broker"].startswith("unreachable"), (url, checks)
        finally:
            api.close()

    prefix = f"sca-tls-{uuid.uuid4().hex[:6]}:"
    worker = Worker(worker_env(tls_redis.url, prefix), tmp_path / "worker.log", "tls")
    api = Api(tls_redis.url, prefix, **OPEN)
    try:
        ready = api.request("get", "/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"store": "ok", "broker": "ok", "redis": "ok"}
        response = api.request("post", "/v1/jobs", json=BASEBALL_BODY)
        assert response.status_code == 202, response.text
        job = api.wait(response.json()["id"], timeout=60)
        assert job["status"] == "succeeded", job.get("error")
        assert job["result"]["k"] == 2
        assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
        # The stages ran in the worker, which reached Redis over TLS only.
        assert "sca.iterate" in (tmp_path / "worker.log").read_text()
    finally:
        api.close()
        worker.stop()
