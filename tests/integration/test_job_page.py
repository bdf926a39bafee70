"""The job page in a real headless Chromium (Playwright driving Debian's /usr/bin/chromium).

``make install-test`` installs Chromium when it is missing; a machine without it
fails here (it is never skipped).  Screenshots are kept in tests/artifacts/.
"""

from __future__ import annotations

import os

import pytest

from sca_client import Client
from sca_service import create_app
from sca_worker import events
from tests.conftest import BASEBALL_BODY, BASEBALL_TEAMS, ROOT
from tests.service.conftest import Gate
from tests.service.serving import sca_serve, serve

CHROMIUM = os.environ.get("SCA_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "tests" / "artifacts"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: run `make install-test` as root (it installs "
            "Debian's chromium) or `apt-get install -y chromium`"
        )
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
    """The plots are shown, each fetched by the page's script and shown from a blob: URL."""
    page.wait_for_function("""() => {
        const imgs = [...document.querySelectorAll('img[data-plot]')];
        return imgs.length >= 4 && imgs.every(i => i.complete && i.naturalWidth === 800
                                               && i.src.startsWith('blob:'));
    }""")


def _ask_for_roses_cluster(page) -> None:
    from playwright.sync_api import expect

    page.fill("#element", "Rose")
    page.select_option("#query-kind", "custom")
    page.click("#ask")
    answer = page.locator("#answer-cluster li")
    expect(answer).to_have_count(3)
    assert set(answer.all_inner_texts()) == set(BASEBALL_TEAMS[0])
    expect(page.locator("#answer-title")).to_contain_text("Custom cluster of Rose")
    page.wait_for_function("() => document.getElementById('answer-plot').naturalWidth === 800")


def _expect_baseball_result(page) -> None:
    """The finished baseball job: k = 2, both clusters listed, every plot loaded."""
    from playwright.sync_api import expect

    expect(page.locator("#status")).to_have_text("succeeded")
    expect(page.locator("#k")).to_have_text("2")
    rows = page.locator("#clusters tbody tr")
    expect(rows).to_have_count(2)
    members = sorted(
        sorted(text.split(", ")) for text in rows.locator("td.members").all_inner_texts()
    )
    assert members == BASEBALL_TEAMS
    _images_loaded(page)


