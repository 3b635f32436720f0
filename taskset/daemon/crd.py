"""Self-registration of the TaskSet CRD at startup (spec 9.2 step 2), as the original controller does.

``ensure_crd`` reads the manifest, then:

1. GET the CRD. Missing → create it. Present, and the manifest's spec, labels or annotations are not
   all contained in the live object → replace it (PUT, guarded by the live ``resourceVersion``; a 409
   from a concurrent writer re-reads and tries again). "Contained" rather than "equal" because the API
   server adds defaults (``conversion``, ``preserveUnknownFields``) that the manifest does not spell out:
   equality would rewrite the CRD at every start.
2. Poll until the ``Established`` condition is True. ``NamesAccepted`` False (a name clash with another
   CRD) fails at once with the server's message rather than waiting out the timeout.

Verbs used are get, create and update on ``customresourcedefinitions``: exactly what the least-privilege
ClusterRole grants (spec 9.3, Appendix B), which server-side apply (patch) would exceed. Requests are raw
JSON through ``taskset.runtime.kube.KubeClient``; nothing is turned into generated models (the
manifest is ~200 KB).

The original polls every 10 s for up to 70 s; this polls every second (a CRD is usually Established
within one), with the same 70 s default limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from taskset.runtime.kube import KubeClient, KubeError

__all__ = ["CRDRegistrationError", "ensure_crd"]

CRD_COLLECTION: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ESTABLISH_TIMEOUT: Final = 70.0  # seconds, the original's limit
POLL_INTERVAL: Final = 1.0  # seconds between Established checks
# Rounds of read-compare-write before giving up when other writers keep changing the CRD under us.
MAX_WRITE_ATTEMPTS: Final = 5

Json = dict[str, Any]


class CRDRegistrationError(RuntimeError):
    """The CRD could not be created, updated or seen Established; the message says which and why."""


def ensure_crd(
    client: KubeClient,
    manifest_path: Path | str,
    timeout: float = ESTABLISH_TIMEOUT,
    *,
    poll_interval: float = POLL_INTERVAL,
    interrupt: threading.Event | None = None,
) -> str:
    """Create or update the CRD in ``manifest_path`` and wait until it is Established.

    Returns what was done: ``"created"``, ``"updated"`` or ``"unchanged"``. Raises
    ``CRDRegistrationError``, also when ``interrupt`` is set while waiting.
    """
    desired = _load_manifest(Path(manifest_path))
    name = desired["metadata"]["name"]
    action = _create_or_update(client, desired, name)
    _wait_established(client, name, timeout, poll_interval, interrupt or threading.Event())
    return action


def _load_manifest(path: Path) -> Json:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise CRDRegistrationError(f"cannot read CRD manifest {path}: {err.strerror or err}") from None
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster on 200 KB
        manifest = yaml.load(text, Loader=loader)
    except yaml.YAMLError as err:
        raise CRDRegistrationError(f"CRD manifest {path} is not valid YAML: {err}") from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("kind") != "CustomResourceDefinition"
        or not isinstance(manifest.get("metadata"), dict)
        or not manifest["metadata"].get("name")
        or not isinstance(manifest.get("spec"), dict)
    ):
        raise CRDRegistrationError(f"{path} is not a CustomResourceDefinition with a name and a spec")
    return manifest


def _create_or_update(client: KubeClient, desired: Json, name: str) -> str:
    path = f"{CRD_COLLECTION}/{name}"
    for _ in range(MAX_WRITE_ATTEMPTS):
        status, live = _request(client, "GET", path)
        if status == 404:
            status, body = _request(client, "POST", CRD_COLLECTION, desired)
            if status == 409:  # created by someone else since our GET: compare against theirs
                continue
            _check(status, body, f"creating CRD {name}")
            return "created"
        _check(status, live, f"reading CRD {name}")
        if (
            _contains(live, desired, ("spec",))
            and _contains(live, desired, ("metadata", "labels"))
            and _contains(live, desired, ("metadata", "annotations"))
        ):
            return "unchanged"
        status, body = _request(client, "PUT", path, _replacement(live, desired))
        if status == 409:  # the live object changed since our GET
            continue
        _check(status, body, f"updating CRD {name}")
        return "updated"
    raise CRDRegistrationError(f"CRD {name} kept changing while it was being updated; gave up")


def _replacement(live: Json, desired: Json) -> Json:
    """The desired CRD, keeping the live metadata others own (labels, annotations we do not set)."""
    live_meta = live.get("metadata") or {}
    meta = dict(desired["metadata"])
    meta["resourceVersion"] = live_meta.get("resourceVersion", "")
    for key in ("labels", "annotations"):
        merged = {**(live_meta.get(key) or {}), **(desired["metadata"].get(key) or {})}
        if merged:
            meta[key] = merged
    return {**desired, "metadata": meta}


def _contains(live: Any, desired: Any, path: tuple[str, ...] = ()) -> bool:
    """Whether every value of ``desired`` (under ``path``) is present and equal in ``live``."""
    for key in path:
        live = live.get(key) if isinstance(live, Mapping) else None
        desired = desired.get(key) if isinstance(desired, Mapping) else None
    if desired is None:
        return True
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(_contains(live.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(_contains(lv, dv) for lv, dv in zip(live, desired, strict=True))
        )
    return bool(live == desired)


def _wait_established(
    client: KubeClient, name: str, timeout: float, poll_interval: float, interrupt: threading.Event
) -> None:
    path = f"{CRD_COLLECTION}/{name}"
    deadline = time.monotonic() + timeout
    conditions: Mapping[str, Json] = {}
    while True:
        status, live = _request(client, "GET", path)
        _check(status, live, f"reading CRD {name}")
        conditions = {
            str(c.get("type")): c
            for c in (live.get("status") or {}).get("conditions") or ()
            if isinstance(c, dict)
        }
        if conditions.get("Established", {}).get("status") == "True":
            return
        names = conditions.get("NamesAccepted", {})
        if names.get("status") == "False":
            raise CRDRegistrationError(f"CRD {name} names not accepted: {names.get('message', '')}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if interrupt.wait(min(poll_interval, remaining)):
            raise CRDRegistrationError(f"interrupted while waiting for CRD {name} to be Established")
    summary = ", ".join(f"{t}={c.get('status')}" for t, c in sorted(conditions.items())) or "no conditions"
    raise CRDRegistrationError(f"CRD {name} not Established after {timeout:g} s ({summary})")


def _request(client: KubeClient, method: str, path: str, body: Json | None = None) -> tuple[int, Json]:
    """One request; returns the HTTP status and the decoded JSON body (``{}`` when there is none)."""
    try:
        response = client.request(method, path, resource="customresourcedefinitions", body=body)
    except KubeError as err:
        if err.code == 0:  # no answer at all
            raise CRDRegistrationError(f"{method} {path}: {err.message}") from err
        return err.code, {"reason": err.reason, "message": err.message}
    return response.code, response.body if isinstance(response.body, dict) else {}


def _check(status: int, body: Json, doing: str) -> None:
    if 200 <= status < 300:
        return
    reason = body.get("message") or body.get("reason") or "no message"
    raise CRDRegistrationError(f"{doing}: HTTP {status}: {reason}")
