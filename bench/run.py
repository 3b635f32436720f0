"""Runs the scenarios against one embedded control plane and one controller process.

Every scenario gets its own namespace, deleted afterwards (its cost is counted in no scenario). The
controller's metrics are scraped before and after each scenario and the difference is the scenario's.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import report, strangers
from bench.churn import SUSPECT_LISTS, churn_check, ending_passes
from bench.controller import Controller, Sampler, cpu_by_process, diff, error_lines, memory_kib
from bench.kube import Api, ApiError
from bench.pinning import pin_layout
from bench.profile import Profiler
from bench.recorder import TASKSETS_PATH, PodRecord, Recorder, TaskSetRecord, wait_until
from bench.scenarios import (
    SCALES,
    WORKERS_PER_TASKSET,
    Scale,
    churn,
    long_running,
    raw_copies,
    replicas_of,
    taskset,
)
from bench.threads import cpu_difference, cpu_now, cpu_since
from devcluster import Cluster, Settings
from taskset.api import constants as c
from taskset.runtime.kube import RateLimiter

ROOT = Path(__file__).resolve().parents[1]
CRD = ROOT / "manifests" / "crd" / "tasksets.octopus.openi.pcl.cn.yaml"
SCENARIOS = ("raw", "burst", "large", "steady", "churn", "cache", "strangers", "huge")
CACHE_REPLICAS = 500  # replicas per TaskSet of the cache scenario
CACHE_SETTLE = 5.0  # seconds after the last Pod runs: the controller's last passes and writes
CREATE_THREADS = 8  # the driver's parallel TaskSet creates in a burst
# The client limit the controller once had by default (now off): the raw client's "limited" run.
DEFAULT_QPS, DEFAULT_BURST = 50.0, 100
WATCH_SETTLE = 1.0  # seconds for the recorder's initial lists before a scenario starts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--scenario",
        type=scenario_list,
        default=SCENARIOS,
        help=f"all, or a comma-separated list of {', '.join(SCENARIOS)} (run in that order)",
    )
    parser.add_argument("--scale", choices=tuple(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--workers", type=int, default=10, help="controller --workers, and raw client threads"
    )
    parser.add_argument("--nodes", type=int, default=4, help="simulated nodes")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="control plane on core 0, the controller and this driver (the raw client) on core 1",
    )
    parser.add_argument(
        "--controller-qps",
        type=float,
        default=0.0,
        help="the controller's --qps (0: unlimited, its default); --burst is 100 (large TaskSets measured)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run burst and large this many times, each after its own raw reference (median ratio)",
    )
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite bench/README.md's table")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the controller with py-spy during each TaskSet scenario (bench/profile.py)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def scenario_list(text: str) -> tuple[str, ...]:
    """``all`` or ``raw,burst``: several in one run, so a ratio can have its raw reference right before it."""
    if text == "all":
        return SCENARIOS
    chosen = tuple(name.strip() for name in text.split(","))
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:  # an empty name ("raw,") is unknown too
        raise argparse.ArgumentTypeError(f"unknown scenario {', '.join(unknown)!r}: choose from {SCENARIOS}")
    return chosen


class Bench:
    def __init__(
        self,
        cluster: Cluster,
        controller: Controller,
        scale: Scale,
        seed: int,
        workers: int,
        *,
        out: Path,
        profile_dir: Path | None = None,
    ) -> None:
        self.cluster = cluster
        self.out = out
        self.controller = controller
        self.api = Api(cluster, maxsize=64)
        self.scale = scale
        self.seed = seed
        self.workers = workers
        self.sampler = Sampler(controller.pid, processes=self.processes())
        self.profile_dir = profile_dir

    def processes(self) -> dict[str, int]:
        """Every process whose CPU a scenario reports: the control plane's, the controller, this driver."""
        return {**self.cluster.pids(), "controller": self.controller.pid, "bench driver": os.getpid()}

    # ----- namespaces ----------------------------------------------------------------------------
    def namespace(self, scenario: str) -> str:
        name = f"bench-{scenario}-{self.seed}-{int(time.time()) % 100000}"
        self.api.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        wait_until(
            lambda: (
                self.api.request(
                    "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default", allow=(404,)
                ).get("metadata")
                is not None
            ),
            60,
            "default service account",
        )
        return name

    def drop(self, namespace: str) -> None:
        self.api.request("DELETE", f"/api/v1/namespaces/{namespace}", allow=(404,))
        wait_until(
            lambda: (
                "metadata" not in self.api.request("GET", f"/api/v1/namespaces/{namespace}", allow=(404,))
            ),
            600,
            f"namespace {namespace} deleted",
            poll=0.5,
        )

    # ----- TaskSet scenarios ----------------------------------------------------------------------
    def objects(self, scenario: str) -> list[dict[str, Any]]:
        """The TaskSets of a scenario, in creation order."""
        scale = self.scale
        if scenario == "large":
            return [taskset("large", scale.large, ps=False)]
        if scenario == "huge":
            return [taskset("huge", scale.huge, ps=False)]
        if scenario == "steady":
            count = round(scale.steady_rate * scale.steady_seconds)
            return [taskset(f"steady-{i:04d}", WORKERS_PER_TASKSET) for i in range(count)]
        if scenario == "churn":
            return churn([f"churn-{i:04d}" for i in range(scale.churn)], self.seed)[0]
        return [taskset(f"burst-{i:04d}", WORKERS_PER_TASKSET) for i in range(scale.burst)]

    def run_tasksets(self, scenario: str, *, round_: int = 1) -> dict[str, Any]:
        namespace = self.namespace(scenario)
        scale = self.scale
        objects = self.objects(scenario)
        recorder = Recorder(self.api, namespace)
        recorder.start()
        time.sleep(WATCH_SETTLE)
        log_offset = self.controller.log_size()
        before = self.controller.scrape()
        profiler = self.profiler(scenario)
        cpu_before = cpu_now(self.processes(), self.controller.pid)
        start_point = self.sampler.sample()
        started = start_point[0]
        create_errors: list[str] = []
        create = self.creating(TASKSETS_PATH.format(ns=namespace), create_errors)
        names = [o["metadata"]["name"] for o in objects]
        print(f"[{scenario}] {len(objects)} TaskSets in {namespace}", flush=True)
        submit(create, objects, started, scale.steady_rate if scenario == "steady" else 0.0)
        try:
            wait_until(
                lambda: recorder.finished(names) or bool(create_errors),
                scale.timeout,
                f"{scenario}: all TaskSets final ({recorder.count_final()}/{len(names)} so far)",
                poll=0.2,
            )
            timed_out = ""
        except TimeoutError as err:
            timed_out = str(err)
        ended = self.sampler.sample()
        cpu_used = cpu_since(cpu_before, self.processes(), self.controller.pid)
        profile = profiler.stop() if profiler is not None else None
        time.sleep(1.0)  # the controller's last status write and its metrics
        after = self.controller.scrape()
        recorder.stop()
        pods, tasksets = recorder.snapshot()
        result = report.taskset_scenario(
            scenario,
            names=names,
            expected_pods={o["metadata"]["name"]: len(replicas_of(o)) for o in objects},
            pods=pods,
            tasksets=tasksets,
            started=started,
            ended=ended[0],
            metrics=diff(after, before),
            process=self.sampler.window(started, ended[0]),
        )
        errors = result["correctness"]["errors"]
        errors.extend(create_errors + recorder.errors)
        if timed_out:
            errors.append(timed_out)
        log = self.controller.log_lines_since(log_offset)  # the controller's log of this scenario
        errors.extend(error_lines(log)[:20])
        result["correctness"]["duplicates"] = recorder.duplicates
        report.add_cpu(result, cpu_used)  # by process and thread, and against the fixed work
        result["creation_window"] = self.creation_window([p.added for p in pods if p.replica_attempt == 0])
        if profile is not None:
            result["profile"] = profile
        if scenario == "churn":
            ends = ending_passes(log, namespace)
            result["churn"] = churn_check(churn(names, self.seed)[1], pods, errors, ends)
        result["correctness"]["error_count"] = len(errors)
        result["correctness"]["ok"] = not errors and not recorder.duplicates
        suspects = evidence_suspects(
            tasksets, pods, result.get("churn", {}), failed=bool(errors or recorder.duplicates)
        )
        label = scenario if round_ == 1 else f"{scenario}-{round_}"  # --repeat: one log per round
        result["evidence"] = self.evidence(label, namespace, suspects, pods, started=started, log=log)
        self.drop(namespace)
        return result

    def evidence(
        self,
        scenario: str,
        namespace: str,
        suspects: list[str],
        pods: list[PodRecord],
        *,
        started: float,
        log: list[str],
    ) -> dict[str, Any]:
        """What a run leaves to explain itself (a failed one, or its slowest TaskSet): the final status of
        each suspect TaskSet, the record of each of its Pods (times in seconds from the scenario's start),
        and the controller's log lines naming it, written beside the JSON."""
        pattern = re.compile("|".join(re.escape(s) + "(?![0-9])" for s in suspects) or "(?!)")
        lines = [line for line in log if pattern.search(line)]
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"evidence-{scenario}-seed{self.seed}-controller.log"
        path.write_text("".join(line + "\n" for line in lines))
        statuses = {
            name: self.api.request("GET", f"{TASKSETS_PATH.format(ns=namespace)}/{name}", allow=(404,)).get(
                "status"
            )
            for name in suspects
        }
        return {
            "started_unix": round(time.time() - (time.monotonic() - started), 3),
            "tasksets": statuses,
            "pods": [pod_evidence(p, started) for p in pods if p.taskset in statuses],
            "controller_log": path.name,
        }

    def creation_window(self, added: list[float]) -> dict[str, Any]:
        return report.creation_window(added, self.sampler.cpu)

    def creating(self, path: str, errors: list[str]) -> Callable[[dict[str, Any]], None]:
        """A create at ``path`` for ``submit``'s threads: an API error is recorded, not raised."""

        def create(obj: dict[str, Any]) -> None:
            try:
                self.api.request("POST", path, obj)
            except ApiError as err:
                errors.append(str(err))

        return create

    # ----- memory -----------------------------------------------------------------------------------
    def run_cache(self) -> dict[str, Any]:
        """The controller's resident memory with ``scale.cache`` Running Pods (and their TaskSets) in its
        caches: TaskSets of ``CACHE_REPLICAS`` Pods that run until deleted, all created at once."""
        namespace = self.namespace("cache")
        count = self.scale.cache
        objects = [long_running(f"cache-{i:03d}", CACHE_REPLICAS) for i in range(count // CACHE_REPLICAS)]
        recorder = Recorder(self.api, namespace)
        recorder.start()
        time.sleep(WATCH_SETTLE)
        before = self.sampler.sample()
        errors: list[str] = []
        create = self.creating(TASKSETS_PATH.format(ns=namespace), errors)
        print(f"[cache] {len(objects)} TaskSets of {CACHE_REPLICAS} Pods that run until deleted", flush=True)
        submit(create, objects, before[0], 0.0)
        try:
            wait_until(  # a slow poll: each one lists every Running Pod
                lambda: self.running(namespace) >= count or bool(errors),
                self.scale.timeout,
                "cache: every Pod Running",
                poll=2.0,
            )
        except TimeoutError as err:
            errors.append(str(err))
        all_running = time.monotonic()
        time.sleep(CACHE_SETTLE)
        holding = self.sampler.sample()
        recorder.stop()
        result: dict[str, Any] = {
            "name": "cache",
            "tasksets": len(objects),
            "pods_created": recorder.pod_count(),
            "pods_running": self.running(namespace),
            "seconds_to_all_running": round(all_running - before[0], 1),
            "controller": {
                "rss_mib_before": round(before[2] / 1024, 1),
                "rss_mib_holding": round(holding[2] / 1024, 1),
                "peak_rss_mib_lifetime": self.sampler.peak_hwm_mib,
            },
            "correctness": {"errors": errors[:20], "duplicates": recorder.duplicates},
        }
        result["correctness"]["ok"] = not errors and not recorder.duplicates
        self.drop(namespace)
        return result

    def rss_kib(self) -> int:
        """The controller's resident memory now."""
        return self.sampler.sample()[2]

    def running(self, namespace: str) -> int:
        return self.api.count(f"/api/v1/namespaces/{namespace}/pods", "fieldSelector=status.phase%3DRunning")

    # ----- raw limit -------------------------------------------------------------------------------
    def run_raw(
        self, qps: float, burst: int, *, objects: list[dict[str, Any]] | None = None, label: str = ""
    ) -> dict[str, Any]:
        """A bare client creating then deleting the Pods and Services the controller makes for
        ``objects`` (``raw_copies``; default: the larger of ``burst`` and ``large``)."""
        label = label or ("raw-unlimited" if qps <= 0 else f"raw-qps{qps:g}")
        namespace = self.namespace("raw")
        recorder = Recorder(self.api, namespace)
        recorder.start()
        time.sleep(WATCH_SETTLE)
        if objects is None:
            objects = self.objects("large" if self.scale.large >= self.scale.raw_pods else "burst")
        bucket = RateLimiter(qps, burst)
        errors: list[str] = []
        path = f"/api/v1/namespaces/{namespace}/pods"
        unit = self.api.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "raw-unit"}}
        )
        manifests, owned = raw_copies(objects, namespace, unit)
        names = [pod["metadata"]["name"] for pod in manifests]
        count = len(manifests)

        def post(collection: str, obj: dict[str, Any]) -> None:
            bucket.wait()
            try:
                self.api.request("POST", f"/api/v1/namespaces/{namespace}/{collection}", obj)
            except ApiError as err:
                errors.append(str(err))

        def delete(name: str) -> None:
            bucket.wait()
            try:
                self.api.request("DELETE", f"{path}/{name}", allow=(404,))
            except ApiError as err:
                errors.append(str(err))

        print(f"[{label}] {count} pods, {self.workers} threads", flush=True)
        cpu_before = cpu_by_process(self.processes())
        started = time.monotonic()
        for plural, obj in owned:  # first, as the controller makes them
            post(plural, obj)
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(lambda pod: post("pods", pod), manifests))
        created = time.monotonic()
        cpu_used = cpu_difference(cpu_by_process(self.processes()), cpu_before)
        wait_until(lambda: recorder.pod_count() >= count or bool(errors), 300, "raw pods seen")
        delete_started = time.monotonic()
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(delete, names))
        deleted = time.monotonic()
        wait_until(lambda: recorder.deleted_count() >= count or bool(errors), 300, "raw pods gone")
        recorder.stop()
        pods, _ = recorder.snapshot()
        result = report.raw_scenario(
            label,
            qps=qps,
            burst=burst,
            threads=self.workers,
            pods=pods,
            started=started,
            created=created,
            delete_started=delete_started,
            deleted=deleted,
        )
        result["correctness"] = {"errors": errors[:20], "duplicates": recorder.duplicates, "ok": not errors}
        result["cpu_seconds_by_process"] = cpu_used  # the create phase only
        result["creation_window"] = self.creation_window([p.added for p in pods])
        self.drop(namespace)
        return result

    def run_paired_raw(self, scenario: str) -> dict[str, Any]:
        """The raw reference of one target scenario, run just before it with as many Pods, unlimited: on a
        machine whose speed drifts from minute to minute, a reference taken minutes earlier (``raw``)
        can be a fifth faster or slower than the one the scenario itself meets."""
        return self.run_raw(
            0.0, DEFAULT_BURST, objects=self.objects(scenario), label=report.paired_reference(scenario)
        )

    def profiler(self, scenario: str) -> Profiler | None:
        if self.profile_dir is None:
            return None
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        profiler = Profiler(self.controller.pid, self.profile_dir / f"profile-{scenario}.txt")
        profiler.start()
        return profiler


