"""Importing the worker's modules builds no Celery app; ``worker.app`` builds it on demand."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def test_importing_the_service_builds_no_celery_app():
    # Settings the Celery app refuses do not stop the web process from importing.
    done = _python(
        "import sys, sca_service, sca_worker.stages, sca_worker.embedded\n"
        "import sca_worker.store\n"
        "assert 'sca_worker.celery_app' not in sys.modules, 'celery app built'\n",
        SCA_TASK_SOFT_TIME_LIMIT="5000",
    )
    assert done.returncode == 0, done.stderr


def test_worker_app_is_built_on_first_use():
    done = _python(
        "import sys, worker\n"
        "assert 'sca_worker.celery_app' not in sys.modules\n"
        "from celery import Celery\n"
        "assert isinstance(worker.app, Celery) and worker.app is worker.app\n"
        "app_module = sys.modules['sca_worker.celery_app']\n"
        "assert worker.create_celery is app_module.create_celery\n"
    )
    assert done.returncode == 0, done.stderr
    refused = _python("import worker; worker.app", SCA_TASK_SOFT_TIME_LIMIT="5000")
    assert refused.returncode != 0 and "SCA_TASK_SOFT_TIME_LIMIT" in refused.stderr


def test_unknown_attributes_are_attribute_errors():
    done = _python(
        "import worker\n"
        "try:\n    worker.nothing\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('no AttributeError')\n"
    )
    assert done.returncode == 0, done.stderr


def test_a_worker_with_a_bad_setting_stops_with_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "worker", "worker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SCA_HEARTBEAT_INTERVAL": "ten"},
    )
    assert done.returncode != 0
    assert (
        done.stderr.strip() == "sca worker: SCA_HEARTBEAT_INTERVAL must be a whole number, "
        "not 'ten'"
    ), done.stderr
