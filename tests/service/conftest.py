"""Route-test fixtures and helpers: the app on the embedded default, a client that
checks every response against ``openapi.yaml``, API keys, problem documents and
finished jobs."""

from __future__ import annotations

import re
import time
import tracemalloc
from contextlib import contextmanager

import pytest
import yaml
from openapi_schema_validator import OAS31Validator

from sca_service import create_app
from tests.conftest import BASEBALL_BODY, ROOT, wait_for

SPEC_PATH = ROOT / "openapi.yaml"
#: Two API keys and their headers (apps made with ``SCA_API_KEYS=f"{KEY_A},{KEY_B}"``).
KEY_A, KEY_B = "alpha-0123456789abcdef", "bravo-fedcba9876543210"
A = {"Authorization": f"Bearer {KEY_A}"}
B = {"Authorization": f"Bearer {KEY_B}"}


def load_spec() -> dict:
    return yaml.safe_load(SPEC_PATH.read_text())


class ContractError(AssertionError):
    pass


class ContractClient:
    """A Flask test client whose responses must match the documented ones."""

    def __init__(self, client, spec: dict):
        self.raw = client
        self.spec = spec
        self.routes = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), item)
            for path, item in spec["paths"].items()
        ]

    def open(self, method: str, path: str, **kwargs):
        response = getattr(self.raw, method)(path, **kwargs)
        self.check(method, path, response)
        return response

    def get(self, path, **kwargs):
        return self.open("get", path, **kwargs)

    def post(self, path, **kwargs):
        return self.open("post", path, **kwargs)

    def delete(self, path, **kwargs):
        return self.open("delete", path, **kwargs)

    def _resolve(self, node: dict) -> dict:
        while "$ref" in node and len(node) == 1:
            parts = node["$ref"].lstrip("#/").split("/")
            node = self.spec
            for part in parts:
                node = node[part]
        return node

    def validate(self, instance, schema: dict) -> None:
        root = dict(schema, components=self.spec["components"])
        errors = sorted(OAS31Validator(root).iter_errors(instance), key=str)
        if errors:
            raise ContractError(
                f"response does not match the spec: {errors[0].message} "
                f"at {list(errors[0].absolute_path)}"
            )

    def check(self, method: str, path: str, response) -> None:
        path = path.split("?")[0]
        item = next((item for pattern, item in self.routes if pattern.match(path)), None)
        operation = item.get(method) if item else None
        if operation is None:
            raise ContractError(f"{method.upper()} {path} is not in openapi.yaml")
        documented = operation["responses"].get(str(response.status_code))
        if documented is None:
            raise ContractError(
                f"{method.upper()} {path}: status {response.status_code} "
                f"is not documented ({response.get_data(as_text=True)[:300]})"
            )
        documented = self._resolve(documented)
        missing = [name for name in documented.get("headers", {}) if name not in response.headers]
        if missing:
            raise ContractError(
                f"{method.upper()} {path}: status {response.status_code} lacks "
                f"the documented header(s) {', '.join(missing)}"
            )
        content = documented.get("content")
        if not content:
            if response.get_data():
                raise ContractError(f"{response.status_code} should have no body")
            return
        if response.mimetype not in content:
            raise ContractError(f"media type {response.mimetype} not in {sorted(content)}")
        schema = content[response.mimetype].get("schema", {})
        if response.mimetype.endswith("json"):
            self.validate(response.get_json(), schema)


class Gate:
    """Holds submitted jobs (they stay queued) until released to the real runner."""

    def __init__(self, runner):
        self.runner, self.held = runner, []

    def submit(self, job_id, task_id=None):
        self.held.append(job_id)
        return task_id or f"held-{job_id}"

    def release(self):
        for job_id in self.held:
            self.runner.submit(job_id)

    def revoke(self, job_id, task_ids=()):
        self.runner.revoke(job_id, task_ids)

    def ping(self):
        return True

    def shutdown(self):
        self.runner.shutdown()


class IdleQueue:
    """A queue that records submissions and never runs them (jobs stay queued)."""

    def __init__(self):
        self.submitted, self.revoked, self.tasks = [], [], {}

    def submit(self, job_id, task_id=None):
        self.submitted.append(job_id)
        self.tasks[job_id] = task_id or f"task-{job_id}"
        return self.tasks[job_id]

    def revoke(self, job_id, task_ids=()):
        self.revoked.append((job_id, [t for t in task_ids if t]))

    def ping(self):
        return True


@pytest.fixture(scope="session")
def spec():
    return load_spec()


def _app(**config):
    return create_app({"TESTING": True, "REDIS_URL": None, **config})


@pytest.fixture
def app():
    app = _app()
    yield app
    app.extensions["sca"].queue.shutdown()


@pytest.fixture
def client(app, spec):
    return ContractClient(app.test_client(), spec)


@pytest.fixture
def idle_queue():
    return IdleQueue()


@pytest.fixture
def idle_client(idle_queue, spec):
    """A client whose jobs are never run (for queued-job behaviour)."""
    return ContractClient(_app(SCA_QUEUE=idle_queue).test_client(), spec)


@pytest.fixture
def make_client(spec):
    """A client on an app with extra config."""
    apps = []

    def make(**config):
        app = _app(**config)
        apps.append(app)
        return ContractClient(app.test_client(), spec)

    yield make
    for app in apps:
        queue = app.extensions["sca"].queue
        if hasattr(queue, "shutdown"):
            queue.shutdown()


@pytest.fixture
def keyed(make_client):
    """A client on an app with the two API keys ``KEY_A`` and ``KEY_B``."""
    return make_client(SCA_API_KEYS=f"{KEY_A},{KEY_B}")


def keyed_get(client, headers: dict | None = None):
    """``get(path)`` of ``client`` sending ``headers`` (one key's) on every call, for
    :func:`tests.conftest.wait_for`."""
    return lambda path, **kwargs: client.get(path, headers=headers or {}, **kwargs)


def finished_job(client, body: dict | None = None, headers: dict | None = None) -> str:
    """Submit ``body`` (the baseball example by default) with ``headers``, wait for the
    job and check that it succeeded; its id."""
    response = client.post(
        "/v1/jobs", json=BASEBALL_BODY if body is None else body, headers=headers or {}
    )
    assert response.status_code == 202, response.get_data(as_text=True)
    job = wait_for(keyed_get(client, headers), response.get_json()["id"])
    assert job["status"] == "succeeded", job.get("error")
    return job["id"]


def problem(response, status: int, field: str | None = None) -> dict:
    """Check that ``response`` is a problem document of ``status`` (naming ``field``); its body."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["status"] == status and body["title"] and body["detail"] and body["type"]
    if field is not None:
        assert field in body.get("errors", {}), body
    return body


@contextmanager
def bounded(seconds: float = 1.0, megabytes: float = 32):
    """The block must finish within ``seconds`` and its allocations (Python objects
    and numpy arrays, as tracemalloc sees them) peak below ``megabytes``."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        yield
    finally:
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    assert peak < megabytes * 2**20, f"allocated {peak / 2**20:.0f} MB at the peak"
