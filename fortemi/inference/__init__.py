"""Embeddings and text generation behind one protocol, with three adapters.

:func:`build_backend` picks one from the settings: ``OLLAMA_HOST`` set → Ollama; else
``FORTEMI_OPENAI_BASE_URL`` set → that OpenAI-compatible server; else the local CPU
embedder (embeddings only: ``can_generate`` is False and ``generate`` is refused).
"""

from __future__ import annotations

from fortemi.inference.backend import (
    EmbeddingModel,
    Embeddings,
    Generation,
    GenerationTier,
    InferenceBackend,
    StreamingBackend,
    generate_stream,
    normalized,
)
from fortemi.inference.errors import (
    InferenceError,
    InferenceRateLimited,
    InferenceRejected,
    InferenceTimeout,
    InferenceUnavailable,
    outcome_for,
)
from fortemi.inference.local import LocalEmbeddingBackend
from fortemi.inference.ollama import OllamaBackend
from fortemi.inference.openai import OpenAICompatibleBackend
from fortemi.platform.settings import Settings

__all__ = [
    "EmbeddingModel",
    "Embeddings",
    "Generation",
    "GenerationTier",
    "InferenceBackend",
    "InferenceError",
    "InferenceRateLimited",
    "InferenceRejected",
    "InferenceTimeout",
    "InferenceUnavailable",
    "LocalEmbeddingBackend",
    "OllamaBackend",
    "OpenAICompatibleBackend",
    "StreamingBackend",
    "build_backend",
    "generate_stream",
    "normalized",
    "outcome_for",
]


def build_backend(settings: Settings) -> InferenceBackend:
    """The backend the settings ask for; nothing connects or loads until first use."""
    if settings.ollama_host is not None:
        return OllamaBackend(
            settings.ollama_host,
            embed_model=settings.ollama_embed_model,
            fast_model=settings.ollama_fast_model,
            standard_model=settings.ollama_standard_model,
            timeout_seconds=settings.inference_timeout_seconds,
            batch_size=settings.embed_batch_size,
        )
    if settings.openai_base_url is not None:
        key = settings.openai_api_key
        return OpenAICompatibleBackend(
            settings.openai_base_url,
            api_key=key.get_secret_value() if key is not None else None,
            embed_model=settings.openai_embed_model,
            generate_model=settings.openai_generate_model,
            timeout_seconds=settings.inference_timeout_seconds,
            batch_size=settings.embed_batch_size,
        )
    return LocalEmbeddingBackend(
        settings.local_embed_model_dir,
        batch_size=settings.embed_batch_size,
        threads=settings.local_embed_threads,
    )
