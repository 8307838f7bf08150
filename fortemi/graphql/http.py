"""GraphQL over HTTP: request bodies in, media types and response bodies out.

Follows the GraphQL-over-HTTP specification (draft of 2025): a client that accepts
``application/graphql-response+json`` gets that media type, and a *request error* (the
operation never started: parse, validation, variable coercion) comes back as HTTP 400
without a ``data`` entry. ``application/json`` keeps its legacy contract: 200 with
``"data": null``. Every error, even one found before GraphQL is reached (a body that is
not JSON, a method that is not allowed), is a GraphQL-shaped JSON body with a stable
``extensions.code``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

__all__ = [
    "GRAPHQL_RESPONSE_JSON",
    "JSON",
    "MalformedBody",
    "ResponseTooLarge",
    "decode_body",
    "encode_bytes_within",
    "error_document",
    "is_request_error",
    "preferred_media_type",
    "too_large_document",
]

JSON = "application/json"
GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"


class MalformedBody(json.JSONDecodeError):
    """A request body that cannot be read as JSON, with a message a person can act on.

    A JSONDecodeError so that strawberry answers it as a client error (400), on HTTP and
    on WebSocket alike.
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, "", 0)
        self.message = message
        self.code = code


class ResponseTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"response over {limit} bytes")
        self.limit = limit


def decode_body(data: str | bytes) -> object:
    """``json.loads``, with every failure a :class:`MalformedBody` (never a 500)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedBody("The request body is not valid UTF-8", "BAD_REQUEST") from exc
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise MalformedBody("The request body's JSON nests too deeply", "BAD_REQUEST") from exc
    except json.JSONDecodeError as exc:
        raise MalformedBody(f"The request body is not valid JSON: {exc}", "BAD_REQUEST") from exc
    except ValueError as exc:
        # Python refuses to convert integers longer than this (CVE-2020-10735).
        limit = sys.get_int_max_str_digits()
        raise MalformedBody(
            f"A number in the request has more than {limit} digits; send it as a string",
            "BAD_USER_INPUT",
        ) from exc


def preferred_media_type(accept: str | None) -> str:
    """The response media type for an ``Accept`` header: the GraphQL one only when asked.

    Ties go to the range listed first; a missing header, ``*/*`` and anything else
    unknown get ``application/json``, as the specification asks during its transition.
    """
    best, best_q = JSON, 0.0
    for media, q in _ranges(accept or ""):
        if media == GRAPHQL_RESPONSE_JSON and q > best_q:
            best, best_q = GRAPHQL_RESPONSE_JSON, q
        elif media in (JSON, "application/*", "*/*") and q > best_q:
            best, best_q = JSON, q
    return best


def _ranges(accept: str) -> Iterable[tuple[str, float]]:
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0:
            yield media.lower(), q


def is_request_error(result: Any) -> bool:
    """True when the operation never ran: no data, and no error belongs to a field.

    Field errors always carry a ``path``; errors of parsing, validation and variable
    coercion never do.
    """
    errors = getattr(result, "errors", None)
    if not errors or result.data is not None:
        return False
    return all(error.path is None for error in errors)


def error_document(message: str, code: str, **extensions: object) -> dict[str, object]:
    return {"errors": [{"message": message, "extensions": {"code": code, **extensions}}]}


# Below this many levels of objects a value is encoded whole: a response is only as deep
# as its query, and JSON scalars (metadata) go to the C encoder in one call.
_WALKED_LEVELS = 16
_RUN_BYTES = 16_384


# orjson refuses these (they go to ``default``, which is unset) rather than encode them its
# own way, so that whatever the standard encoder refuses is refused alike.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def encode_bytes_within(data: object, limit: int) -> bytes:
    """Compact JSON of ``data`` as UTF-8, or :class:`ResponseTooLarge` when it passes
    ``limit`` bytes. An HTTP body goes out as these bytes, with no round trip through a
    ``str``.

    First orjson, in one call: a neighbourhood of 550 nodes and edges (170 kB) took
    1.7-2.8 ms with the standard library's encoder and 0.14-0.2 ms with orjson on the same
    machine. Its text is the standard encoder's with ``ensure_ascii=False`` (JSON is
    UTF-8, RFC 8259), but for floats in exponent form (``1e-7`` where it writes ``1e-07``:
    the same number). Characters outside ASCII go out as UTF-8, not escaped: escaping them
    as the standard encoder does by default was a regular-expression pass over the whole
    body that cost a sixth of a SciFact ``graph`` request's CPU, for no client's benefit.
    The response's objects already exist whole, so encoding them whole costs at most as
    much memory again.

    Whatever orjson refuses (an integer past 64 bits, a key that is not a string, a lone
    surrogate, an object of another type) goes to the standard encoder, walked, with
    non-ASCII escaped (a lone surrogate has no UTF-8; escaped, it is still JSON, and
    characters are bytes): objects are walked and list items are encoded at C speed in
    runs of about ``_RUN_BYTES`` (one item when items are larger), so an oversized response
    is abandoned within about one run of the limit (an item is one note, one audit
    entry...) rather than built whole first.
    """
    try:
        encoded = orjson.dumps(data, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is one
        pass
    else:
        if len(encoded) > limit:
            raise ResponseTooLarge(limit)
        return encoded
    pieces: list[str] = []
    size = 0

    def add(piece: str) -> None:
        nonlocal size
        size += len(piece)
        if size > limit:
            raise ResponseTooLarge(limit)
        pieces.append(piece)

    def walk(value: object, level: int) -> None:
        if isinstance(value, dict) and level < _WALKED_LEVELS:
            add("{")
            for index, (key, item) in enumerate(value.items()):
                add(("," if index else "") + _dumps(str(key)) + ":")
                walk(item, level + 1)
            add("}")
        elif isinstance(value, list) and level < _WALKED_LEVELS:
            add("[")
            # Items go to the C encoder a run at a time, each run sized from the last one's
            # bytes per item to about _RUN_BYTES: one call for a page of small objects (a
            # neighbourhood's 550 nodes and edges were 550 calls, 3-5 ms), one item a call
            # for large notes, so the limit still stops the encoding within about a run.
            index, count = 0, 1
            while index < len(value):
                piece = _dumps(value[index : index + count])[1:-1]
                add(("," if index else "") + piece)
                index += count
                count = max(1, _RUN_BYTES * count // max(len(piece), 1))
            add("]")
        else:
            add(_dumps(value))

    walk(data, 0)
    return "".join(pieces).encode()  # ASCII: the standard encoder escapes the rest


# One encoder for every piece: json.dumps with separators builds a new encoder per call,
# which cost more than the encoding itself for the small pieces a list response is cut into.
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def too_large_document(data: object, limit: int) -> dict[str, object]:
    """What replaces a response over ``limit``: the error, inside the same envelope.

    A WebSocket message (``{"id", "type": "next", "payload"}``) keeps its envelope so the
    protocol goes on; an HTTP body becomes the error itself.
    """
    result = {
        "data": None,
        **error_document(
            f"The response is over the {limit}-byte limit (FORTEMI_MAX_RESPONSE_BYTES): ask "
            "for fewer items (first, limit) or leave out large fields such as content",
            "RESPONSE_TOO_LARGE",
            limit=limit,
        ),
    }
    if isinstance(data, Mapping) and "payload" in data:
        return {**data, "payload": result}
    return result
