"""What the status says of an elastic TaskSet: each role's last scale, the count the scale
subresource reads, and the live membership's generation. Kept apart from ``taskset.api.status``, which
only holds and writes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taskset.api.readers import as_int, as_text

Json = dict[str, Any]


@dataclass
class ScaleRecord:
    """One scale of a role: from and to how many replicas, when, who asked (the manager that last wrote
    the count, best effort: ``taskset.api.scale``), and the membership generation that followed it."""

    before: int
    after: int
    at: str
    by: str = ""
    generation: int = 0

    def to_json(self) -> Json:
        return {
            "from": self.before,
            "to": self.after,
            "at": self.at,
            "by": self.by,
            "generation": self.generation,
        }

    @classmethod
    def from_json(cls, raw: object) -> ScaleRecord | None:
        if not isinstance(raw, dict):
            return None
        before, after = as_int(raw.get("from")), as_int(raw.get("to"))
        if before is None or after is None:
            return None
        return cls(
            before, after, as_text(raw.get("at")), as_text(raw.get("by")), as_int(raw.get("generation")) or 0
        )


@dataclass
class ScaleStatus:
    """``status.scale``: the replicas and Pod selector of the role ``spec.scale`` names (``/scale``)."""

    replicas: int
    selector: str

    def to_json(self) -> Json:
        return {"replicas": self.replicas, "selector": self.selector}

    @classmethod
    def from_json(cls, raw: object) -> ScaleStatus | None:
        if not isinstance(raw, dict) or as_int(raw.get("replicas")) is None:
            return None
        return cls(as_int(raw.get("replicas")) or 0, as_text(raw.get("selector")))


@dataclass
class MembershipStatus:
    """``status.membership``: the live membership ConfigMap, the generation it shows, and the digest of
    what it shows but the generation (the generation moves when, and only when, that digest does)."""

    config_map: str
    generation: int
    digest: str
    # Why the content the TaskSet makes now is not published ("" when it is): the ConfigMap keeps
    # showing ``generation``, and no generation is allocated until a content fits again.
    refused: str = ""

    def to_json(self) -> Json:
        shown = {"configMap": self.config_map, "generation": self.generation, "digest": self.digest}
        return {**shown, "refused": self.refused} if self.refused else shown

    @classmethod
    def from_json(cls, raw: object) -> MembershipStatus | None:
        if not isinstance(raw, dict) or as_int(raw.get("generation")) is None:
            return None
        return cls(
            as_text(raw.get("configMap")),
            as_int(raw.get("generation")) or 0,
            as_text(raw.get("digest")),
            as_text(raw.get("refused")),
        )
