"""The hash chain that makes the audit log tamper-evident, specified so an auditor can
re-implement it.

Rows are chained per *segment*: a segment is the name of one writer instance (one process),
so replicas never contend for a global lock. Within a segment, rows are numbered by ``seq``
from 1 without gaps, and

* the first row's ``prev_hash`` is the genesis hash
  ``blake3(utf8("fortemi-audit:" + segment)).hexdigest()``;
* each later row's ``prev_hash`` is the previous row's ``chain_hash``;
* ``chain_hash = blake3(ascii(prev_hash) + canonical).hexdigest()``, where ``prev_hash`` is
  64 lowercase hex characters (fixed length, so the concatenation is unambiguous) and
  ``canonical`` is the UTF-8 encoding of the JSON array::

      [segment, seq, at, user_id, groups, resource_type, resource_name, memory, action,
       decision, reason, policy_version, trace_id, client_addr, job_id, details]

  serialised as Python's ``json.dumps(value, sort_keys=True, separators=(",", ":"),
  ensure_ascii=False, allow_nan=False)``: ``seq`` a JSON integer; ``at`` the string
  ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (UTC, always six fractional digits); ``groups`` an
  array of strings in stored order; absent optional fields ``null``; ``details`` the JSON
  object as stored (keys sorted at every level). JSON string escaping makes the encoding
  unambiguous: no choice of field values can make two different rows serialise alike.

The segment's head (``rbac_audit_segment.last_seq``/``last_hash``) is written with every
batch, so rows deleted from the end of a chain are detected as well.

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
from datetime import UTC
from decimal import Decimal
from typing import Any

from blake3 import blake3

from fortemi.auth.audit.models import AuditRecord
from fortemi.platform.errors import BadUserInput

__all__ = [
    "DECISIONS",
    "GENESIS_PREFIX",
    "canonical_bytes",
    "chain_hash",
    "format_at",
    "genesis_hash",
    "stored_form",
]

GENESIS_PREFIX = "fortemi-audit:"
DECISIONS = frozenset({"allow", "deny"})
# Below this magnitude Python's repr of a float has no exponent and jsonb prints the same
# digits back; from here on repr switches to exponent notation, which jsonb expands.
_PLAIN_FLOAT_LIMIT = 1e16


def genesis_hash(segment: str) -> str:
    """The ``prev_hash`` of a segment's first row."""
    return blake3((GENESIS_PREFIX + segment).encode("utf-8")).hexdigest()


def format_at(record: AuditRecord) -> str:
    """``at`` as hashed (and exported): ISO 8601 in UTC with microseconds."""
    return record.at.astimezone(UTC).isoformat(timespec="microseconds")


def canonical_bytes(segment: str, seq: int, record: AuditRecord) -> bytes:
    """The unambiguous serialisation of one row's content (see the module docstring)."""
    value = [
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
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def chain_hash(prev_hash: str, segment: str, seq: int, record: AuditRecord) -> str:
    """The ``chain_hash`` of row ``seq`` of ``segment``, whose predecessor hashed to ``prev_hash``.

    See the module docstring for the exact bytes hashed.
    """
    # UTF-8, not ASCII: identical for every hash we write, and a tampered, non-hex
    # prev_hash must make verification report a break, not crash.
    hasher = blake3(prev_hash.encode("utf-8"))
    hasher.update(canonical_bytes(segment, seq, record))
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
        details=_json(record.details, ""),
    )
