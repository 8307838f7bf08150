"""Any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, LiteLLM, OpenAI itself),
through httpx: ``POST /v1/embeddings`` and ``POST /v1/chat/completions`` with a bearer key.

The base URL may be the server root or its ``/v1`` root; both work. The API has no way to
ask a model's input limit, so :meth:`embedding_model` reports ``max_tokens=None``; the
dimension is learnt from the first embedding (see :mod:`fortemi.inference._remote`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx

from fortemi.inference._http import bad_response, detail_of, error_for_status, error_for_transport
from fortemi.inference._remote import RemoteBackend
from fortemi.inference.backend import Generation, GenerationTier

__all__ = ["OpenAICompatibleBackend", "api_root"]


def api_root(base_url: str) -> str:
    """``base_url`` ending in ``/v1`` exactly once."""
    root = base_url.rstrip("/")
    return root if root.endswith("/v1") else f"{root}/v1"


class OpenAICompatibleBackend(RemoteBackend):
    """``transport`` replaces the network (httpx's ``MockTransport`` in a unit test)."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        embed_model: str = "text-embedding-3-small",
        generate_model: str = "gpt-4o-mini",
        timeout_seconds: float = 120.0,
        batch_size: int = 32,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(embed_model=embed_model, batch_size=batch_size)
        self._generate_model = generate_model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=api_root(base_url),
            headers=headers,
            timeout=httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 10.0)),
            transport=transport,
        )

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model")
        try:
            response = await self._client.post(path, json=body)
        except httpx.TransportError as exc:
            raise error_for_transport(exc, backend=self.name) from exc
        if not response.is_success:
            raise error_for_status(
                response.status_code,
                detail_of(response.text),
                response.headers,
                backend=self.name,
                model=model if isinstance(model, str) else None,
            )
        try:
            data = response.json()
        except ValueError as exc:
            raise bad_response(self.name, "the body is not JSON") from exc
        if not isinstance(data, dict):
            raise bad_response(self.name, "the body is not a JSON object")
        return data

    async def _embed_batch(self, texts: list[str], model: str) -> object:
        data = await self._post(
            "/embeddings", {"model": model, "input": texts, "encoding_format": "float"}
        )
        items = data.get("data")
        if not isinstance(items, list) or not all(
            isinstance(item, dict) and isinstance(item.get("index"), int) for item in items
        ):
            raise bad_response(self.name, "no indexed embedding list")
        # Servers may answer out of order; "index" says which input each vector is for.
        ordered = sorted(items, key=lambda item: int(item["index"]))
        if [item["index"] for item in ordered] != list(range(len(texts))):
            raise bad_response(self.name, "embedding indexes do not match the inputs")
        return [item.get("embedding") for item in ordered]

    async def _max_tokens(self, model: str) -> int | None:
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
        chosen = model or self._generate_model  # one configured model serves both tiers
        messages = [{"role": "system", "content": system}] if system is not None else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {"model": chosen, "messages": messages, "stream": False}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if json_schema is not None:
            # Structured outputs; not "strict": strict mode refuses schemas with bounds
            # (minimum, maxItems, ...), which the caller validates anyway.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(json_schema)},
            }
        data = await self._post("/chat/completions", body)
        try:
            choice = data["choices"][0]
            message = choice["message"]
            text = message["content"] or ""
            refusal = message.get("refusal")
            usage = data.get("usage") or {}
            return Generation(
                text=str(text),
                model=str(data.get("model") or chosen),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                finish_reason=choice.get("finish_reason"),
                refusal=str(refusal) if refusal else None,
            )
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise bad_response(self.name, "no choices[0].message.content") from exc

    async def generate_stream(
        self,
        prompt: str,
        *,
        tier: GenerationTier = "fast",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> AsyncGenerator[str | Generation, None]:
        """``stream: true``: server-sent events, one ``data:`` line per delta, ended by
        ``data: [DONE]``; the usage comes in a last chunk when the server honours
        ``stream_options.include_usage`` (else the counts stay None)."""
        chosen = self._generate_model
        body: dict[str, Any] = {
            "model": chosen,
            "messages": [{"role": "user", "content": prompt}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        pieces: list[str] = []
        model, finish = chosen, None
        usage: dict[str, Any] = {}
        try:
            async with self._client.stream("POST", "/chat/completions", json=body) as response:
                if not response.is_success:
                    await response.aread()
                    raise error_for_status(
                        response.status_code,
                        detail_of(response.text),
                        response.headers,
                        backend=self.name,
                        model=chosen,
                    )
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank separators, comments, event names
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    chunk = _event(self.name, data)
                    model = str(chunk.get("model") or model)
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            pieces.append(str(text))
                            yield str(text)
                        finish = choice.get("finish_reason") or finish
        except httpx.TransportError as exc:
            raise error_for_transport(exc, backend=self.name) from exc
        yield Generation(
            text="".join(pieces),
            model=model,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            finish_reason=finish,
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def _event(backend: str, data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise bad_response(backend, "a stream event is not JSON") from exc
    if not isinstance(chunk, dict):
        raise bad_response(backend, "a stream event is not a JSON object")
    return chunk
