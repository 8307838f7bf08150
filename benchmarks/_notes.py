"""Realistic note payloads from a seeded RNG, and the SQL baseline for creating and reading.

The SQL here is the least a service must do for the same operations, written directly
against a memory's tables (``migrations/memory/0001_notes.sql``), not taken from
``fortemi.platform.notes.repository``: the baseline must not move when the service does.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import blake3

from fortemi.platform.notes.repository import NOTE

__all__ = ["Payload", "SqlNotes", "payloads"]

_WORDS = (
    "the a of to and in that is for it as with on by this be from at an are was or we not "
    "have which can more all will one has if their they but its also into than other about "
    "these our some only when them there would so new first time two may each most used "
    "after over could how many between such any where through both before very even well "
    "system memory note index query schema cluster migration replica tenant token cache "
    "latency vector embedding search graph document version history review release plan "
    "meeting customer contract invoice budget roadmap incident postmortem backup restore "
    "deploy rollout feature flag metric alert dashboard runbook owner deadline estimate "
    "design prototype feedback summary decision risk dependency upgrade kernel network "
    "storage bandwidth throughput request response client server worker queue job retry"
).split()
_TAGS = (
    "work personal research ops infra backend frontend meeting todo idea reading draft "
    "reference archive urgent design security finance hiring travel"
).split()
# The note repository's declaration, so the raw-SQL path reads what the service reads.
_NOTE_COLUMNS = NOTE.select_list


@dataclass(frozen=True, slots=True)
class Payload:
    title: str
    content: str
    tags: list[str]
    metadata: dict[str, Any]

    def graphql_input(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "content": self.content,
            "tags": self.tags,
            "metadata": self.metadata,
        }


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(6, 18))
    return " ".join(words).capitalize() + rng.choice(".....?!")


def payloads(count: int, seed: int) -> list[Payload]:
    """``count`` notes of 2 to 7 sentences (about 150 to 800 bytes) with 0 to 3 tags."""
    rng = random.Random(seed)
    notes = []
    for i in range(count):
        paragraphs = [
            " ".join(_sentence(rng) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(1, 2))
        ]
        notes.append(
            Payload(
                title=" ".join(rng.choices(_WORDS, k=rng.randint(3, 7))).title(),
                content="\n\n".join(paragraphs),
                tags=sorted(set(rng.choices(_TAGS, k=rng.randint(0, 3)))),
                metadata={"source": "benchmark", "seq": i, "priority": rng.randint(1, 5)},
            )
        )
    return notes


# What createNote writes, at minimum: the note, its original and its version 1, in one
# statement (the three rows must agree on the timestamp, as the service's do).
_INSERT = """
WITH t AS (SELECT clock_timestamp() AS at),
n AS (
    INSERT INTO note (id, title, content, metadata, tags, content_hash,
                      created_at, updated_at, created_by, updated_by)
    SELECT $1::uuid, $2::text, $3::text, $4::jsonb, $5::text[], $6::text, t.at, t.at,
           $7::text, $7::text
    FROM t
    RETURNING id, title, content, format, metadata, tags, version, content_hash, created_at,
              created_by
),
o AS (
    INSERT INTO note_original (note_id, content, content_hash, created_at)
    SELECT id, content, content_hash, created_at FROM n
),
v AS (
    INSERT INTO note_version (note_id, version, title, content, format, metadata, tags,
                              content_hash, created_at, created_by)
    SELECT id, version, title, content, format, metadata, tags, content_hash, created_at,
           created_by
    FROM n
)
SELECT id, version, created_at FROM n
"""


class SqlNotes:
    """createNote and note(id) done directly over one asyncpg connection.

    ``schema`` must already be quoted and validated (``fortemi.platform.database.memory_schema``).
    """

    def __init__(self, conn: asyncpg.Connection, schema: str) -> None:
        self._conn = conn
        self._begin = f"BEGIN; SET LOCAL search_path TO {schema}, public"
        self._get_qualified = f"SELECT {_NOTE_COLUMNS} FROM {schema}.note WHERE id = $1"  # noqa: S608 - validated schema
        self._get = f"SELECT {_NOTE_COLUMNS} FROM note WHERE id = $1"  # noqa: S608 - constant

    @classmethod
    async def connect(cls, dsn: str, schema: str) -> SqlNotes:
        conn = await asyncpg.connect(dsn)
        # The codec the service's pool installs, so both sides do the same JSON work.
        for type_name in ("json", "jsonb"):
            await conn.set_type_codec(
                type_name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
            )
        return cls(conn, schema)

    async def close(self) -> None:
        await self._conn.close()

    async def create(self, note: Payload, actor: str) -> UUID:
        """BEGIN + SET LOCAL, one INSERT statement, COMMIT: three round trips."""
        digest = "blake3:" + blake3.blake3(note.content.encode()).hexdigest()
        await self._conn.execute(self._begin)
        try:
            row = await self._conn.fetchrow(
                _INSERT, uuid4(), note.title, note.content, note.metadata, note.tags, digest, actor
            )
        except BaseException:
            await self._conn.execute("ROLLBACK")
            raise
        await self._conn.execute("COMMIT")
        assert row is not None
        note_id: UUID = row["id"]
        return note_id

    async def get(self, note_id: UUID) -> asyncpg.Record | None:
        """One round trip: a schema-qualified SELECT by primary key, no explicit transaction."""
        row: asyncpg.Record | None = await self._conn.fetchrow(self._get_qualified, note_id)
        return row

    async def get_in_transaction(self, note_id: UUID) -> asyncpg.Record | None:
        """The service's read pattern: BEGIN + SET LOCAL, SELECT, COMMIT (three round trips)."""
        await self._conn.execute(self._begin)
        try:
            row: asyncpg.Record | None = await self._conn.fetchrow(self._get, note_id)
        finally:
            await self._conn.execute("COMMIT")
        return row
