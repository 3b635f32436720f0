"""``spec.network`` (``taskset.objects.network``): the replicas' DNS names and their headless Service."""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c


def properties() -> Schema:
    return {
        "network": {
            "type": "object",
            "description": "The replicas' network identity: a headless Service per TaskSet and a hostname "
            "per Pod, so <taskset>-<role>-<index>.<subdomain>.<namespace>.svc resolves to the replica's Pod.",
            "properties": {
                "enableDNSHostnames": {
                    "type": "boolean",
                    "description": "Whether Pods get hostnames under the headless Service (default true).",
                },
                "subdomain": {
                    "type": "string",
                    "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                    "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$",
                    "description": "The headless Service's name, a DNS-1035 label (default: the TaskSet's "
                    "name; a TaskSet whose name starts with a digit gets names only when this is set).",
                },
            },
        }
    }
