"""Figures from the recordings, and the outputs: JSON, PNG (latency CDF, throughput over time) and the
generated table of ``bench/README.md``."""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.controller import ALL_CORES, Samples, by_labels, total
from bench.recorder import PodRecord, TaskSetRecord

BEGIN = "<!-- BEGIN GENERATED: python -m bench rewrites this section -->"
END = "<!-- END GENERATED -->"
TASKSET_SCENARIOS = ("burst", "large", "steady", "churn", "huge")
MEMORY_SCENARIOS = ("cache", "strangers")  # a memory record each, not a row of the table
PAIRED_SCENARIOS = ("burst", "large")  # the throughput targets: each gets its own raw run just before it


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """p50/p90/p99 (nearest rank) and max, in seconds rounded to ms; None when there are no values."""
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None, "n": 0}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 3)

    return {
        "p50": rank(0.5),
        "p90": rank(0.9),
        "p99": rank(0.99),
        "max": round(ordered[-1], 3),
        "n": len(ordered),
    }


def rate(times: Sequence[float]) -> float | None:
    """Events per second from the first to the last of ``times``."""
    if len(times) < 2 or max(times) <= min(times):
        return None
    return round((len(times) - 1) / (max(times) - min(times)), 1)


def cores_between(
    samples: Sequence[tuple[float, dict[str, float]]], span: Sequence[float]
) -> dict[str, float] | None:
    """CPU seconds per second of each name, from the samples (time, CPU seconds by name) inside ``span``."""
    inside = [p for p in samples if len(span) >= 2 and span[0] <= p[0] <= span[-1]]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    (start, first), (end, last) = inside[0], inside[-1]
    return {name: (last[name] - first[name]) / (end - start) for name in last if name in first}


def creation_window(
    added: Sequence[float], samples: Sequence[tuple[float, dict[str, float]]]
) -> dict[str, Any]:
    """What the machine spent while Pods were being created (first to last ADDED). With every core busy
    in both windows, a scenario's rate over its raw reference's is the inverse ratio of their CPU ms per
    Pod: how much besides the Pods themselves (the controller, the TaskSets' own requests) shares the
    cores."""
    span = sorted(added)
    cores = cores_between(samples, span) or {}
    seconds = span[-1] - span[0] if len(span) >= 2 else 0.0
    per_pod = (
        {name: round(c * seconds / (len(span) - 1) * 1000, 2) for name, c in cores.items()} if seconds else {}
    )
    busy = cores.get(ALL_CORES)
    return {
        "seconds": round(seconds, 2),
        "machine_busy_cores": round(busy, 2) if busy is not None else None,
        "machine_cpu_ms_per_pod": per_pod.pop(ALL_CORES, None),
        "controller_cores": round(cores["controller"], 2) if "controller" in cores else None,
        "cpu_ms_per_pod_by_process": per_pod,
    }


