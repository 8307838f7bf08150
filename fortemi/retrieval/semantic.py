"""The semantic leg: the chunks nearest the query vector (cosine) from the embedding set's
HNSW index, the best chunk per note, then the filters on those notes. When the filters
leave too few notes from what the index returned, the filtered chunks are read exactly
instead, so a selective filter never starves the top-k.

How many chunks to take for ``fetch`` notes follows the memory's chunks per note (a note's
chunks crowd the list in proportion), and a set small beside that list is scanned rather
than searched: the exact answer, for less than HNSW would cost (see :data:`SCAN_RATIO`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

from fortemi.inference import InferenceBackend, InferenceError
from fortemi.platform.database import Connection, set_local
from fortemi.platform.notes.models import NoteFilter
from fortemi.retrieval.conditions import note_conditions
from fortemi.retrieval.lexical import STATS_TTL_SECONDS
from fortemi.retrieval.models import SemanticModel
from fortemi.retrieval.query import ParsedQuery
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.sets import (
    MIN_DEFAULT_EF,
    EmbeddingSet,
    EmbeddingSets,
    composition_for,
    default_ef_search,
    set_name,
)

__all__ = [
    "MAX_CANDIDATES",
    "SCAN_RATIO",
    "SemanticAsk",
    "SemanticLeg",
    "SemanticUse",
    "candidates",
]

# pgvector's largest hnsw.ef_search: the most chunks one index search can return.
MAX_CANDIDATES = 1000
# A set of at most this many times the chunks wanted is scanned exactly, not searched. On
# SciFact's 10,416 vectors of 384 dimensions (PostgreSQL 16, pgvector 0.6), taking 300
# notes: HNSW p50 6.5 ms at ef 600, 9.3 at 720 and 15.8 at 900, where a scan for the 900
# nearest took 7.0 ms wherever the list stood. The two meet near a sixteenth of the set.
SCAN_RATIO = 16
# Chunks wanted per note, beside the memory's average chunks per note: neighbours of a
# query cluster in a few notes more than the average says. On SciFact (2.0 chunks a note,
# 300 notes wanted, 200 queries) 1.8 chunks a note fell short of 300 notes for 17 % of
# queries, 2.0 for 0.5 %, 2.2 for none.
CROWDING = 1.25


@dataclass(frozen=True, slots=True)
class SemanticAsk:
    """What the semantic leg is asked: the model and query vector, the query (its phrases
    and exclusions filter), the note filter, how many notes and chunks to take, the
    client's ef_search (None: the default for the set's size) and the one the
    transaction started with."""

    model: SemanticModel
    vector: npt.NDArray[np.float32]
    query: ParsedQuery
    note_filter: NoteFilter
    fetch: int
    ef: int | None
    started_ef: int


def candidates(fetch: int, chunks_per_note: float) -> int:
    """How many chunks to take so that, deduplicated to their notes, about ``fetch`` notes
    remain: ``CROWDING`` times the memory's chunks per note (within 1.25 and 3 per note),
    never more than one index search returns."""
    factor = min(3.0, max(1.25, CROWDING * chunks_per_note))
    return min(math.ceil(fetch * factor), MAX_CANDIDATES)


@dataclass(slots=True)
class SemanticUse:
    """How the semantic leg searched, over the memories of one search: each search it made,
    in order (``hnsw``, ``scan`` or ``exact``), and the ``hnsw.ef_search`` of each index
    search."""

    steps: list[str] = field(default_factory=list)
    ef: list[int] = field(default_factory=list)

    @property
    def path(self) -> str | None:
        """The steps, comma-separated; None when the leg made none."""
        return ",".join(self.steps) or None


class SemanticLeg:
    def __init__(
        self,
        backend: InferenceBackend | None,
        repository: RetrievalRepository,
        sets: EmbeddingSets,
        *,
        concepts: bool = False,
        cached_queries: int = 1024,
    ) -> None:
        """``cached_queries``: query vectors kept, least recently used out first (0: none)."""
        self._backend = backend
        self._concepts = concepts
        # (model, dimension, the text the model embeds) → its vector: a repeated query is not
        # embedded again. Vectors are never changed in place, so one can be shared.
        self._vectors: LRUCache[tuple[str, int, str], npt.NDArray[np.float32]] | None = (
            LRUCache(maxsize=cached_queries) if cached_queries else None
        )
        self._repository = repository
        self._sets = sets
        # (memory, set name) → (at, set, its size, the memory's notes): re-read after the same
        # few seconds, so a memory dropped and made again under its name never keeps its old
        # set's number for long, and the default ef_search follows the set's growth.
        self._known_sets: dict[tuple[str, str], tuple[float, EmbeddingSet, int, int]] = {}
        # memory → the hnsw.ef_search its last search used: the next transaction starts
        # with it, so the setting is changed (one more round trip) only when it moves.
        self._last_ef: dict[str, int] = {}

    def starting_ef(self, memory: str, asked: int | None) -> int:
        """The ``hnsw.ef_search`` a transaction on ``memory`` starts with: the client's, else
        the last one used there."""
        return asked or self._last_ef.get(memory, MIN_DEFAULT_EF)

    async def model(self) -> SemanticModel | None:
        """The backend's embedding model, None without a backend."""
        if self._backend is None:
            return None
        model = await self._backend.embedding_model()
        composition = composition_for(model.name, concepts=self._concepts)
        return SemanticModel(model.name, model.dimension, composition)

    async def query_vector(
        self, text: str
    ) -> tuple[SemanticModel | None, npt.NDArray[np.float32] | None, str | None]:
        """(model, query vector, None), or (None, None, why the semantic leg is out)."""
        try:
            semantic = await self.model()
            if semantic is None or self._backend is None:
                return None, None, "no embedding model is configured"
            composed = semantic.composition.query(text)
            key = (semantic.model, semantic.dimension, composed)
            vector = None if self._vectors is None else self._vectors.get(key)
            if vector is None:
                vectors = await self._backend.embed([composed])
                vector = np.asarray(vectors[0], dtype=np.float32)
                vector.setflags(write=False)
                if self._vectors is not None:
                    self._vectors[key] = vector
            return semantic, vector, None
        except InferenceError as exc:
            return None, None, f"the embedding backend failed: {exc.message}"

    async def rank(
        self, conn: Connection, memory: str, ask: SemanticAsk, used: SemanticUse
    ) -> list[tuple[UUID, float, int]] | None:
        """Up to ``fetch`` notes, best first: (note, cosine similarity, best chunk's id).
        None when the memory has no embeddings of this model yet. How it searched (the
        ``hnsw.ef_search`` it ran with, or a scan) goes to ``used``.

        The chunks taken follow the memory's chunks per note (:func:`candidates`); all of
        them, up to one list, when the memory has no more notes than are wanted. Unless
        the client set ``efSearch``, a set at most :data:`SCAN_RATIO` times that is scanned.
        Otherwise the candidate list is the client's ``efSearch``, else the default for the
        set's size (:func:`default_ef_search`), and at least the chunks taken; the
        transaction started with a guess and is corrected here when the guess was off. Too
        few distinct notes among the chunks: once more with proportionally more chunks.
        Too few notes passing the filters: every chunk passing them is read exactly.
        """
        known = await self._embedding_set(conn, memory, ask.model)
        if known is None:
            return None
        chosen, size, notes = known
        where = note_conditions(ask.note_filter, ask.query, ask.vector)
        chunks = candidates(ask.fetch, size / notes if notes > 0 else 1.0)
        if 0 < notes <= ask.fetch:  # every note is wanted: every chunk, in one list
            chunks = min(max(chunks, size), MAX_CANDIDATES)
        scan = ask.ef is None and chunks * SCAN_RATIO >= size
        started_ef = ask.started_ef
        while True:
            used.steps.append("scan" if scan else "hnsw")
            if not scan:
                ef = max(ask.ef if ask.ef is not None else default_ef_search(size), chunks)
                if ef != started_ef:
                    await set_local(conn, "hnsw.ef_search", ef)
                    started_ef = ef
                self._last_ef[memory] = ef
                used.ef.append(ef)
            rows = await self._repository.nearest(conn, chosen, where, chunks, ask.fetch, scan=scan)
            offered = rows[0].offered if rows else None
            if len(rows) >= ask.fetch or (offered is not None and offered < chunks):
                break  # enough notes, or every chunk of the set was offered
            distinct = rows[0].offered_notes if rows else None
            if distinct is None or distinct >= ask.fetch or chunks >= MAX_CANDIDATES:
                # The filters, not the crowding, left too few: read the filtered exactly.
                rows = await self._repository.exact(conn, chosen, where, ask.fetch)
                used.steps.append("exact")
                break
            # A few notes hold most of the nearest chunks: take more, as many more as the
            # shortfall says.
            chunks = min(
                math.ceil(chunks * ask.fetch / max(distinct, 1) * CROWDING), MAX_CANDIDATES
            )
        if not rows and not await self._repository.has_embeddings(conn, chosen):
            model = ask.model
            self._known_sets.pop(
                (memory, set_name(model.model, model.dimension, model.composition)), None
            )
            return None
        return [(row.note_id, 1.0 - row.distance, row.chunk_id) for row in rows]

    async def embedded_chunks(self, conn: Connection, model: SemanticModel) -> int:
        """How many chunks of the memory in ``conn``'s transaction ``model`` embedded."""
        chosen = await self._sets.find(conn, model.model, model.dimension, model.composition)
        return 0 if chosen is None else await self._repository.embedded_chunks(conn, chosen)

    async def _embedding_set(
        self, conn: Connection, memory: str, model: SemanticModel
    ) -> tuple[EmbeddingSet, int, int] | None:
        """The set to answer ``model``'s queries from in the memory (its own set, or while
        that one fills, the newest complete one: :meth:`EmbeddingSets.serving`), about how
        many vectors it holds and how many notes the memory has, remembered for a few
        seconds once it exists."""
        key = (memory, set_name(model.model, model.dimension, model.composition))
        now = time.monotonic()
        known = self._known_sets.get(key)
        if known is not None and now - known[0] < STATS_TTL_SECONDS:
            return known[1], known[2], known[3]
        chosen = await self._sets.serving(
            conn, memory, model.model, model.dimension, model.composition
        )
        if chosen is None:
            return None
        size, notes = await self._sets.size_estimate(conn, chosen)
        self._known_sets[key] = (now, chosen, size, notes)
        return chosen, size, notes
