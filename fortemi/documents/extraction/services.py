"""The services some adapters need, each behind a small protocol: a model that reads an
image (Ollama vision, for descriptions and OCR) and a Whisper-compatible transcription
server. Their failures are translated here, once, into
:class:`~fortemi.documents.extraction._run.Unavailable`: the file is not at fault, so it is
``SKIPPED`` with the reason, never ``FAILED``.

Both clients are synchronous: extraction runs in a worker thread.
"""

from __future__ import annotations

import base64
from typing import Any, Protocol

import httpx
import ollama
from pydantic import SecretStr

from fortemi.documents.extraction._run import Unavailable

__all__ = ["ImageReader", "OllamaImageReader", "Transcriber", "WhisperTranscriber"]

TRANSCRIPTIONS = "/v1/audio/transcriptions"


class ImageReader(Protocol):
    """A model that answers ``prompt`` about an image (PNG, JPEG, WebP bytes)."""

    model: str

    def read_image(self, image: bytes, prompt: str) -> str: ...


class Transcriber(Protocol):
    model: str

    def transcribe(self, audio: bytes, filename: str, mime: str) -> tuple[str, dict[str, Any]]:
        """The audio's text and what the server says of it (language, duration)."""
        ...


class OllamaImageReader:
    """A vision model on Ollama (``/api/generate`` with ``images``)."""

    def __init__(self, host: str, model: str, *, timeout_seconds: float = 120.0) -> None:
        self.host = host
        self.model = model
        self._timeout = httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 10.0))

    def read_image(self, image: bytes, prompt: str) -> str:
        encoded = base64.b64encode(image).decode("ascii")
        try:
            # A client per call: a model's answer takes seconds, a connection microseconds,
            # and nothing is left open between extractions.
            with ollama.Client(self.host, timeout=self._timeout) as client:
                answer = client.generate(
                    model=self.model, prompt=prompt, images=[encoded], options={"temperature": 0}
                )
        except ollama.ResponseError as exc:
            raise Unavailable(
                "service_error", f"Ollama answered {exc.status_code} for {self.model}: {exc.error}"
            ) from exc
        except (httpx.HTTPError, ConnectionError) as exc:
            raise Unavailable(
                "service_unavailable", f"Ollama did not answer ({type(exc).__name__})"
            ) from exc
        return str(answer.response or "").strip()


class WhisperTranscriber:
    """A server speaking OpenAI's ``POST /v1/audio/transcriptions`` (faster-whisper-server,
    whisper.cpp's server, LocalAI, speaches, OpenAI itself): multipart ``file`` and
    ``model``, JSON ``{"text": ...}`` back."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: SecretStr | None = None,
        timeout_seconds: float = 120.0,
    ) -> None:
        base = url.rstrip("/")
        self.endpoint = base if base.endswith(TRANSCRIPTIONS) else base + TRANSCRIPTIONS
        self.model = model
        self._api_key = api_key
        self._timeout = httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 10.0))

    def transcribe(self, audio: bytes, filename: str, mime: str) -> tuple[str, dict[str, Any]]:
        headers = {}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        try:
            with httpx.Client(timeout=self._timeout) as client:
                response = client.post(
                    self.endpoint,
                    headers=headers,
                    data={"model": self.model, "response_format": "verbose_json"},
                    files={"file": (filename, audio, mime)},
                )
        except httpx.HTTPError as exc:
            raise Unavailable(
                "service_unavailable",
                f"the transcription server did not answer ({type(exc).__name__})",
            ) from exc
        if response.status_code >= 400:
            raise Unavailable(
                "service_error",
                f"the transcription server answered {response.status_code}: {response.text[:200]}",
            )
        try:
            body = response.json()
            text = str(body["text"])
        except (ValueError, KeyError, TypeError) as exc:
            raise Unavailable(
                "service_error", "the transcription server's answer has no text"
            ) from exc
        found = {k: body[k] for k in ("language", "duration") if k in body}
        return text.strip(), found
