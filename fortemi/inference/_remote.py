"""What the two remote adapters share: batching, checking and normalising embeddings, and
learning the embedding dimension from the server.

The dimension of a remote model is not configured: the first embedding of the default
model fixes it (``embedding_model()`` makes a one-text probe when nothing was embedded
yet). A later answer of another dimension means the model behind the name changed, and
its vectors could not be compared with stored ones: that is refused, not mixed in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from fortemi.inference._http import bad_response
from fortemi.inference.backend import EmbeddingModel, Embeddings, normalized
from fortemi.inference.errors import InferenceRejected

__all__ = ["RemoteBackend"]

_PROBE = "dimension probe"


class RemoteBackend(ABC):
    name: str
    can_generate = True

    def __init__(self, *, embed_model: str, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._embed_model = embed_model
        self._batch_size = batch_size
        self._dimension: int | None = None
        self._described: EmbeddingModel | None = None

    @abstractmethod
    async def _embed_batch(self, texts: list[str], model: str) -> object:
        """The server's vectors for ``texts`` (one list of floats per text), unchecked."""

    @abstractmethod
    async def _max_tokens(self, model: str) -> int | None:
        """The model's input limit, if the server tells."""

    async def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        chosen = model or self._embed_model
        if not texts:
            width = (await self.embedding_model()).dimension if chosen == self._embed_model else 0
            return np.empty((0, width), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self._batch_size):
            chunk = list(texts[start : start + self._batch_size])
            parts.append(self._checked(await self._embed_batch(chunk, chosen), len(chunk)))
        if len({part.shape[1] for part in parts}) > 1:
            raise bad_response(self.name, "batches of different dimensions")
        vectors = normalized(np.concatenate(parts))
        if chosen == self._embed_model:
            self._note_dimension(vectors.shape[1])
        return vectors

    async def embedding_model(self) -> EmbeddingModel:
        if self._described is None:
            dimension = self._dimension
            if dimension is None:
                dimension = (await self.embed([_PROBE])).shape[1]
            max_tokens = await self._max_tokens(self._embed_model)
            self._described = EmbeddingModel(self._embed_model, dimension, max_tokens)
        return self._described

    def _checked(self, vectors: object, expected: int) -> Embeddings:
        try:
            array = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise bad_response(
                self.name, "embeddings are not a list of equal-length vectors"
            ) from exc
        if array.ndim != 2 or array.shape[0] != expected or array.shape[1] == 0:
            raise bad_response(self.name, f"{array.shape} embeddings for {expected} inputs")
        if not np.isfinite(array).all():
            raise bad_response(self.name, "embeddings hold non-finite values")
        return array

    def _note_dimension(self, dimension: int) -> None:
        if self._dimension is None:
            self._dimension = dimension
        elif dimension != self._dimension:
            raise InferenceRejected(
                f"{self._embed_model!r} now returns {dimension}-dimensional vectors, not "
                f"{self._dimension}: the model changed; configure a new embedding set",
                backend=self.name,
                failure_code="inference_dimension_changed",
            )
