"""The service doubles the extraction adapters talk to over real sockets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.ollama_double import OllamaDouble
from tests.support.whisper_double import WhisperDouble

WHISPER_KEY = "whisper-test-key"


@pytest.fixture(scope="module")
def ollama_double() -> Iterator[OllamaDouble]:
    with OllamaDouble() as double:
        double.vision.update({"llava-test", "ocr-test"})
        yield double


@pytest.fixture(scope="module")
def whisper_double() -> Iterator[WhisperDouble]:
    with WhisperDouble(api_key=WHISPER_KEY) as double:
        yield double
