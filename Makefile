PYTHON ?= python3

.PHONY: install test serve

install:
	$(PYTHON) -m pip install -q -e '.[test,server]'
	@# The job page's browser test drives Debian's Chromium (never a downloaded browser).
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi

test: install
	$(PYTHON) -m pytest

serve: install
	sca serve
