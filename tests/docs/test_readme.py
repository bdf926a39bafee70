"""Every ```sh, ```bash and ```python block of README.md and of the docs site's
pages (docs/**/*.md) runs as written.

The blocks run in order, README.md first, then the pages by path, each page's
in its own order, in one temporary directory holding the repository's files
as a fresh clone has them (tracked and not-ignored files; no .venv, no .git),
so a block may use what an earlier block of its page wrote.  A page includes
a README block by its section (``--8<-- "README.md:name"``, pymdownx.snippets)
rather than repeating it, so that block runs once, as the README's.  An embedded
``sca serve`` (no REDIS_URL, no keys) listens on a free port, and ``SCA_URL``
points there: blocks that talk to the service read ``SCA_URL`` with the
default ``http://127.0.0.1:8000`` (the address of ``make serve``).  Shell
blocks run under ``bash -euo pipefail``; each Python block in its own
interpreter (the environment's, first on PATH as ``python``/``python3``/``sca``).

A block preceded by ``<!-- not run: <reason> -->`` is skipped (Docker, a real
Redis, the two make commands); ```text and ```console fences are never run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import ROOT, free_port, stop_process

README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The README, then every page of the docs site (mkdocs.yml's docs_dir), by path.
PAGES = [README] + sorted(
    page for page in DOCS.rglob("*.md") if not page.relative_to(DOCS).parts[0].startswith("_")
)
RUN = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "py": "python"}
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.+?)\s*-->$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
BLOCK_TIMEOUT = 240  # below pytest's timeout, so a stuck block is reported as such


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str  # "sh" or "python", or the fence's word when not run
    code: str
    skip: str | None  # why it is not run

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}:{self.lang}"


def blocks(text: str, page: Path = README) -> list[Block]:
    """The fenced blocks of ``text`` (of ``page``) with the language they run in and
    why they do not."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start, fence, word = i, match["fence"], match["lang"].lower()
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        before = next((line.strip() for line in reversed(lines[:start]) if line.strip()), "")
        marked = NOT_RUN.match(before)
        lang = RUN.get(word)
        skip = (marked["reason"] if marked else None) if lang else f"a ```{word or 'plain'} fence"
        found.append(Block(page, start + 1, lang or word, "\n".join(body) + "\n", skip))
    return found


BLOCKS = [b for page in PAGES for b in blocks(page.read_text(encoding="utf-8"), page)]
RUNNABLE = [b for b in BLOCKS if b.lang in ("sh", "python")]
#: README sections a page includes: ``--8<-- "README.md:name"``.
INCLUDE = re.compile(r'^--8<-- "README\.md:(?P<section>[\w-]+)"$', re.M)


def _clone_files() -> list[Path]:
    """The files a fresh clone has: git's tracked and untracked-but-not-ignored files."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = b""
    if out:
        return [Path(name) for name in out.decode().split("\0") if name]
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", "build", "dist"}
    return [
        path.relative_to(ROOT)
        for path in ROOT.rglob("*")
        if path.is_file()
        and not skip.intersection(path.relative_to(ROOT).parts)
        and not path.relative_to(ROOT).parts[0].startswith(".venv")
    ]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("clone")
    for name in _clone_files():
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _environment(url: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not (k.startswith("SCA_") or k == "REDIS_URL")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["PYTHONUNBUFFERED"] = "1"
    if url:
        env["SCA_URL"] = url
    return env


@pytest.fixture(scope="module")
def service(clone, tmp_path_factory):
    """The embedded default (``sca serve`` without REDIS_URL) on a free port; its URL."""
    port = free_port()
    log = (tmp_path_factory.mktemp("serve") / "serve.log").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "sca_service.cli", "serve", "--port", str(port)],
        cwd=clone,
        env=_environment(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(
                    f"sca serve did not answer /healthz (exit {process.poll()}): "
                    f"{log.read()[-2000:]}"
                )
            time.sleep(0.1)
        yield url
    finally:
        stop_process(process, 10)
        _kill_group(process)
        log.close()


def _answers(url: str) -> bool:
    import requests

    try:
        return requests.get(url + "/healthz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def test_the_readme_has_runnable_blocks_of_both_kinds():
    kinds = {b.lang for b in RUNNABLE if b.skip is None and b.page == README}
    assert kinds == {"sh", "python"}, [b.name for b in BLOCKS]


def test_the_docs_pages_have_runnable_blocks_of_both_kinds():
    kinds = {b.lang for b in RUNNABLE if b.skip is None and b.page != README}
    assert kinds == {"sh", "python"}, [b.name for b in BLOCKS]


@pytest.mark.parametrize("page", PAGES[1:], ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_includes_only_runnable_readme_sections(page):
    """A README block that a page includes is one that runs here as the README's:
    the section exists and holds exactly one block, which runs."""
    readme = README.read_text(encoding="utf-8")
    for section in INCLUDE.findall(page.read_text(encoding="utf-8")):
        start = readme.index(f"--8<-- [start:{section}]")
        end = readme.index(f"--8<-- [end:{section}]", start)
        inside = [b for b in RUNNABLE if b.page == README and start < _offset(readme, b) < end]
        assert len(inside) == 1 and inside[0].skip is None, (page.name, section)


def _offset(text: str, block: Block) -> int:
    """The character offset of ``block``'s opening fence in ``text``."""
    return sum(len(line) + 1 for line in text.splitlines()[: block.line - 1])


