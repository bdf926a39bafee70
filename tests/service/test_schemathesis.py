"""Property-based run of every operation in ``openapi.yaml`` (schemathesis).

Requests are generated from the spec (valid and invalid ones) and sent to the
app in-process with a valid API key; job ids point at a real finished job,
so the queries reach their real code.  Every response must be documented,
conform to its schema, media type and headers, and none may be a 5xx
(schema-valid bodies may still be refused with 422 for rules the spec cannot
express, such as symmetry).  The
run is bounded: a fixed number of examples per operation, no shrinking
beyond hypothesis' defaults.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from sca_service import create_app
from tests.service.conftest import SPEC_PATH
from tests.service.conftest import finished_job as finish

KEY = "schemathesis-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
EXAMPLES = 50

APP = create_app(
    {
        "TESTING": True,
        "REDIS_URL": None,
        "SCA_API_KEYS": KEY,
        "SCA_RATE_LIMIT": 0,
        "SCA_MAX_ACTIVE_JOBS": 0,
        "SCA_MAX_N": 200,
        "SCA_MAX_RUNS": 20,
        "SCA_MAX_ITERATIONS": 2000,
        "SCA_MAX_STARTS": 5,
        # generated callback hosts are refused; a loopback one is tried once
        "SCA_WEBHOOK_ALLOW": "127.0.0.1",
        "SCA_WEBHOOK_RETRIES": 0,
    }
)
schema = schemathesis.openapi.from_path(str(SPEC_PATH))
schema.app = APP  # the WSGI transport of schemathesis


@pytest.fixture(scope="module")
def finished_job():
    """A succeeded baseball job of the key sent."""
    return finish(APP.test_client(), headers=AUTH)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_spec(case, finished_job):
    if "id" in (case.path_parameters or {}) and case.method.upper() != "DELETE":
        case.path_parameters["id"] = finished_job
    response = case.call(app=APP, headers=AUTH)
    assert response.status_code < 500, (
        case.method,
        case.formatted_path,
        response.status_code,
        response.text[:500],
    )
    # The spec cannot say "symmetric" or "n >= 2": a schema-valid body may be a 422.
    # The key sent is always valid here (401s are covered by test_auth.py).
    case.validate_response(response, excluded_checks=[positive_data_acceptance, ignored_auth])
