"""The seam between Fortemi and whatever computes embeddings and generates text.

Three adapters implement :class:`InferenceBackend`: the local CPU embedder
(:mod:`fortemi.inference.local`, embeddings only), Ollama (:mod:`fortemi.inference.ollama`)
and any OpenAI-compatible server (:mod:`fortemi.inference.openai`). Every adapter returns
embeddings in one shape (float32, one L2-normalised row per text, so a dot product is the
cosine) and raises only :mod:`fortemi.inference.errors`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EmbeddingModel",
    "Embeddings",
    "Generation",
    "GenerationTier",
    "InferenceBackend",
    "StreamingBackend",
    "generate_stream",
    "normalized",
]

Embeddings = NDArray[np.float32]
"""(n, dimension) float32, rows of unit length (a zero vector stays zero)."""

GenerationTier = Literal["fast", "standard"]
"""Which configured generation model answers: the small fast one or the standard one."""


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """What an embedding set records about the model that filled it.

    ``max_tokens`` is the input length past which the backend truncates (None: unknown).
    """

    name: str
    dimension: int
    max_tokens: int | None


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None  # "stop", "length", ... as the backend says
    # The model declined to answer (OpenAI's ``message.refusal``); ``text`` is then empty.
    refusal: str | None = None


class InferenceBackend(Protocol):
    """Embeddings and text generation, wherever they run.

    Methods are coroutines; CPU-bound work runs off the event loop. Every failure is an
    :class:`~fortemi.inference.errors.InferenceError` carrying its job failure class.
    """

    @property
    def name(self) -> str:
        """ "local", "ollama" or "openai"."""
        ...

    @property
    def can_generate(self) -> bool:
        """False for a backend that only embeds; callers fall back and say so."""
        ...

    async def embed(self, texts: Sequence[str], *, model: str | None = None) -> Embeddings:
        """One unit-length float32 row per text, in order; ``model`` overrides the default."""
        ...

    async def embedding_model(self) -> EmbeddingModel:
        """The default embedding model: name, dimension, input limit.

        Remote backends learn the dimension from the server (once, then cached), which is
        why this is a coroutine.
        """
        ...

    async def generate(
        self,
        prompt: str,
        *,
        tier: GenerationTier = "fast",
        model: str | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        json_schema: Mapping[str, Any] | None = None,
    ) -> Generation:
        """A completion of ``prompt`` by the tier's model (or ``model``).

        ``json_schema`` asks for structured output: the server constrains the answer to
        JSON of that schema (Ollama's ``format``, OpenAI's ``response_format``). A server
        may still answer otherwise (a refusal, an older model): callers validate.
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class StreamingBackend(Protocol):
    """A backend that can send a completion as it is generated (Ollama's NDJSON, an
    OpenAI-compatible server's server-sent events)."""

    def generate_stream(
        self,
        prompt: str,
        *,
        tier: GenerationTier = "fast",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[str | Generation, None]:
        """The completion's text in pieces as they come, then its :class:`Generation`
        (the whole text and the counts) as the last item. Closing it early closes the
        request."""
        ...


async def generate_stream(
    backend: InferenceBackend,
    prompt: str,
    *,
    tier: GenerationTier = "fast",
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> AsyncGenerator[str | Generation, None]:
    """Text pieces, then the :class:`Generation`: streamed when ``backend`` can stream,
    else one piece holding the whole answer."""
    if isinstance(backend, StreamingBackend):
        stream = backend.generate_stream(
            prompt, tier=tier, max_tokens=max_tokens, temperature=temperature
        )
        async with aclosing(stream):  # a consumer that stops early ends the request
            async for item in stream:
                yield item
        return
    generation = await backend.generate(
        prompt, tier=tier, max_tokens=max_tokens, temperature=temperature
    )
    if generation.text:
        yield generation.text
    yield generation


def normalized(vectors: NDArray[np.floating]) -> Embeddings:
    """``vectors`` as float32 with each row scaled to unit length (zero rows stay zero)."""
    out = np.array(vectors, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.maximum(norms, np.float32(1e-12))
    return out