@pytest.mark.parametrize("block", [b for b in RUNNABLE if b.skip is None], ids=lambda b: b.name)
def test_blocks_reach_the_service_through_sca_url(block):
    """A block that names the service's address lets SCA_URL replace it."""
    if re.search(r"(localhost|127\.0\.0\.1):8000", block.code):
        assert "SCA_URL" in block.code, (
            f"{block.name} names :8000 without SCA_URL: use ${{SCA_URL:-http://127.0.0.1:8000}} "
            f"(shell) or os.environ.get('SCA_URL', 'http://127.0.0.1:8000') (Python), "
            f"or mark it <!-- not run: reason -->"
        )


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.name)
def test_block_runs_as_written(block, clone, service):
    if block.skip is not None:
        pytest.skip(f"marked not run: {block.skip}")
    run_block(block, clone, service)


#: The README's raw-data job: raw data alone, as JSON, which it saves as raw-job.json.
RAW_DATA = next(b for b in RUNNABLE if b.page == README and "raw-job.json" in b.code)


def test_the_raw_data_example_finds_its_two_groups(clone, service):
    """Data alone runs the default ensemble on standardised columns and finds the
    two groups the README prints."""
    import json

    assert RAW_DATA.skip is None and '-d \'{"data": [[' in RAW_DATA.code
    assert '"ensemble"' not in RAW_DATA.code and '"options"' not in RAW_DATA.code
    run_block(RAW_DATA, clone, service)
    job = json.loads((clone / "raw-job.json").read_text())
    assert job["status"] == "succeeded", job.get("error")
    assert job["ensemble"]["done"] == job["ensemble"]["total"] > 0
    result = job["result"]
    n = result["n"]
    assert n == len(result["labels"]) == 10
    assert sorted(i for cluster in result["clusters"] for i in cluster) == list(range(n))
    assert result["k"] == 2
    assert sorted(map(sorted, result["clusters"])) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def run_block(block: Block, clone: Path, service: str) -> None:
    """Run ``block`` in the clone against the service; it must exit 0 in time."""
    if block.lang == "sh":
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        command = [sys.executable, "-c", block.code]
    # A session of its own: whatever the block starts is stopped with it.
    proc = subprocess.Popen(
        command,
        cwd=clone,
        env=_environment(service),
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        stdout, stderr = proc.communicate()
        pytest.fail(
            f"{block.name} still running after {BLOCK_TIMEOUT} s (a server in a block? "
            f"mark it <!-- not run: reason -->)\n--- stderr\n{stderr[-3000:]}"
        )
    finally:
        _kill_group(proc)
    assert proc.returncode == 0, (
        f"{block.name} exited with {proc.returncode}\n--- block\n{block.code}"
        f"--- stdout\n{stdout[-3000:]}\n--- stderr\n{stderr[-3000:]}"
    )


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
