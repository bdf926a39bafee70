# Everything runs in the project's own environment (.venv), made with
# $(PYTHON) on first use: nothing is installed into the machine's Python, so
# this works where the system Python refuses installs (PEP 668).  The package
# is (re)installed only when pyproject.toml is newer than the last install.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The oldest and the newest Python that pyproject.toml declares: `make test`
# also runs the core tests on each that this machine has (python3.X on PATH,
# pyenv's versions, /usr/bin), each in its own .venv-3.X.
SUPPORTED_PYTHONS ?= 3.10 3.13

.PHONY: install install-test install-pythons test test-core test-pythons serve lint

# Debian's Python makes environments only with its python3.X-venv package:
# installed here when missing and we are root, else named.
$(BIN)/python:
	@echo "make: creating the project environment $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV) || { \
		v=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
		rm -rf $(VENV); \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "make: installing Debian's python$$v-venv (needed to make $(VENV))"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python$$v-venv \
			&& $(PYTHON) -m venv $(VENV); \
		else echo "make: $(PYTHON) cannot make $(VENV): install python$$v-venv"; exit 1; fi; }

# The package with the service's extra: all `make serve` needs.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "make: installing stochastic-clustering[server] into $(VENV) (pyproject.toml changed)"
	$(BIN)/python -m pip install -q -e '.[server]'
	@touch $@

# What the tests need besides: test and lint libraries, a Redis server to
# start when none answers on 127.0.0.1:6379 and Debian's Chromium for the job
# page's browser test (never a downloaded browser), without their recommended
# packages (no daemons or desktop services): on a minimal Debian 12 with
# python3-venv, 172 packages, all but 5 of them Chromium's libraries.
# docker-compose.yml is validated against the Compose Specification's JSON
# schema (tests/docs/test_compose.py): no container tools.
DEBIAN_TEST_PACKAGES := chromium redis-server
TEST_EXTRA ?= test
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "make: installing stochastic-clustering[$(TEST_EXTRA)] into $(VENV) (pyproject.toml changed)"
	$(BIN)/python -m pip install -q -e '.[$(TEST_EXTRA)]'
	@if [ "$(TEST_EXTRA)" = test ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && { [ ! -x /usr/bin/chromium ] \
		|| ! command -v redis-server >/dev/null; }; then \
		echo "make: installing Debian's $(DEBIAN_TEST_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(DEBIAN_TEST_PACKAGES); fi
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# mypy finds sca_client, sca_service and sca_worker (the folders client/,
# service/ and worker/) through links in build/mypy (pyproject.toml: mypy_path).
# lint-imports checks the layers and cycles of [tool.importlinter] (pyproject.toml).
lint: install-test
	@echo "make: lint (ruff check, ruff format --check), types (mypy) and layers (lint-imports)"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@mkdir -p build/mypy && ln -sfn ../../sca build/mypy/sca \
		&& ln -sfn ../../client build/mypy/sca_client \
		&& ln -sfn ../../service build/mypy/sca_service && ln -sfn ../../worker build/mypy/sca_worker
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The documentation site (mkdocs.yml) into build/site; any warning fails it.
.PHONY: docs
docs: install-test
	@echo "make: docs (mkdocs build --strict into build/site)"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The other Pythons' environments are made while lint and pytest run (their
# installs are mostly waiting on disk and network); their tests run after.
# pytest runs in PYTEST_WORKERS processes (pytest-xdist), a test file each at
# a time; each process has its own Redis database (tests/conftest.py).
PYTEST_WORKERS ?= 2
test: install-test
	@mkdir -p build; $(MAKE) --no-print-directory install-pythons >build/install-pythons.log 2>&1 & \
	installing=$$!; status=0; \
	$(MAKE) --no-print-directory lint && $(MAKE) --no-print-directory docs && { \
		echo "make: running the test suite (pytest; it starts Redis and Celery workers as it needs)"; \
		$(BIN)/python -m pytest --numprocesses=$(PYTEST_WORKERS) --dist=loadfile --durations=25; \
		} || status=1; \
	wait $$installing || { status=1; echo "make: making the other Pythons' environments failed"; }; \
	cat build/install-pythons.log; [ $$status = 0 ] && $(MAKE) --no-print-directory test-pythons

# The core tests (numerics, command line, plots) in $(VENV); CORE_MARKS
# selects among them (pytest -m), all by default.
CORE_MARKS ?=
test-core: install-test
	@echo "make: core tests on $$($(BIN)/python --version) in $(VENV)$(if $(CORE_MARKS), ($(CORE_MARKS)))"
	$(BIN)/python -m pytest -q -p no:cacheprovider $(if $(CORE_MARKS),-m "$(CORE_MARKS)") tests/core

# Each supported Python this machine has: its path, or nothing (and a line saying so).
define find_python
py=; for c in "$$(command -v python$(1))" $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$(1)*/bin/python \
	/usr/bin/python$(1); do \
	if [ -x "$$c" ] && "$$c" -c "import sys; assert '%d.%d' % sys.version_info[:2] == '$(1)'" \
		2>/dev/null; then py=$$c; break; fi; done
endef

# The environments of the other Pythons, one after the other (Debian's venv
# package may need installing, and apt takes one at a time).
install-pythons:
	@for v in $(SUPPORTED_PYTHONS); do $(call find_python,$$v); \
		if [ -n "$$py" ]; then $(MAKE) --no-print-directory install-test \
			PYTHON=$$py VENV=.venv-$$v TEST_EXTRA=test-core || exit 1; fi; done

# Each Python with the core's own dependencies (the test-core extra), both
# at once, each with one BLAS thread; their logs are printed in turn.  They
# run the core's fast tests: what differs between Pythons is the language
# and the libraries' builds, which the fast tests reach; the slow ones
# (sizes, Dask clusters, memory bounds) ran on the main Python just before.
test-pythons:
	@mkdir -p build; jobs=; for v in $(SUPPORTED_PYTHONS); do $(call find_python,$$v); \
		if [ -z "$$py" ]; then echo "make: no Python $$v on this machine: its tests are skipped"; \
		else echo "make: core tests on Python $$v in .venv-$$v (log: build/test-python$$v.log)"; \
			OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(MAKE) --no-print-directory test-core \
				PYTHON=$$py VENV=.venv-$$v TEST_EXTRA=test-core CORE_MARKS="not slow" >build/test-python$$v.log 2>&1 & \
			jobs="$$jobs $$!:$$v"; fi; \
	done; status=0; for job in $$jobs; do \
		wait $${job%%:*} || { status=1; echo "make: the core tests on Python $${job#*:} failed"; }; \
		cat build/test-python$${job#*:}.log; done; exit $$status

serve: install
	@echo "make: serving the API with .venv/bin/sca serve (embedded default without REDIS_URL; it prints its address)"
	$(BIN)/sca serve
