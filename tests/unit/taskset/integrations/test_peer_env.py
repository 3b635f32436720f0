"""Peer lists in the environment: the exact variables, the role-name mapping, ranks
in declared role order, the bound on the hosts lists, and the user's own variables winning."""

from __future__ import annotations

import itertools
import string

import pytest

from taskset.api.names import is_dns1123_label
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.base import Attempt
from taskset.integrations.peer_env import HOSTS_MAX, PeerEnv, layout_env, rank_of, role_variable
from taskset.objects.pods import PodIdentity
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit


def attempt_of(builder: TaskSetBuilder) -> Attempt:
    ts = parse_taskset(builder.namespace("ml").uid("u").obj(), Framework(BUILT_IN).spec_checks())
    assert isinstance(ts, ParsedTaskSet), ts
    return Attempt(ts.name, ts.namespace, ts.uid, 0, ts.spec)


def env_of(attempt: Attempt, role: str, index: int) -> dict[str, str]:
    spec_role = attempt.spec.role(role)
    assert spec_role is not None
    who = PodIdentity(
        attempt.taskset,
        "ml",
        "u",
        role,
        index,
        f"{attempt.taskset}-{role}-{index}",
        "c",
        "cu",
        0,
        0,
        "0" * 64,
    )
    return dict(PeerEnv().decorate_pod(attempt, spec_role, who).env)


def test_a_ps_worker_taskset_gives_every_replica_the_layout_and_its_rank() -> None:
    attempt = attempt_of(TaskSetBuilder("tf").role("ps", 1).role("param-server", 2).role("worker", 2))
    assert env_of(attempt, "worker", 1) == {
        "TASKSET_RANK": "4",
        "TASKSET_ROLES": "ps,param-server,worker",
        "TASKSET_WORLD_SIZE": "5",
        "TASKROLE_PS_COUNT": "1",
        "TASKROLE_PARAM_SERVER_COUNT": "2",
        "TASKROLE_WORKER_COUNT": "2",
        "TASKROLE_PS_HOSTS": "tf-ps-0.tf.ml.svc",
        "TASKROLE_PARAM_SERVER_HOSTS": "tf-param-server-0.tf.ml.svc,tf-param-server-1.tf.ml.svc",
        "TASKROLE_WORKER_HOSTS": "tf-worker-0.tf.ml.svc,tf-worker-1.tf.ml.svc",
    }
    assert [env_of(attempt, role, i)["TASKSET_RANK"] for role, i in [("ps", 0), ("param-server", 1)]] == [
        "0",
        "2",
    ]


def test_the_hosts_follow_the_chosen_service_and_go_when_names_are_off() -> None:
    named = attempt_of(TaskSetBuilder("tf").role("w", 2).spec_field("network", {"subdomain": "peers"}))
    assert env_of(named, "w", 0)["TASKROLE_W_HOSTS"] == "tf-w-0.peers.ml.svc,tf-w-1.peers.ml.svc"
    off = attempt_of(TaskSetBuilder("tf").role("w", 2).spec_field("network", {"enableDNSHostnames": False}))
    assert env_of(off, "w", 1) == {
        "TASKSET_RANK": "1",
        "TASKSET_ROLES": "w",
        "TASKSET_WORLD_SIZE": "2",
        "TASKROLE_W_COUNT": "2",
    }


def test_hosts_lists_beyond_the_bound_are_left_out_the_counts_stay() -> None:
    many = HOSTS_MAX // len("t-w-0.t.ml.svc,") + 1
    env = dict(layout_env("t", "ml", "t", (("w", many),)))
    assert "TASKROLE_W_HOSTS" not in env and env["TASKROLE_W_COUNT"] == str(many)
    fits = dict(layout_env("t", "ml", "t", (("w", 100),)))
    assert fits["TASKROLE_W_HOSTS"].count(",") == 99


@pytest.mark.parametrize(
    ("role", "variable"),
    [
        pytest.param("ps", "PS", id="lower case"),
        pytest.param("param-server", "PARAM_SERVER", id="a dash"),
        pytest.param("0-a", "0_A", id="a leading digit: still a name after TASKROLE_"),
        pytest.param("a--b", "A__B", id="two dashes"),
    ],
)
def test_the_role_name_mapping(role: str, variable: str) -> None:
    assert role_variable(role) == variable


def test_no_two_legal_role_names_map_to_the_same_variable() -> None:
    """Why no admission check is needed: over every legal role name of up to three characters, the
    mapping is one to one (a role name has no upper case and no '_')."""
    alphabet = string.ascii_lowercase[:4] + "09-_A"
    names = [
        "".join(chars)
        for size in (1, 2, 3)
        for chars in itertools.product(alphabet, repeat=size)
        if is_dns1123_label("".join(chars))
    ]
    assert len({role_variable(name) for name in names}) == len(names)


@pytest.mark.parametrize(
    ("role", "index", "rank"),
    [("a", 0, 0), ("a", 2, 2), ("b", 0, 3), ("c", 4, 8)],
)
def test_ranks_count_role_by_role_in_declared_order(role: str, index: int, rank: int) -> None:
    assert rank_of((("a", 3), ("b", 1), ("c", 5)), role, index) == rank


def test_a_variable_the_user_sets_wins_over_the_injected_one() -> None:
    template = pod_template()
    template["spec"]["containers"][0]["env"] = [{"name": "TASKSET_RANK", "value": "mine"}]
    world = World(TaskSetBuilder("tf").role("w", 2, template=template).obj())
    world.settle()
    env = world.pods["tf-w-1"]["spec"]["containers"][0]["env"]
    ranks = [var["value"] for var in env if var["name"] == "TASKSET_RANK"]
    assert ranks == ["1", "mine"]  # the kubelet keeps the last of duplicate names: the user's
