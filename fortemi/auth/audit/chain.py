"""The hash chain that makes the audit log tamper-evident, specified so an auditor can
re-implement it.

Every hash is a *keyed* BLAKE3 (``blake3(data, key=K).hexdigest()``, K 32 bytes) under the
key named by the segment's ``key_id`` (:mod:`.keys`): without the key nobody can recompute
a hash after editing a row, however much of the database they can write.

**Segments and their registry.** Rows are chained per *segment*: a segment is the name of
one writer instance (one process), so replicas never contend for a lock per decision. Each
segment is registered once, as a row of ``rbac_audit_segment``, and the registrations are
chained too: they are numbered by ``ordinal`` from 1 without gaps, and

* ``link = H_K(ascii(prev_link) + registration)`` with ``K`` the registration's own key,
  ``prev_link`` the previous registration's ``link`` (64 zeros for the first), and
  ``registration`` the UTF-8 JSON array (serialised as below)::

      ["segment", ordinal, segment, key_id, started_at, pins]

  where ``pins`` is a list of ``[segment, seq, hash]`` (sorted): the head of the previous
  registration's segment when this one started (``seq`` 0 and that segment's ``link`` if it
  had no rows yet) and, for the first keyed registration of a log that has rows from
  before keyed chaining, the heads of all those older, unkeyed segments.

So deleting a whole segment, head included, leaves a gap in the ordinals (or a link that
does not match, if the ordinals are renumbered); and the rows a pin names can no longer
be deleted from the end of their segment unnoticed.

**Rows.** Within a segment, rows are numbered by ``seq`` from 1 without gaps, and

* the first row's ``prev_hash`` is its segment registration's ``link``;
* each later row's ``prev_hash`` is the previous row's ``chain_hash``;
* ``chain_hash = H_K(ascii(prev_hash) + canonical)``, where ``prev_hash`` is 64 lowercase
  hex characters (fixed length, so the concatenation is unambiguous) and ``canonical`` is
  the UTF-8 encoding of the JSON array::

      [segment, seq, at, user_id, groups, resource_type, resource_name, memory, action,
       decision, reason, policy_version, trace_id, client_addr, job_id, details,
       client_request_id]

JSON is serialised as Python's ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)``: ``seq`` and ``ordinal`` JSON integers; ``at`` and
``started_at`` the string ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (UTC, always six fractional
digits); ``groups`` an array of strings in stored order; absent optional fields ``null``;
``details`` the JSON object as stored (keys sorted at every level). JSON string escaping
makes the encoding unambiguous: no choice of field values can make two rows serialise alike.

The segment's head (``rbac_audit_segment.last_seq``/``last_hash``) is written with every
batch, so rows deleted from the end of a chain are detected as well, as long as the head
is not rolled back with them; exported heads (``fortemi audit heads``), kept apart from
the database, catch that too.

**Unkeyed segments** (``key_id`` null, no ordinal) were written before keyed chaining:
their first ``prev_hash`` is ``blake3(utf8("fortemi-audit:" + segment))``, their
``chain_hash`` the unkeyed ``blake3(ascii(prev_hash) + canonical)`` of the array above
without its last element. Anyone can compute those, so they verify only as far as the
first keyed registration pins them: an unpinned unkeyed segment, or a row past its pin, is
a break.

What is hashed must be exactly what PostgreSQL gives back, so records are brought to their
*stored form* before hashing (:func:`stored_form`): jsonb prints numbers in plain decimal
notation, so a float of magnitude >= 1e16 comes back as an integer and ``-0.0`` as ``0.0``;
both are normalised up front. Text PostgreSQL cannot store (NUL, unpaired surrogates) is
refused before a record joins a batch, so one bad record can never fail its neighbours.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from blake3 import blake3

from fortemi.auth.audit.models import AuditRecord, Registration
from fortemi.platform.errors import BadUserInput

__all__ = [
    "DECISIONS",
    "GENESIS_PREFIX",
    "ROOT_LINK",
    "canonical_bytes",
    "chain_hash",
    "format_at",
    "format_time",
    "registration_link",
    "stored_form",
    "unkeyed_chain_hash",
    "unkeyed_genesis_hash",
]

GENESIS_PREFIX = "fortemi-audit:"
ROOT_LINK = "0" * 64
DECISIONS = frozenset({"allow", "deny"})
# Below this magnitude Python's repr of a float has no exponent and jsonb prints the same
# digits back; from here on repr switches to exponent notation, which jsonb expands.
_PLAIN_FLOAT_LIMIT = 1e16


def _dumps(value: Any) -> bytes:
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def _keyed(key: bytes, prev: str, data: bytes) -> str:
    # UTF-8, not ASCII: identical for every hash we write, and a tampered, non-hex
    # prev value must make verification report a break, not crash.
    hasher = blake3(prev.encode("utf-8"), key=key)
    hasher.update(data)
    return hasher.hexdigest()


def format_time(moment: datetime) -> str:
    """A time as hashed (and exported): ISO 8601 in UTC with microseconds."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def format_at(record: AuditRecord) -> str:
    """``at`` as hashed (and exported)."""
    return format_time(record.at)


