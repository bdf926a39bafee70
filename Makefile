PYTHON ?= python3

.PHONY: install test serve

install:
	$(PYTHON) -m pip install -q -e '.[test,server]'

test: install
	$(PYTHON) -m pytest

serve: install
	sca serve
