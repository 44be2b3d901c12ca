# mrecd developer commands. `make test` works on a fresh clone: it finds a
# Python >= 3.12 (scripts/find-python), makes .venv, installs the project with
# its test and lint extras, and runs the suite. `make bench` adds the
# benchmark baselines; `make soak` runs the long crash-safety test.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: venv test compiler chromium soak bench lint fmt serve openapi clean

venv: $(STAMP)

# The install compiles the native commit encoder (hatch_build.py), so it is redone when the
# encoder's source changes; without a C compiler mrecd encodes in Python.
$(STAMP): pyproject.toml hatch_build.py server/mrecd/bindings/zarr/_kernel.c | compiler
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,lint]'
	@touch $(STAMP)

# The benchmark extra (MDAnalysis and its test data now also come with the test extra, for mrecd.md).
$(VENV)/.bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,lint,bench]'
	@touch $(VENV)/.bench

test: $(STAMP) chromium
	$(PY) -m pytest -q -m "not slow"

# The native commit encoder needs a C compiler (and libzstd.so.1, which Debian always has);
# install one when missing, as for Chromium below. Under CI=true a missing one fails a test.
compiler:
	@command -v cc >/dev/null 2>&1 || \
		{ if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq gcc libc6-dev; } || \
		echo "no C compiler: mrecd will encode in Python (slower appends)"

# The page tests (tests/page) drive Debian's Chromium; install it when missing (as root, or
# with sudo). Without it they skip locally and fail under CI=true.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		{ if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; } || \
		echo "chromium not installed: tests/page will skip (or fail under CI)"

# Crash-safety soak: SIGKILL a real writer, then a real server under 8 posters, many more
# times than the suite does (KILLS=..., SERVER_KILLS=...).
soak: $(STAMP)
	MRECD_SOAK_KILLS=$${KILLS:-500} $(PY) -m pytest -q -m slow tests/trajectory/test_crash.py
	MRECD_SOAK_SERVER_KILLS=$${SERVER_KILLS:-200} $(PY) -m pytest -q -s -m slow \
		tests/service/test_server_kill.py

bench: $(VENV)/.bench
	$(PY) -m bench $(BENCH)

# Serve ./data (created) on http://127.0.0.1:8000; STORE=... HOST=... PORT=... to change.
serve: $(STAMP)
	$(PY) -m mrecd.cli serve $(STORE) --host $${HOST:-127.0.0.1} --port $${PORT:-8000}

# Regenerate the checked-in OpenAPI document (tests/service/test_openapi.py fails when stale).
openapi: $(STAMP)
	$(PY) -m mrecd.service.openapi > openapi/openapi.json

lint: $(STAMP)
	$(VENV)/bin/ruff check server client tests bench
	$(VENV)/bin/ruff format --check server client tests bench
	$(VENV)/bin/mypy

fmt: $(STAMP)
	$(VENV)/bin/ruff format server client tests bench
	$(VENV)/bin/ruff check --fix server client tests bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
