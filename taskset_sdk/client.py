"""``Client``: create, read, watch, wait for, read the logs of, and delete TaskSets.

    from taskset_sdk import Client
    client = Client()                       # kubeconfig, else in-cluster; its namespace by default
    client.create(taskset)                  # a builders.TaskSet or a plain dict
    for view in client.watch("mnist"):      # every status change, as a TaskSetView
        print(view.state, view.phase)
    client.wait("mnist", state="Succeeded", timeout=600)
    for line in client.logs("mnist", "worker", 0, follow=True):
        print(line)
    client.delete("mnist")

Errors are ``taskset_sdk.errors``: each names ``namespace/name`` and the cause, the API server's own
message when it refused.
"""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypedDict, Unpack

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from taskset_sdk.builders import TaskSet
from taskset_sdk.connection import connect, line_stream
from taskset_sdk.constants import (
    BUCKET_LEASE_FORMAT,
    DEFAULT_CONTROLLER_NAMESPACE,
    DEFAULT_RING,
    FINAL_STATES,
    GROUP,
    KIND,
    LABEL_TASKSET,
    PLURAL,
    POD_NAME_FORMAT,
    STATE_SUCCEEDED,
    STATES,
    VERSION,
)
from taskset_sdk.errors import (
    LogsUnavailableError,
    TaskSetApiError,
    TaskSetNotFoundError,
    WaitFailedError,
    WaitTimeoutError,
    api_message,
    from_api_exception,
)
from taskset_sdk.views import (
    EventView,
    LogTarget,
    PodView,
    ReplicaView,
    ShardOwner,
    TaskSetView,
    namespace_bucket,
    replica_pod,
)

__all__ = ["Client", "LogWhere"]

# A watch request is held open at most this long, then resumed from the last resourceVersion: a proxy
# that drops idle connections silently costs at most one slice.
WATCH_SLICE_SECONDS: Final = 60
# Seconds added to a watch's server-side timeout for the client's read timeout.
READ_MARGIN_SECONDS: Final = 10
GONE: Final = 410
NOT_FOUND: Final = 404


class LogWhere(TypedDict, total=False):
    """Which log of a replica: ``attempt`` (a replica attempt number; default the current one),
    ``container`` (default the replica's main container), ``namespace`` (default the client's)."""

    attempt: int | None
    container: str | None
    namespace: str | None


