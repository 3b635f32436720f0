"""``python -m devcluster build|up|down|env|resolve|run|lose-node|restore-node`` — the embedded control
plane from the shell.

``up`` starts a detached supervisor (``run``) and returns once the cluster and the add-ons it was asked
for (``--with kueue,coredns,coscheduling``) are ready, printing where each one answers; ``--pool`` adds
simulated nodes with labels, taints or a small CPU (``devcluster.nodes``). ``down`` stops all of it;
``env`` prints the exports a shell needs (KUBECONFIG, PATH with the built kubectl, CoreDNS's address);
``resolve`` asks the cluster's CoreDNS for a name, as a Pod would. ``up --node-health[=SECONDS]``
gives the nodes heartbeats and runs the node lifecycle and taint-eviction controllers with that grace
(default Kubernetes' 50 s); then ``lose-node NAME`` stops a node's heartbeats as a dead kubelet would,
and ``restore-node NAME`` brings it back (``devcluster.node_health``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from devcluster import build, coredns, coscheduling, kueue, node_health, nodes
from devcluster.addon import READY_TIMEOUT
from devcluster.cluster import Cluster, Settings
from devcluster.node_health import NodeHealth

DEFAULT_DIR = Path(os.environ.get("TASKSET_DEVCLUSTER_DIR", "/tmp/taskset-devcluster"))
NOT_RUNNING = "devcluster is not running; start it with: python -m devcluster up"
UP_TIMEOUT = 180.0  # seconds; includes a warm start of every component
# The add-ons ``--with`` starts, in this order, and what each is built from.
ADDONS: dict[str, build.Component] = {
    "coredns": build.COREDNS,
    "kueue": build.KUEUE,
    "coscheduling": build.SCHEDULER_PLUGINS,
}


def parse_addons(text: str) -> tuple[str, ...]:
    """``--with``'s comma-separated add-on names, known and each once, in start-up order."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in ADDONS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown add-on {', '.join(map(repr, unknown))}; choose from {', '.join(ADDONS)}"
        )
    return tuple(name for name in ADDONS if name in names)


def parse_pool(text: str) -> nodes.NodePool:
    try:
        return nodes.parse_pool(text)
    except nodes.PoolError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _start_addon(name: str, cluster: Cluster, stack: ExitStack) -> dict[str, object]:
    """Start one add-on beside ``cluster``, to be stopped with ``stack``; what the user needs to know."""
    if name == "coredns":
        dns = coredns.CoreDNS(cluster).start()
        stack.callback(dns.stop)
        return {"address": f"127.0.0.1:{dns.port}", "port": dns.port, "zone": coredns.CLUSTER_DOMAIN}
    if name == "kueue":
        queue = kueue.Kueue(cluster).start()
        stack.callback(queue.stop)
        return {"readyz": f"http://127.0.0.1:{queue.port}/readyz", "framework": kueue.EXTERNAL_FRAMEWORK}
    scheduler = coscheduling.Coscheduler(cluster).start()
    stack.callback(scheduler.stop)
    return {"schedulerName": coscheduling.SCHEDULER_NAME, "podGroupLabel": coscheduling.POD_GROUP_LABEL}


def summary(state: dict[str, object], directory: Path) -> list[str]:
    """What ``up`` tells the user: how to reach the cluster, each add-on and each node pool."""
    lines = [f"devcluster up; export KUBECONFIG={directory / 'admin.kubeconfig'}"]
    addons = state.get("addons")
    for name, info in (addons if isinstance(addons, dict) else {}).items():
        if name == "coredns":
            lines.append(
                f"  coredns: {info['address']} (UDP), zone {info['zone']}: a replica is "
                f"<taskset>-<role>-<index>.<subdomain>.<namespace>.svc.{info['zone']}; "
                "ask it with: python -m devcluster resolve NAME"
            )
        elif name == "kueue":
            lines.append(
                f"  kueue: ready ({info['readyz']}), TaskSets known as {info['framework']}; "
                "run the controller with --kueue"
            )
        elif name == "coscheduling":
            lines.append(
                f"  coscheduling: ready; Pods set schedulerName: {info['schedulerName']}; "
                "run the controller with --gang-scheduling=coscheduling"
            )
    pools = state.get("pools")
    for pool in pools if isinstance(pools, list) else []:
        lines.append(f"  nodes: {pool}")
    return lines


