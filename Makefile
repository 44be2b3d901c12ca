# mrecd developer commands. `make test` works on a fresh clone: it finds a
# Python >= 3.12 (scripts/find-python), makes .venv and installs the project
# with every extra before running the suite.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
HOST    ?= 127.0.0.1
PORT    ?= 8000
DATA    ?= ./data

.PHONY: venv test soak bench lint fmt clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[server,test,bench,lint]'
	@touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

# Crash-safety soak: SIGKILL a real writer many more times than the suite does.
soak: $(STAMP)
	MRECD_SOAK_KILLS=$${KILLS:-500} $(PY) -m pytest -q -m slow tests/trajectory/test_crash.py

bench: $(STAMP)
	$(PY) -m bench

lint: $(STAMP)
	$(VENV)/bin/ruff check server client tests bench
	$(VENV)/bin/ruff format --check server client tests bench
	$(VENV)/bin/mypy

fmt: $(STAMP)
	$(VENV)/bin/ruff format server client tests bench
	$(VENV)/bin/ruff check --fix server client tests bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
