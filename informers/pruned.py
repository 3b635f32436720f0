"""Objects decoded straight into the part of them a cache keeps.

A watched Pod is about 4.5 KB of JSON, and the pod cache's transform keeps under a third of it:
decoding all of it into dicts and lists, only for the transform to walk them and drop most, was a fifth
of the watch thread's work. A ``PrunedDecoder`` is given the shape of what the transform reads (a
``TypedDict``, its nested fields ``TypedDict`` too, ``Any`` where the transform judges the value itself)
and builds only that: ``msgspec`` skips every other field of the text without building it.

The transform still runs on what it builds, so the cache holds what it would have held from the whole
object. That stays true only while the shape names every field the transform reads: whoever declares a
shape proves ``transform(pruned) == transform(whole)`` for any object (the Pod's:
``tests/unit/taskset/observed/test_pod_shape.py``).

Whatever the shape cannot describe is decoded whole, as it was before, and left to the transform:
an object whose kept fields have an unexpected type (the transform drops or keeps those as it always
did), and every event that is not an object's state (a ``BOOKMARK``'s annotations, an ``ERROR``'s
``Status``).
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar, cast

import msgspec
import orjson

from .listwatch import TransportError, WatchEvent

__all__ = ["PrunedDecoder", "decode_whole_event"]

# The events whose object is the collection's kind; any other is decoded whole.
_OBJECT_EVENTS: Final = frozenset({"ADDED", "MODIFIED", "DELETED"})

T = TypeVar("T")


class _Event(msgspec.Struct, Generic[T]):
    type: str
    object: T


class _Page(msgspec.Struct, Generic[T]):
    items: list[T] | msgspec.UnsetType | None = msgspec.UNSET
    kind: Any = msgspec.UNSET
    apiVersion: Any = msgspec.UNSET  # noqa: N815 (the API's own name)
    metadata: Any = msgspec.UNSET


class PrunedDecoder:
    """Decodes the watch events and list pages of one collection into ``shape`` (see the module)."""

    def __init__(self, shape: Any) -> None:
        self._events: Final = msgspec.json.Decoder(_Event[shape])
        self._pages: Final = msgspec.json.Decoder(_Page[shape])

    def event(self, line: bytes) -> WatchEvent:
        """One watch line as an event; ``TransportError`` when it is no JSON watch event."""
        try:
            event = self._events.decode(line)
        except msgspec.ValidationError:  # a DecodeError too: first
            return decode_whole_event(line)
        except msgspec.DecodeError as err:
            raise TransportError(f"undecodable watch line: {err}") from err
        if event.type not in _OBJECT_EVENTS:
            return decode_whole_event(line)
        return cast(WatchEvent, {"type": event.type, "object": event.object})

    def page(self, body: bytes) -> dict[str, Any] | None:
        """A list response, its items pruned; ``None`` when it must be decoded whole."""
        try:
            page = self._pages.decode(body)
        except msgspec.ValidationError:  # a DecodeError too: first
            return None
        except msgspec.DecodeError as err:
            raise TransportError(f"undecodable list: {err}") from err
        fields = msgspec.structs.asdict(page)
        return {key: value for key, value in fields.items() if value is not msgspec.UNSET}


def decode_whole_event(line: bytes) -> WatchEvent:
    """One watch line decoded whole; ``TransportError`` when it is no JSON watch event."""
    try:
        event: Any = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise TransportError(f"undecodable watch line: {err}") from err
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise TransportError("watch line is not an event")
    if not isinstance(event.get("object"), dict):
        event["object"] = {}
    return cast(WatchEvent, event)  # the decoded dict itself: no copy on the hot path
