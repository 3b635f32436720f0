"""What every shape a watch decodes into must keep: its transform of the pruned object equals its
transform of the whole one (``informers.pruned``), for a watch event and for a list page's items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from informers.pruned import PrunedDecoder, decode_whole_event


def watch_line(obj: Any, kind: str = "MODIFIED") -> bytes | None:
    """The watch line of ``obj``; None when orjson cannot write it (an integer past 64 bits)."""
    try:
        return orjson.dumps({"type": kind, "object": obj})
    except TypeError:
        return None


def check_pruned(
    decoder: PrunedDecoder, transform: Callable[[Any], Any], obj: Any, list_kind: str, api_version: str
) -> None:
    """``transform`` of ``obj`` pruned by ``decoder`` is ``transform`` of it whole: as a watch event, and
    as each item of a list page (when the page can be pruned at all)."""
    line = watch_line(obj)
    if line is None:
        return
    whole = decode_whole_event(line)
    pruned = decoder.event(line)
    assert pruned["type"] == whole["type"]
    assert transform(pruned["object"]) == transform(whole["object"])
    try:  # one level deeper than the event: orjson refuses to nest past 255 levels
        body = orjson.dumps({"kind": list_kind, "apiVersion": api_version, "items": [obj, obj]})
    except TypeError:
        return
    page = decoder.page(body)
    assert page is None or [transform(item) for item in page["items"]] == [transform(whole["object"])] * 2
