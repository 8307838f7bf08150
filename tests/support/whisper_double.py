"""A Whisper-compatible transcription server double: it stands in for faster-whisper-server,
whisper.cpp's server or OpenAI, which do not run here.

It speaks ``POST /v1/audio/transcriptions`` (OpenAI's audio API) over a real socket, on
the same loopback uvicorn harness as the Ollama double: a multipart form with ``file`` and
``model`` (and optional ``response_format``, ``language``), answering JSON
``{"text": ...}`` (with ``language`` and ``duration`` for ``verbose_json``). Its transcript
is deterministic and carries no model: ``transcript of NAME (N bytes)``.

``api_key``, when set, is required as ``Authorization: Bearer KEY`` (401 otherwise, as
OpenAI answers). Failures are chosen by model name: ``fail-server`` answers 500,
``fail-garbage`` 200 with a body that is not JSON. ``requests`` records, per call, the
form fields, the file's name, content type and size, and the Authorization header.
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.ollama_double import ServedApp

__all__ = ["WhisperDouble"]


def _form(content_type: str, body: bytes) -> dict[str, Any]:
    """A multipart/form-data body's fields (files as (name, type, bytes)), read with the
    standard library's MIME parser (python-multipart is not a dependency of the project)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=policy.default).parsebytes(head + body)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        assert isinstance(part, EmailMessage)
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        if part.get_filename() is not None:
            fields[str(name)] = (part.get_filename(), part.get_content_type(), content)
        else:
            fields[str(name)] = content.decode("utf-8")
    return fields


class WhisperDouble(ServedApp):
    def __init__(self, *, api_key: str | None = None) -> None:
        super().__init__([Route("/v1/audio/transcriptions", self._transcribe, methods=["POST"])])
        self.api_key = api_key

    def __enter__(self) -> WhisperDouble:
        super().__enter__()
        return self

    async def _transcribe(self, request: Request) -> Response:
        form = _form(request.headers.get("content-type", ""), await request.body())
        upload = form.get("file")
        self.requests.append(
            (
                request.url.path,
                {
                    "fields": {k: v for k, v in form.items() if k != "file"},
                    "file": None if upload is None else (upload[0], upload[1], len(upload[2])),
                    "authorization": request.headers.get("authorization"),
                },
            )
        )
        if self.api_key is not None and request.headers.get("authorization") != (
            f"Bearer {self.api_key}"
        ):
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=401)
        if upload is None or "model" not in form:
            return JSONResponse({"error": {"message": "file and model are required"}}, 400)
        if form["model"] == "fail-server":
            return JSONResponse({"error": {"message": "CUDA out of memory"}}, status_code=500)
        if form["model"] == "fail-garbage":
            return Response("<html>proxy says hi</html>", media_type="text/html")
        text = f"transcript of {upload[0]} ({len(upload[2])} bytes)"
        if form.get("response_format") == "verbose_json":
            return JSONResponse({"text": text, "language": "en", "duration": 1.5, "segments": []})
        return JSONResponse({"text": text})
