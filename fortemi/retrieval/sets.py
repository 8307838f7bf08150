"""Embedding sets: which model embedded a memory's chunks, at what dimension, and how a
note became the text it embedded (its :class:`DocumentComposition`).

A set is named after its model and composition, so changing either starts a new set beside
the old one instead of mixing incomparable vectors; a query embeds with the set it
searches. Each set gets its own partial HNSW index (cosine) on a cast of the vector column
to the set's dimension, created with the set.

A new set fills as ``Embedding`` jobs run; until it is *complete* (:meth:`EmbeddingSets.
complete`: every chunk of every live note has a vector in it) search answers from the
newest complete set of the same model (:meth:`EmbeddingSets.serving`), and switches once
the new one is full.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fortemi.platform.database import Connection
from fortemi.platform.sql import Query, Table

__all__ = [
    "EMBEDDING_SET",
    "DocumentComposition",
    "EmbeddingSet",
    "EmbeddingSets",
    "composition_for",
    "default_ef_search",
]


@dataclass(frozen=True, slots=True)
class DocumentComposition:
    """How a chunk of a note becomes the text a model embeds, and a query its text.

    Prefixes are the instructions some models are trained with (nomic-embed-text expects
    ``search_document: `` and ``search_query: ``); MiniLM takes none.
    """

    include_title: bool = True
    include_content: bool = True
    include_tags: bool = False
    document_prefix: str = ""
    query_prefix: str = ""
    # The note's concept paths ("broader > narrower"), right after the title: placed
    # before the chunk so that a model truncating its input (MiniLM: 256 tokens, about a
    # full chunk) cuts content rather than the concepts.
    include_concepts: bool = False

    def document(
        self, title: str, chunk: str, tags: Sequence[str], concepts: Sequence[str] = ()
    ) -> str:
        parts = []
        if self.include_title and title.strip():
            parts.append(title.strip())
        if self.include_concepts and concepts:
            parts.append("Concepts: " + "; ".join(concepts))
        if self.include_content and chunk.strip():
            parts.append(chunk.strip())
        if self.include_tags and tags:
            parts.append("Tags: " + ", ".join(tags))
        return self.document_prefix + "\n\n".join(parts)

    def query(self, text: str) -> str:
        return self.query_prefix + text

    def as_json(self) -> dict[str, Any]:
        value = asdict(self)
        # Absent when off: compositions made before the field existed keep their JSON, so
        # their fingerprint, so their set (turning nothing on re-embeds nothing).
        if not self.include_concepts:
            del value["include_concepts"]
        return value

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> DocumentComposition:
        known = {name: value[name] for name in cls.__dataclass_fields__ if name in value}
        return cls(**known)

    def fingerprint(self) -> str:
        raw = json.dumps(self.as_json(), sort_keys=True).encode()
        return hashlib.blake2b(raw, digest_size=4).hexdigest()


def composition_for(model: str, *, concepts: bool = False) -> DocumentComposition:
    """The composition a model is meant to be used with; ``concepts``: with the note's
    concept paths (``FORTEMI_EMBED_CONCEPTS``)."""
    if model.startswith("nomic-embed-text"):
        return DocumentComposition(
            document_prefix="search_document: ",
            query_prefix="search_query: ",
            include_concepts=concepts,
        )
    return DocumentComposition(include_concepts=concepts)


@dataclass(frozen=True, slots=True)
class EmbeddingSet:
    id: int
    name: str
    model: str
    dimension: int
    composition: DocumentComposition

    @property
    def index_name(self) -> str:
        return f"chunk_embedding_hnsw_{self.id}"

    @property
    def cast(self) -> str:
        """The SQL type vectors of this set are compared as (the HNSW index's expression)."""
        return f"vector({int(self.dimension)})"


HNSW_M, HNSW_EF_CONSTRUCTION = 32, 128
# hnsw.ef_search when the client sets none, from benchmarks/search_latency.py (m 32,
# ef_construction 128, limit 10): recall@10 was 0.969 at 150 on 10,000 chunks, but on
# 100,000 only 0.710 at 150, 0.846 at 323, 0.934 at 600 and 0.951 at 800. The list a
# query needs for the same recall grows about as the 0.75th power of the set's size; the
# 0.8th keeps a margin. Never below the former default 100, never above the accepted
# 1000 (pgvector's maximum), which a set reaches at about 125,000 chunks.
_EF_AT, _EF_BASE, _EF_GROWTH = 10_000, 150, 0.8
MIN_DEFAULT_EF, MAX_DEFAULT_EF = 100, 1000


def default_ef_search(chunks: int) -> int:
    """The HNSW candidate list for a set of about ``chunks`` vectors that keeps recall@10
    at 0.95 or more without the client asking."""
    grown = float(_EF_BASE * (max(chunks, 1) / _EF_AT) ** _EF_GROWTH)
    return max(MIN_DEFAULT_EF, min(MAX_DEFAULT_EF, round(grown)))


def set_name(model: str, dimension: int, composition: DocumentComposition) -> str:
    return f"{model}/{dimension}/{composition.fingerprint()}"


def _composition(value: Any) -> DocumentComposition:
    return DocumentComposition.from_json(json.loads(value) if isinstance(value, str) else value)


EMBEDDING_SET = Table("embedding_set", EmbeddingSet, convert={"composition": _composition})
_FIND = EMBEDDING_SET.query("SELECT {columns} FROM {table} WHERE name = :name")
_SIBLINGS = EMBEDDING_SET.query(
    "SELECT {columns} FROM {table} WHERE model = :model AND dimension = :dimension ORDER BY id DESC"
)
# A chunk of a live note without a vector in the set. Notes not embedded yet have no
# chunks (the Embedding job writes chunks and vectors together), so they do not count:
# a set is complete when it holds every note any set could answer with.
_INCOMPLETE = Query(
    """
    SELECT EXISTS (
        SELECT 1 FROM chunk c JOIN note n ON n.id = c.note_id
        WHERE n.deleted_at IS NULL
          AND NOT EXISTS (
              SELECT 1 FROM chunk_embedding e WHERE e.set_id = :set_id AND e.chunk_id = c.id
          )
    )
    """
)
_COUNT = EMBEDDING_SET.query("SELECT count(*) FROM {table}")
_ALL = EMBEDDING_SET.query("SELECT {columns} FROM {table} ORDER BY id")
_CREATE = EMBEDDING_SET.insert(
    ("name", "model", "dimension", "composition"),
    suffix="ON CONFLICT (name) DO NOTHING RETURNING {columns}",
)


class EmbeddingSets:
    """Sets of the memory whose transaction (``Database.memory_transaction``) is in use."""

    def __init__(self) -> None:
        # (memory, set id, set name) of sets found complete while they were the configured
        # one: such a set stays complete (every Embedding job writes its chunks and their
        # vectors in one transaction), so it is never checked again. Any other set goes
        # stale as notes change, and is checked each time it is asked about.
        self._complete: set[tuple[str, int, str]] = set()

    async def complete(self, conn: Connection, chosen: EmbeddingSet) -> bool:
        """Whether every chunk of every live note has a vector in ``chosen``: one
        anti-join over the memory's chunks, stopping at the first gap."""
        return not await conn.fetchval(_INCOMPLETE.sql, *_INCOMPLETE.args(set_id=chosen.id))

    async def count(self, conn: Connection) -> int:
        """How many sets the memory has (of any model)."""
        return int(await conn.fetchval(_COUNT.sql))

    async def siblings(self, conn: Connection, model: str, dimension: int) -> list[EmbeddingSet]:
        """The memory's sets of ``model`` at ``dimension``, newest first."""
        rows = await conn.fetch(_SIBLINGS.sql, *_SIBLINGS.args(model=model, dimension=dimension))
        return [EMBEDDING_SET.from_record(row) for row in rows]

    async def serving(
        self,
        conn: Connection,
        memory: str,
        model: str,
        dimension: int,
        composition: DocumentComposition,
    ) -> EmbeddingSet | None:
        """The set search answers from when ``composition`` is the configured one: its own
        set once complete; until then the newest complete set of the same model whose
        queries embed the same way (same query prefix); else its own set however full,
        else the newest such set; None when the memory has none.

        With a single set of the model (the usual case) nothing is counted.
        """
        target = await self.find(conn, model, dimension, composition)
        usable = [
            s
            for s in await self.siblings(conn, model, dimension)
            if s.composition.query_prefix == composition.query_prefix
            and (target is None or s.id != target.id)
        ]
        if target is not None:
            key = (memory, target.id, target.name)
            if not usable or key in self._complete:
                return target
            if await self.complete(conn, target):
                self._complete.add(key)
                return target
        for other in usable:
            if await self.complete(conn, other):
                return other
        return target if target is not None else (usable[0] if usable else None)

    async def find(
        self, conn: Connection, model: str, dimension: int, composition: DocumentComposition
    ) -> EmbeddingSet | None:
        name = set_name(model, dimension, composition)
        row = await conn.fetchrow(_FIND.sql, *_FIND.args(name=name))
        return EMBEDDING_SET.from_record(row) if row else None

    async def size_estimate(self, conn: Connection, chosen: EmbeddingSet) -> tuple[int, int]:
        """About how many vectors ``chosen`` holds and how many notes the memory has, from
        PostgreSQL's statistics (no scan): the live rows of the memory's embedding and note
        tables, which the statistics system keeps within seconds of every commit, or for the
        vectors the set index's own count when that is larger (statistics reset). Rows of
        the memory's other sets count too: at worst a larger candidate list, never a smaller
        one."""
        row = await conn.fetchrow(
            "SELECT greatest(pg_stat_get_live_tuples('chunk_embedding'::regclass)::float8, "
            "(SELECT reltuples FROM pg_class WHERE oid = to_regclass($1))::float8, 0) AS chunks, "
            "pg_stat_get_live_tuples('note'::regclass) AS notes",
            chosen.index_name,
        )
        return (0, 0) if row is None else (int(row["chunks"] or 0), int(row["notes"] or 0))

    async def ensure(
        self, conn: Connection, model: str, dimension: int, composition: DocumentComposition
    ) -> EmbeddingSet:
        """The set for (model, dimension, composition), created with its index if new."""
        chosen, _ = await self.ensure_new(conn, model, dimension, composition)
        return chosen

    async def ensure_new(
        self, conn: Connection, model: str, dimension: int, composition: DocumentComposition
    ) -> tuple[EmbeddingSet, bool]:
        """:meth:`ensure`, and whether this call created the set (its transaction will
        make it visible to others on commit)."""
        found = await self.find(conn, model, dimension, composition)
        if found is not None:  # every embedding job asks: the usual answer is one read
            return found, False
        name = set_name(model, dimension, composition)
        binds = {"name": name, "model": model, "dimension": dimension}
        row = await conn.fetchrow(
            _CREATE.sql, *_CREATE.args(binds, composition=composition.as_json())
        )
        if row is None:  # it exists (maybe created concurrently and committed since)
            found = await self.find(conn, model, dimension, composition)
            if found is None:
                raise RuntimeError(f"embedding set {name!r} vanished while being created")
            return found, False
        created = EMBEDDING_SET.from_record(row)
        await conn.execute(_index_ddl(created))
        return created, True

    async def index_all(self, conn: Connection) -> int:
        """Give each set of the memory that lacks it its HNSW index (sets written as rows,
        by a shard import, come without); how many were made. Run in the transaction that
        wrote them, so the sets and their indexes appear together."""
        made = 0
        for row in await conn.fetch(_ALL.sql):
            chosen = EMBEDDING_SET.from_record(row)
            if not await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", chosen.index_name):
                await conn.execute(_index_ddl(chosen))
                made += 1
        return made


def _index_ddl(chosen: EmbeddingSet) -> str:
    # Both numbers are ours (an identity value and a checked dimension), never input.
    # m 32 / ef_construction 128 rather than pgvector's 16 / 64: on 10,000 real MiniLM
    # vectors recall@10 at ef_search 150 rose from 0.85 to 0.975, for a larger graph
    # and slower inserts that embedding (milliseconds per chunk) dwarfs anyway.
    return (
        f"CREATE INDEX {chosen.index_name} ON chunk_embedding "
        f"USING hnsw ((embedding::{chosen.cast}) vector_cosine_ops) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE set_id = {int(chosen.id)}"
    )
