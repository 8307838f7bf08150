"""Ollama, through the official ``ollama`` client (``/api/embed``, ``/api/generate``,
``/api/show``).

Failures are translated here and nowhere else: an httpx response hook turns every HTTP
error status into an :mod:`~fortemi.inference.errors` class while the headers are still
at hand (the client's own ``ResponseError`` drops ``Retry-After``), and transport errors
(the client re-raises httpx's ``ConnectError`` as the built-in ``ConnectionError``) are
translated around each call.

The embedding dimension is learnt from the server (see :mod:`fortemi.inference._remote`);
the input limit is the model's ``<architecture>.context_length`` from ``/api/show``.
Inputs longer than the server's context are truncated by Ollama (``truncate=True``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Mapping
from typing import Any, TypeVar

import httpx
import ollama

from fortemi.inference._http import bad_response, detail_of, error_for_status, error_for_transport
from fortemi.inference._remote import RemoteBackend
from fortemi.inference.backend import Generation, GenerationTier
from fortemi.inference.errors import InferenceError

__all__ = ["OllamaBackend"]

T = TypeVar("T")


class OllamaBackend(RemoteBackend):
    """Embeddings and generation on an Ollama server at ``host`` (``OLLAMA_HOST`` syntax:
    ``http://host:11434``, ``host:port`` or a bare host)."""

    name = "ollama"

    def __init__(
        self,
        host: str,
        *,
        embed_model: str = "nomic-embed-text",
        fast_model: str = "qwen3.5:9b",
        standard_model: str = "qwen3.5:27b",
        timeout_seconds: float = 120.0,
        batch_size: int = 32,
    ) -> None:
        super().__init__(embed_model=embed_model, batch_size=batch_size)
        self._models: dict[GenerationTier, str] = {"fast": fast_model, "standard": standard_model}
        self._client = ollama.AsyncClient(
            host,
            timeout=httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 10.0)),
            event_hooks={"response": [self._raise_for_status]},
        )

    async def _raise_for_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        await response.aread()
        raise error_for_status(
            response.status_code,
            detail_of(response.text),
            response.headers,
            backend=self.name,
            model=_model_of(response.request),
        )

    async def _call(self, model: str, request: Awaitable[T]) -> T:
        try:
            return await request
        except InferenceError:
            raise
        except ollama.ResponseError as exc:  # a streamed error, or a client that skips hooks
            raise error_for_status(
                exc.status_code, exc.error, {}, backend=self.name, model=model
            ) from exc
        except (httpx.TransportError, ConnectionError) as exc:
            raise error_for_transport(exc, backend=self.name) from exc
        except ValueError as exc:  # a 2xx body that is not JSON or not the API's shape
            raise bad_response(self.name, type(exc).__name__) from exc

    async def _embed_batch(self, texts: list[str], model: str) -> object:
        response = await self._call(
            model, self._client.embed(model=model, input=texts, truncate=True)
        )
        return response.embeddings

    async def _max_tokens(self, model: str) -> int | None:
        shown = await self._call(model, self._client.show(model))
        for key, value in (shown.modelinfo or {}).items():
            if key.endswith(".context_length") and isinstance(value, int):
                return value
        return None

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
        chosen = model or self._models[tier]
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        # Only what was given: an empty "system" would replace the Modelfile's own.
        extra: dict[str, Any] = {"options": options} if options else {}
        if system is not None:
            extra["system"] = system
        if json_schema is not None:
            extra["format"] = dict(json_schema)  # Ollama's structured outputs (>= 0.5)
        response = await self._call(
            chosen, self._client.generate(model=chosen, prompt=prompt, stream=False, **extra)
        )
        if response.response is None:
            raise bad_response(self.name, "no response text")
        return Generation(
            text=response.response,
            model=response.model or chosen,
            prompt_tokens=response.prompt_eval_count,
            completion_tokens=response.eval_count,
            finish_reason=response.done_reason,
        )

    async def generate_stream(
        self,
        prompt: str,
        *,
        tier: GenerationTier = "fast",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[str | Generation, None]:
        """``/api/generate`` with ``stream: true``: Ollama sends one JSON object per line,
        each with a piece of ``response``; the last has ``done`` and the counts."""
        chosen = self._models[tier]
        options: dict[str, Any] = {}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        extra: dict[str, Any] = {"options": options} if options else {}
        stream = await self._call(
            chosen, self._client.generate(model=chosen, prompt=prompt, stream=True, **extra)
        )
        pieces: list[str] = []
        try:
            while True:
                try:
                    part = await self._call(chosen, anext(stream))
                except StopAsyncIteration:
                    raise bad_response(self.name, "the stream ended before done") from None
                if part.response:
                    pieces.append(part.response)
                    yield part.response
                if part.done:
                    yield Generation(
                        text="".join(pieces),
                        model=part.model or chosen,
                        prompt_tokens=part.prompt_eval_count,
                        completion_tokens=part.eval_count,
                        finish_reason=part.done_reason,
                    )
                    return
        finally:
            if isinstance(stream, AsyncGenerator):  # the client's stream: end its request
                await stream.aclose()

    async def aclose(self) -> None:
        await self._client.close()  # type: ignore[no-untyped-call]  # ollama leaves it unannotated


def _model_of(request: httpx.Request) -> str | None:
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None
