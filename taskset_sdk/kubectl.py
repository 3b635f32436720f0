"""``kubectl-taskset``: the kubectl plugin for TaskSets, built on the SDK. kubectl finds it on PATH, so
``kubectl taskset get demo`` runs ``kubectl-taskset get demo``.

    kubectl taskset get NAME [-o json]               the tree: roles -> replicas -> attempts
    kubectl taskset describe NAME                    attempts, last words, conditions, events
    kubectl taskset logs NAME ROLE INDEX [--attempt N] [-c CONTAINER] [-f]
    kubectl taskset wait NAME --for=state=Succeeded [--timeout=5m]
    kubectl taskset owner [NAME] [--controller-namespace NS] [--ring ID]   the replica acting for it

Global flags as kubectl spells them: ``--kubeconfig``, ``--context``, ``-n/--namespace``. Colours on a
terminal, plain when piped or with ``NO_COLOR`` set. Errors go to stderr as ``error: ...``, exit code 1.
What it prints of the objects it read has its control characters escaped (``render.printable``); a
log is the container's own output and is relayed as it is, as ``kubectl logs`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Final, TextIO

from taskset_sdk.client import Client
from taskset_sdk.constants import DEFAULT_CONTROLLER_NAMESPACE, DEFAULT_RING
from taskset_sdk.errors import TaskSetError
from taskset_sdk.render import describe, printable, render_tree, tree, utc_now

__all__ = ["main"]

_DURATION: Final = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$")


def parse_duration(text: str) -> float:
    """kubectl's ``--timeout`` spelling: ``30s``, ``5m``, ``1h30m``, or plain seconds."""
    match = _DURATION.match(text.strip())
    if not text.strip() or match is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 30s, 5m, 1h)")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


def parse_for(text: str) -> tuple[str, str, str]:
    """``state=Succeeded`` or ``condition=Failed`` (status True) or ``condition=Running=False``."""
    kind, _, rest = text.partition("=")
    if kind == "state" and rest:
        return kind, rest, ""
    if kind == "condition" and rest:
        name, _, status = rest.partition("=")
        return kind, name, status or "True"
    raise argparse.ArgumentTypeError(
        f"--for must be state=<State> or condition=<Type>[=<Status>], not {text!r}"
    )


def _connection_flags(parser: argparse.ArgumentParser, default: object) -> argparse.ArgumentParser:
    """kubectl's connection flags; on each verb too (``get x -n ns``), where SUPPRESS keeps a verb
    that was not given one from overwriting what came before the verb."""
    parser.add_argument("--kubeconfig", default=default, help="default: $KUBECONFIG, ~/.kube/config")
    parser.add_argument("--context", default=default, help="the kubeconfig context to use")
    parser.add_argument("-n", "--namespace", default=default, help="default: the context's namespace")
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl taskset", description="TaskSets, from kubectl.")
    _connection_flags(parser, None)
    common = _connection_flags(argparse.ArgumentParser(add_help=False), argparse.SUPPRESS)
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, help_text: str) -> argparse.ArgumentParser:
        return verbs.add_parser(name, help=help_text, parents=[common])

    get = verb("get", "a TaskSet as a tree of roles, replicas and attempts")
    get.add_argument("name", nargs="?", help="the TaskSet (default: every TaskSet of the namespace)")
    get.add_argument("-o", "--output", choices=("tree", "json"), default="tree")

    desc = verb("describe", "a TaskSet's attempts, messages, conditions and events")
    desc.add_argument("name")

    logs = verb("logs", "the log of a replica (its current attempt by default)")
    logs.add_argument("name")
    logs.add_argument("role")
    logs.add_argument("index", type=int)
    logs.add_argument("--attempt", type=int, help="the replica attempt (only the current one has a Pod)")
    logs.add_argument("-c", "--container", help="default: the replica's main container")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.add_argument("--tail", type=int, default=None, help="only the last N lines")

    wait = verb("wait", "wait for a state or a condition")
    wait.add_argument("name")
    wait.add_argument("--for", dest="until", type=parse_for, default=("state", "Succeeded", ""))
    wait.add_argument("--timeout", type=parse_duration, default=300.0)

    owner = verb("owner", "which replica of a sharded controller acts for the namespace's TaskSets")
    owner.add_argument("name", nargs="?", help="a TaskSet, checked to exist (its namespace decides)")
    owner.add_argument("--controller-namespace", default=DEFAULT_CONTROLLER_NAMESPACE)
    owner.add_argument("--ring", default=DEFAULT_RING, help="the controller's --leader-elect-id")
    return parser


def _colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def _get(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    views = [client.get(args.name)] if args.name else client.list()
    trees = [tree(view, client.pods(view.name)) for view in views]
    if args.output == "json":
        out.write(json.dumps(trees[0] if args.name else trees, indent=2) + "\n")
        return
    if not trees:
        out.write(printable(f"No TaskSets in namespace {client.namespace}.") + "\n")
    now = utc_now()
    out.write("\n".join(render_tree(data, now, _colour(out)) for data in trees))


def _describe(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    view = client.get(args.name)
    out.write(describe(view, client.pods(args.name), client.events(args.name), utc_now()))


def _logs(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    lines = client.logs(
        args.name,
        args.role,
        args.index,
        follow=args.follow,
        tail_lines=args.tail,
        attempt=args.attempt,
        container=args.container,
    )
    for line in lines:
        out.write(line + "\n")
        out.flush()


def _wait(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    kind, value, status = args.until
    if kind == "state":
        view = client.wait(args.name, state=value, timeout=args.timeout)
        out.write(printable(f"taskset/{view.name} {view.state}") + "\n")
    else:
        view = client.wait(args.name, condition=value, condition_status=status, timeout=args.timeout)
        out.write(printable(f"taskset/{view.name} condition {value}={status}") + "\n")


def _owner(client: Client, args: argparse.Namespace, out: TextIO) -> None:
    if args.name:
        client.get(args.name)  # a TaskSet that does not exist has no owner to show
    found = client.owner(controller_namespace=args.controller_namespace, ring=args.ring)
    who = found.holder or "nobody (the Lease names no holder, or the controller is not sharded)"
    subject = f"taskset/{args.name}" if args.name else f"namespace {found.namespace}"
    renewed = f", renewed {found.renewed}" if found.renewed else ""
    out.write(printable(f"{subject}: bucket {found.bucket} (Lease {found.lease}): {who}{renewed}") + "\n")


_VERBS: Final = {"get": _get, "describe": _describe, "logs": _logs, "wait": _wait, "owner": _owner}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    try:
        client = Client(kubeconfig=args.kubeconfig, context=args.context, namespace=args.namespace)
        _VERBS[args.verb](client, args, out)
    except (TaskSetError, RuntimeError, ValueError) as err:
        print(f"error: {printable(str(err))}", file=sys.stderr)  # it may quote a status or a Pod
        return 1
    except KeyboardInterrupt:  # Ctrl-C on logs -f or wait: no traceback
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
