"""An Ollama server double: it stands in for Ollama, which does not run here.

It speaks the Ollama HTTP API the adapter uses (``/api/embed``, ``/api/generate``,
``/api/show``, ``/api/tags``) over a real socket: a Starlette app served by uvicorn on
127.0.0.1 (a free port) in a background thread, like the OIDC double. Its answers are
deterministic and carry no model: an embedding is a pseudo-random vector seeded by the
text's hash (:func:`double_vector`, deliberately not unit length, so tests see the adapter
normalise), and a completion echoes the prompt.

Failures are chosen by model name, so tests can run side by side on one server:

=====================  ============================================================
``fail-rate-limit``    429 with ``Retry-After: 7``
``fail-busy``          503 "server busy" (Ollama's full request queue)
``fail-server``        500 "llama runner process has terminated"
``fail-bad-request``   400
``fail-slow``          answers after ``slow_seconds`` (a client with a shorter timeout
                       times out)
``fail-garbage``       200 with a body that is not JSON
any unknown name       404 "model ... not found, try pulling it first", as Ollama says
=====================  ============================================================

``requests`` records ``(path, json body)`` of every API call (a structured-output request
carries its JSON schema as ``format``); ``dimensions`` maps each embedding model to its
vector size and may be changed mid-test. ``replies`` scripts what a generation model
answers instead of the echo: model name → the response text (JSON, malformed JSON, a
refusal in prose, as a real model might); ``scripts`` queues answers per model, each
``(text, done_reason)`` used once and in order (an empty answer, one cut off by length).

``/api/generate`` streams when asked (``"stream": true``): NDJSON, one object per word of
the answer, then a last one with ``done``, ``done_reason`` and the counts. Its
``prompt_eval_count`` is the prompt's words + 3; with ``prefix_cache`` on, only the words
after those it shares with the model's previous prompt (as Ollama skips the prefix whose
key/value state it kept). While ``hold_streams`` is set, a stream waits after its first
piece, so a test can act while an answer is being written.

**Vision models**: a model named in ``vision`` takes ``images`` (base64, as Ollama's
``/api/generate`` does) and, unless ``replies`` or ``scripts`` say otherwise, answers
``an image of N bytes`` for the first one, so a test sees that the image arrived whole.

**Extractive reader mode**: a generation model named in ``extractive`` answers as a
deterministic extractive reader (:func:`extractive_answer`) instead of echoing: it reads
the prompt's numbered chunks (``[n] source`` then the chunk's text) and its ``Question:``
line, scores each chunk by how many distinct question words (lower-cased, three letters
or more, common function words left out) its text holds, and cites every chunk whose
overlap is more than half the best one's, each with its first sentence. Without any
overlap it says it does not know and cites nothing. It stands in for a model that cites
what it uses, so that the share of the context it cites can be measured without one.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import re
import socket
import threading
import time
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["FAILURE_MODELS", "OllamaDouble", "ServedApp", "double_vector", "extractive_answer"]

FAILURE_MODELS = (
    "fail-rate-limit",
    "fail-busy",
    "fail-server",
    "fail-bad-request",
    "fail-slow",
    "fail-garbage",
)


def double_vector(text: str, dimension: int) -> list[float]:
    """The double's embedding of ``text``: seeded by its hash, norm about 3 * sqrt(dim)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")
    vector = np.random.default_rng(seed).standard_normal(dimension) * 3.0
    return [float(value) for value in vector]


