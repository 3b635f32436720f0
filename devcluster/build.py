"""Build the pinned control-plane binaries from the Go module proxy into a cache outside the work tree.

Each upstream project has its own wrapper module under ``devcluster/go/<name>`` (go.mod/go.sum committed),
so Kubernetes', etcd's and kwok's dependency graphs never have to agree. Binaries land in
``<cache>/<name>-<version>/`` and a finished directory is reused as is: once built, a run costs nothing.

Two processes may build at once (the test session's background build of the add-ons, and a fixture that
needs one of them now): each component is built under a file lock of its own, and whoever waited for it
finds the directory complete and builds nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent / "go"
CACHE_ENV = "TASKSET_DEVCLUSTER_CACHE"
DEFAULT_CACHE = Path.home() / ".cache" / "taskset-devcluster"
DONE_MARKER = ".complete"


@dataclass(frozen=True)
class Component:
    """One wrapper module and the binaries built from it."""

    name: str
    packages: dict[str, str]  # binary name -> Go package path

    @property
    def version(self) -> str:
        line = (GO_DIR / self.name / "VERSION").read_text().strip()
        return line.split("=", 1)[1]

    def ldflags(self) -> str:
        flags = ["-s", "-w"]
        if self.name == "kubernetes":
            flags += _kubernetes_version_flags(self.version)
        return " ".join(flags)


def _kubernetes_version_flags(version: str) -> list[str]:
    """Stamp the version a plain ``go build`` leaves as v0.0.0, so ``kubectl version`` tells the truth."""
    major, minor = version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    return [
        f"-X {pkg}.{key}={value}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for key, value in values.items()
    ]


KUBERNETES = Component(
    "kubernetes",
    {
        "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
        "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
        "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
        "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    },
)
ETCD = Component("etcd", {"etcd": "go.etcd.io/etcd/server/v3"})
KWOK = Component("kwok", {"kwok": "sigs.k8s.io/kwok/cmd/kwok"})
COMPONENTS = (ETCD, KWOK, KUBERNETES)  # the control plane: every Cluster needs them
# Started only by the tests that need them (CoreDNS resolves the replicas' names;
# Kueue and the coscheduling scheduler, devcluster/kueue.py and devcluster/coscheduling.py). ``make
# binaries`` builds them with the rest; ``make test`` builds only the control plane in the foreground and
# the session builds these in the background (tests/integration/addon_session.py), in the order the
# suite first needs them (Kueue: the chaos suite, which runs first).
COREDNS = Component("coredns", {"coredns": "github.com/coredns/coredns"})
KUEUE = Component("kueue", {"kueue": "sigs.k8s.io/kueue/cmd/kueue"})
SCHEDULER_PLUGINS = Component(
    "scheduler-plugins", {"scheduler-plugins": "sigs.k8s.io/scheduler-plugins/cmd/scheduler"}
)
ADDONS = (KUEUE, COREDNS, SCHEDULER_PLUGINS)


def module_dir(component: Component, module: str) -> Path:
    """Where ``module``, a dependency of ``component``'s wrapper, lies in the Go module cache (the build
    downloaded it): for the manifests that ship in its zip, such as CRDs."""
    done = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", module],
        cwd=GO_DIR / component.name,
        env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def component_dir(component: Component) -> Path:
    return cache_root() / f"{component.name}-{component.version}"


def is_built(component: Component) -> bool:
    return (component_dir(component) / DONE_MARKER).exists()


def build(component: Component) -> Path:
    """Build one component unless its cache directory is already complete; return that directory."""
    target = component_dir(component)
    if is_built(component):
        return target
    with _build_lock(target):
        if not is_built(component):  # built by whoever held the lock before
            _build_into(component, target)
    return target


@contextlib.contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """Held while ``target`` is built: ``<target>.lock`` beside it, released when the holder dies too."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.with_name(target.name + ".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"waiting for another process's build of {target.name}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_into(component: Component, target: Path) -> None:
    """``go build`` every binary of ``component`` into a staging directory, then rename it ``target``."""
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    started = time.monotonic()
    for binary, package in component.packages.items():
        _log(f"building {binary} {component.version}")
        subprocess.run(
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                component.ldflags(),
                "-o",
                str(staging / binary),
                package,
            ],
            cwd=GO_DIR / component.name,
            env=env,
            check=True,
        )
    (staging / DONE_MARKER).write_text(f"{time.monotonic() - started:.0f}s\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def build_all(components: tuple[Component, ...] = COMPONENTS + ADDONS) -> dict[str, Path]:
    """Build every component (the add-ons too); return binary name -> path."""
    paths: dict[str, Path] = {}
    for component in components:
        directory = build(component)
        paths.update({binary: directory / binary for binary in component.packages})
    return paths


PARTS: dict[str, tuple[Component, ...]] = {
    "all": COMPONENTS + ADDONS,
    "control-plane": COMPONENTS,
    "add-ons": ADDONS,
}


def binary_paths() -> dict[str, Path]:
    """Paths of the control plane's binaries, building whatever is missing first."""
    return build_all(COMPONENTS)


def _log(message: str) -> None:
    print(f"devcluster: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    for name, path in build_all().items():
        print(f"{name}\t{path}")