def canonical_bytes(segment: str, seq: int, record: AuditRecord, *, keyed: bool = True) -> bytes:
    """The unambiguous serialisation of one row's content (see the module docstring)."""
    value: list[Any] = [
        segment,
        seq,
        format_at(record),
        record.user_id,
        list(record.groups),
        record.resource_type,
        record.resource_name,
        record.memory,
        record.action,
        record.decision,
        record.reason,
        record.policy_version,
        record.trace_id,
        record.client_addr,
        record.job_id,
        record.details,
    ]
    if keyed:
        value.append(record.client_request_id)
    return _dumps(value)


def chain_hash(key: bytes, prev_hash: str, segment: str, seq: int, record: AuditRecord) -> str:
    """The ``chain_hash`` of row ``seq`` of ``segment``, whose predecessor hashed to
    ``prev_hash``, under ``key``."""
    return _keyed(key, prev_hash, canonical_bytes(segment, seq, record))


def registration_link(key: bytes, prev_link: str, registration: Registration) -> str:
    """The ``link`` of a segment registration (see the module docstring)."""
    value = [
        "segment",
        registration.ordinal,
        registration.segment,
        registration.key_id,
        format_time(registration.started_at),
        [[pin.segment, pin.seq, pin.hash] for pin in sorted(registration.pins)],
    ]
    return _keyed(key, prev_link, _dumps(value))


def unkeyed_genesis_hash(segment: str) -> str:
    """The ``prev_hash`` of an unkeyed segment's first row."""
    return blake3((GENESIS_PREFIX + segment).encode("utf-8")).hexdigest()


def unkeyed_chain_hash(prev_hash: str, segment: str, seq: int, record: AuditRecord) -> str:
    """The ``chain_hash`` of a row of an unkeyed segment (written before keyed chaining)."""
    hasher = blake3(prev_hash.encode("utf-8"))
    hasher.update(canonical_bytes(segment, seq, record, keyed=False))
    return hasher.hexdigest()


# -- stored form ----------------------------------------------------------------------------


def _text(value: object, name: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"audit record field {name} must be a string, not {type(value)!r}")
    if "\x00" in value:
        raise BadUserInput("Text must be valid UTF-8 without NUL characters", field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadUserInput("Text must be valid UTF-8 without NUL characters", field=name) from exc
    # A str subclass (a StrEnum member such as a Reason) is stored as its plain value.
    return str.__str__(value)


def _json(value: Any, path: str) -> Any:
    """``value`` as jsonb will return it; ValueError if JSON cannot represent it."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"audit details {path} is not a finite number")
        if value == 0.0:
            return 0.0  # PostgreSQL's numeric has no negative zero
        if abs(value) >= _PLAIN_FLOAT_LIMIT:
            return int(Decimal(repr(value)))
        return value
    if isinstance(value, str):
        return _text(value, f"details{path}")
    if isinstance(value, list | tuple):
        return [_json(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"audit details {path} has a non-string key {key!r}")
            out[_text(key, f"details{path}")] = _json(item, f"{path}.{key}")
        return out
    raise ValueError(f"audit details {path} holds {type(value)!r}, which is not JSON")


def stored_form(record: AuditRecord) -> AuditRecord:
    """``record`` exactly as it will read back from PostgreSQL, or an error.

    Raises ``ValueError`` for what only a programming error produces (a naive ``at``, a
    decision other than allow/deny, a non-string field, details that are not JSON) and
    :class:`BadUserInput` for text PostgreSQL cannot store (NUL, unpaired surrogates),
    which can arrive from a request.
    """
    if record.at.tzinfo is None or record.at.utcoffset() is None:
        raise ValueError("audit record field at must be an aware datetime")
    if record.decision not in DECISIONS:
        raise ValueError(f"audit record decision must be allow or deny, not {record.decision!r}")
    if not isinstance(record.details, dict):
        raise ValueError("audit record details must be a dict")
    return replace(
        record,
        at=record.at.astimezone(UTC),
        user_id=_text(record.user_id, "user_id"),
        groups=tuple(_text(group, "groups") for group in record.groups),
        resource_type=_text(record.resource_type, "resource_type"),
        resource_name=_text(record.resource_name, "resource_name", optional=True),
        memory=_text(record.memory, "memory", optional=True),
        action=_text(record.action, "action"),
        decision=_text(record.decision, "decision"),
        reason=_text(record.reason, "reason"),
        policy_version=_text(record.policy_version, "policy_version"),
        trace_id=_text(record.trace_id, "trace_id", optional=True),
        client_addr=_text(record.client_addr, "client_addr", optional=True),
        job_id=_text(record.job_id, "job_id", optional=True),
        client_request_id=_text(record.client_request_id, "client_request_id", optional=True),
        details=_json(record.details, ""),
    )
