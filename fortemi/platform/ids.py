"""Relay global object identifiers: ``base64url("Type:local-id")``.

A global id names a type and a local id, never a memory: it resolves only inside the
memory of the request that presents it, so an id copied from another memory finds nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from uuid import UUID

from fortemi.platform.errors import BadUserInput

__all__ = ["from_global_id", "parse_id", "parse_note_id", "to_global_id", "to_global_ids"]


def to_global_id(type_name: str, local_id: str | UUID) -> str:
    raw = f"{type_name}:{local_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def to_global_ids(type_name: str, local_ids: Sequence[UUID]) -> list[str]:
    """``[to_global_id(type_name, i) for i in local_ids]``, encoded in one base64 call.

    Every ``Type:uuid`` has the same length, so the ids are laid end to end, each padded
    with zero bytes to a whole number of base64 groups (3 bytes), and encoded at once: a
    group's 4 characters depend on its 3 bytes only, and base64 encodes a last partial
    group exactly as the same bytes followed by zeros, minus the ``=`` padding. Each id is
    then its slice, cut to the unpadded length. (A few hundred ids a ``graph`` response:
    one call each cost more than the rest of building the node list.)
    """
    raw = f"{type_name}:".encode()
    size = len(raw) + 36  # str(UUID) is always 36 ASCII characters
    pad = -size % 3
    step, keep = (size + pad) // 3 * 4, -(-size * 4 // 3)
    tail = "\0" * pad
    joined = "".join([f"{type_name}:{local_id}{tail}" for local_id in local_ids]).encode()
    if len(joined) != len(local_ids) * (size + pad):  # not UUIDs after all: one at a time
        return [to_global_id(type_name, local_id) for local_id in local_ids]
    text = base64.urlsafe_b64encode(joined).decode()
    return [text[start : start + keep] for start in range(0, len(text), step)]


def from_global_id(global_id: str) -> tuple[str, str]:
    try:
        padded = global_id + "=" * (-len(global_id) % 4)
        type_name, _, local_id = base64.urlsafe_b64decode(padded).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise BadUserInput(f"{global_id[:80]!r} is not a valid id", field="id") from exc
    if not type_name or not local_id:
        raise BadUserInput(f"{global_id[:80]!r} is not a valid id", field="id")
    return type_name, local_id


def parse_id(value: str, type_name: str) -> UUID:
    """The UUID of a ``type_name`` object, given as its global id or as its bare UUID."""
    try:
        return UUID(value)
    except ValueError:
        pass
    given_type, local_id = from_global_id(value)
    if given_type != type_name:
        raise BadUserInput(f"Expected a {type_name} id, got a {given_type} id", field="id")
    try:
        return UUID(local_id)
    except ValueError as exc:
        raise BadUserInput(
            f"{value[:80]!r} is not a valid {type_name.lower()} id", field="id"
        ) from exc


def parse_note_id(value: str) -> UUID:
    """A note's id, given as its global id or as its bare UUID."""
    return parse_id(value, "Note")
