"""Route-test fixtures: the app on the embedded default, and a client that checks
every response against ``openapi.yaml``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from openapi_schema_validator import OAS31Validator

from service import create_app

SPEC_PATH = Path(__file__).resolve().parents[2] / "openapi.yaml"


def load_spec() -> dict:
    return yaml.safe_load(SPEC_PATH.read_text())


class ContractError(AssertionError):
    pass


class ContractClient:
    """A Flask test client whose responses must match the documented ones."""

    def __init__(self, client, spec: dict):
        self.raw = client
        self.spec = spec
        self.routes = [(re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), item)
                       for path, item in spec["paths"].items()]

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
            raise ContractError(f"response does not match the spec: {errors[0].message} "
                                f"at {list(errors[0].absolute_path)}")

    def check(self, method: str, path: str, response) -> None:
        path = path.split("?")[0]
        item = next((item for pattern, item in self.routes if pattern.match(path)), None)
        operation = item.get(method) if item else None
        if operation is None:
            raise ContractError(f"{method.upper()} {path} is not in openapi.yaml")
        documented = operation["responses"].get(str(response.status_code))
        if documented is None:
            raise ContractError(f"{method.upper()} {path}: status {response.status_code} "
                                f"is not documented ({response.get_data(as_text=True)[:300]})")
        documented = self._resolve(documented)
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
        for name, header in documented.get("headers", {}).items():
            if name == "Location" and name not in response.headers:
                raise ContractError(f"missing header {name}")


class IdleQueue:
    """A queue that records submissions and never runs them (jobs stay queued)."""

    def __init__(self):
        self.submitted, self.revoked = [], []

    def submit(self, job_id):
        self.submitted.append(job_id)
        return f"task-{job_id}"

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


def wait_for(client, job_id: str, timeout: float = 60) -> dict:
    """Poll a job until it leaves queued/running."""
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}").get_json()
        if job["status"] not in ("queued", "running"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout}s")
        time.sleep(0.02)
