"""The status budget: the wire shape that keeps any supported TaskSet's status under a fixed size.

etcd refuses a request over 1.5 MiB, and the status travels in the same object as the spec. Today's
shape spends about 0.5 to 2.5 KB on each replica, so past a couple of thousand replicas a status could
never be written again, and the TaskSet wedged. This module decides the shape the status is written in:

* **Full** (today's shape, spec 2.5), whenever it fits in ``STATUS_BUDGET``: every small TaskSet, and a
  large one as long as its replicas say little. Measured as the API server stores it (``wire_bytes``).
* **Compact** otherwise. Each role keeps its own fields and counts, and under ``replicaRows``:

  - ``rows``: one short string per replica, in index order: ``"<phase><flags> <retries> <transition>
    <podUID> <text>"``. The phase is one letter (``PHASE_CODES``), the flags ``s`` (stopped), ``p``
    (the Pod name is recorded: ``podNamePrefix`` + index) and ``h`` (its Pod goes because of a
    suspension, so its end counts nothing), the transition time in Unix seconds, ``-`` for none, and
    ``text`` the index of an entry in ``texts``;
  - ``texts``: the distinct combinations of the replicas' texts (phaseMessage, podReason, node IP,
    container name, exit code, signal and reason), each stored once: ten thousand running replicas share
    a handful;
  - ``replicaStatus``: the full record of each replica that is not fine (``not_fine``: failed, retried,
    its Pod named a reason or it waits for one), in index order, as long as ``DETAILS_BUDGET`` lasts.

  A row keeps everything the machines decide on (``DECISION_FIELDS``), so a controller that restarts
  from a compact status takes the same decisions. What a row does not keep (Pod IP, container ID, start
  and finish times, the exit message) is either read again from the live Pod on the next pass, or, once
  the Pod is gone, only of interest to a reader, who finds it in the detailed records of the replicas that
  are not fine. When the texts of a status exceed ``TEXTS_BUDGET`` (thousands of distinct messages),
  the later ones read ``...`` (keeping whether and how the container ended): the events said them.

``expand`` turns either shape back into the full one, which ``TaskSetStatus.from_json`` parses. The sizes
below are proved by ``worst_case_bytes``, which ``tests/unit/taskset/api/test_status_budget.py`` checks
against serializing a status at the limits with every text at its maximum.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

import orjson

from taskset.api.constants import (
    MAX_ROLES,
    MAX_TOTAL_REPLICAS,
    MAX_UNCOUNTED_RETRIES,
    WAIT_PREFIXES,
    ConditionType,
    ReplicaPhase,
)
from taskset.api.readers import as_items, as_text

Json = dict[str, Any]

# ----- the budget, in bytes of JSON as the API server stores it --------------------------------------------
ETCD_REQUEST_LIMIT: Final = 1_572_864  # etcd's default --max-request-bytes: the whole object must fit
# The status's share: the rest (512 KiB) is for the spec, the metadata and the API server's own fields.
STATUS_BUDGET: Final = 1_048_576
# Shares of the compact shape (see worst_case_bytes for how they add up under STATUS_BUDGET).
# Failure rules took 3 bytes of each row (a failure action flag, up to two digits of uncounted retries): the
# full records' share went from 40 KiB to 16 KiB and the texts' to 32 KiB to pay for them; the nodes every
# Pod of a retried TaskSet avoids (``status.nextAttempt``, 2.4 KB at most) took it to 13 KiB.
TEXTS_BUDGET: Final = 32_768  # distinct replica texts of all roles together
DETAILS_BUDGET: Final = 13_312  # full records of the replicas that are not fine
# A role's own messages in the compact shape: what the role did, not the replicas' texts.
ROLE_MESSAGE_BYTES: Final = 512
# Outside texts may be made of characters the API server writes as 6 bytes (``\u003c`` for ``<``, a
# control character as ``\u0001``): the worst case of one character of a string.
WORST_BYTES_PER_CHARACTER: Final = 6

# A replica's full record takes at least this much, every field empty (its keys alone take 296).
FULL_RECORD_MIN_BYTES: Final = 290

ROWS: Final = "replicaRows"
COUNTS: Final = "replicaCounts"
STAND_IN: Final = "..."  # the phaseMessage of a replica whose texts did not fit in TEXTS_BUDGET
UID_MAX: Final = 36  # the API server's UIDs are RFC 4122 UUIDs; anything longer is not one of its

PHASE_CODES: Final = {
    ReplicaPhase.ATTEMPT_PENDING: "A",
    ReplicaPhase.ATTEMPT_CREATION_REQUESTED: "C",
    ReplicaPhase.ATTEMPT_PREPARING: "P",
    ReplicaPhase.ATTEMPT_ASSIGNED: "N",
    ReplicaPhase.ATTEMPT_RUNNING: "R",
    ReplicaPhase.ATTEMPT_DELETION_PENDING: "D",
    ReplicaPhase.ATTEMPT_DELETION_REQUESTED: "Q",
    ReplicaPhase.ATTEMPT_COMPLETED: "E",
    ReplicaPhase.ATTEMPT_RETRY_PENDING: "T",
    ReplicaPhase.COMPLETED: "F",
}
_CODES: Final = {str(phase): code for phase, code in PHASE_CODES.items()}
_PHASES: Final = {code: str(phase) for phase, code in PHASE_CODES.items()}
_NONE: Final = "-"

# The replica fields a row and its texts keep exactly (the round trip of the compact shape).
DECISION_FIELDS: Final = (
    "index",
    "name",
    "phase",
    "phaseMessage",
    "stopped",
    "transitionTime",
    "totalRetriedCount",
    "podName",
    "podReason",
    "podUID",
    "podHostIP",
    "containerName",
    "uncountedRetries",
    "suspended",
)
# The action of the failure rule that matched the current attempt is a decision too, kept as a
# row flag; the rule's name and why go with the replica's texts (a stand-in drops them: the event said it).
ACTION_FLAGS: Final = {
    "RetryNotCounted": "u",
    "RetryCounted": "c",
    "FailRole": "r",
    "FailTaskSet": "t",
    "RestartTaskSet": "x",
    "RestartInPlace": "i",  # not "p", "s" nor "h": the row's other flags
}
_ACTIONS: Final = {flag: action for action, flag in ACTION_FLAGS.items()}
_WAITING: Final = {
    str(ReplicaPhase.ATTEMPT_PENDING),
    str(ReplicaPhase.ATTEMPT_PREPARING),
    str(ReplicaPhase.ATTEMPT_ASSIGNED),
}
_ACTIVE: Final = {
    str(ReplicaPhase.ATTEMPT_RUNNING),
    str(ReplicaPhase.ATTEMPT_DELETION_PENDING),
    str(ReplicaPhase.ATTEMPT_DELETION_REQUESTED),
    str(ReplicaPhase.ATTEMPT_COMPLETED),
}


def wire_bytes(data: bytes) -> int:
    """Bytes of ``data`` (compact JSON from orjson) once the API server has written it: Go escapes ``<``,
    ``>`` and ``&`` as six bytes each, and U+2028/U+2029 (three bytes of UTF-8) as six too."""
    extra = 5 * (data.count(b"<") + data.count(b">") + data.count(b"&"))
    return len(data) + extra + 3 * (data.count("\u2028".encode()) + data.count("\u2029".encode()))


def json_bytes(obj: object) -> int:
    return wire_bytes(orjson.dumps(obj))


def clip_bytes(text: str, limit: int) -> str:
    """``text`` cut so that its JSON string takes at most ``limit`` bytes on the wire, visibly."""
    if json_bytes(text) <= limit:
        return text
    keep = max(0, (limit - 2 - len(STAND_IN)) // WORST_BYTES_PER_CHARACTER)
    while json_bytes(text[: keep + 1] + STAND_IN) <= limit and keep < len(text):
        keep += 1  # a cheap lower bound first, then as much as fits
    return text[:keep] + STAND_IN


# ----- counts -------------------------------------------------------------------------------------------

BUCKETS: Final = ("waiting", "running", "succeeded", "failed", "retrying", "stopped")


def replica_counts(replicas: list[Json]) -> Json:
    """Replicas by what they are doing (both shapes): waiting for a Pod to run, running (or ending an
    attempt), retrying (waiting out the retry delay), and their outcome once completed: a replica its
    role's or the TaskSet's end stopped before it finished is ``stopped``, neither a success nor a failure
    of the user's program."""
    counts = dict.fromkeys(BUCKETS, 0)
    for replica in replicas:
        counts[bucket(replica)] += 1
    return counts