def per_second(times: Sequence[float], origin: float) -> list[int]:
    if not times:
        return []
    counts = [0] * (int(max(times) - origin) + 1)
    for t in times:
        counts[max(0, int(t - origin))] += 1
    return counts


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def taskset_scenario(
    name: str,
    *,
    names: list[str],
    expected_pods: dict[str, int],
    pods: list[PodRecord],
    tasksets: list[TaskSetRecord],
    started: float,
    ended: float,
    metrics: Samples,
    process: list[tuple[float, float, int]],
) -> dict[str, Any]:
    by_name = {t.name: t for t in tasksets}
    first_attempts: dict[str, list[PodRecord]] = {}
    for pod in pods:
        if pod.replica_attempt == 0:
            first_attempts.setdefault(pod.taskset, []).append(pod)
    to_all_created: list[float] = []
    waits = exit_to_final_by_taskset(tasksets, pods)
    exit_to_final = [waits[ts] for ts in names if ts in waits]
    errors: list[str] = []
    states: dict[str, int] = {}
    for ts in names:
        record = by_name.get(ts)
        if record is None:
            errors.append(f"{ts}: never seen")
            continue
        states[record.state or "(not final)"] = states.get(record.state or "(not final)", 0) + 1
        if record.state != "Succeeded":
            errors.append(
                f"{ts}: final state {record.state or 'never reached'}, expected Succeeded ({record.message})"
            )
        created = first_attempts.get(ts, [])
        if len(created) == expected_pods[ts]:
            to_all_created.append(max(p.added for p in created) - record.added)
        else:
            errors.append(f"{ts}: {len(created)} first-attempt pods seen, expected {expected_pods[ts]}")
    finals = [t.final for t in tasksets if t.final is not None]
    pod_added = sorted(p.added for p in pods)
    first_added = sorted(p.added for p in pods if p.replica_attempt == 0)
    cpu = process[-1][1] - process[0][1] if len(process) >= 2 else 0.0
    peak_rss = max((p[2] for p in process), default=0) / 1024
    n = len(names)
    status_writes = total(metrics, "taskset_status_writes_total")
    reconciles = total(metrics, "controller_runtime_reconcile_total")
    reconcile_errors = total(metrics, "controller_runtime_reconcile_errors_total")
    if reconcile_errors:
        errors.append(f"controller_runtime_reconcile_errors_total rose by {reconcile_errors:g}")
    for counter in ("taskset_pod_creates_total", "taskset_pod_deletes_total", "taskset_status_writes_total"):
        bad = total(metrics, counter, result="error") + total(metrics, counter, result="invalid")
        if bad:
            errors.append(f"{counter} error/invalid: {bad:g}")
    api = by_labels(metrics, "taskset_api_requests_total", ("verb", "resource"))
    api_errors = {
        k: v
        for k, v in by_labels(metrics, "taskset_api_requests_total", ("verb", "resource", "code")).items()
        if not k.split(" ")[-1].startswith("2")
    }
    return {
        "name": name,
        "tasksets": n,
        "pods_created": len(pods),
        "wall_seconds": round(max(finals) - started, 2) if finals else None,
        "latency_create_to_all_pods_s": percentiles(to_all_created),
        "latency_last_exit_to_final_s": percentiles(exit_to_final),
        "pod_creation_rate": rate(first_added),
        "pod_creation_rate_including_retries": rate(pod_added),
        "status_bytes_peak": max((t.status_bytes_peak for t in tasksets), default=0),
        "pod_watch_events_per_pod": round(sum(p.events for p in pods) / len(pods), 2) if pods else None,
        "controller": {
            "cpu_seconds": round(cpu, 2),
            "cpu_seconds_per_1000_pods": round(cpu / len(pods) * 1000, 2) if pods else None,
            "peak_rss_mib": round(peak_rss, 1),
        },
        "api_requests": {
            "total": round(sum(api.values())),
            "by_verb_resource": {k: round(v) for k, v in api.items()},
            "non_2xx": {k: round(v) for k, v in api_errors.items()},
            "rest_client_by_method_code": {
                k: round(v)
                for k, v in by_labels(metrics, "rest_client_requests_total", ("method", "code")).items()
            },
        },
        "status_writes": {
            "total": round(status_writes),
            "by_result": {
                k: round(v) for k, v in by_labels(metrics, "taskset_status_writes_total", ("result",)).items()
            },
            "per_taskset": round(status_writes / n, 2) if n else None,
            "per_replica_lifecycle": round(status_writes / len(pods), 2) if pods else None,
        },
        "reconciles": {
            "total": round(reconciles),
            "by_result": {
                k: round(v)
                for k, v in by_labels(metrics, "controller_runtime_reconcile_total", ("result",)).items()
            },
            "per_taskset": round(reconciles / n, 2) if n else None,
        },
        "controller_latency_s": {
            "queue_wait": histogram(metrics, "workqueue_queue_duration_seconds"),
            "reconcile": histogram(metrics, "controller_runtime_reconcile_time_seconds"),
            "api_request": histogram(metrics, "rest_client_request_duration_seconds"),
        },
        "final_states": states,
        "series": {
            "latency_create_to_all_pods_s": sorted(round(v, 4) for v in to_all_created),
            "latency_last_exit_to_final_s": sorted(round(v, 4) for v in exit_to_final),
            "pods_created_per_second": per_second(pod_added, started),
            "tasksets_added_per_second": per_second(sorted(t.added for t in tasksets), started),
            "tasksets_final_per_second": per_second(finals, started),
        },
        "correctness": {"errors": errors[:50], "error_count": len(errors)},
    }


