"""The parser and validation caches actually hit for a repeated operation."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, cast

from strawberry.extensions.validation_cache import _get_validate_cache

from fortemi.graphql.schema import build_schema
from fortemi.platform.settings import Settings


async def test_a_repeated_operation_is_validated_once(tmp_path: Path) -> None:
    # A cache size no other test uses gives this test a private validation cache.
    # (_get_validate_cache is strawberry's module-level cache keyed by size.)
    size = 97
    schema = build_schema(Settings(home=tmp_path, graphql_cache_size=size))
    # An lru_cache, typed by strawberry as a plain callable.
    cache = cast("functools._lru_cache_wrapper[Any]", _get_validate_cache(size))
    before = cache.cache_info()
    for _ in range(3):
        result = await schema.execute("{ __typename }")
        assert result.errors is None
    after = cache.cache_info()
    assert after.misses - before.misses == 1
    assert after.hits - before.hits == 2
