"""The controller under test as a separate process, its ``/metrics``, and a ``/proc`` sampler of its CPU
time and resident memory."""

from __future__ import annotations

import compileall
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from devcluster import Cluster, free_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
ALL_CORES = "all cores"  # the machine's busy CPU seconds, in ``Sampler.cpu``
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
# The packages the image installs the daemon from (the Dockerfile's COPY lines; test_bench_controller).
DAEMON_PACKAGES = ("clock", "informers", "statemachine", "workqueue", "taskset")


def compile_daemon(tree: Path) -> None:
    """Compile the daemon's modules in ``tree`` ahead of its start, as installing the image's wheel does
    (pip compiles what it installs). Started from a tree without bytecode (a clean clone; every start
    under ``PYTHONDONTWRITEBYTECODE``), the daemon would compile its modules itself as it starts, and
    the compiler's leftovers would be 1.3 MiB of the RSS measured at start that a deployed controller
    does not have (bench/README.md, "The start, as the image runs it"). Up-to-date modules are skipped."""
    for package in DAEMON_PACKAGES:
        if not compileall.compile_dir(tree / package, quiet=1):
            raise RuntimeError(f"compiling {tree / package} failed")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (fields 14 and 15 of /proc/<pid>/stat)."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def stat_cpu_seconds(stat_file: Path) -> float:
    """User + system CPU seconds in a /proc ``stat`` file: a process's, or one thread's
    (/proc/<pid>/task/<tid>/stat), whose fields are the same."""
    stat = stat_file.read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_by_process(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process (a process that is gone is left out)."""
    found = {}
    for name, pid in pids.items():
        try:
            found[name] = cpu_seconds(pid)
        except OSError:
            continue
    return found


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: every column but idle and iowait)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields)
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of ``pid`` in KiB."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


@dataclass
class Sampler:
    """Samples CPU seconds and RSS of a process, and the CPU seconds of ``processes`` and of the whole
    machine (``ALL_CORES``), every ``interval`` seconds on a thread."""

    pid: int
    processes: dict[str, int] = field(default_factory=dict)
    interval: float = 0.25
    series: list[tuple[float, float, int]] = field(default_factory=list)  # (monotonic, cpu s, rss KiB)
    cpu: list[tuple[float, dict[str, float]]] = field(default_factory=list)  # (monotonic, CPU s by name)
    hwm_kib: int = 0  # VmHWM: the kernel's own peak RSS over the process's life
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def peak_hwm_mib(self) -> float:
        return round(self.hwm_kib / 1024, 1)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> tuple[float, float, int]:
        try:
            memory = memory_kib(self.pid)
            point = (time.monotonic(), cpu_seconds(self.pid), memory.get("VmRSS", 0))
        except OSError:  # the process is gone
            return self.series[-1] if self.series else (time.monotonic(), 0.0, 0)
        self.cpu.append((point[0], {**cpu_by_process(self.processes), ALL_CORES: machine_busy_seconds()}))
        self.hwm_kib = max(self.hwm_kib, memory.get("VmHWM", 0))
        self.series.append(point)
        return point

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def window(self, start: float, end: float) -> list[tuple[float, float, int]]:
        return [p for p in self.series if start <= p[0] <= end]


class Controller:
    """``python -m taskset.daemon.main`` against the cluster, with its log in the cluster's log directory."""

    def __init__(self, cluster: Cluster, workers: int, qps: float, burst: int) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.log_path = cluster.directory / "logs" / "taskset-controller.log"
        self.argv = [
            sys.executable,
            "-m",
            "taskset.daemon.main",
            f"--kubeconfig={cluster.kubeconfig}",
            f"--qps={qps:g}",
            f"--burst={burst}",
            f"--workers={workers}",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            "--metrics-secure=false",  # scraped every second on loopback: no TLS, no token reviews
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--register-crd=false",
        ]
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self, timeout: float = 60.0, cwd: Path | None = None) -> None:
        """``cwd``: the checkout whose daemon runs (``bench.idle`` compares two); this one by default."""
        tree = cwd or Path(__file__).resolve().parents[1]
        compile_daemon(tree)
        with self.log_path.open("wb") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, cwd=tree)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"controller exited ({self.popen.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"controller not ready within {timeout:.0f}s:\n{self.log_tail()}")

    def stop(self) -> int | None:
        if self.popen is None or self.popen.poll() is not None:
            return None if self.popen is None else self.popen.returncode
        self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(40)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return self.popen.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_lines_since(self, offset: int) -> list[str]:
        """The log lines written after the log was ``offset`` bytes long."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def scrape(self) -> Samples:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()
        samples: Samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
        return samples


def error_lines(lines: list[str]) -> list[str]:
    """The log lines at level error or critical (the log is JSON lines)."""

    def at_error(line: str) -> bool:
        compact = line.replace(" ", "")
        return '"level":"error"' in compact or '"level":"critical"' in compact

    return [line for line in lines if at_error(line)]


def diff(after: Samples, before: Samples) -> Samples:
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


def total(samples: Samples, name: str, **match: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``match``."""
    return sum(
        value
        for (sample_name, labels), value in samples.items()
        if sample_name == name and all(dict(labels).get(k) == v for k, v in match.items())
    )


def by_labels(samples: Samples, name: str, keys: tuple[str, ...]) -> dict[str, float]:
    """``name`` summed by the values of ``keys`` joined with ' ', zero entries left out."""
    grouped: dict[str, float] = defaultdict(float)
    for (sample_name, labels), value in samples.items():
        if sample_name == name and value:
            found = dict(labels)
            grouped[" ".join(found.get(k, "") for k in keys)] += value
    return dict(sorted(grouped.items()))