def bucket(replica: Json) -> str:
    """Which of ``replica_counts``'s buckets the replica's record counts in."""
    phase = replica.get("phase")
    if phase in _WAITING or phase == str(ReplicaPhase.ATTEMPT_CREATION_REQUESTED):
        return "waiting"
    if phase in _ACTIVE:
        return "running"
    if phase == str(ReplicaPhase.ATTEMPT_RETRY_PENDING):
        return "retrying"
    info = replica.get("terminatedInfo")
    if isinstance(info, dict) and info.get("exitCode") == 0:
        return "succeeded"
    return "stopped" if replica.get("stopped") else "failed"


def not_fine(replica: Json) -> bool:
    """Whether a reader of a large status wants this replica's full record: it failed, was retried, its
    Pod named a reason (evicted, a name conflict, a refused create), or it waits for something."""
    info = replica.get("terminatedInfo")
    if replica.get("totalRetriedCount") or replica.get("podReason") or replica.get("failure"):
        return True
    if isinstance(info, dict) and info.get("exitCode") != 0:
        return True
    if bucket(replica) in ("failed", "retrying"):
        return not replica.get("stopped")
    message = replica.get("phaseMessage") or ""
    return replica.get("phase") in _WAITING and message.startswith(WAIT_PREFIXES)


