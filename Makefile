# The two commands that matter: `make demo` (main job) and `make test` (whole suite). Both set up
# everything themselves on a fresh machine: a Python venv with the dependencies, and the pinned
# control-plane binaries built from Go modules into ~/.cache/taskset-devcluster (once).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export GOTOOLCHAIN := local
PYTEST_ARGS ?=
IMAGE ?= localhost/taskset-controller:0.1.0

.PHONY: chaos setup binaries control-plane test unit integration lint demo bench cluster-up cluster-down clean image image-base \
	image-tools image-locked docs lock

# The venv installs the locks (requirements/, `make lock` below), never what setup.cfg's ranges allow
# that day: pip and the build backend first, then every dependency pinned and hash-checked, then the
# project itself without dependencies and without build isolation (its backend is the locked one).
# The last step fails, naming what to run, when setup.cfg and the locks disagree.
$(STAMP): setup.cfg pyproject.toml requirements/build.txt requirements/dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r requirements/build.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements/dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -m hack.lock_check
	touch $(STAMP)

setup: $(STAMP)

binaries: setup
	$(PY) -m devcluster build

# The control plane only: the test session builds the add-ons (Kueue, CoreDNS, the coscheduling
# scheduler) in the background while the first tests run (tests/integration/addon_session.py).
control-plane: setup
	$(PY) -m devcluster build --part control-plane

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup control-plane lint
	$(PY) -m pytest $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -m unit $(PYTEST_ARGS)

integration: setup binaries
	$(PY) -m pytest -m integration $(PYTEST_ARGS)

# The chaos suite at length: 200 TaskSets and 100 controller kills (CI runs 50 and 20).
chaos: setup binaries
	CHAOS_SCALE=long $(PY) -m pytest -m chaos $(PYTEST_ARGS)

demo: setup binaries
	$(PY) hack/demo.py

# Benchmarks (bench/README.md): every scenario at the small scale; BENCH_ARGS="--scale full" for the issue's.
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_ARGS ?=
$(BENCH_STAMP): $(STAMP) requirements/bench.txt
	$(PY) -m pip install --quiet --require-hashes -r requirements/bench.txt
	touch $(BENCH_STAMP)

bench: setup binaries $(BENCH_STAMP)
	$(PY) -m bench --scenario all $(BENCH_ARGS)

# The controller image (Dockerfile) on Debian bases built here from Debian's packages with mmdebstrap
# (no image registry is needed), built and run with podman and runc (crun, podman's default on newer
# Debian, refuses some hosts' cgroup layouts). `make image-tools` installs the three with apt-get (as
# root, on Debian or Ubuntu). IMAGE=registry.example.com/taskset-controller:0.1.0 to name the image;
# the bases are built once and kept (remove them with `podman rmi` to rebuild).
DEBIAN_SUITE ?= bookworm
BASE_IMAGE ?= localhost/taskset-python:$(DEBIAN_SUITE)
BUILDER_BASE_IMAGE ?= localhost/taskset-python-build:$(DEBIAN_SUITE)
PODMAN ?= podman --runtime runc
# Documentation, manual pages and translations stay out of the bases (copyright files stay in).
MMDEBSTRAP := mmdebstrap --variant=essential --quiet \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*'
IMAGE_TOOLS := podman runc mmdebstrap

image-tools:
	@missing=""; for tool in $(IMAGE_TOOLS); do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends$$missing; \
	fi

image-base: image-tools
	$(PODMAN) image exists $(BASE_IMAGE) || \
		$(MMDEBSTRAP) --include=python3,python-is-python3 $(DEBIAN_SUITE) - | $(PODMAN) import - $(BASE_IMAGE)
	$(PODMAN) image exists $(BUILDER_BASE_IMAGE) || \
		$(MMDEBSTRAP) --include=python3,python-is-python3,python3-pip,python3-venv,ca-certificates $(DEBIAN_SUITE) - \
		| $(PODMAN) import - $(BUILDER_BASE_IMAGE)

# The builder fetches the wheels with pip; it trusts the host's CA bundle while it builds (a proxy that
# re-signs TLS, as on this project's build machines), and nothing of it stays in the image.
HOST_CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

# The image is labelled with the digest of the sources it was built from (hack/image_digest.py), so that
# tests/integration/test_image.py can tell an image of older sources under the same tag and rebuild it.
# One build at a time: `image` holds IMAGE_LOCK (flock) around the bases and the Dockerfile, as the test
# session's background build does (hack/image_build.py, which runs image-locked with the lock held).
IMAGE_LOCK ?= /tmp/taskset-image.lock
image: image-tools
	flock $(IMAGE_LOCK) $(MAKE) --no-print-directory image-locked

image-locked: image-base
	$(PODMAN) build --network host --tag $(IMAGE) \
		--label cn.pcl.openi.octopus.source-digest=$$($(PYTHON) hack/image_digest.py) \
		$(if $(wildcard $(HOST_CA_BUNDLE)),--volume $(HOST_CA_BUNDLE):/etc/ssl/certs/ca-certificates.crt:ro) \
		--build-arg PYTHON_IMAGE=$(BASE_IMAGE) --build-arg BUILDER_IMAGE=$(BUILDER_BASE_IMAGE) .
	@$(PODMAN) image inspect --format 'image $(IMAGE): {{.Size}} bytes' $(IMAGE)

# Re-resolve the locks from setup.cfg and pyproject.toml with uv (itself locked in requirements/uv.txt):
# one file per use, each with every file's hash, for Python 3.11 and up on any platform (--universal).
# runtime.txt is install_requires (the image); dev.txt adds the dev extra (make setup, CI) and keeps the
# runtime pins (-c); bench.txt adds the bench extra on top of dev's pins; build.txt is pip and the build
# backend (requirements/build.in). Pins already in a lock are kept where the ranges still allow them, so
# a refresh changes only what setup.cfg changed; `make lock LOCK_ARGS=--upgrade` moves everything to
# the newest allowed, `LOCK_ARGS='--upgrade-package ruff'` one package.
LOCK_ARGS ?=
UV_COMPILE = $(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command 'make lock' $(LOCK_ARGS)
# Not after `setup`: that refuses a venv whose locks lag setup.cfg, the very case this target repairs.
lock:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r requirements/uv.txt
	$(UV_COMPILE) requirements/uv.in -o requirements/uv.txt
	$(UV_COMPILE) requirements/build.in -o requirements/build.txt
	$(UV_COMPILE) setup.cfg -o requirements/runtime.txt
	$(UV_COMPILE) setup.cfg --extra dev -c requirements/runtime.txt -o requirements/dev.txt
	$(UV_COMPILE) setup.cfg --extra dev --extra bench -c requirements/dev.txt -o requirements/bench.txt
	$(MAKE) --no-print-directory setup

# Regenerate the generated sections of docs/deployment.md (settings and metrics tables).
docs: setup
	$(PY) hack/render_config_docs.py

cluster-up: setup
	$(PY) -m devcluster up

cluster-down: setup
	$(PY) -m devcluster down

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
