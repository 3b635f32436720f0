"""``python -m devcluster build|up|down|env|run`` — the embedded control plane from the shell.

``up`` starts a detached supervisor (``run``) and returns once the cluster is ready; ``down`` stops it;
``env`` prints the exports a shell needs (KUBECONFIG, PATH with the built kubectl).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from devcluster import build
from devcluster.cluster import Cluster, Settings

DEFAULT_DIR = Path(os.environ.get("TASKSET_DEVCLUSTER_DIR", "/tmp/taskset-devcluster"))
UP_TIMEOUT = 180.0  # seconds; includes a warm start of every component


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
    settings = Settings(nodes=args.nodes, directory=args.dir, etcd_compaction_interval=args.compaction)
    (args.dir / "state.json").unlink(missing_ok=True)
    with Cluster(settings) as cluster:
        (args.dir / "supervisor.pid").write_text(str(os.getpid()))
        print(f"devcluster ready: {cluster.server}  KUBECONFIG={cluster.kubeconfig}", flush=True)
        stop.wait()
    (args.dir / "state.json").unlink(missing_ok=True)
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    args.dir.mkdir(parents=True, exist_ok=True)
    pid_file = args.dir / "supervisor.pid"
    if pid_file.exists() and _alive(int(pid_file.read_text())) and _state(args.dir):
        print(f"already running; export KUBECONFIG={args.dir / 'admin.kubeconfig'}")
        return 0
    build.build_all()  # in the foreground, so a cold build's progress is visible
    log = (args.dir / "supervisor.log").open("ab")
    argv = [sys.executable, "-m", "devcluster", "run", f"--dir={args.dir}", f"--nodes={args.nodes}"]
    argv.append(f"--compaction={args.compaction}")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + UP_TIMEOUT
    while time.monotonic() < deadline:
        if _state(args.dir):
            print(f"devcluster up; export KUBECONFIG={args.dir / 'admin.kubeconfig'}")
            return 0
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    print(f"devcluster failed to start; see {args.dir / 'supervisor.log'}", file=sys.stderr)
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
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    for name, path in build.build_all(build.PARTS[args.part]).items():
        print(f"{name}\t{path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func in (
        ("build", cmd_build),
        ("up", cmd_up),
        ("down", cmd_down),
        ("env", cmd_env),
        ("run", cmd_run),
    ):
        p = sub.add_parser(name)
        p.set_defaults(func=func)
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory (default %(default)s)")
        p.add_argument("--nodes", type=int, default=4, help="simulated nodes (default %(default)s)")
        p.add_argument("--compaction", default="5m", help="etcd compaction interval (default %(default)s)")
    sub.choices["build"].add_argument(
        "--part", choices=tuple(build.PARTS), default="all", help="what to build"
    )
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
