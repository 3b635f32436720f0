# The two commands that matter: `make demo` (main job) and `make test` (whole suite). Both set up
# everything themselves on a fresh machine: a Python venv with the dependencies, and the pinned
# control-plane binaries built from Go modules into ~/.cache/taskset-devcluster (once).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export GOTOOLCHAIN := local
PYTEST_ARGS ?=
IMAGE ?= taskset-controller:0.1.0
# docker, else podman, whichever answers; set CONTAINER_ENGINE to choose. Evaluated by `make image` only.
CONTAINER_ENGINE ?= $(shell if docker info >/dev/null 2>&1; then echo docker; \
	elif podman info >/dev/null 2>&1; then echo podman; fi)

.PHONY: chaos setup binaries test unit integration lint demo bench cluster-up cluster-down clean image docs

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

# The chaos suite at length: 200 TaskSets and 100 controller kills (CI runs 50 and 20).
chaos: setup binaries
	CHAOS_SCALE=long $(PY) -m pytest tests/chaos $(PYTEST_ARGS)

demo: setup binaries
	$(PY) hack/demo.py

# Benchmarks (bench/README.md): every scenario at the small scale; BENCH_ARGS="--scale full" for the issue's.
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_ARGS ?=
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: setup binaries $(BENCH_STAMP)
	$(PY) -m bench --scenario all $(BENCH_ARGS)

# The controller image (Dockerfile); IMAGE=registry.example.com/taskset-controller:0.1.0 to name it.
image:
	@if [ -z "$(CONTAINER_ENGINE)" ]; then \
		echo "make image: no container engine available (docker or podman must be installed and running)" >&2; \
		exit 1; \
	fi
	$(CONTAINER_ENGINE) build --tag $(IMAGE) .

# Regenerate the generated sections of docs/deployment.md (settings and metrics tables).
docs: setup
	$(PY) hack/render_config_docs.py

cluster-up: setup
	$(PY) -m devcluster up

cluster-down: setup
	$(PY) -m devcluster down

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
