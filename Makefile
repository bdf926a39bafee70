PYTHON ?= python3

.PHONY: install install-test test serve

# The package with its production WSGI server: all `make serve` needs.
install:
	$(PYTHON) -m pip install -q -e '.[server]'

# What the tests need besides: test libraries, a Redis server to start when
# none answers on 127.0.0.1:6379, and Debian's Chromium for the job page's
# browser test (never a downloaded browser).
install-test:
	$(PYTHON) -m pip install -q -e '.[test,server]'
	@if [ "$$(id -u)" = 0 ] && { [ ! -x /usr/bin/chromium ] || ! command -v redis-server >/dev/null; }; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium redis-server; fi

test: install-test
	$(PYTHON) -m pytest

serve: install
	$(PYTHON) -m service.cli serve
