"""Which hosts the service answers for (DNS rebinding) and which pages may post to
it (cross-site forms), on the embedded default and with keys."""

from __future__ import annotations

import io

import numpy as np
import pytest
import requests

from tests.conftest import BASEBALL_S, npy
from tests.service.conftest import A, problem
from tests.service.serving import serve

EVIL = "rebind.evil.invalid"


def _form():
    return {
        "file": (io.BytesIO(npy(np.array(BASEBALL_S, dtype=float))), "S.npy"),
        "input": "consensus",
    }


@pytest.mark.parametrize("host", [EVIL, f"{EVIL}:8000", "localhost.evil.invalid", "127.0.0.2"])
def test_an_open_service_answers_only_for_loopback_names(client, host):
    problem(client.raw.get("/v1/jobs", headers={"Host": host}), 400, "Host")
    problem(client.raw.get("/", headers={"Host": host}), 400, "Host")


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000"])
def test_loopback_names_are_served(client, host):
    assert client.raw.get("/v1/jobs", headers={"Host": host}).status_code == 200


def test_health_probes_answer_any_host(client):
    assert client.raw.get("/healthz", headers={"Host": "10.0.0.7:8000"}).status_code == 200


def test_the_allow_list_is_a_setting(make_client):
    named = make_client(SCA_ALLOWED_HOSTS="sca.example.org, [::1]")
    assert named.raw.get("/v1/jobs", headers={"Host": "sca.example.org"}).status_code == 200
    assert named.raw.get("/v1/jobs", headers={"Host": "[::1]:80"}).status_code == 200
    problem(named.raw.get("/v1/jobs", headers={"Host": "localhost"}), 400, "Host")
    anyone = make_client(SCA_ALLOWED_HOSTS="*")
    assert anyone.raw.get("/v1/jobs", headers={"Host": EVIL}).status_code == 200


def test_with_keys_any_host_is_answered(keyed):
    assert keyed.raw.get("/v1/jobs", headers={**A, "Host": EVIL}).status_code == 200


def test_a_rebound_name_is_refused_over_http(app):
    with serve(app) as url:
        response = requests.get(f"{url}/v1/jobs", headers={"Host": EVIL}, timeout=10)
        assert response.status_code == 400 and "Host" in response.json()["errors"]
        assert requests.get(f"{url}/v1/jobs", timeout=10).status_code == 200


CROSS_SITE = [
    {"Origin": "http://evil.invalid"},
    {"Origin": "null"},
    {"Origin": "http://localhost:9999"},
    {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.invalid"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://sub.localhost"},
]


@pytest.mark.parametrize("headers", CROSS_SITE)
def test_a_form_posted_from_another_site_is_403(client, headers):
    answer = client.post(
        "/v1/jobs", data=_form(), content_type="multipart/form-data", headers=headers
    )
    problem(answer, 403, "Origin")
    assert client.get("/v1/jobs").get_json()["data"] == []


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "http://localhost"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost"},
        {"Sec-Fetch-Site": "none"},
    ],
)
def test_the_pages_own_posts_and_other_clients_are_served(client, headers):
    answer = client.post(
        "/v1/jobs", data=_form(), content_type="multipart/form-data", headers=headers
    )
    assert answer.status_code == 202, answer.get_data(as_text=True)


def test_a_cross_site_delete_is_403(keyed):
    job = keyed.post("/v1/jobs", json={"consensus": BASEBALL_S}, headers=A).get_json()["id"]
    answer = keyed.delete(f"/v1/jobs/{job}", headers={**A, "Sec-Fetch-Site": "cross-site"})
    problem(answer, 403, "Origin")
    assert keyed.get(f"/v1/jobs/{job}", headers=A).status_code == 200
