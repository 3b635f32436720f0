"""``status.countedEviction``: the last Kueue eviction by preemption that ``status.preemptCount`` counts
(``taskset.decide.preemption``), kept with the count so that no pass and no restarted controller counts
it again. Its key is the evicted Workload's UID and the eviction's time, ``<uid>@<time>``."""

from __future__ import annotations

from typing import Final

from taskset.api.compact import clip_bytes

COUNTED_EVICTION: Final = "countedEviction"
# A Kubernetes UID (36 characters) and an RFC 3339 time (20), "@" between, kept to 64 bytes of JSON with
# its quotes whatever it is; with its key, comma and colon the field adds at most COUNTED_EVICTION_BYTES.
COUNTED_EVICTION_KEY_BYTES: Final = 64
COUNTED_EVICTION_BYTES: Final = len(f',"{COUNTED_EVICTION}":') + COUNTED_EVICTION_KEY_BYTES


def counted_eviction_key(key: str) -> str:
    """What ``status.countedEviction`` keeps of an eviction's key: all of it, bounded whatever it is, so
    a pass compares what the status can hold."""
    return clip_bytes(key, COUNTED_EVICTION_KEY_BYTES)


def counted_eviction_json(key: str | None) -> dict[str, str]:
    """The field as the status writes it: only once there is one, so a status that never met a Kueue
    preemption is as before."""
    return {COUNTED_EVICTION: counted_eviction_key(key)} if key else {}