def exit_to_final_by_taskset(tasksets: list[TaskSetRecord], pods: list[PodRecord]) -> dict[str, float]:
    """Per final TaskSet with an exited Pod: seconds from the last of its Pods exiting to its final phase."""
    last_exit: dict[str, float] = {}
    for pod in pods:
        if pod.exited is not None:
            last_exit[pod.taskset] = max(pod.exited, last_exit.get(pod.taskset, pod.exited))
    return {
        t.name: t.final - last_exit[t.name] for t in tasksets if t.final is not None and t.name in last_exit
    }


def histogram(metrics: Samples, name: str, over: float = 1.0) -> dict[str, float | None]:
    """Count, mean and the share of observations above ``over`` seconds of a histogram's samples (the
    workqueue's decade buckets are too coarse for percentiles, but 1 s is one of their bounds)."""
    count = total(metrics, f"{name}_count")
    above = None
    for sample, labels in metrics:
        if sample == f"{name}_bucket" and float(dict(labels).get("le", "nan")) == over and count:
            above = round(1 - total(metrics, f"{name}_bucket", le=dict(labels)["le"]) / count, 4)
            break
    return {
        "count": round(count),
        "mean": round(total(metrics, f"{name}_sum") / count, 4) if count else None,
        f"share_over_{over:g}s": above,
    }


def raw_scenario(
    name: str,
    *,
    qps: float,
    burst: int,
    threads: int,
    pods: list[PodRecord],
    started: float,
    created: float,
    delete_started: float,
    deleted: float,
) -> dict[str, Any]:
    added = sorted(p.added for p in pods)
    gone = sorted(p.deleted for p in pods if p.deleted is not None)
    return {
        "name": name,
        "qps": qps,
        "burst": burst,
        "threads": threads,
        "pods_created": len(pods),
        "wall_seconds": round(created - started, 2),
        "pod_creation_rate": rate(added),
        "pod_creation_rate_client": round(len(pods) / (created - started), 1) if created > started else None,
        "pod_deletion_rate": rate(gone),
        "pod_deletion_rate_client": round(len(pods) / (deleted - delete_started), 1),
        "series": {"pods_created_per_second": per_second(added, started)},
    }


def paired_reference(scenario: str) -> str:
    return f"raw-before-{scenario}"


def add_ratios(results: dict[str, Any]) -> None:
    """Controller pod-creation rate / the raw client's, both measured from the same kind of watch: against
    the run's ``raw`` references, and (``paired``) against the scenario's own raw run just before it.
    With ``--repeat`` a target scenario has several such pairs (``results["repeats"]``): ``paired`` is
    their median and ``paired_each`` lists them in order."""
    scenarios = results["scenarios"]
    for name in TASKSET_SCENARIOS:
        scenario = scenarios.get(name)
        if not scenario or not scenario.get("pod_creation_rate"):
            continue
        ratios = scenario.setdefault("throughput_ratio", {})
        for reference in ("raw-unlimited", "raw-qps50"):
            raw = scenarios.get(reference, {}).get("pod_creation_rate")
            if raw:
                ratios[reference] = round(scenario["pod_creation_rate"] / raw, 3)
        pairs = [(scenarios.get(paired_reference(name), {}), scenario)]
        pairs += [(pair["raw"], pair["scenario"]) for pair in results.get("repeats", {}).get(name, [])]
        each = [
            round(run["pod_creation_rate"] / raw["pod_creation_rate"], 3)
            for raw, run in pairs
            if raw.get("pod_creation_rate") and run.get("pod_creation_rate")
        ]
        if each:
            ratios["paired"] = round(statistics.median(each), 3)
        if len(each) > 1:
            ratios["paired_each"] = each