def submit(
    create: Callable[[dict[str, Any]], None], objects: list[dict[str, Any]], start: float, rate: float
) -> None:
    """Create ``objects`` all at once (``CREATE_THREADS`` at a time) or ``rate`` per second from ``start``."""
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        if rate <= 0:
            list(pool.map(create, objects))
            return
        for i, obj in enumerate(objects):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(create, obj)


def implicated(
    tasksets: list[TaskSetRecord], pods: list[PodRecord], churn_report: dict[str, Any], limit: int = 20
) -> list[str]:
    """The TaskSets a failed run should be explained by: those that did not end Succeeded, and those of
    the replicas the churn verdict names."""
    owner = {p.name: p.taskset for p in pods}
    named = {
        owner[replica] for key in SUSPECT_LISTS for replica in churn_report.get(key, ()) if replica in owner
    }
    return sorted({t.name for t in tasksets if t.state != "Succeeded"} | named)[:limit]


def evidence_suspects(
    tasksets: list[TaskSetRecord], pods: list[PodRecord], churn_report: dict[str, Any], *, failed: bool
) -> list[str]:
    """The TaskSets a scenario's evidence covers: when it failed, the implicated ones; and always the
    slowest from its last Pod exit to its end, whose record explains outliers."""
    named = implicated(tasksets, pods, churn_report) if failed else []
    waits = report.exit_to_final_by_taskset(tasksets, pods)
    slowest = max(waits, key=waits.__getitem__, default=None)
    return [*named, slowest] if slowest is not None and slowest not in named else named