# ----- full -> wire --------------------------------------------------------------------------------------


def shape(status: Json) -> Json:
    """The status to write: ``status`` (full) if it fits in the budget, else its compact shape. A
    TaskSet with more replicas than full records of the smallest size fit is not even measured."""
    replicas = sum(len(role.get("replicaStatus") or ()) for role in status.get("roleStatus") or ())
    if replicas * FULL_RECORD_MIN_BYTES <= STATUS_BUDGET and json_bytes(status) <= STATUS_BUDGET:
        return status
    return compact(status)


class _Budget:
    def __init__(self) -> None:
        self.texts = TEXTS_BUDGET
        self.details = DETAILS_BUDGET


def compact(status: Json, given: list[GivenRole] | None = None) -> Json:
    """The compact shape of the full ``status``. ``given``: for each role, its replicas' ``Pieces`` and a
    function from an index to its full record, when the caller has them from a write before
    (``taskset.api.status_writes``); the role's ``replicaStatus`` is then not read."""
    budget = _Budget()
    roles = status.get("roleStatus", [])
    return {
        **status,
        "roleStatus": [
            _compact_role(role, budget, given[i] if given else None) for i, role in enumerate(roles)
        ],
    }


class Pieces(NamedTuple):
    """What a compact role takes from one replica's full record: its row around the ``p`` flag (which
    depends on the role's Pod name prefix) and the text reference (which depends on the texts before it),
    its texts entry with the bytes it is known by, and whether its full record is kept too."""

    replica_index: object
    pod_name: str
    head: str  # the phase's code and the stopped flag
    tail: str  # the flags after ``p``, then the retries, the time and the Pod UID, each followed by a space
    text: Json
    text_key: bytes
    not_fine: bool


GivenRole = tuple[list[Pieces], Callable[[int], Json]]


