# The TaskSet controller image: `make image` (docker or podman), then push and point
# manifests/base/kustomization.yaml at it (docs/deployment.md, "The image").
#
# Two stages: the builder turns the source into a wheel and installs it with its dependencies into a
# virtual environment; the final stage is the slim Python base plus that environment, nothing else.
# Every dependency ships manylinux wheels, so no compiler is needed even in the builder.
#
# The builder installs only from the locks (requirements/, `make lock`): the exact versions, each file
# checked against its hash, the same on every build; pip and the build backend come from a lock too
# (requirements/build.txt, in a venv of the builder's own), and the project goes in without
# dependencies, so nothing is resolved from setup.cfg's ranges. The dependencies are a layer of their
# own, before the sources: a source change rebuilds only the wheel.
#
# Both bases are build arguments. `make image` builds them from Debian's packages with mmdebstrap (no
# image registry needed): PYTHON_IMAGE with python3 only, BUILDER_IMAGE with pip and venv too. Both must
# have Python at the same path, since the venv is copied from one to the other.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG BUILDER_IMAGE=python:3.11-slim-bookworm

FROM ${BUILDER_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY requirements/build.txt requirements/runtime.txt requirements/
RUN python -m venv /opt/build \
 && /opt/build/bin/python -m pip install --require-hashes --only-binary=:all: -r requirements/build.txt \
 && python -m venv --without-pip /opt/taskset \
 && /opt/build/bin/python -m pip --python /opt/taskset/bin/python install \
    --require-hashes --only-binary=:all: -r requirements/runtime.txt
# Only what the wheel contains (tests, docs, the dev cluster and the benchmarks stay out).
COPY pyproject.toml setup.cfg README.md ./
COPY clock/ clock/
COPY informers/ informers/
COPY statemachine/ statemachine/
COPY workqueue/ workqueue/
COPY taskset/ taskset/
COPY manifests/crd/ manifests/crd/
# `pip check`: the locked runtime satisfies what the wheel requires (a lock behind setup.cfg fails here).
RUN /opt/build/bin/python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && /opt/build/bin/python -m pip --python /opt/taskset/bin/python install --no-deps /wheels/*.whl \
 && /opt/build/bin/python -m pip --python /opt/taskset/bin/python check \
 && /opt/taskset/bin/python -c "import taskset.daemon.main as m; assert m.CRD_MANIFEST.is_file(), m.CRD_MANIFEST"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="taskset-controller" \
      org.opencontainers.image.description="Kubernetes controller for multi-role TaskSet jobs (octopus.openi.pcl.cn/v1alpha1)" \
      org.opencontainers.image.licenses="Apache-2.0"
# No package manager work here beyond removing pip where the base has it: the image runs the controller
# and nothing else. The user is written directly (a Debian base from mmdebstrap has no useradd).
RUN if python -m pip --version >/dev/null 2>&1; then python -m pip uninstall --yes --quiet pip setuptools wheel; fi \
 && echo 'taskset:x:65532:' >> /etc/group \
 && echo 'taskset:x:65532:65532:taskset:/nonexistent:/usr/sbin/nologin' >> /etc/passwd
COPY --from=builder /opt/taskset /opt/taskset
# No .pyc writes (the root filesystem is read-only in the Deployment); log lines leave at once.
ENV PATH=/opt/taskset/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
EXPOSE 8080 8081
# The controller handles SIGTERM itself (graceful drain, lease release), also as PID 1.
ENTRYPOINT ["taskset-controller"]
