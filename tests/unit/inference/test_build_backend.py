"""``build_backend`` picks the backend the settings ask for: Ollama when OLLAMA_HOST is
set, else an OpenAI-compatible server when its URL is, else the local CPU embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from fortemi.inference import (
    LocalEmbeddingBackend,
    OllamaBackend,
    OpenAICompatibleBackend,
    build_backend,
)
from fortemi.platform.settings import Settings


async def test_nothing_configured_means_the_local_embedder(tmp_path: Path) -> None:
    backend = build_backend(Settings(home=tmp_path))
    assert isinstance(backend, LocalEmbeddingBackend)
    assert backend.name == "local"
    assert not backend.can_generate
    await backend.aclose()


async def test_ollama_host_means_ollama_even_with_an_openai_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11434")
    monkeypatch.setenv("FORTEMI_OPENAI_BASE_URL", "http://127.0.0.1:8080")
    backend = build_backend(Settings(home=tmp_path))
    assert isinstance(backend, OllamaBackend)
    assert backend.name == "ollama"
    assert backend.can_generate
    await backend.aclose()


async def test_an_openai_url_without_ollama_means_the_openai_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORTEMI_OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("FORTEMI_OPENAI_API_KEY", "sk-secret")
    settings = Settings(home=tmp_path)
    assert "sk-secret" not in repr(settings)
    backend = build_backend(settings)
    assert isinstance(backend, OpenAICompatibleBackend)
    await backend.aclose()


async def test_a_blank_ollama_host_counts_as_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "  ")
    settings = Settings(home=tmp_path)
    assert settings.ollama_host is None
    backend = build_backend(settings)
    assert isinstance(backend, LocalEmbeddingBackend)
    await backend.aclose()


def test_an_openai_url_that_is_not_http_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="FORTEMI_OPENAI_BASE_URL"):
        Settings(home=tmp_path, openai_base_url="api.example.com")


def test_the_default_models_are_the_documented_ones(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    assert (
        settings.ollama_embed_model,
        settings.ollama_fast_model,
        settings.ollama_standard_model,
    ) == ("nomic-embed-text", "qwen3.5:9b", "qwen3.5:27b")