def pieces(replica: Json) -> Pieces:
    """``replica``'s ``Pieces``, from its full record."""
    head = _CODES.get(str(replica.get("phase")), PHASE_CODES[ReplicaPhase.ATTEMPT_PENDING])
    if replica.get("stopped"):
        head += "s"
    flags = ("h" if replica.get("suspended") is True else "") + _failure_flags(replica)
    uid = replica.get("podUID")
    uid_text = uid if isinstance(uid, str) and 0 < len(uid) <= UID_MAX and " " not in uid else _NONE
    retries = replica.get("totalRetriedCount") or 0
    entry = _texts_of(replica)
    return Pieces(
        replica_index=replica.get("index"),
        pod_name=str(replica.get("podName") or ""),
        head=head,
        tail=f"{flags} {retries} {_epoch(replica.get('transitionTime'))} {uid_text} ",
        text=entry,
        # A copy of exactly its size: orjson's result keeps its 4 KiB buffer, 8 MiB for 2,000 kept pieces.
        text_key=bytes(memoryview(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))),
        not_fine=not_fine(replica),
    )


def _compact_role(role: Json, budget: _Budget, given: GivenRole | None = None) -> Json:
    replicas: list[Json] = role.get("replicaStatus") or []
    parts, record = given if given else ([pieces(r) for r in replicas], replicas.__getitem__)
    prefix = _pod_name_prefix(parts)
    texts: list[Json] = []
    refs: dict[bytes, int] = {}
    rows = []
    details = []
    for index, part in enumerate(parts):
        rows.append(_row(part, prefix, _text_ref(part.text, part.text_key, texts, refs, budget)))
        if part.not_fine:
            replica = record(index)
            size = json_bytes(replica) + 1
            if size <= budget.details:
                budget.details -= size
                details.append(replica)
    out = {key: value for key, value in role.items() if key != "replicaStatus"}
    for key in ("phaseMessage", "stateMessage"):
        out[key] = clip_bytes(str(role.get(key) or ""), ROLE_MESSAGE_BYTES)
    out["replicaStatus"] = details
    out[ROWS] = {"podNamePrefix": prefix, "texts": texts, "rows": rows}
    return out


def _pod_name_prefix(parts: list[Pieces]) -> str:
    """``<taskset>-<role>-``, from a recorded Pod name (every Pod name is the prefix and the index)."""
    for part in parts:
        name, suffix = part.pod_name, f"-{part.replica_index}"
        if name.endswith(suffix):
            return name[: len(name) - len(suffix) + 1]
    return ""


def _texts_of(replica: Json) -> Json:
    entry = {
        "phaseMessage": replica.get("phaseMessage") or "",
        "podReason": replica.get("podReason") or "",
        "podHostIP": replica.get("podHostIP") or "",
        "containerName": replica.get("containerName") or "",
    }
    failure = replica.get("failure")
    if isinstance(failure, dict):
        entry["failureRule"] = failure.get("rule") or ""
        entry["failureMessage"] = failure.get("message") or ""
    entry = {key: value for key, value in entry.items() if value}
    info = replica.get("terminatedInfo")
    if isinstance(info, dict):
        entry["exitCode"] = info.get("exitCode", 0)
        entry["signal"] = info.get("signal", 0)
        entry["reason"] = info.get("reason", "")
    return entry


def _stand_in(entry: Json) -> Json:
    """What a replica's texts read once TEXTS_BUDGET is spent: whether its container ended, and with
    success or not (what the machines decide on), nothing else."""
    out: Json = {"phaseMessage": STAND_IN}
    if "exitCode" in entry:
        out["exitCode"] = 0 if entry["exitCode"] == 0 else 1
    return out


