"""Every cache of the controller lists in pages, relists at a resource version included: an unpaged relist
of thousands of Pods is one response of megabytes that a busy API server cuts at its one-minute request
timeout, again and again (seen under load: the Pod cache blind for minutes while a 3,000-replica TaskSet
ran). The reflector's own tests prove that a page size pages every list; this proves the controller asks
for it on each of its caches. Pure: the informers are never started."""

from __future__ import annotations

from typing import Any

import pytest

from informers import DEFAULT_PAGE_SIZE
from taskset.runtime.controller import Controller, ControllerSettings

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]


def test_every_cache_of_the_controller_lists_in_pages() -> None:
    logger: Any = None  # never called: nothing here logs
    controller = Controller(api_client=None, settings=ControllerSettings(watch_nodes=True), logger=logger)
    try:
        caches = [
            controller.tasksets,
            controller.pods,
            controller.units,
            controller.nodes,
            *controller.owned.values(),
            *controller.read.values(),
        ]
        assert len(caches) >= 4
        unpaged = [
            cache.name
            for cache in caches
            if cache is None or cache.settings.reflector.page_size != DEFAULT_PAGE_SIZE
        ]
        assert unpaged == []
    finally:
        controller.queue.shutdown()
        controller.recorder.stop(0.1)
