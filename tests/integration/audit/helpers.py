"""Helpers for the audit tests: records to write, and the table read behind the API's back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fortemi.auth.audit import AuditKeyring, AuditRecord, Verification
from fortemi.platform.database import Database

BASE_TIME = datetime(2024, 5, 17, 12, 0, tzinfo=UTC)
# The chain's key in these tests; a real deployment's lives outside the database.
KEY = bytes(range(32))
KEYRING = AuditKeyring(KEY)


def record(**changes: Any) -> AuditRecord:
    """A plausible allow decision, with ``changes`` applied."""
    base = AuditRecord(
        at=BASE_TIME,
        user_id="alice",
        groups=("eng",),
        resource_type="project",
        resource_name="poimen",
        memory="main",
        action="read",
        decision="allow",
        reason="in_allowed_group",
        policy_version="v1",
        trace_id=None,
        client_addr="127.0.0.1",
        job_id=None,
        details={},
    )
    return replace(base, **changes)


async def ids_by_seq(db: Database, segment: str) -> dict[int, int]:
    """{seq: id} of a segment's rows, read straight from the table."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT seq, id FROM public.rbac_audit_log WHERE segment = $1", segment
        )
    return {row["seq"]: row["id"] for row in rows}


async def head_row(db: Database, segment: str) -> tuple[int, str]:
    """(last_seq, last_hash) of a segment's head, read straight from the table."""
    async with db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT last_seq, last_hash FROM public.rbac_audit_segment WHERE segment = $1",
            segment,
        )
    assert row is not None
    return row["last_seq"], row["last_hash"]


async def execute(db: Database, sql: str, *args: Any) -> None:
    """Run a statement as someone with direct database access (the tamperer)."""
    async with db.connection() as conn:
        await conn.execute(sql, *args)


def verified(checked: int) -> Verification:
    """What :func:`verify` answers for an intact log of ``checked`` rows."""
    return Verification(ok=True, checked=checked, first_broken_id=None, problem=None)