def _text_ref(entry: Json, key: bytes, texts: list[Json], refs: dict[bytes, int], budget: _Budget) -> int:
    ref = refs.get(key)
    if ref is not None:
        return ref
    size = wire_bytes(key) + 1
    if size > budget.texts:
        entry = _stand_in(entry)
        key = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
        ref = refs.get(key)
        if ref is not None:
            return ref
        size = 0  # stand-ins are few (STAND_INS_BYTES) and always stored
    budget.texts -= size
    refs[key] = len(texts)
    texts.append(entry)
    return len(texts) - 1


def _row(part: Pieces, prefix: str, text: int) -> str:
    named = part.pod_name and prefix and part.pod_name == f"{prefix}{part.replica_index}"
    return f"{part.head}{'p' if named else ''}{part.tail}{text}"


def _failure_flags(replica: Json) -> str:
    """The failure action's flag, then the uncounted retries (at most MAX_UNCOUNTED_RETRIES,
    two digits) when there are any."""
    failure = replica.get("failure")
    flag = ACTION_FLAGS.get(str(failure.get("action")), "") if isinstance(failure, dict) else ""
    uncounted = replica.get("uncountedRetries")
    if isinstance(uncounted, int) and 0 < uncounted <= MAX_UNCOUNTED_RETRIES:
        return f"{flag}{uncounted}"
    return flag


def parse_time(value: object) -> datetime | None:
    """A stored RFC 3339 timestamp, or None when there is none (or it is not one)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _epoch(value: object) -> str:
    return _epoch_of(value) if isinstance(value, str) else _NONE


@functools.lru_cache(maxsize=4096)
def _epoch_of(value: str) -> str:
    """A row's time: the replicas of a large TaskSet share few distinct timestamps (to the second), and
    parsing each again on every write was 7% of a 2,000-replica status's compaction."""
    moment = parse_time(value)
    return _NONE if moment is None else str(int(moment.timestamp()))


# ----- wire -> full --------------------------------------------------------------------------------------


def expand(status: Json, unchanged: Mapping[str, frozenset[int]] | None = None) -> Json:
    """The full shape of a status in either shape (a new dict; ``status`` is not changed).

    ``unchanged`` (role name -> indices, from ``unchanged_rows``): those replicas of compact roles are
    not rebuilt; their entries are None, for a reader that still has them from the previous version."""
    roles = status.get("roleStatus")
    if not isinstance(roles, list) or not any(isinstance(r, dict) and ROWS in r for r in roles):
        return status
    skip = unchanged or {}
    return {
        **status,
        "roleStatus": [
            _expand_role(r, skip.get(as_text(r.get("name")), frozenset())) if isinstance(r, dict) else r
            for r in roles
        ],
    }


def _expand_role(role: Json, unchanged: frozenset[int]) -> Json:
    packed = role.get(ROWS)
    if not isinstance(packed, dict):
        return role
    name = as_text(role.get("name"))
    prefix = as_text(packed.get("podNamePrefix"))
    texts = [t if isinstance(t, dict) else {} for t in as_items(packed.get("texts"))]
    rows = as_items(packed.get("rows"))
    replicas: list[Json | None] = [
        None if index in unchanged else _replica(str(row), index, name, prefix, texts)
        for index, row in enumerate(rows)
    ]
    for detail in as_items(role.get("replicaStatus")):
        index = detail.get("index") if isinstance(detail, dict) else None
        if isinstance(index, int) and 0 <= index < len(replicas):
            replicas[index] = detail
    out = {key: value for key, value in role.items() if key != ROWS}
    out["replicaStatus"] = replicas
    return out


