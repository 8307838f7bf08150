"""to_global_ids encodes a list of UUIDs in one pass, exactly as to_global_id one by one."""

from __future__ import annotations

import random
from uuid import UUID

import pytest
from asyncpg.pgproto.pgproto import UUID as WireUUID

from fortemi.platform.ids import from_global_id, to_global_id, to_global_ids


# Type names of every length modulo 3 (the padding to whole base64 groups differs), and one
# whose name is not ASCII.
@pytest.mark.parametrize("type_name", ["Note", "N", "No", "Concept", "Vault", "Ñote", ""])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 200])
def test_one_pass_matches_one_at_a_time(type_name: str, count: int) -> None:
    rng = random.Random(count)  # noqa: S311 - test data, not secrets
    ids = [UUID(int=rng.getrandbits(128)) for _ in range(count)]
    ids += [UUID(int=0), UUID(int=2**128 - 1)][: min(count, 2)]
    assert to_global_ids(type_name, ids) == [to_global_id(type_name, i) for i in ids]


def test_asyncpg_uuids_encode_as_python_uuids() -> None:
    ids = [UUID(int=random.Random(i).getrandbits(128)) for i in range(50)]  # noqa: S311
    wire = [WireUUID(i.bytes) for i in ids]
    assert to_global_ids("Note", wire) == to_global_ids("Note", ids)
    assert [from_global_id(g) for g in to_global_ids("Note", wire)] == [
        ("Note", str(i)) for i in ids
    ]


def test_ids_of_other_lengths_fall_back_to_one_at_a_time() -> None:
    mixed: list[UUID] = [UUID(int=1), "short", UUID(int=2)]  # type: ignore[list-item]
    assert to_global_ids("Note", mixed) == [to_global_id("Note", i) for i in mixed]
