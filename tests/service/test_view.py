"""The job page's shell (``GET /v1/jobs/{id}/view``): static, needs no key, reveals nothing.

Every response is checked against openapi.yaml.  The page itself, with and
without keys, runs in a real browser in tests/integration/test_job_page.py.
"""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
import yaml

from sca.pipeline import TASKS
from tests.conftest import BASEBALL_BODY
from tests.service.conftest import KEY_A, KEY_B, SPEC_PATH, A, B, finished_job, problem

NO_KEY = {}
WRONG = {"Authorization": "Bearer wrong-key"}


def _shell(response) -> tuple[bytes, dict]:
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return response.get_data(), dict(response.headers)


@pytest.fixture
def job_of_a(keyed):
    return finished_job(keyed, headers=A)


def test_shell_is_self_contained_html_with_a_strict_policy(client):
    response = client.get("/v1/jobs/anything/view")
    assert response.status_code == 200 and response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    # No external assets: no src/href to another origin, no stylesheet or script files.
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html)
    assert "<link" not in html and not re.search(r"<script[^>]+src=", html)
    for element_id in (
        "status",
        "stages",
        "progress",
        "clusters",
        "plots",
        "query-form",
        "answer-cluster",
        "key-section",
        "key-form",
        "api-key",
        "key-error",
    ):
        assert f'id="{element_id}"' in html
    # The key: sessionStorage only, and its input has no name (a form never submits it).
    assert "sessionStorage" in html and "localStorage" not in html
    assert re.search(r'<input id="api-key" type="password"', html)
    assert not re.search(r'<input id="api-key"[^>]*\bname=', html)

    csp = dict(
        part.strip().split(" ", 1)
        for part in response.headers["Content-Security-Policy"].split(";")
    )
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert csp == {
        "default-src": "'none'",
        "connect-src": "'self'",
        "img-src": "blob:",
        "style-src": "'unsafe-inline'",
        "script-src": f"'sha256-{digest}'",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_shell_is_the_same_for_every_id_without_keys(client):
    job_id = finished_job(client)
    shells = {
        _shell(client.get(f"/v1/jobs/{job_id}/view"))[0],
        _shell(client.get("/v1/jobs/nope/view"))[0],
    }
    assert len(shells) == 1
    html = shells.pop().decode()
    assert job_id not in html and "Rose" not in html
    # The page reports a missing job from the JSON API.
    problem(client.get("/v1/jobs/nope"), 404, "id")


def test_shell_is_identical_for_own_foreign_and_missing_jobs_with_keys(keyed, job_of_a):
    job_of_b = keyed.post(
        "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": 7}), headers=B
    ).get_json()["id"]
    responses = [
        keyed.get(f"/v1/jobs/{job_id}/view", headers=headers)
        for job_id in (job_of_a, job_of_b, "nope", "x" * 64)
        for headers in (NO_KEY, A, B, WRONG)
    ]
    shells = {(body, tuple(sorted(headers.items()))) for body, headers in map(_shell, responses)}
    assert len(shells) == 1
    ((body, headers),) = shells
    html = body.decode()
    for secret in (job_of_a, job_of_b, KEY_A, KEY_B, "Rose", "Cobb"):
        assert secret not in html
    assert "WWW-Authenticate" not in dict(headers)


def test_shell_looks_nothing_up(keyed, job_of_a):
    store = keyed.raw.application.extensions["sca"].store

    def forbidden(*args, **kwargs):
        raise AssertionError("the shell must not read the store")

    reference = _shell(keyed.get("/v1/jobs/nope/view"))
    with pytest.MonkeyPatch.context() as patch:
        for name in ("get_job", "load_bytes", "load_arrays", "load_json"):
            assert hasattr(store, name), name
            patch.setattr(store, name, forbidden)
        assert _shell(keyed.get(f"/v1/jobs/{job_of_a}/view")) == reference


def test_json_routes_keep_their_access_control(keyed, job_of_a):
    base = f"/v1/jobs/{job_of_a}"
    routes = [
        ("get", base, {}),
        ("post", f"{base}/custom-clusters", {"json": {"element": "Rose"}}),
        ("get", f"{base}/elements/Rose/similar", {}),
        ("get", f"{base}/plots/spectrum.png", {}),
        ("get", f"{base}/plots/custom.png?element=Rose&max_size=3", {}),
    ]
    for method, path, kwargs in routes:
        for headers in (NO_KEY, WRONG, {"Authorization": f"Bearer {KEY_A}x"}):
            problem(keyed.open(method, path, headers=headers, **kwargs), 401, "Authorization")
        problem(keyed.open(method, path, headers=B, **kwargs), 404, "id")
        missing = path.replace(job_of_a, "nope")
        problem(keyed.open(method, missing, headers=A, **kwargs), 404)
        assert keyed.open(method, path, headers=A, **kwargs).status_code == 200, path
    problem(keyed.delete(base, headers=NO_KEY), 401, "Authorization")
    problem(keyed.delete(base, headers=B), 404, "id")
    assert keyed.delete(base, headers=A).status_code == 204


def test_the_page_and_the_api_list_every_stage_of_the_core(client):
    """A stage added to the core's table (sca.pipeline.STAGES) needs its label on
    the page (the page's script reads their order from it) and in the API's Stage."""
    stages = ["ensemble", *TASKS]
    html = client.get("/v1/jobs/anything/view").get_data(as_text=True)
    assert re.findall(r'<li data-stage="([a-z_]+)"', html) == stages
    spec = yaml.safe_load(SPEC_PATH.read_text())
    assert spec["components"]["schemas"]["Stage"]["enum"] == [*stages, None]