# Function words that say nothing about what a chunk is about: a hand-written list, since
# the extractive reader must stay deterministic and free of any model or corpus.
_STOP = frozenset(
    "the and for are but not you your with this that from have has had was were will can "
    "how what when where which who whom why does did doing done into onto about than then "
    "there their them they its it's our out all any some such only own same too very just "
    "should would could may might must shall been being also each other more most".split()
)
_CHUNK = re.compile(r"^\[(\d+)\] [^\n]*\n(.*?)(?=^\[\d+\] |^Question: )", re.M | re.S)
_QUESTION = re.compile(r"^Question: (.*)$", re.M)
_WORD = re.compile(r"[^\W_]{3,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _STOP}


def extractive_answer(prompt: str) -> str:
    """The extractive reader's answer to a retrieval prompt: the first sentence of every
    numbered chunk holding more than half as many distinct question words as the best
    chunk, each cited as ``[n]``, in the prompt's order."""
    asked = _QUESTION.findall(prompt)
    question = _words(asked[-1]) if asked else set()
    chunks = [(int(number), text.strip()) for number, text in _CHUNK.findall(prompt)]
    overlaps = {number: len(question & _words(text)) for number, text in chunks}
    best = max(overlaps.values(), default=0)
    if best == 0:
        return "I do not know: the chunks do not say."
    cited = [(n, text) for n, text in chunks if overlaps[n] > best / 2]
    return " ".join(f"{_first_sentence(text)} [{n}]" for n, text in cited)


def _first_sentence(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return _SENTENCE.split(" ".join(lines) or text, maxsplit=1)[0].strip()


class ServedApp:
    """A Starlette app on uvicorn on a free loopback port, in a thread. A context manager."""

    slow_seconds = 2.0

    def __init__(self, routes: list[Route]) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.requests: list[tuple[str, Any]] = []
        self._closing = False
        config = uvicorn.Config(
            Starlette(routes=routes),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServedApp:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                self._socket.close()
                raise RuntimeError(f"{type(self).__name__} did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing = True  # a slow answer still pending gives up at once
        self._server.should_exit = True
        self._thread.join()
        self._socket.close()

    async def _stall(self) -> None:
        # Polled, not awaited on an Event: __exit__ runs on another thread and loop.
        for _ in range(math.ceil(self.slow_seconds / 0.01)):
            if self._closing:
                return
            await asyncio.sleep(0.01)

    async def _record(self, request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            body = None
        self.requests.append((request.url.path, body))
        return body

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


class OllamaDouble(ServedApp):
    """Ollama with ``nomic-embed-text`` (768 dimensions, context 2048) and the two
    generation models of the default tiers."""

    def __init__(self) -> None:
        super().__init__(
            [
                Route("/api/embed", self._embed, methods=["POST"]),
                Route("/api/generate", self._generate, methods=["POST"]),
                Route("/api/show", self._show, methods=["POST"]),
                Route("/api/tags", self._tags, methods=["GET"]),
            ]
        )
        self.dimensions: dict[str, int] = {"nomic-embed-text": 768}
        self.generators = {"qwen3.5:9b", "qwen3.5:27b"}
        self.replies: dict[str, str] = {}
        self.scripts: dict[str, list[tuple[str, str]]] = {}
        self.prefix_cache = False
        self.extractive: set[str] = set()  # generation models answering as extractive readers
        self.vision: set[str] = set()  # generation models that take images
        self.hold_streams = False  # a stream waits after its first piece while this holds
        self._last_prompt: dict[str, list[str]] = {}

    def __enter__(self) -> OllamaDouble:
        super().__enter__()
        return self

    async def _failure(self, model: str) -> Response | None:
        """The scripted answer for ``model``, or None to answer normally."""
        if model == "fail-rate-limit":
            return JSONResponse(
                {"error": "too many requests"}, status_code=429, headers={"Retry-After": "7"}
            )
        if model == "fail-busy":
            message = "server busy, please try again.  maximum pending requests exceeded"
            return JSONResponse({"error": message}, status_code=503)
        if model == "fail-server":
            return JSONResponse({"error": "llama runner process has terminated"}, status_code=500)
        if model == "fail-bad-request":
            return JSONResponse({"error": "invalid input type"}, status_code=400)
        if model == "fail-garbage":
            return Response("<html>proxy says hi</html>", media_type="text/html")
        if model == "fail-slow":
            await self._stall()
            return JSONResponse({"error": "too slow"}, status_code=500)
        if model not in self.dimensions and model not in self.generators | self.vision:
            message = f'model "{model}" not found, try pulling it first'
            return JSONResponse({"error": message}, status_code=404)
        return None

    async def _embed(self, request: Request) -> Response:
        body = await self._record(request)
        model = body["model"]
        if (failure := await self._failure(model)) is not None:
            return failure
        if model not in self.dimensions:
            message = f'"{model}" does not support embeddings'
            return JSONResponse({"error": message}, status_code=400)
        inputs = body["input"]
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        vectors = [double_vector(text, self.dimensions[model]) for text in texts]
        return JSONResponse(
            {
                "model": model,
                "embeddings": vectors,
                "total_duration": 1_000_000,
                "load_duration": 1_000,
                "prompt_eval_count": sum(len(text.split()) + 2 for text in texts),
            }
        )

    async def _generate(self, request: Request) -> Response:
        body = await self._record(request)
        model = body["model"]
        if (failure := await self._failure(model)) is not None:
            return failure
        reason, cut = None, False
        if self.scripts.get(model):
            text, reason = self.scripts[model].pop(0)
        elif model in self.extractive:
            text = extractive_answer(str(body.get("prompt", "")))
        elif model in self.vision and body.get("images") and model not in self.replies:
            text = f"an image of {len(base64.b64decode(body['images'][0]))} bytes"
        elif model in self.replies:
            text, cut = self.replies[model], False
        else:
            words = f"echo: {body.get('prompt', '')}".split()
            limit = (body.get("options") or {}).get("num_predict")
            cut = limit is not None and len(words) > limit
            text = " ".join(words[:limit] if cut else words)
        final = {
            "model": model,
            "created_at": "2026-01-01T00:00:00Z",
            "response": text,
            "done": True,
            "done_reason": reason or ("length" if cut else "stop"),
            "prompt_eval_count": self._evaluated(model, str(body.get("prompt", ""))),
            "eval_count": len(text.split()),
        }
        if body.get("stream") is not True:
            return JSONResponse(final)
        pieces = [word + " " for word in text.split(" ")] if text else []
        pieces[-1:] = [pieces[-1].rstrip(" ")] if pieces else []

        async def lines() -> Any:
            for number, piece in enumerate(pieces):
                part = {"model": model, "created_at": final["created_at"], "done": False}
                yield json.dumps({**part, "response": piece}) + "\n"
                # Polled, not an Event: the test releases it from another thread and loop.
                while number == 0 and self.hold_streams and not self._closing:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            yield json.dumps({**final, "response": ""}) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    def _evaluated(self, model: str, prompt: str) -> int:
        words = prompt.split()
        shared = 0
        if self.prefix_cache:
            for old, new in zip(self._last_prompt.get(model, []), words, strict=False):
                if old != new:
                    break
                shared += 1
        self._last_prompt[model] = words
        return len(words) - shared + 3

    async def _show(self, request: Request) -> Response:
        body = await self._record(request)
        model = body["model"]
        if (failure := await self._failure(model)) is not None:
            return failure
        info: dict[str, Any] = {"general.architecture": "nomic-bert"}
        if model in self.dimensions:
            info["nomic-bert.context_length"] = 2048
            info["nomic-bert.embedding_length"] = self.dimensions[model]
        return JSONResponse(
            {"modelfile": "", "details": {"format": "gguf"}, "model_info": info, "capabilities": []}
        )

    async def _tags(self, request: Request) -> Response:
        self.requests.append((request.url.path, None))
        names = sorted({*self.dimensions, *self.generators})
        return JSONResponse({"models": [{"name": name, "model": name} for name in names]})
