"""The inference servers, as doubles on real sockets: one Ollama and one OpenAI-compatible
server for the whole session (failures are picked by model name, so tests share them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.ollama_double import OllamaDouble
from tests.support.openai_double import OpenAIDouble


@pytest.fixture(scope="session")
def ollama_double() -> Iterator[OllamaDouble]:
    with OllamaDouble() as double:
        yield double


@pytest.fixture(scope="session")
def openai_double() -> Iterator[OpenAIDouble]:
    with OpenAIDouble() as double:
        yield double
