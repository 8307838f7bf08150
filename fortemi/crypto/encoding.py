"""The byte encodings the MMPKE01 format publishes: canonical JSON and strict Base64.

Canonical JSON (headers and key files): keys sorted by code point, no whitespace
(``,`` and ``:`` separators), UTF-8 without a BOM, non-ASCII characters written as
themselves, ``"`` ``\\`` and control characters escaped (``\\n``-style short forms, others
``\\u00xx``), integers only. For the values this format holds (ASCII keys, integers,
strings that are valid Unicode) that is exactly RFC 8785 (JCS), so another implementation
reproduces it byte for byte.

Base64 is RFC 4648 section 4 (the standard alphabet, with ``=`` padding), decoded strictly:
any other character, or missing padding, is refused.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

__all__ = ["DuplicateKey", "b64decode", "b64encode", "canonical_json", "load_json_object"]


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: object, *, length: int | None = None) -> bytes:
    """Strict standard Base64 of exactly ``length`` bytes; ``ValueError`` otherwise."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("not a Base64 string")
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not valid Base64 ({exc})") from None
    # The decoder ignores the unused low bits of the last character: re-encoding refuses
    # a second spelling of the same bytes.
    if base64.b64encode(data).decode("ascii") != text:
        raise ValueError("not canonical Base64")
    if length is not None and len(data) != length:
        raise ValueError(f"{len(data)} bytes where {length} were expected")
    return data


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(f"the key {key!r} appears twice")
        result[key] = value
    return result


def load_json_object(data: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes, refusing duplicate keys, NaN and non-objects."""

    def _no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    text = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value
