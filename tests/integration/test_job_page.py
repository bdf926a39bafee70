"""The job page in a real headless Chromium (Playwright driving Debian's /usr/bin/chromium).

``make install`` installs Chromium when it is missing; a machine without it
fails here (it is never skipped).  Screenshots are kept in tests/artifacts/.
"""

from __future__ import annotations

import os

import pytest

from sca.client import Client
from service import create_app
from tests.conftest import BASEBALL_IDS, BASEBALL_S, DATA, ROOT
from tests.service.serving import sca_serve, serve

CHROMIUM = os.environ.get("SCA_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "tests" / "artifacts"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: run `make install` as root (it installs "
                    "Debian's chromium) or `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], f"script errors on the page: {errors}"


def _images_loaded(page) -> None:
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('img[data-plot]')];
        return imgs.length >= 4 && imgs.every(i => i.complete && i.naturalWidth === 800);
    }""")


def test_baseball_on_the_job_page(page):
    from playwright.sync_api import expect

    with sca_serve() as url:
        job = Client(url).submit(consensus=BASEBALL_S, ids=BASEBALL_IDS)
        page.goto(url + job.accepted["links"]["view"])
        expect(page.locator("#status")).to_have_text("succeeded")
        expect(page.locator("#k")).to_have_text("2")
        rows = page.locator("#clusters tbody tr")
        expect(rows).to_have_count(2)
        members = sorted(sorted(text.split(", ")) for text in
                         rows.locator("td.members").all_inner_texts())
        assert members == [["Cobb", "Fisk", "Rose"], ["Mays", "Ott", "Ruth"]]
        _images_loaded(page)
        assert page.locator('img[data-plot="membership"]').count() == 0  # one start

        page.fill("#element", "Rose")
        page.select_option("#query-kind", "custom")
        page.click("#ask")
        answer = page.locator("#answer-cluster li")
        expect(answer).to_have_count(3)
        assert set(answer.all_inner_texts()) == {"Rose", "Cobb", "Fisk"}
        expect(page.locator("#answer-title")).to_contain_text("Custom cluster of Rose")
        page.wait_for_function("() => document.getElementById('answer-plot').naturalWidth"
                               " === 800")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "job-page-baseball.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000


class Gate:
    """Holds submitted jobs until released, then hands them to the real runner."""

    def __init__(self, runner):
        self.runner, self.held = runner, []

    def submit(self, job_id):
        self.held.append(job_id)
        return f"held-{job_id}"

    def release(self):
        for job_id in self.held:
            self.runner.submit(job_id)

    def revoke(self, job_id, task_ids=()):
        self.runner.revoke(job_id, task_ids)

    def ping(self):
        return True

    def shutdown(self):
        self.runner.shutdown()


def test_live_progress_by_stage(page):
    from playwright.sync_api import expect

    app = create_app({"TESTING": True, "REDIS_URL": None})
    backend = app.extensions["sca"]
    gate = backend.queue = Gate(backend.queue)
    with serve(app) as url:
        X = (DATA / "iris" / "X.csv").read_text().splitlines()[1:]
        data = [[float(v) for v in line.split(",")] for line in X]
        job = Client(url).submit(data=data, ensemble=[{"algorithm": "kmeans", "k": 3,
                                                       "runs": 10}])
        page.goto(url + job.accepted["links"]["view"])
        expect(page.locator("#status")).to_have_text("queued")
        expect(page.locator("#status-detail")).to_have_text("waiting for a worker")

        backend.store.update_job(job.id, {"status": "running", "stage": "ensemble",
                                          "runs_total": 10, "runs_done": 4})
        ensemble = page.locator('#stages li[data-stage="ensemble"]')
        expect(ensemble).to_have_attribute("data-state", "running")
        expect(ensemble).to_contain_text("4/10 runs")
        expect(page.locator("#progress-text")).to_contain_text("10% done")
        backend.store.update_job(job.id, {"stage": "spectral", "runs_done": 10})
        spectral = page.locator('#stages li[data-stage="spectral"]')
        expect(spectral).to_have_attribute("data-state", "running")
        expect(page.locator('#stages li[data-stage="balancing"]')).to_have_attribute(
            "data-state", "done")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "job-page-running.png"), full_page=True)

        gate.release()
        expect(page.locator("#status")).to_have_text("succeeded")
        expect(page.locator("#k")).to_have_text("3")
        expect(ensemble).to_have_attribute("data-state", "done")
        expect(ensemble).to_contain_text("10/10 runs")
        _images_loaded(page)

        page.fill("#element", "0")
        page.select_option("#query-kind", "similar")
        page.select_option("#method", "euclidean")
        page.fill("#limit", "4")
        page.click("#ask")
        expect(page.locator("#answer-ranked tbody tr")).to_have_count(4)
        expect(page.locator("#answer-title")).to_contain_text("Most similar to 0 (euclidean)")

        page.fill("#element", "Nobody")
        page.click("#ask")
        expect(page.locator("#answer-error")).to_contain_text("404")
