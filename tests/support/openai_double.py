"""An OpenAI-compatible server double (``/v1/embeddings``, ``/v1/chat/completions``).

Served like :class:`~tests.support.ollama_double.OllamaDouble` and scripted the same way:
the failure model names of :data:`~tests.support.ollama_double.FAILURE_MODELS`, and 404
``model_not_found`` for unknown models. Error bodies have OpenAI's shape
(``{"error": {"message", "type", "code"}}``). With ``api_key`` set, any other bearer
token gets 401. Embeddings come back in reverse input order, each with its ``index``,
which the API allows and a client must honour.

``replies`` scripts a model's answer text (model name → content) and ``refusals`` a
refusal (model name → ``message.refusal``, with ``content`` null, as OpenAI answers a
structured-output request it declines). A request with ``"stream": true`` is answered
with server-sent events: one ``chat.completion.chunk`` per word, then one with the
``finish_reason``, then the usage chunk when ``stream_options.include_usage`` asks for
it, then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.ollama_double import ServedApp, double_vector

__all__ = ["OpenAIDouble"]


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


class OpenAIDouble(ServedApp):
    def __init__(self, api_key: str | None = "sk-test-key") -> None:
        super().__init__(
            [
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )
        self.api_key = api_key
        self.dimensions: dict[str, int] = {"text-embedding-3-small": 256}
        self.generators = {"gpt-4o-mini"}
        self.authorizations: list[str | None] = []
        self.replies: dict[str, str] = {}
        self.refusals: dict[str, str] = {}

    def __enter__(self) -> OpenAIDouble:
        super().__enter__()
        return self

    async def _refusal(self, request: Request, body: Any) -> Response | None:
        authorization = request.headers.get("authorization")
        self.authorizations.append(authorization)
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided", "invalid_api_key")
        model = body["model"]
        if model == "fail-rate-limit":
            return _error(429, "Rate limit reached", "rate_limit_exceeded", {"Retry-After": "7"})
        if model == "fail-busy":
            return _error(503, "The engine is currently overloaded", "overloaded")
        if model == "fail-server":
            return _error(500, "The server had an error", "server_error")
        if model == "fail-bad-request":
            return _error(400, "'input' is a required property", "invalid_request")
        if model == "fail-garbage":
            return Response("<html>proxy says hi</html>", media_type="text/html")
        if model == "fail-slow":
            await self._stall()
            return _error(500, "too slow", "server_error")
        if model not in self.dimensions and model not in self.generators:
            return _error(404, f"The model `{model}` does not exist", "model_not_found")
        return None

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        if (refusal := await self._refusal(request, body)) is not None:
            return refusal
        model = body["model"]
        inputs = body["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": double_vector(t, self.dimensions[model]),
            }
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(text.split()) for text in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data[::-1],
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _chat(self, request: Request) -> Response:
        body = await self._record(request)
        if (refusal := await self._refusal(request, body)) is not None:
            return refusal
        prompt = " ".join(str(message["content"]) for message in body["messages"])
        model = body["model"]
        declined = self.refusals.get(model)
        text: str | None
        if declined is not None:
            text, cut = None, False
        elif model in self.replies:
            text, cut = self.replies[model], False
        else:
            words = f"echo: {prompt}".split()
            limit = body.get("max_tokens")
            cut = limit is not None and len(words) > limit
            text = " ".join(words[:limit] if cut else words)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if declined is not None:
            message["refusal"] = declined
        completion_tokens = len((text or declined or "").split())
        usage = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": completion_tokens,
            "total_tokens": len(prompt.split()) + completion_tokens,
        }
        if body.get("stream") is True:
            return self._events(model, text or "", "length" if cut else "stop", body, usage)
        return JSONResponse(
            {
                "id": "chatcmpl-double",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "length" if cut else "stop",
                    }
                ],
                "usage": usage,
            }
        )

    def _events(
        self, model: str, text: str, finish: str, body: Any, usage: dict[str, int]
    ) -> Response:
        words = text.split(" ") if text else []
        deltas = [word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words)]
        base = {"id": "chatcmpl-double", "object": "chat.completion.chunk", "model": model}

        def event(choices: list[dict[str, Any]], **extra: Any) -> str:
            return f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n"

        async def events() -> Any:
            yield ": a comment line, as some servers send\n\n"
            for delta in deltas:
                yield event([{"index": 0, "delta": {"content": delta}, "finish_reason": None}])
            yield event([{"index": 0, "delta": {}, "finish_reason": finish}])
            if (body.get("stream_options") or {}).get("include_usage"):
                yield event([], usage=usage)
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")
