"""The semantic leg: the chunks nearest the query vector (cosine) from the embedding set's
HNSW index, the best chunk per note, then the filters on those notes. When the filters
leave too few notes from what the index returned, the filtered chunks are read exactly
instead, so a selective filter never starves the top-k.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
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

__all__ = ["SemanticAsk", "SemanticLeg"]


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
    chunks: int
    ef: int | None
    started_ef: int


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
        # (memory, set name) → (at, set, its size): re-read after the same few seconds, so a
        # memory dropped and made again under its name never keeps its old set's number for
        # long, and the default ef_search follows the set's growth.
        self._known_sets: dict[tuple[str, str], tuple[float, EmbeddingSet, int]] = {}
        # memory → the hnsw.ef_search its last search used: the next transaction starts
        # with it, so the setting is changed (one more round trip) only when it moves.
        self._last_ef: dict[str, int] = {}

    def starting_ef(self, memory: str, asked: int | None, chunks: int) -> int:
        """The ``hnsw.ef_search`` a transaction on ``memory`` starts with: the client's, else
        the last one used there, and at least ``chunks``."""
        return max(asked or self._last_ef.get(memory, MIN_DEFAULT_EF), chunks)

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
        self, conn: Connection, memory: str, ask: SemanticAsk, used_ef: list[int]
    ) -> list[tuple[UUID, float, int]] | None:
        """Up to ``fetch`` notes, best first: (note, cosine similarity, best chunk's id).
        None when the memory has no embeddings of this model yet. The ``hnsw.ef_search``
        it ran with goes to ``used_ef``.

        The candidate list is the client's ``efSearch``, else the default for the set's
        size (:func:`default_ef_search`), and at least ``chunks``; the transaction started
        with a guess and is corrected here, once the set is known, when the guess was off.
        """
        known = await self._embedding_set(conn, memory, ask.model)
        if known is None:
            return None
        chosen, size = known
        ef = max(ask.ef if ask.ef is not None else default_ef_search(size), ask.chunks)
        if ef != ask.started_ef:
            await set_local(conn, "hnsw.ef_search", ef)
        self._last_ef[memory] = ef
        used_ef.append(ef)
        where = note_conditions(ask.note_filter, ask.query, ask.vector)
        rows = await self._repository.nearest(conn, chosen, where, ask.chunks, ask.fetch)
        if len(rows) < ask.fetch and (not rows or rows[0].offered == ask.chunks):
            rows = await self._repository.exact(conn, chosen, where, ask.fetch)
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
    ) -> tuple[EmbeddingSet, int] | None:
        """The set to answer ``model``'s queries from in the memory (its own set, or while
        that one fills, the newest complete one: :meth:`EmbeddingSets.serving`) and about
        how many vectors it holds, remembered for a few seconds once it exists."""
        key = (memory, set_name(model.model, model.dimension, model.composition))
        now = time.monotonic()
        known = self._known_sets.get(key)
        if known is not None and now - known[0] < STATS_TTL_SECONDS:
            return known[1], known[2]
        chosen = await self._sets.serving(
            conn, memory, model.model, model.dimension, model.composition
        )
        if chosen is None:
            return None
        size = await self._sets.chunk_estimate(conn, chosen)
        self._known_sets[key] = (now, chosen, size)
        return chosen, size