def unchanged_rows(role: Json, previous: Json) -> frozenset[int]:
    """The replicas of a compact ``role`` that read exactly as in ``previous``, the same role of the
    status version before: the same row and the same texts under the same Pod name prefix, and a full
    record in neither. A reader that parsed ``previous`` keeps those replicas instead of parsing them
    again: most rows of a large TaskSet do not change between two of its status writes, and parsing
    2,000 of them took 20 ms after every write (the bench's ``large``)."""
    packed, before = role.get(ROWS), previous.get(ROWS)
    if not isinstance(packed, dict) or not isinstance(before, dict):
        return frozenset()
    if as_text(packed.get("podNamePrefix")) != as_text(before.get("podNamePrefix")):
        return frozenset()
    rows, old_rows = as_items(packed.get("rows")), as_items(before.get("rows"))
    texts, old_texts = as_items(packed.get("texts")), as_items(before.get("texts"))
    detailed = _detailed(role) | _detailed(previous)
    same_texts = texts == old_texts  # usually: then equal rows mean equal texts
    return frozenset(
        index
        for index, (row, old) in enumerate(zip(rows, old_rows, strict=False))
        if row == old
        and index not in detailed
        and (same_texts or _text_of(str(row), texts) == _text_of(str(old), old_texts))
    )


def unchanged_by_role(status: Json, previous: object, parsed: Mapping[str, int]) -> dict[str, frozenset[int]]:
    """Role name -> the replicas ``unchanged_rows`` finds between ``status`` and ``previous``, the
    version before, for the roles both have once, each compact, and whose first ``parsed[name]``
    replicas a reader still has from parsing ``previous`` (only those can be lent)."""
    if not isinstance(previous, dict) or not parsed:
        return {}
    before = _unique_roles(previous.get("roleStatus"))
    unchanged: dict[str, frozenset[int]] = {}
    for name, role in _unique_roles(status.get("roleStatus")).items():
        if name in before and name in parsed:
            rows = frozenset(i for i in unchanged_rows(role, before[name]) if i < parsed[name])
            if rows:
                unchanged[name] = rows
    return unchanged


def same_records_by_role(status: Json, previous: object) -> dict[str, list[Json]]:
    """Role name -> the records of the role in ``previous``, the version before, for the roles both have
    once and in the full shape. A record of ``status`` that *is* the record at its place there parses as
    it did: the status writer hands an unchanged replica's record on (``status_writes``), never changed."""
    if not isinstance(previous, dict):
        return {}
    before = _unique_roles(previous.get("roleStatus"))
    same: dict[str, list[Json]] = {}
    for name, role in _unique_roles(status.get("roleStatus")).items():
        earlier = before.get(name)
        if earlier is not None and ROWS not in role and ROWS not in earlier:
            same[name] = [r for r in as_items(earlier.get("replicaStatus")) if isinstance(r, dict)]
    return same


def _unique_roles(roles: object) -> dict[str, Json]:
    """The role entries of a status by name, leaving out any name that is there twice (a status edited
    by hand): which one a parse took would be a guess."""
    entries = [r for r in as_items(roles) if isinstance(r, dict)]
    names = [as_text(r.get("name")) for r in entries]
    return {name: r for name, r in zip(names, entries, strict=True) if names.count(name) == 1}


def _detailed(role: Json) -> set[int]:
    """Indices of the replicas a compact role also keeps full records of."""
    return {
        d["index"]
        for d in as_items(role.get("replicaStatus"))
        if isinstance(d, dict) and isinstance(d.get("index"), int)
    }


def _text_of(row: str, texts: list[Any]) -> object:
    """The texts entry a row refers to (None when it refers to none)."""
    fields = row.split(" ")
    ref = fields[4] if len(fields) > 4 else ""
    return texts[int(ref)] if ref.isdigit() and int(ref) < len(texts) else None