def _state(directory: Path) -> dict[str, object] | None:
    try:
        state: dict[str, object] = json.loads((directory / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def cmd_run(args: argparse.Namespace) -> int:
    """Foreground: start, write state, wait for SIGTERM/SIGINT, stop."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    settings = Settings(
        nodes=args.nodes,
        directory=args.dir,
        etcd_compaction_interval=args.compaction,
        pools=tuple(args.pool),
        extra_apiserver_args=(f"--feature-gates={args.feature_gates}",) if args.feature_gates else (),
        node_health=_health(args.node_health),
    )
    (args.dir / "state.json").unlink(missing_ok=True)
    with Cluster(settings) as cluster, ExitStack() as addons:
        (args.dir / "supervisor.pid").write_text(str(os.getpid()))
        # The cluster's own state file says the control plane is up; ``up`` waits for "ready", written
        # once every add-on answers too, so that it never reports an add-on that is still starting.
        state = json.loads((args.dir / "state.json").read_text())
        state["addons"] = {name: _start_addon(name, cluster, addons) for name in args.with_}
        state["pools"] = [pool.describe() for pool in args.pool]
        state["ready"] = True
        (args.dir / "state.json").write_text(json.dumps(state, indent=2))
        print(f"devcluster ready: {cluster.server}  KUBECONFIG={cluster.kubeconfig}", flush=True)
        stop.wait()
    (args.dir / "state.json").unlink(missing_ok=True)
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    args.dir.mkdir(parents=True, exist_ok=True)
    pid_file = args.dir / "supervisor.pid"
    if pid_file.exists() and _alive(int(pid_file.read_text())) and (state := _state(args.dir)):
        # A running cluster is not restarted with other add-ons or nodes behind the user's back.
        print("already running (python -m devcluster down first to change its add-ons or nodes)")
        print("\n".join(summary(state, args.dir)))
        return 0
    # In the foreground, so a cold build's progress is visible.
    build.build_all(build.COMPONENTS + tuple(ADDONS[name] for name in args.with_))
    log_path = args.dir / "supervisor.log"
    start_at = log_path.stat().st_size if log_path.exists() else 0
    argv = [sys.executable, "-m", "devcluster", "run", f"--dir={args.dir}", f"--nodes={args.nodes}"]
    argv.append(f"--compaction={args.compaction}")
    if args.with_:
        argv.append(f"--with={','.join(args.with_)}")
    argv += [f"--pool={pool.spec()}" for pool in args.pool]
    if args.feature_gates:
        argv.append(f"--feature-gates={args.feature_gates}")
    if args.node_health is not None:
        argv.append(f"--node-health={args.node_health}")
    with log_path.open("ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + UP_TIMEOUT + READY_TIMEOUT * len(args.with_)
    while time.monotonic() < deadline:
        state = _state(args.dir)
        if state and state.get("ready"):
            print("\n".join(summary(state, args.dir)))
            return 0
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    if proc.poll() is None:  # timed out: stop what started rather than leave it half up
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    tail = log_path.read_bytes()[start_at:].decode(errors="replace").splitlines()[-30:]
    print("\n".join(tail), file=sys.stderr)
    print(f"devcluster failed to start; see {log_path}", file=sys.stderr)
    return 1


def cmd_down(args: argparse.Namespace) -> int:
    pid_file = args.dir / "supervisor.pid"
    if not pid_file.exists():
        print("devcluster is not running")
        return 0
    pid = int(pid_file.read_text())
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    pid_file.unlink(missing_ok=True)
    print("devcluster down")
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    if not _state(args.dir):
        print("devcluster is not running; start it with: python -m devcluster up", file=sys.stderr)
        return 1
    kubectl_dir = build.component_dir(build.KUBERNETES)
    print(f"export KUBECONFIG={args.dir / 'admin.kubeconfig'}")
    print(f'export PATH="{kubectl_dir}:$PATH"')
    dns = _dns(args.dir)
    if dns is not None:
        print(f"export DEVCLUSTER_DNS=127.0.0.1:{dns}")
    return 0


def _dns(directory: Path) -> int | None:
    """CoreDNS's port, if the running cluster was started with it."""
    state = _state(directory) or {}
    addons = state.get("addons")
    info = addons.get("coredns") if isinstance(addons, dict) else None
    return int(info["port"]) if isinstance(info, dict) else None


def cmd_resolve(args: argparse.Namespace) -> int:
    port = _dns(args.dir)
    if port is None:
        print("no CoreDNS: start the cluster with: python -m devcluster up --with coredns", file=sys.stderr)
        return 1
    addresses = coredns.resolve(args.name, port, timeout=2.0)
    if not addresses:
        print(f"{args.name}: no A record", file=sys.stderr)
        return 1
    print("\n".join(addresses))
    return 0


class _Admin:
    """Admin calls to the running cluster's API server, with the certificates ``up`` wrote."""

    def __init__(self, directory: Path, server: str) -> None:
        pki = directory / "pki"
        self._server = server
        self._context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self._context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def request(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self._server + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, context=self._context, timeout=30) as response:
            return json.loads(response.read() or b"null")


def _node_command(args: argparse.Namespace, lose: bool) -> int:
    state = _state(args.dir)
    if not state:
        print(NOT_RUNNING + " --node-health", file=sys.stderr)
        return 1
    api = _Admin(args.dir, str(state["server"]))
    try:
        if lose:
            node_health.lose_node(api, args.node)
        else:
            node_health.restore_node(api, args.node)
    except node_health.NodeHealthOffError as error:
        print(str(error), file=sys.stderr)
        return 1
    except urllib.error.HTTPError as error:
        print(f"node {args.node}: HTTP {error.code} {error.reason}", file=sys.stderr)
        return 1
    if lose:
        print(f"node {args.node} lost: its heartbeats stopped; it turns Ready=Unknown after the grace period")
    else:
        print(f"node {args.node} restored: its heartbeats go on and its terminating Pods are confirmed")
    return 0


def cmd_lose_node(args: argparse.Namespace) -> int:
    return _node_command(args, lose=True)


def cmd_restore_node(args: argparse.Namespace) -> int:
    return _node_command(args, lose=False)


def _health(seconds: int | None) -> NodeHealth | None:
    return None if seconds is None else NodeHealth(grace_seconds=seconds, lease_seconds=min(40, seconds))


def cmd_build(args: argparse.Namespace) -> int:
    for name, path in build.build_all(build.PARTS[args.part]).items():
        print(f"{name}\t{path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = parser_()
    args = parser.parse_args(argv)
    try:
        nodes.check_pools(tuple(getattr(args, "pool", ())))
    except nodes.PoolError as error:
        parser.error(str(error))
    code: int = args.func(args)
    return code


def _node_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number of seconds")
    return int(text)


def parser_() -> argparse.ArgumentParser:
    """The command line; ``up`` and ``run`` take the add-ons and node pools."""
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands: tuple[tuple[str, Callable[[argparse.Namespace], int]], ...] = (
        ("build", cmd_build),
        ("up", cmd_up),
        ("down", cmd_down),
        ("env", cmd_env),
        ("resolve", cmd_resolve),
        ("run", cmd_run),
        ("lose-node", cmd_lose_node),
        ("restore-node", cmd_restore_node),
    )
    for name, func in commands:
        p = sub.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
        p.add_argument(
            "--nodes", type=_node_count, default=4, help="plain simulated nodes (default %(default)s)"
        )
        p.add_argument("--compaction", default="5m", help="etcd compaction interval (default %(default)s)")
    for name in ("up", "run"):
        p = sub.choices[name]
        p.description = nodes.__doc__
        p.add_argument(
            "--with",
            dest="with_",
            type=parse_addons,
            default=(),
            metavar="ADDONS",
            help=f"add-ons to start beside the control plane, comma-separated: {', '.join(ADDONS)}",
        )
        p.add_argument(
            "--pool",
            action="append",
            type=parse_pool,
            default=[],
            metavar="SPEC",
            help=f"simulated nodes of one shape, repeatable; for example {nodes.EXAMPLE}",
        )
        p.add_argument(
            "--feature-gates",
            default="",
            metavar="GATES",
            help="kube-apiserver feature gates, e.g. ShardedListAndWatch=true (sharded list and watch)",
        )
        p.add_argument(
            "--node-health",
            nargs="?",
            const=node_health.NodeHealth().grace_seconds,
            type=_positive,
            default=None,
            metavar="SECONDS",
            help="node heartbeats and the node lifecycle and taint-eviction controllers, with this grace "
            "before a silent node is Unknown (default %(const)s s); makes lose-node possible",
        )
    for name in ("lose-node", "restore-node"):
        sub.choices[name].add_argument("node", help="a simulated node's name, e.g. kwok-node-0")
    sub.choices["build"].add_argument(
        "--part", choices=tuple(build.PARTS), default="all", help="what to build"
    )
    sub.choices["resolve"].add_argument("name", help="a DNS name, e.g. kubernetes.default.svc.cluster.local")
    return parser


if __name__ == "__main__":
    sys.exit(main())