def test_baseball_on_the_job_page(page):
    from playwright.sync_api import expect

    with sca_serve() as url:
        job = Client(url).submit(**BASEBALL_BODY)
        page.goto(url + job.accepted["links"]["view"])
        _expect_baseball_result(page)
        assert page.locator('img[data-plot="membership"]').count() == 0  # one start
        _expect_firmness(page, job.result())

        expect(page.locator("#key-section")).to_be_hidden()  # no keys: none asked for
        _ask_for_roses_cluster(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "job-page-baseball.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000

        # The shell is the same for any id; the page reports the API's 404.
        page.goto(url + "/v1/jobs/nope/view")
        expect(page.locator("#status")).to_have_text("not found")
        expect(page.locator("#job-error")).to_contain_text("404")
        expect(page.locator("#result-section")).to_be_hidden()


def _expect_firmness(page, result) -> None:
    """The elements table: every element's firmness (the result's ``confidence``), least
    firm first, re-sorted by a click on a heading; the legend in plain words."""
    from playwright.sync_api import expect

    expect(page.locator("#structure")).to_contain_text("stand above the noise floor")
    expect(page.locator("#firmness-legend")).to_contain_text("how firmly an element")
    rows = page.locator("#elements tbody tr")
    expect(rows).to_have_count(result["n"])
    firmness = dict(zip(BASEBALL_BODY["ids"], result["confidence"]))

    def shown():
        return [
            (row[0], float(row[2].rstrip(" %")))
            for row in (text.split("\t") for text in rows.all_inner_texts())
        ]

    least_first = shown()
    assert [name for name, _ in least_first] == sorted(firmness, key=lambda i: firmness[i])
    for name, value in least_first:
        assert abs(value - 100 * firmness[name]) < 0.051, (name, value)
    page.click('#elements button[data-key="firmness"]')
    assert [name for name, _ in shown()] == [name for name, _ in least_first][::-1]
    page.click('#elements button[data-key="id"]')
    assert [name for name, _ in shown()] == BASEBALL_BODY["ids"]
    cluster_firmness = page.locator("#clusters tbody td.num").all_inner_texts()
    assert [float(t.rstrip(" %")) for t in cluster_firmness] == pytest.approx(
        [100 * c for c in result["cluster_confidence"]], abs=0.051
    )
    # each cluster in plain words: its size and how firmly its members belong
    words = page.locator("#clusters tbody td.words").all_inner_texts()
    for text, members, firm in zip(words, result["clusters"], result["cluster_confidence"]):
        assert text.startswith(f"{len(members)} elements, ") and "grouped" in text, text
        assert ("firmly grouped" in text) == (firm >= 0.7), (text, firm)


def test_no_cluster_structure_is_said_in_words(page):
    from playwright.sync_api import expect

    with sca_serve() as url:
        job = Client(url).submit(consensus=[[100.0] * 10] * 10)
        page.goto(url + job.accepted["links"]["view"])
        expect(page.locator("#status")).to_have_text("succeeded")
        expect(page.locator("#k")).to_have_text("1")
        expect(page.locator("#structure")).to_contain_text("No cluster structure")
        expect(page.locator("#elements tbody tr")).to_have_count(10)


def test_ids_with_slashes_and_dollars_on_the_job_page(page):
    """The page's queries send an id percent-encoded; one with ``/`` is still one element,
    and one with ``$`` is drawn as written."""
    from playwright.sync_api import expect

    ids = ["Rose/Pete", "/Cobb", "Fisk//", "$Ott^$", "Ruth", "Mays"]
    with serve(create_app({"TESTING": True, "REDIS_URL": None})) as url:
        job = Client(url).submit(consensus=BASEBALL_BODY["consensus"], ids=ids)
        page.goto(url + job.accepted["links"]["view"])
        expect(page.locator("#status")).to_have_text("succeeded")
        _images_loaded(page)
        page.select_option("#query-kind", "similar")
        for element in ids[:4]:
            page.fill("#element", element)
            page.click("#ask")
            expect(page.locator("#answer-title")).to_have_text(f"Most similar to {element} (sca)")
        page.select_option("#query-kind", "custom")
        page.fill("#element", "/Cobb")
        page.click("#ask")
        expect(page.locator("#answer-title")).to_contain_text("Custom cluster of /Cobb")
        page.wait_for_function("() => document.getElementById('answer-plot').naturalWidth === 800")


KEY, OTHER_KEY = "page-key-0123456789abcdef", "other-key-fedcba9876543210"


def test_job_page_with_api_keys(page):
    """With SCA_API_KEYS the page asks for a key, shows the API's 401 and 404, and with
    the right key shows the job; the key goes only into headers, never into a URL."""
    from playwright.sync_api import expect

    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_API_KEYS": f"{KEY},{OTHER_KEY}"})
    with serve(app) as url:
        job = Client(url, api_key=KEY).submit(**BASEBALL_BODY)
        view = url + job.accepted["links"]["view"]
        sent = []
        page.on("request", lambda request: sent.append(request))
        page.goto(view)
        key_section, key_error = page.locator("#key-section"), page.locator("#key-error")
        expect(key_section).to_be_visible()
        expect(page.locator("#status")).to_have_text("API key needed")
        expect(key_error).to_be_hidden()
        expect(page.locator("#job-id")).to_have_text(job.id)

        page.fill("#api-key", "wrong-key")
        page.click("#use-key")
        expect(key_error).to_have_text("401 Unauthorized: the API key is not valid")
        expect(key_section).to_be_visible()
        assert page.evaluate("sessionStorage.length") == 0  # a refused key is forgotten

        page.fill("#api-key", OTHER_KEY)  # a valid key that does not own the job
        page.click("#use-key")
        expect(page.locator("#job-error")).to_contain_text("404")
        expect(page.locator("#status")).to_have_text("not found")
        page.click("#forget-key")  # forgets the key and reloads: asked again
        expect(key_section).to_be_visible()
        assert page.evaluate("sessionStorage.length") == 0

        page.fill("#api-key", KEY)
        page.press("#api-key", "Enter")
        _expect_baseball_result(page)
        expect(key_section).to_be_hidden()
        _ask_for_roses_cluster(page)
        assert page.evaluate("document.getElementById('answer-plot').src").startswith("blob:")

        with page.expect_popup() as opened:  # an SVG link: fetched with the key, shown as a blob
            page.click("#plots figcaption a >> nth=0")
        popup = opened.value
        popup.wait_for_url(lambda target: target.startswith("blob:"), wait_until="commit")
        popup.wait_for_function("() => document.documentElement.localName === 'svg'")
        popup.close()

        assert page.evaluate("sessionStorage.getItem('sca-api-key')") == KEY
        assert page.evaluate("localStorage.length") == 0
        api_calls = [r for r in sent if r.resource_type in ("fetch", "xhr")]
        assert len(api_calls) >= 10
        for request in sent:
            # Nothing leaves the origin (the plots' blob: URLs are this origin's too).
            assert request.url.startswith((url + "/", f"blob:{url}/")), request.url
            assert KEY not in request.url and "wrong-key" not in request.url
        for request in api_calls:
            authorization = request.all_headers().get("authorization")
            assert authorization in (
                None,
                f"Bearer {KEY}",
                f"Bearer {OTHER_KEY}",
                "Bearer wrong-key",
            ), authorization
        after = api_calls[
            [r.all_headers().get("authorization") for r in api_calls].index(f"Bearer {KEY}") :
        ]
        assert all(r.all_headers().get("authorization") == f"Bearer {KEY}" for r in after)
        assert {r.url.split("?")[0].rsplit("/", 1)[-1] for r in after} >= {
            job.id,
            "spectrum.png",
            "trace.png",
            "consensus.png",
            "histogram.png",
            "custom-clusters",
            "custom.png",
            "spectrum.svg",
        }


@pytest.mark.parametrize("streams", [4, 0], ids=["event-stream", "polling"])
def test_live_progress_by_stage(page, iris, streams):
    """Progress by stage from the job's event stream, or, where the service refuses
    streams (SCA_MAX_EVENT_STREAMS=0, 503), from polling the job."""
    from playwright.sync_api import expect

    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_MAX_EVENT_STREAMS": streams})
    backend = app.extensions["sca"]
    gate = backend.queue = Gate(backend.queue)
    with serve(app) as url:
        job = Client(url).submit(
            data=iris[0].tolist(), ensemble=[{"algorithm": "kmeans", "k": 3, "runs": 10}]
        )
        reads = []  # GETs of the job document, and of its event stream
        page.on(
            "request",
            lambda request: (
                reads.append(request.url.rsplit("/", 1)[-1]) if request.method == "GET" else None
            ),
        )
        page.goto(url + job.accepted["links"]["view"])
        expect(page.locator("#status")).to_have_text("queued")
        expect(page.locator("#status-detail")).to_have_text("waiting for a worker")

        def move(**fields):  # what a worker does: the record, then the event
            backend.store.update_job(job.id, fields)
            events.emit(backend.store, job.id, "progress")

        move(status="running", stage="ensemble", runs_total=10, runs_done=4)
        ensemble = page.locator('#stages li[data-stage="ensemble"]')
        expect(ensemble).to_have_attribute("data-state", "running")
        expect(ensemble).to_contain_text("4/10 runs")
        expect(page.locator("#progress-text")).to_contain_text("10% done")
        move(stage="spectral", runs_done=10)
        spectral = page.locator('#stages li[data-stage="spectral"]')
        expect(spectral).to_have_attribute("data-state", "running")
        expect(page.locator('#stages li[data-stage="balancing"]')).to_have_attribute(
            "data-state", "done"
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "job-page-running.png"), full_page=True)

        gate.release()
        expect(page.locator("#status")).to_have_text("succeeded")
        expect(page.locator("#k")).to_have_text(str(job.result()["k"]))  # the job's own k
        if streams:  # one read before the stream, one for the result after its last event
            assert reads.count("events") >= 1 and reads.count(job.id) == 2, reads
        else:
            assert page.locator("#status-detail").get_attribute("data-updates") == "polling"
            assert reads.count(job.id) > 3, reads
        expect(ensemble).to_have_attribute("data-state", "done")
        expect(ensemble).to_contain_text("10/10 runs")
        _images_loaded(page)
        # a cohort's page: the plots follow the summary, the element table scrolls in place
        top = page.evaluate(
            "document.querySelector('#plots-section').getBoundingClientRect().top + scrollY"
        )
        table = page.evaluate("document.querySelector('#elements-scroll').clientHeight")
        assert top < 2500 and table < 600, (top, table)

        page.fill("#element", "0")
        page.select_option("#query-kind", "similar")
        page.select_option("#method", "euclidean")
        page.fill("#limit", "4")
        page.click("#ask")
        expect(page.locator("#answer-ranked tbody tr")).to_have_count(4)
        expect(page.locator("#answer-title")).to_contain_text("Most similar to 0 (euclidean)")
        # similarities as percentages a clinician can read, nearest (largest) first
        shown = page.locator("#answer-ranked tbody tr td:nth-child(3)").all_inner_texts()
        values = [float(text.rstrip(" %")) for text in shown]
        assert all(text.endswith(" %") for text in shown) and values == sorted(values, reverse=True)

        page.fill("#element", "Nobody")
        page.click("#ask")
        expect(page.locator("#answer-error")).to_contain_text("404")