def _replica(row: str, index: int, role: str, prefix: str, texts: list[Json]) -> Json:
    fields = row.split(" ")
    fields += [_NONE] * (5 - len(fields))
    code, retries, moment, uid, ref = fields[:5]
    uncounted = "".join(ch for ch in code[1:] if ch.isdigit())
    text = texts[int(ref)] if ref.isdigit() and int(ref) < len(texts) else {}
    info = None
    if isinstance(text.get("exitCode"), int):
        info = {
            "exitCode": text["exitCode"],
            "exitMessage": "",
            "signal": text.get("signal") if isinstance(text.get("signal"), int) else 0,
            "reason": str(text.get("reason") or ""),
        }
    replica = {
        "index": index,
        "name": role,
        "phase": _PHASES.get(code[:1], str(ReplicaPhase.ATTEMPT_PENDING)),
        "phaseMessage": str(text.get("phaseMessage") or ""),
        "stopped": "s" in code[1:],
        "transitionTime": _stamp(moment),
        "startAt": None,
        "finishAt": None,
        "totalRetriedCount": int(retries) if retries.isdigit() else 0,
        "podName": f"{prefix}{index}" if "p" in code[1:] and prefix else "",
        "podReason": str(text.get("podReason") or ""),
        "podUID": None if uid == _NONE else uid,
        "podIP": "",
        "podHostIP": str(text.get("podHostIP") or ""),
        "containerName": str(text.get("containerName") or ""),
        "containerID": "",
        "terminatedInfo": info,
        "uncountedRetries": int(uncounted) if uncounted.isdigit() else 0,
        "failure": _failure(code, text),
    }
    if "h" in code[1:]:  # written only while true, as the full shape does
        replica["suspended"] = True
    return replica


def _failure(code: str, text: Json) -> Json | None:
    """The failure record a row's flag and texts keep, or None."""
    action = next((_ACTIONS[flag] for flag in code[1:] if flag in _ACTIONS), None)
    if action is None:
        return None
    rule, message = text.get("failureRule"), text.get("failureMessage")
    return {"rule": str(rule or ""), "action": action, "message": str(message or "")}


def _stamp(epoch: str) -> str | None:
    if not epoch.isdigit():
        return None
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ----- the proof -----------------------------------------------------------------------------------------


def worst_case_bytes(message_max: int, name_max: int, reason_max: int, history_bytes: int) -> dict[str, int]:
    """An upper bound of each part of a compact status at the limits (``MAX_ROLES`` roles,
    ``MAX_TOTAL_REPLICAS`` replicas), every text at its clip bound of characters that each take
    ``WORST_BYTES_PER_CHARACTER`` bytes: ``message_max`` for a message, ``name_max`` for a name,
    ``reason_max`` for a condition's reason; ``history_bytes`` bounds the attempt history
    (``taskset.api.history.HISTORY_BYTES``, which imports this module)."""
    text = WORST_BYTES_PER_CHARACTER * message_max + 2
    # Top level: 4 messages (phase, state, attempt result, and the keys around them) and one condition of
    # each type, with every scalar field at its widest (timestamps, UIDs, a 64-hex digest, counters).
    scalars = 1_200
    # A condition's reason is one of the controller's own CamelCase words (the CRD's pattern admits only
    # ASCII letters, digits and "_,:"), so each of its characters takes one byte. Counting it at the
    # worst bytes per character left no room for the Suspended condition.
    condition = text + reason_max + 200
    top = 3 * text + scalars + len(ConditionType) * condition
    role = 2 * (ROLE_MESSAGE_BYTES + 20) + 2 * name_max + 600  # keys, phases, counts, prefix
    # "Xsphu99 <retries> <epoch> <uid> <text>", quoted, with its comma: retries at most 7 digits (MAX_RETRY_
    # COUNT + 1), an epoch 10 digits until 2286, a text index at most 5 digits (TEXTS_BUDGET / 8 bytes).
    # One more flag (the failure rule's action) and two digits (uncounted retries).
    row = 7 + 1 + 7 + 1 + 10 + 1 + UID_MAX + 1 + 5 + 3
    stand_ins = MAX_ROLES * 3 * 40  # at most three per role, each under 40 bytes
    return {
        "top": top,
        "roles": MAX_ROLES * role,
        "rows": MAX_TOTAL_REPLICAS * row,
        "texts": TEXTS_BUDGET + stand_ins,
        "details": DETAILS_BUDGET,
        "history": history_bytes,
    }
