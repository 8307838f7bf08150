"""settle_heap: the server's long-lived objects leave the collector's reach; garbage does not."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from fortemi.app import settle_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_settle_heap_freezes_what_exists_and_still_collects_new_cycles() -> None:
    kept = _Node()
    _, middle, old = gc.get_threshold()
    settle_heap()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (10_000, middle, old)
    assert not any(obj is kept for obj in gc.get_objects())  # frozen: never walked again
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None
