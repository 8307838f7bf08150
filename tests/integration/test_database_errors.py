"""What the tenant choke point reports when a statement fails: a missing memory only when
the memory's schema is really gone, and a concurrent change naming what the caller changed."""

from __future__ import annotations

import asyncpg
import pytest

from fortemi.platform.database import Database, memory_schema
from fortemi.platform.errors import Conflict, NotFound

# A real serialization failure (SQLSTATE 40001), raised by the server as a concurrent
# SERIALIZABLE transaction would make it.
_SERIALIZATION_FAILURE = (
    "DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END $$"
)


async def test_a_misspelt_table_in_an_existing_memory_is_an_internal_error(
    memory: str, db: Database
) -> None:
    with pytest.raises(asyncpg.UndefinedTableError, match="nto"):
        async with db.memory_transaction(memory) as conn:
            await conn.fetch("SELECT * FROM nto")


async def test_a_memory_whose_schema_was_dropped_meanwhile_is_not_found(
    memory: str, db: Database
) -> None:
    async with db.connection() as conn:
        await conn.execute(f"DROP SCHEMA {memory_schema(memory)} CASCADE")

    with pytest.raises(NotFound, match=f"Memory '{memory}' does not exist"):
        async with db.memory_transaction(memory) as conn:
            await conn.fetch("SELECT * FROM note")


async def test_a_serialization_failure_names_the_subject_the_caller_gave(
    memory: str, db: Database
) -> None:
    with pytest.raises(Conflict, match=r"^Note 42 changed concurrently; retry the operation$"):
        async with db.memory_transaction(memory, subject="Note 42") as conn:
            await conn.execute(_SERIALIZATION_FAILURE)


async def test_a_serialization_failure_without_a_subject_names_no_note(
    memory: str, db: Database
) -> None:
    with pytest.raises(Conflict, match="changed concurrently") as raised:
        async with db.memory_transaction(memory) as conn:
            await conn.execute(_SERIALIZATION_FAILURE)

    assert "note" not in str(raised.value).lower()


async def test_a_serialization_failure_in_a_shared_transaction_names_its_subject(
    db: Database,
) -> None:
    with pytest.raises(Conflict, match=r"^Job 7 changed concurrently; retry the operation$"):
        async with db.shared_transaction(subject="Job 7") as conn:
            await conn.execute(_SERIALIZATION_FAILURE)
