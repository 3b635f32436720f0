"""``python -m devcluster up``'s command line: the add-ons ``--with`` names and the node pools ``--pool``
writes, read into what the cluster starts, and every wrong form refused with a message naming it."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devcluster import nodes
from devcluster.__main__ import main, parse_addons, parser_, summary
from devcluster.nodes import NodePool, PoolError, parse_pool


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("kueue", ("kueue",), id="one"),
        pytest.param(
            "coscheduling,kueue,coredns", ("coredns", "kueue", "coscheduling"), id="all, in start order"
        ),
        pytest.param(" kueue , kueue,", ("kueue",), id="spaces, repeats and a trailing comma"),
        pytest.param("", (), id="none"),
    ],
)
def test_with_names_the_add_ons_in_start_order(text: str, expected: tuple[str, ...]) -> None:
    assert parse_addons(text) == expected


def test_an_unknown_add_on_is_refused_naming_it_and_the_choices() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"'volcano'.*coredns, kueue, coscheduling"):
        parse_addons("kueue,volcano")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("name=plain", NodePool("plain"), id="a name alone: one node"),
        pytest.param(
            "name=gpu,count=2,label=pool=gpu,taint=gpu:NoSchedule",
            NodePool("gpu", 2, (("pool", "gpu"),), (("gpu", "", "NoSchedule"),)),
            id="the manual's gpu pool",
        ),
        pytest.param(
            "count=3,name=small,cpu=1,label=a=1,label=example.com/b=,taint=k=v:NoExecute,taint=x:PreferNoSchedule",
            NodePool(
                "small",
                3,
                (("a", "1"), ("example.com/b", "")),
                (("k", "v", "NoExecute"), ("x", "", "PreferNoSchedule")),
                "1",
            ),
            id="any order, repeated labels and taints, a small CPU",
        ),
        pytest.param("name=m,cpu=500m", NodePool("m", cpu="500m"), id="millicores"),
    ],
)
def test_a_pool_is_read_from_its_fields(text: str, expected: NodePool) -> None:
    assert parse_pool(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("count=2", "has no name=", id="no name"),
        pytest.param("name=GPU", "must be a DNS label", id="upper-case name"),
        pytest.param("name=kwok-node", "plain nodes' prefix", id="the plain nodes' name"),
        pytest.param("name=a,count=0", "from 1 to 100", id="no node"),
        pytest.param("name=a,count=x", "from 1 to 100", id="count not a number"),
        pytest.param("name=a,count=101", "from 1 to 100", id="too many"),
        pytest.param("name=a,name=b", "given twice", id="two names"),
        pytest.param(
            "name=a,colour=red", "expected one of name=, count=, label=, taint=, cpu=", id="unknown"
        ),
        pytest.param("name=a,gpu", "expected one of", id="a bare word"),
        pytest.param("name=a,label=pool", "KEY=VALUE", id="a label without value"),
        pytest.param("name=a,label=bad key=1", "not a valid Kubernetes key", id="a bad label key"),
        pytest.param("name=a,label=k=" + "v" * 64, "not a valid Kubernetes label value", id="a long value"),
        pytest.param("name=a,taint=gpu", "KEY[=VALUE]:EFFECT", id="a taint without effect"),
        pytest.param("name=a,taint=gpu:Sometimes", "EFFECT one of", id="an unknown effect"),
        pytest.param("name=a,taint==v:NoSchedule", "not a valid Kubernetes key", id="a taint without key"),
        pytest.param("name=a,cpu=0", "positive quantity", id="no CPU"),
        pytest.param("name=a,cpu=two", "positive quantity", id="CPU not a quantity"),
    ],
)
def test_a_wrong_pool_is_refused_naming_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PoolError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_pool(text)


_names = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True).filter(lambda n: n != nodes.PLAIN_PREFIX)
_words = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?", fullmatch=True)
_pools = st.builds(
    NodePool,
    name=_names,
    count=st.integers(1, nodes.MAX_COUNT),
    labels=st.lists(st.tuples(_words, _words | st.just("")), max_size=3).map(tuple),
    taints=st.lists(
        st.tuples(_words, _words | st.just(""), st.sampled_from(nodes.TAINT_EFFECTS)), max_size=3
    ).map(tuple),
    cpu=st.none() | st.integers(1, 64).map(str),
)


@given(_pools)
def test_a_pool_written_by_spec_reads_back_the_same(pool: NodePool) -> None:
    """``up`` hands its pools to the supervisor in their written form: nothing may be lost on the way."""
    assert parse_pool(pool.spec()) == pool


def test_a_pools_nodes_and_taints_are_those_it_names() -> None:
    pool = parse_pool("name=gpu,count=2,label=pool=gpu,taint=gpu:NoSchedule,taint=zone=a:NoExecute")
    assert pool.node_names() == ["gpu-0", "gpu-1"]
    assert pool.taint_objects() == (
        {"key": "gpu", "effect": "NoSchedule"},
        {"key": "zone", "value": "a", "effect": "NoExecute"},
    )
    assert pool.describe() == "2 nodes gpu-0..1, label pool=gpu, taint gpu:NoSchedule, taint zone=a:NoExecute"


def test_up_reads_add_ons_and_repeated_pools() -> None:
    args = parser_().parse_args(
        [
            "up",
            "--with",
            "coscheduling,coredns",
            "--pool",
            "name=gpu,count=2",
            "--pool",
            "name=cpu",
            "--nodes",
            "0",
        ]
    )
    assert args.with_ == ("coredns", "coscheduling")
    assert [p.name for p in args.pool] == ["gpu", "cpu"]
    assert args.nodes == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["up", "--with", "dns"], "unknown add-on 'dns'", id="unknown add-on"),
        pytest.param(["up", "--pool", "count=2"], "has no name=", id="a pool without name"),
        pytest.param(["up", "--pool", "name=a", "--pool", "name=a"], "more than once: a", id="a name twice"),
        pytest.param(["up", "--nodes", "-1"], "not a whole number", id="negative nodes"),
    ],
)
def test_a_wrong_command_line_exits_with_usage_naming_the_problem(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_summary_says_where_each_add_on_answers_and_what_to_set() -> None:
    state: dict[str, object] = {
        "addons": {
            "coredns": {"address": "127.0.0.1:5353", "port": 5353, "zone": "cluster.local"},
            "kueue": {"readyz": "http://127.0.0.1:9443/readyz", "framework": "TaskSet.v1alpha1.x"},
            "coscheduling": {"schedulerName": "coscheduling", "podGroupLabel": "p"},
        },
        "pools": ["2 nodes gpu-0..1, label pool=gpu"],
    }
    text = "\n".join(summary(state, Path("/d")))
    assert "export KUBECONFIG=/d/admin.kubeconfig" in text
    assert "coredns: 127.0.0.1:5353 (UDP), zone cluster.local" in text
    assert "kueue: ready (http://127.0.0.1:9443/readyz)" in text and "--kueue" in text
    assert "schedulerName: coscheduling" in text and "--gang-scheduling=coscheduling" in text
    assert "nodes: 2 nodes gpu-0..1, label pool=gpu" in text


ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))


def documented_commands() -> list[tuple[str, list[str]]]:
    """Every ``python -m devcluster ...`` command in the README and the docs' shell blocks (continued
    lines joined), as its arguments."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                if "python -m devcluster" not in line:
                    continue
                words = shlex.split(line.split("#")[0].strip().strip('"').removeprefix('eval "$('))
                words = [w.rstrip(')"') for w in words]
                if words[:3] == ["python", "-m", "devcluster"]:
                    found.append((f"{doc.name}: {line.strip()}", words[3:]))
    return found


COMMANDS = documented_commands()


def test_the_docs_show_up_with_add_ons_and_pools() -> None:
    assert any("--with" in argv and "--pool" in argv for _, argv in COMMANDS)


@pytest.mark.parametrize("argv", [c[1] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_a_documented_devcluster_command_is_accepted(argv: list[str]) -> None:
    """The commands the README and the manual show parse as written (``up --with ... --pool ...`` is
    also run from the shell by the integration tests)."""
    args = parser_().parse_args(argv)
    nodes.check_pools(tuple(getattr(args, "pool", ())))


def test_up_passes_feature_gates_to_kube_apiserver() -> None:
    args = parser_().parse_args(["up", "--feature-gates", "ShardedListAndWatch=true"])
    assert args.feature_gates == "ShardedListAndWatch=true"
    assert parser_().parse_args(["up"]).feature_gates == ""
