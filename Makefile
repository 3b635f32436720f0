# The two commands that matter: `make demo` (main job) and `make test` (whole suite). Both set up
# everything themselves on a fresh machine: a Python venv with the dependencies, and the pinned
# control-plane binaries built from Go modules into ~/.cache/taskset-devcluster (once).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export GOTOOLCHAIN := local
PYTEST_ARGS ?=

.PHONY: setup binaries test unit integration lint demo cluster-up cluster-down clean

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

binaries: setup
	$(PY) -m devcluster build

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup binaries lint
	$(PY) -m pytest $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -m unit $(PYTEST_ARGS)

integration: setup binaries
	$(PY) -m pytest -m integration $(PYTEST_ARGS)

demo: setup binaries
	$(PY) hack/demo.py

cluster-up: setup
	$(PY) -m devcluster up

cluster-down: setup
	$(PY) -m devcluster down

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