def pod_evidence(pod: PodRecord, origin: float) -> dict[str, Any]:
    record = dataclasses.asdict(pod)
    for key in ("added", "running", "exited", "deleted"):
        if record[key] is not None:
            record[key] = round(record[key] - origin, 3)
    return record


def install_crd(cluster: Cluster, api: Api) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(CRD))
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{c.PLURAL}.{c.GROUP}"

    def established() -> bool:
        conditions = (api.request("GET", path, allow=(404,)).get("status") or {}).get("conditions") or []
        return any(x["type"] == "Established" and x["status"] == "True" for x in conditions)

    wait_until(established, 60, "TaskSet CRD Established")
    # ...and served: the first list can still 404 for a moment after Established.
    wait_until(
        lambda: "items" in api.request("GET", f"/apis/{c.GROUP}/{c.VERSION}/{c.PLURAL}", allow=(404,)),
        60,
        "TaskSet API served",
    )


def run_memory(bench: Bench, scenario: str, scenarios: dict[str, Any]) -> None:
    """Run a memory scenario (``cache``, ``strangers``) and print its figure."""
    if scenario == "strangers":
        scenarios.update(strangers.run(bench))
        print(report.strangers_line(scenarios), flush=True)
        return
    outcome = bench.run_cache()
    scenarios["cache"] = outcome
    print(
        f"  cache: {outcome['pods_running']} Pods Running, controller RSS "
        f"{outcome['controller']['rss_mib_holding']} MiB",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scale = SCALES[args.scale]
    chosen: tuple[str, ...] = args.scenario
    begun = time.monotonic()
    settings = Settings(nodes=args.nodes, disable_qps_limits=True)
    results: dict[str, Any] = {
        "scale": args.scale,
        "seed": args.seed,
        "settings": {
            "scale": scale.__dict__,
            "controller_workers": args.workers,
            "nodes": args.nodes,
            "repeat": args.repeat,
            "controller_qps": args.controller_qps,
            "pinned": {},
        },
        "machine": report.machine(),
        "scenarios": {},
    }
    with Cluster(settings) as cluster:
        print(f"control plane ready in {time.monotonic() - begun:.1f}s ({cluster.server})", flush=True)
        install_crd(cluster, Api(cluster))
        controller = Controller(cluster, workers=args.workers, qps=args.controller_qps, burst=DEFAULT_BURST)
        controller.start()
        # Ready (its caches synced) and before any TaskSet: what the process costs before its first object.
        started_rss_mib = round(memory_kib(controller.pid).get("VmRSS", 0) / 1024, 1)
        print(f"controller ready: RSS {started_rss_mib} MiB", flush=True)
        if args.pin:
            results["settings"]["pinned"] = pin_layout(
                cluster.pids(), {"controller": controller.pid, "bench driver": os.getpid()}
            )
        profile_dir = args.out / f"profile-{args.scale}-seed{args.seed}" if args.profile else None
        bench = Bench(
            cluster, controller, scale, args.seed, args.workers, out=args.out, profile_dir=profile_dir
        )
        bench.sampler.start()
        try:
            for scenario in chosen:
                if scenario in report.MEMORY_SCENARIOS:
                    run_memory(bench, scenario, results["scenarios"])
                elif scenario == "raw":
                    for qps, burst in ((0.0, DEFAULT_BURST), (DEFAULT_QPS, DEFAULT_BURST)):
                        outcome = bench.run_raw(qps, burst)
                        results["scenarios"][outcome["name"]] = outcome
                        print(report.one_line(outcome), flush=True)
                elif scenario in report.PAIRED_SCENARIOS:
                    for round_ in range(1, args.repeat + 1):
                        raw = bench.run_paired_raw(scenario)
                        outcome = bench.run_tasksets(scenario, round_=round_)
                        print(f"{report.one_line(raw)}\n{report.one_line(outcome)}", flush=True)
                        if round_ == 1:
                            results["scenarios"].update({raw["name"]: raw, scenario: outcome})
                        else:
                            repeats = results.setdefault("repeats", {}).setdefault(scenario, [])
                            repeats.append({"raw": raw, "scenario": outcome})
                else:
                    outcome = bench.run_tasksets(scenario)
                    results["scenarios"][scenario] = outcome
                    print(report.one_line(outcome), flush=True)
        finally:
            bench.sampler.stop()
            results["controller"] = {
                "exit_code": controller.stop(),
                "peak_rss_mib_lifetime": bench.sampler.peak_hwm_mib,
                "rss_mib_started": started_rss_mib,
            }
    results["wall_seconds"] = round(time.monotonic() - begun, 1)
    report.add_ratios(results)
    paths = report.write(results, args.out, readme=None if args.no_readme else ROOT / "bench" / "README.md")
    print(report.table(results))
    for path in paths:
        print(f"wrote {path}")
    repeated = [
        run for pairs in results.get("repeats", {}).values() for pair in pairs for run in pair.values()
    ]
    ok = all(s["correctness"]["ok"] for s in [*results["scenarios"].values(), *repeated])
    print("correctness: " + ("all OK" if ok else "FAILURES (see the JSON's correctness entries)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