def paired_cell(ratios: dict[str, Any]) -> str:
    """The table's paired ratio: the one pair's, or the median of several with their range."""
    each = ratios.get("paired_each") or []
    if len(each) > 1:
        return f"{_fmt(ratios['paired'])} (median of {len(each)}: {_fmt(min(each))} to {_fmt(max(each))})"
    return _fmt(ratios.get("paired"))


def one_line(s: dict[str, Any]) -> str:
    ok = "OK" if s["correctness"]["ok"] else "FAILED"
    line = f"  {s['name']}: {s['pods_created']} pods, {s['wall_seconds']} s, {s['pod_creation_rate']} pods/s"
    if "latency_create_to_all_pods_s" in s:
        lat = s["latency_create_to_all_pods_s"]
        line += f", create->all pods p50/p99 {lat['p50']}/{lat['p99']} s"
    if s.get("status_bytes_peak"):
        line += f", status peak {s['status_bytes_peak']} B"
    if s.get("pod_watch_events_per_pod"):
        line += f", {s['pod_watch_events_per_pod']:g} watch events a Pod"
    line = f"{line} [{ok}]"
    if s.get("controller_cpu_by_thread"):
        groups = list(s["controller_cpu_by_thread"].items())[:6]
        shares = ", ".join(f"{name} {seconds:g}" for name, seconds in groups)
        line += f"\n    controller CPU s by thread: {shares}"
    return line


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table(results: dict[str, Any]) -> str:
    scenarios = results["scenarios"]
    rows = [
        "| scenario | TaskSets | pods | wall s | pods/s | ratio to raw: paired / unlimited "
        "| create→all pods p50 / p90 / p99 s | last exit→final p50 / p90 / p99 s | CPU s "
        "| CPU s / 1000 pods | peak RSS MiB | API requests | status writes / TaskSet (/ pod) "
        "| reconciles / TaskSet | correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in scenarios.items():
        ok = "yes" if s["correctness"]["ok"] else f"NO ({s['correctness'].get('error_count', '?')} errors)"
        if name in MEMORY_SCENARIOS:
            continue  # a memory figure, below
        if name.startswith("raw"):
            rate_text = f"{_fmt(s['pod_creation_rate'])} (delete {_fmt(s['pod_deletion_rate'])})"
            rows.append(
                f"| {name} | - | {s['pods_created']} | {_fmt(s['wall_seconds'])} | {rate_text} "
                f"| 1 (reference) | - | - | - | - | - | - | - | - | {ok} |"
            )
            continue
        a, b = s["latency_create_to_all_pods_s"], s["latency_last_exit_to_final_s"]
        ctl, sw = s["controller"], s["status_writes"]
        ratios = s.get("throughput_ratio") or {}
        rows.append(
            f"| {name} | {s['tasksets']} | {s['pods_created']} | {_fmt(s['wall_seconds'])} "
            f"| {_fmt(s['pod_creation_rate'])} "
            f"| {paired_cell(ratios)} / {_fmt(ratios.get('raw-unlimited'))} "
            f"| {_fmt(a['p50'])} / {_fmt(a['p90'])} / {_fmt(a['p99'])} "
            f"| {_fmt(b['p50'])} / {_fmt(b['p90'])} / {_fmt(b['p99'])} "
            f"| {_fmt(ctl['cpu_seconds'])} | {_fmt(ctl['cpu_seconds_per_1000_pods'])} "
            f"| {_fmt(ctl['peak_rss_mib'])} | {s['api_requests']['total']} "
            f"| {_fmt(sw['per_taskset'])} ({_fmt(sw['per_replica_lifecycle'])}) "
            f"| {_fmt(s['reconciles']['per_taskset'])} | {ok} |"
        )
    m = results["machine"]
    head = (
        f"Scale `{results['scale']}`, seed {results['seed']}, {m['date']}, {m['cpus']} CPUs, "
        f"load average at start {', '.join(f'{x:.2f}' for x in m['loadavg_at_start'])}; "
        f"whole run {results.get('wall_seconds')} s; controller lifetime peak RSS (VmHWM) "
        f"{results.get('controller', {}).get('peak_rss_mib_lifetime')} MiB."
    )
    tables = memory_line(scenarios) + strangers_line(scenarios) + cpu_table(scenarios)
    tables += window_table(scenarios)
    return head + "\n\n" + "\n".join(rows) + "\n\n" + tables


def correct(record: dict[str, Any]) -> str:
    """A memory scenario's verdict, in words."""
    if record["correctness"]["ok"]:
        return "all correct"
    return "NOT correct: " + "; ".join(record["correctness"]["errors"])


def memory_line(scenarios: dict[str, Any]) -> str:
    cache = scenarios.get("cache")
    if cache is None:
        return ""
    ctl, ok = cache["controller"], correct(cache)
    return (
        f"Memory (`cache`): {cache['pods_running']} Pods Running in {cache['tasksets']} TaskSets, all in the "
        f"controller's caches: RSS {ctl['rss_mib_holding']} MiB (before the scenario "
        f"{ctl['rss_mib_before']} MiB; lifetime peak so far {ctl['peak_rss_mib_lifetime']} MiB); "
        f"{cache['seconds_to_all_running']} s to all Running; {ok}.\n\n"
    )


def strangers_line(scenarios: dict[str, Any]) -> str:
    """The ``strangers`` scenario's line (bench/strangers.py), empty when it did not run."""
    record = scenarios.get("strangers")
    if record is None:
        return ""
    ctl = record["controller"]
    what = (
        f"{record['config_maps']} labelled ConfigMaps of 1 MB and {record['pods']} labelled Pods with "
        "250 KB annotations in another namespace"
    )
    with_, without = ctl["rss_mib_with"], ctl["rss_mib_without"]
    ratio, arrived = ctl["rss_ratio_with_to_without"], ctl["rss_mib_strangers_arrived"]
    figure = f"{with_} MiB after a burst with them against {without} MiB after the same burst before them"
    return (
        f"Memory with strangers (`strangers`): {what}: controller RSS {figure} ({ratio}x; {arrived} MiB "
        f"once they were all there); {correct(record)}.\n\n"
    )


# Work whose CPU the controller cannot change: the scheduler binds each Pod once and kwok plays each Pod's
# life, whatever the controller does between. Their CPU in the same window says how fast the machine ran
# meanwhile, which on this shared machine varies by half from one run to the next (the same tree's
# burst read 6.5 and 10.4 controller CPU s per 1,000 Pods an hour apart, with every other process in step).
FIXED_WORK: Final = ("kube-scheduler", "kwok")


def against_fixed_work(used: dict[str, float]) -> float | None:
    """The controller's CPU over the scheduler's and kwok's in the same window (``FIXED_WORK``): a CPU
    figure of the controller's that a faster or slower moment of the machine does not move."""
    fixed = sum(used.get(name, 0.0) for name in FIXED_WORK)
    controller = used.get("controller")
    return round(controller / fixed, 3) if controller is not None and fixed > 0 else None


def add_cpu(result: dict[str, Any], used: dict[str, Any]) -> None:
    """A scenario's CPU (``bench.threads.cpu_since``) into its result, with ``against_fixed_work``."""
    result |= used  # cpu_seconds_by_process, controller_cpu_by_thread
    result["controller"]["cpu_against_fixed_work"] = against_fixed_work(used["cpu_seconds_by_process"])


def cpu_table(scenarios: dict[str, Any]) -> str:
    """CPU seconds per 1,000 Pods of every process, per scenario: on 2 cores, whichever process is near
    its share of the machine is the bottleneck, and the controller's requests cost CPU in the others."""
    names = sorted({p for s in scenarios.values() for p in s.get("cpu_seconds_by_process", {})})
    if not names:
        return ""
    rows = [
        "CPU seconds per 1,000 Pods, by process (raw: its create phase only), and the controller's CPU over "
        "the scheduler's and kwok's (`bench.report.against_fixed_work`: the figure to compare across runs):",
        "",
        "| scenario | " + " | ".join(names) + " | controller ÷ (scheduler + kwok) |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    for scenario, s in scenarios.items():
        if "cpu_seconds_by_process" not in s:
            continue
        used, pods = s.get("cpu_seconds_by_process", {}), s["pods_created"]
        cells = [_fmt(round(used[n] / pods * 1000, 2)) if n in used and pods else "-" for n in names]
        cells.append(_fmt(against_fixed_work(used)))
        rows.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def window_table(scenarios: dict[str, Any]) -> str:
    """The CPU ms per Pod in each creation window, the machine's and each process's; for burst and large,
    also their paired raw reference's divided by theirs: the rate ratio to expect when both windows keep
    every core busy."""
    windows = {name: s["creation_window"] for name, s in scenarios.items() if s.get("creation_window")}
    if not windows:
        return ""
    names = sorted({n for w in windows.values() for n in w.get("cpu_ms_per_pod_by_process", {})})
    rows = [
        "",
        "Creation windows (first to last Pod created): busy cores, and CPU ms per Pod of the machine "
        "and of each process:",
        "",
        "| scenario | seconds | busy cores | all | " + " | ".join(names) + " | paired raw's all ÷ this |",
        "|---|---|---|---|" + "---|" * len(names) + "---|",
    ]
    for name, w in windows.items():
        reference = windows.get(paired_reference(name), {})
        expected = (
            round(reference["machine_cpu_ms_per_pod"] / w["machine_cpu_ms_per_pod"], 2)
            if reference.get("machine_cpu_ms_per_pod") and w["machine_cpu_ms_per_pod"]
            else None
        )
        by_process = w.get("cpu_ms_per_pod_by_process", {})
        cells = [_fmt(by_process.get(n)) for n in names]
        rows.append(
            f"| {name} | {_fmt(w['seconds'])} | {_fmt(w['machine_busy_cores'])} "
            f"| {_fmt(w['machine_cpu_ms_per_pod'])} | " + " | ".join(cells) + f" | {_fmt(expected)} |"
        )
    return "\n".join(rows) + "\n"


def plot(results: dict[str, Any], path: Path) -> Path | None:
    try:
        import matplotlib  # noqa: PLC0415  (the bench extra; the table and JSON do without it)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no PNG", flush=True)
        return None
    figure, (cdf, throughput) = plt.subplots(1, 2, figsize=(13, 5))
    for name, s in results["scenarios"].items():
        if "series" not in s:
            continue
        series = s["series"]
        for key, style, label in (
            ("latency_create_to_all_pods_s", "-", "create→all pods"),
            ("latency_last_exit_to_final_s", "--", "last exit→final"),
        ):
            values = series.get(key) or []
            if values:
                ys = [(i + 1) / len(values) for i in range(len(values))]
                marker = "o" if len(values) < 3 else None  # large: one TaskSet, one point
                cdf.step(values, ys, style, where="post", marker=marker, label=f"{name}: {label}")
        counts = series["pods_created_per_second"]
        throughput.plot(range(len(counts)), counts, label=name)
    cdf.set_xscale("symlog", linthresh=0.1)
    cdf.set_xlabel("seconds")
    cdf.set_ylabel("fraction of TaskSets")
    cdf.set_title("Per-TaskSet latency CDF")
    cdf.grid(True, alpha=0.3)
    cdf.legend(fontsize=7)
    throughput.set_xlabel("seconds since scenario start")
    throughput.set_ylabel("pods created per second")
    throughput.set_title("Pod creation throughput")
    throughput.grid(True, alpha=0.3)
    throughput.legend(fontsize=8)
    figure.suptitle(f"TaskSet controller benchmark, scale {results['scale']}, seed {results['seed']}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def write(results: dict[str, Any], out: Path, readme: Path | None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"bench-{results['scale']}-seed{results['seed']}"
    json_path = out / f"{stem}.json"
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    written = [json_path]
    png = plot(results, out / f"{stem}.png")
    if png is not None:
        written.append(png)
    if readme is not None:
        update_readme(readme, table(results))
        written.append(readme)
    return written


def update_readme(readme: Path, generated: str) -> None:
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{BEGIN}\n{generated}{END}{tail}")
