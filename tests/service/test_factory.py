"""Configuration: defaults, then the environment, then the test mapping."""

from __future__ import annotations

from pathlib import Path

import fakeredis
import pytest
import redis
import yaml

from sca_service import cli, create_app
from sca_service.backend import CeleryQueue
from sca_service.config import from_env
from sca_worker.config import SettingError, parse
from sca_worker.embedded import EmbeddedRunner
from sca_worker.store import Store

ROOT = Path(__file__).resolve().parents[2]


def test_embedded_default_without_redis(monkeypatch):
    monkeypatch.delenv("REDIS_URL", raising=False)
    app = create_app()
    backend = app.extensions["sca"]
    assert backend.embedded and isinstance(backend.store, Store)
    assert isinstance(backend.store.client, fakeredis.FakeRedis)  # in this process
    assert isinstance(backend.queue, EmbeddedRunner)
    backend.queue.shutdown()


def test_environment_then_test_config(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("SCA_JOB_TTL", "123")
    monkeypatch.setenv("SCA_MAX_BODY_BYTES", "4096")
    monkeypatch.setenv("SCA_API_KEYS", "k-one, k-two")
    app = create_app({"SCA_MAX_N": 7})
    assert app.config["SCA_JOB_TTL"] == 123 and app.config["MAX_CONTENT_LENGTH"] == 4096
    assert app.config["SCA_MAX_N"] == 7
    backend = app.extensions["sca"]
    assert not backend.embedded and isinstance(backend.store, Store)
    assert not isinstance(backend.store.client, fakeredis.FakeRedis)
    assert isinstance(backend.store.client, redis.Redis)
    assert backend.store.ttl == 123
    assert isinstance(backend.queue, CeleryQueue)
    conf = backend.queue.celery.conf
    assert conf.broker_url == "redis://127.0.0.1:1/0" and conf.accept_content == ["json"]
    # Nothing is reachable on port 1: not ready, but still a problem document.
    response = app.test_client().get("/readyz")
    assert response.status_code == 503 and response.mimetype == "application/problem+json"
    assert app.test_client().get("/healthz").status_code == 200
    assert app.test_client().get("/v1/jobs/x").status_code == 401


def test_settings_given_to_the_factory_as_text_are_converted_as_the_environment_s():
    """``create_app`` takes a mapping of settings; text in it (as a caller that
    reads its own configuration file passes it) is converted to the setting's
    type, and a bad value is named, as from the environment."""
    app = create_app({"SCA_JOB_TTL": "123", "SCA_ALLOW_ANONYMOUS": "true"})
    assert app.config["SCA_JOB_TTL"] == 123 and app.config["SCA_ALLOW_ANONYMOUS"] is True
    app.extensions["sca"].queue.shutdown()
    with pytest.raises(SettingError, match="SCA_JOB_TTL must be a whole number"):
        create_app({"SCA_JOB_TTL": "1d"})


def test_redis_mode_refuses_to_run_without_keys(monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.delenv("SCA_API_KEYS", raising=False)
    monkeypatch.delenv("SCA_API_KEYS_FILE", raising=False)
    with pytest.raises(RuntimeError, match="SCA_API_KEYS"):
        create_app()
    app = create_app({"SCA_ALLOW_ANONYMOUS": 1})  # explicitly open
    assert app.test_client().get("/v1/jobs/x").status_code == 503


def test_time_limits_must_stay_below_the_visibility_timeout():
    with pytest.raises(ValueError, match="SCA_VISIBILITY_TIMEOUT"):
        create_app(
            {
                "REDIS_URL": "redis://127.0.0.1:1/0",
                "SCA_ALLOW_ANONYMOUS": 1,
                "SCA_TASK_TIME_LIMIT": 4000,
                "SCA_VISIBILITY_TIMEOUT": 3600,
            }
        )


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"SCA_DATA_ROOTS": "cohorts"}, "name=location"),
        ({"SCA_DATA_ROOTS": "cohorts=relative/dir"}, "absolute"),
        ({"SCA_DATA_ROOTS": "a=/x,a=/y"}, "twice"),
        ({"SCA_DATA_ROOTS": "a=/x", "SCA_RESULTS_ROOT": "b"}, "SCA_RESULTS_ROOT"),
        ({"SCA_DATA_ROOTS": "a=s3://bucket/x", "SCA_RESULTS_ROOT": "a"}, "directory root"),
        ({"SCA_DASK_TIMEOUT": 0}, "SCA_DASK_TIMEOUT"),
    ],
)
def test_storage_roots_and_the_dask_settings_are_checked_at_start_up(settings, named):
    with pytest.raises(ValueError, match=named):
        create_app({"SCA_ALLOW_ANONYMOUS": 1, **settings})


def test_compose_file_runs_the_documented_commands():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {name for name in services if not services[name].get("profiles")} == {
        "redis",
        "api",
        "worker",
    }
    assert services["api"]["command"][:2] == ["sca", "serve"]  # the front, as everywhere
    assert cli.parser().parse_args(services["api"]["command"][1:]).workers == 2
    assert services["worker"]["command"][:4] == ["celery", "-A", "worker", "worker"]
    for name in services:
        assert "healthcheck" in services[name]
    env = services["worker"]["environment"]
    assert env["OMP_NUM_THREADS"] == "1" and env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["REDIS_URL"] == services["api"]["environment"]["REDIS_URL"]


def test_celery_queue_sends_only_the_job_id():
    calls = []

    class FakeCelery:
        def send_task(self, name, kwargs, **options):
            calls.append((name, kwargs, options["task_id"], options["ignore_result"]))

            class Result:
                id = options["task_id"] or "task-1"

            return Result()

    assert CeleryQueue(FakeCelery()).submit("job-1") == "task-1"
    # the id the API chose (the record names it before the task is sent); no result kept
    assert CeleryQueue(FakeCelery()).submit("job-2", "named") == "named"
    assert calls == [
        ("sca.start", {"job_id": "job-1"}, None, True),
        ("sca.start", {"job_id": "job-2"}, "named", True),
    ]


@pytest.mark.parametrize(
    "text, value",
    [
        ("true", True),
        ("Yes", True),
        ("1", True),
        ("on", True),
        ("FALSE", False),
        ("no", False),
        ("0", False),
        (" off ", False),
    ],
)
def test_flags_read_their_usual_spellings(text, value):
    assert from_env({"SCA_ALLOW_ANONYMOUS": text}) == {"SCA_ALLOW_ANONYMOUS": value}


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("SCA_RATE_LIMIT", "1.5", "a whole number"),
        ("SCA_JOB_TTL", "1d", "a whole number"),
        ("SCA_ALLOW_ANONYMOUS", "maybe", "true or false"),
        ("SCA_ALLOW_ANONYMOUS", "2", "true or false"),
    ],
)
def test_a_setting_of_the_wrong_type_is_named_with_its_type(name, text, expected):
    with pytest.raises(SettingError) as error:
        from_env({name: text})
    assert name in str(error.value) and expected in str(error.value) and text in str(error.value)


def test_numbers_keep_their_type_and_text_stays_text():
    assert from_env({"SCA_RATE_LIMIT": " 7 ", "SCA_KEY_PREFIX": "x:", "SCA_API_KEYS": ""}) == {
        "SCA_RATE_LIMIT": 7,
        "SCA_KEY_PREFIX": "x:",
    }
    assert parse("X", "2.5", 1.0) == 2.5
    for bad in ("nan", "inf", "two"):
        with pytest.raises(SettingError, match="X must be a finite number"):
            parse("X", bad, 1.0)