class Client:
    """One connection to one cluster. ``namespace`` is the default for calls that name none."""

    def __init__(
        self,
        api_client: Any = None,
        *,
        namespace: str | None = None,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
    ) -> None:
        if api_client is None:
            connection = connect(kubeconfig, context)
            api_client, default = connection.api_client, connection.namespace
        else:
            default = "default"
        self.namespace: str = namespace or default
        # Any: the generated signatures reject the plain dicts and raw responses used here.
        self._custom: Final[Any] = k8s.CustomObjectsApi(api_client)
        self._core: Final[Any] = k8s.CoreV1Api(api_client)
        self._coordination: Final[Any] = k8s.CoordinationV1Api(api_client)

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    # ----- create, read, delete ---------------------------------------------------------------------------
    def create(self, taskset: TaskSet | Mapping[str, Any], *, namespace: str | None = None) -> TaskSetView:
        """Submit a TaskSet; its own ``metadata.namespace`` wins over ``namespace``."""
        body = taskset.to_dict() if isinstance(taskset, TaskSet) else json.loads(json.dumps(taskset))
        metadata = body.setdefault("metadata", {})
        ns = metadata.get("namespace") or self._ns(namespace)
        metadata["namespace"] = ns
        name = str(metadata.get("name") or metadata.get("generateName") or "?")
        try:
            created = self._custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)
        except ApiException as err:
            raise from_api_exception(ns, name, err) from None
        return TaskSetView.parse(created)

    def get(self, name: str, *, namespace: str | None = None) -> TaskSetView:
        ns = self._ns(namespace)
        try:
            return TaskSetView.parse(
                self._custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
            )
        except ApiException as err:
            raise from_api_exception(ns, name, err) from None

    def list(
        self,
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        label_selector: str | None = None,
    ) -> builtins.list[TaskSetView]:
        ns = "*" if all_namespaces else self._ns(namespace)
        selector = {"label_selector": label_selector} if label_selector else {}
        try:
            if all_namespaces:
                found = self._custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **selector)
            else:
                found = self._custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, **selector)
        except ApiException as err:
            raise from_api_exception(ns, "*", err) from None
        return [TaskSetView.parse(item) for item in found.get("items", ())]

    def delete(
        self,
        name: str,
        *,
        namespace: str | None = None,
        wait: bool = False,
        timeout: float = 120.0,
    ) -> None:
        """Delete with foreground propagation: the TaskSet stays (with a deletionTimestamp) until its
        ControlUnit and Pods are gone. ``wait`` returns only once it has left the API server."""
        ns = self._ns(namespace)
        try:
            self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, name, body={"propagationPolicy": "Foreground"}
            )
        except ApiException as err:
            raise from_api_exception(ns, name, err) from None
        if not wait:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.get(name, namespace=ns)
            except TaskSetNotFoundError:
                return
            time.sleep(0.2)
        raise WaitTimeoutError(ns, name, f"still present {timeout:g}s after its deletion", None)

    # ----- watch and wait ----------------------------------------------------------------------------------
    def watch(
        self, name: str, *, namespace: str | None = None, timeout: float | None = None
    ) -> Iterator[TaskSetView]:
        """The TaskSet now, then again each time its status changes, until it is deleted or ``timeout``
        seconds have passed (None: forever). Raises ``TaskSetNotFoundError`` if it does not exist."""
        for view in self._changes(name, self._ns(namespace), timeout):
            if view is None:
                return
            yield view

    def wait(
        self,
        name: str,
        *,
        state: str | None = None,
        condition: str | None = None,
        condition_status: str = "True",
        namespace: str | None = None,
        timeout: float = 300.0,
    ) -> TaskSetView:
        """Block until the TaskSet's ``state`` is ``state`` (default Succeeded) or its condition
        ``condition`` has ``condition_status``. Raises ``WaitFailedError`` as soon as that can no longer
        happen (it ended otherwise, or was deleted), ``WaitTimeoutError`` after ``timeout`` seconds."""
        if state is not None and state not in STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(STATES)}")
        if state is None and condition is None:
            state = STATE_SUCCEEDED
        wanted = f"state {state}" if state else f"condition {condition}={condition_status}"
        ns = self._ns(namespace)
        last: TaskSetView | None = None
        for view in self._changes(name, ns, timeout):
            if view is None:
                raise WaitFailedError(ns, name, f"deleted while waiting for {wanted}", last)
            last = view
            if _matches(view, state, condition, condition_status):
                return view
            if view.finished:
                ended = f"ended {view.state}: {view.state_message}".rstrip(": ")
                raise WaitFailedError(ns, name, f"{ended} (waited for {wanted})", view)
        seen = f"state {last.state or 'none yet'}, phase {last.phase or 'none yet'}" if last else "nothing"
        raise WaitTimeoutError(ns, name, f"not {wanted} after {timeout:g}s (last seen: {seen})", last)

    def _changes(self, name: str, ns: str, timeout: float | None) -> Iterator[TaskSetView | None]:
        """The current view, then one per status change; None once the TaskSet is deleted."""
        deadline = None if timeout is None else time.monotonic() + timeout
        current = self.get(name, namespace=ns)
        yield current
        last_status = current.status
        version = str(current.raw["metadata"]["resourceVersion"])
        while deadline is None or time.monotonic() < deadline:
            remaining = WATCH_SLICE_SECONDS if deadline is None else deadline - time.monotonic()
            seconds = max(1.0, min(WATCH_SLICE_SECONDS, remaining))
            for kind, event_object in self._watch_once(name, ns, version, seconds):
                obj = self._refresh(name, ns) if kind == "GONE" else event_object
                if kind == "DELETED" or obj is None:
                    yield None
                    return
                version = str(obj["metadata"]["resourceVersion"])
                view = TaskSetView.parse(obj)
                if view.status != last_status:
                    last_status = view.status
                    yield view

    def _refresh(self, name: str, ns: str) -> Any:
        """After 410 Gone (the watched version was compacted away): the object read afresh, or None if
        it is gone."""
        try:
            return self.get(name, namespace=ns).raw
        except TaskSetNotFoundError:
            return None

    def _watch_once(self, name: str, ns: str, version: str, seconds: float) -> Iterator[tuple[str, Any]]:
        try:
            response = self._custom.list_namespaced_custom_object(
                GROUP,
                VERSION,
                ns,
                PLURAL,
                field_selector=f"metadata.name={name}",
                resource_version=version,
                allow_watch_bookmarks=False,
                watch=True,
                timeout_seconds=int(seconds),
                _preload_content=False,
                _request_timeout=seconds + READ_MARGIN_SECONDS,
            )
        except ApiException as err:
            if err.status == GONE:
                yield "GONE", None
                return
            raise from_api_exception(ns, name, err) from None
        try:
            for line in line_stream(response):
                if not line:
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    if event["object"].get("code") == GONE:
                        yield "GONE", None
                        return
                    raise TaskSetApiError(ns, name, event["object"].get("message", "watch error"), 0)
                yield event["type"], event["object"]
        finally:
            response.release_conn()

    # ----- the replica that acts for a namespace ---------------------------------------------------------
    def owner(
        self,
        *,
        namespace: str | None = None,
        controller_namespace: str = DEFAULT_CONTROLLER_NAMESPACE,
        ring: str = DEFAULT_RING,
    ) -> ShardOwner:
        """Which replica of a sharded controller acts for ``namespace``'s TaskSets: the holder of its
        bucket's Lease (empty if the Lease has none or does not exist: an unsharded controller keeps no
        bucket Leases)."""
        ns = self._ns(namespace)
        bucket = namespace_bucket(ns)
        lease_name = BUCKET_LEASE_FORMAT.format(ring=ring, bucket=bucket)
        try:
            response = self._coordination.read_namespaced_lease(
                lease_name, controller_namespace, _preload_content=False
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return ShardOwner(ns, bucket, f"{controller_namespace}/{lease_name}", "", "")
            raise from_api_exception(controller_namespace, lease_name, err) from None
        spec = json.loads(response.data).get("spec") or {}
        holder, renewed = spec.get("holderIdentity"), spec.get("renewTime")
        return ShardOwner(
            ns,
            bucket,
            f"{controller_namespace}/{lease_name}",
            holder if isinstance(holder, str) else "",
            renewed if isinstance(renewed, str) else "",
        )

    # ----- Pods, events, logs ------------------------------------------------------------------------------
    def pods(self, name: str, *, namespace: str | None = None) -> dict[str, PodView]:
        """The TaskSet's Pods that exist now, by name (labelled with the TaskSet's name)."""
        selector = {"label_selector": f"{LABEL_TASKSET}={name}"}
        items = self._core_items(self._core.list_namespaced_pod, self._ns(namespace), name, selector)
        return {pod.name: pod for pod in map(PodView.parse, items)}

    def events(self, name: str, *, namespace: str | None = None) -> builtins.list[EventView]:
        """The Events recorded on the TaskSet, oldest first."""
        selector = {"field_selector": f"involvedObject.kind={KIND},involvedObject.name={name}"}
        items = self._core_items(self._core.list_namespaced_event, self._ns(namespace), name, selector)
        return sorted(map(EventView.parse, items), key=lambda e: (e.first, e.order))

    @staticmethod
    def _core_items(list_call: Any, ns: str, name: str, selector: dict[str, str]) -> builtins.list[Any]:
        """A core list as plain JSON (the generated models would cost a conversion for nothing)."""
        try:
            response = list_call(ns, _preload_content=False, **selector)
        except ApiException as err:
            raise from_api_exception(ns, name, err) from None
        return builtins.list(json.loads(response.data).get("items", ()))

    def locate_log(self, name: str, role: str, index: int, **where: Unpack[LogWhere]) -> LogTarget:
        """Which Pod and container hold replica ``role``-``index``'s log, for its current attempt or for
        replica attempt ``attempt``. A replica's Pod has the same name in every attempt and an earlier
        attempt's Pod is deleted before the next starts, so only the current attempt's log exists.
        The Pod must be the one the TaskSet's status records (its UID): a Pod someone else made under
        the replica's name is never read as the replica's."""
        ns = self._ns(where.get("namespace"))
        attempt, container = where.get("attempt"), where.get("container")
        view = self.get(name, namespace=ns)
        replica = view.replica(role, index)
        if replica is None:
            roles = ", ".join(f"{r.name} (0..{len(r.replicas) - 1})" for r in view.roles) or "none yet"
            raise LogsUnavailableError(ns, name, f"no replica {role}-{index}; replicas: {roles}")
        pod_name = replica.pod_name or POD_NAME_FORMAT.format(taskset=name, role=role, index=index)
        found = self.pods(name, namespace=ns)
        pod = replica_pod(view, replica, found)
        if pod is None:
            raise LogsUnavailableError(ns, name, _no_pod(replica, pod_name, pod_name in found))
        if attempt is not None and attempt != replica.retries:
            raise LogsUnavailableError(
                ns,
                name,
                f"replica {role}-{index} attempt {attempt} is gone: its Pod {pod_name} runs attempt "
                f"{replica.retries} (a replica keeps only its current attempt's Pod)",
            )
        chosen = container or replica.container or (pod.containers[0] if pod.containers else "")
        if pod.containers and chosen not in pod.containers:
            raise LogsUnavailableError(
                ns, name, f"Pod {pod_name} has no container {chosen!r} ({', '.join(pod.containers)})"
            )
        return LogTarget(pod=pod_name, container=chosen, attempt=replica.retries, uid=pod.uid)

    def logs(
        self,
        name: str,
        role: str,
        index: int,
        *,
        follow: bool = False,
        tail_lines: int | None = None,
        **where: Unpack[LogWhere],
    ) -> Iterator[str]:
        """The lines of a replica's log (see ``locate_log``); with ``follow``, until the container
        ends. ``LogsUnavailableError`` names the Pod and the API server's answer when it cannot be read,
        and says so when the replica has no Pod now (by default a finished replica's Pod is deleted at
        once; ``cleanPodPolicy`` keeps it)."""
        ns = where["namespace"] = self._ns(where.get("namespace"))
        target = self.locate_log(name, role, index, **where)
        options: dict[str, Any] = {"container": target.container, "follow": follow}
        if tail_lines is not None:
            options["tail_lines"] = tail_lines
        try:
            response = self._core.read_namespaced_pod_log(target.pod, ns, _preload_content=False, **options)
        except ApiException as err:
            cause = f"log of Pod {target.pod} container {target.container}: {api_message(err)}"
            raise LogsUnavailableError(ns, name, cause) from None
        try:
            # The log is read by name: had the replica's Pod been replaced by another of that name
            # between the lookup and the request, this would be the other Pod's log. A name never
            # goes back to an earlier UID, so the same UID after the request opened means this is it.
            if self._pod_uid(target.pod, ns, name) != target.uid:
                raise LogsUnavailableError(
                    ns, name, f"Pod {target.pod} was replaced while its log was opened; not read"
                )
            yield from line_stream(response)
        finally:
            response.release_conn()

    def _pod_uid(self, pod: str, ns: str, name: str) -> str:
        """The UID of Pod ``pod`` now, "" when there is none."""
        try:
            response = self._core.read_namespaced_pod(pod, ns, _preload_content=False)
        except ApiException as err:
            if err.status == NOT_FOUND:
                return ""
            raise from_api_exception(ns, name, err) from None
        return str(PodView.parse(json.loads(response.data)).uid)


def _no_pod(replica: ReplicaView, pod_name: str, named_pod_exists: bool) -> str:
    """Why a replica has no Pod to read, in the words a user acts on."""
    where = f"replica {replica.key} has no Pod now ({replica.phase or 'no phase yet'})"
    if named_pod_exists:
        return (
            f"{where}: Pod {pod_name} is not the one the TaskSet's status records for it "
            "(another UID), so its log is not the replica's"
        )
    if replica.exit_code is not None:
        return (
            f"{where}: a finished replica's Pod is deleted unless spec.cleanPodPolicy keeps it; "
            f"it exited {replica.exit_code} ({replica.reason or 'no reason'}), and the status keeps "
            "its termination message (ReplicaView.exit_message)"
        )
    return where


def _matches(view: TaskSetView, state: str | None, condition: str | None, status: str) -> bool:
    if state is not None and view.state != state:
        return False
    if condition is not None:
        found = view.condition(condition)
        return found is not None and found.status == status
    return True


assert set(STATES) >= FINAL_STATES  # the wait's "can no longer happen" test relies on it
