"""When the log cannot be written, every waiting caller is refused and the chain holds."""

from __future__ import annotations

import asyncio

import pytest

from fortemi.auth.audit import AuditWriter, verify
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Unavailable
from tests.integration.audit.helpers import KEYRING, execute, head_row, ids_by_seq, record, verified

_REFUSE = """
CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql
AS $$ BEGIN RAISE EXCEPTION 'audit insert refused by the test'; END $$;
CREATE TRIGGER refuse BEFORE INSERT ON rbac_audit_log
FOR EACH ROW EXECUTE FUNCTION refuse_audit();
"""
_ALLOW = "DROP TRIGGER refuse ON rbac_audit_log; DROP FUNCTION refuse_audit();"

SABOTAGE = {
    "insert-raises": (_REFUSE, _ALLOW),
    "table-missing": (
        "ALTER TABLE rbac_audit_log RENAME TO rbac_audit_log_away",
        "ALTER TABLE rbac_audit_log_away RENAME TO rbac_audit_log",
    ),
    "head-missing": (
        "ALTER TABLE rbac_audit_segment RENAME TO rbac_audit_segment_away",
        "ALTER TABLE rbac_audit_segment_away RENAME TO rbac_audit_segment",
    ),
}


@pytest.mark.parametrize("sabotage", SABOTAGE)
async def test_a_refused_batch_fails_every_caller_and_the_chain_continues_after_repair(
    audit_db: Database, writer: AuditWriter, sabotage: str
) -> None:
    await writer.record([record(), record()])
    committed = await head_row(audit_db, writer.segment)
    break_it, repair = SABOTAGE[sabotage]
    await execute(audit_db, break_it)

    outcomes = await asyncio.gather(
        *(writer.record([record(user_id=f"u{i}"), record()]) for i in range(50)),
        return_exceptions=True,
    )
    assert len(outcomes) == 50
    for outcome in outcomes:
        assert isinstance(outcome, Unavailable)
        assert outcome.message == "The audit log is unavailable; the request was refused"
    assert writer.head is None  # not advanced: unknown until re-read from the database

    await execute(audit_db, repair)
    assert await head_row(audit_db, writer.segment) == committed
    [entry] = await writer.append([record(user_id="after")])
    assert (entry.seq, entry.prev_hash) == (3, committed[1])
    assert sorted(await ids_by_seq(audit_db, writer.segment)) == [1, 2, 3]
    assert await verify(audit_db, KEYRING) == verified(3)


async def test_a_closed_database_refuses_the_caller(audit_db: Database) -> None:
    writer = AuditWriter(audit_db, keyring=KEYRING, segment="gone")
    await writer.start()
    try:
        await audit_db.close()
        with pytest.raises(Unavailable, match="audit log is unavailable"):
            await writer.record([record()])
    finally:
        await writer.close()


async def test_a_record_the_log_cannot_store_is_refused_alone(
    audit_db: Database, writer: AuditWriter
) -> None:
    outcomes = await asyncio.gather(
        writer.record([record(user_id="ok-1")]),
        writer.record([record(decision="maybe")]),
        writer.record([record(resource_name="nul\x00")]),
        writer.record([record(user_id="ok-2")]),
        return_exceptions=True,
    )
    assert outcomes[0] is None
    assert isinstance(outcomes[1], ValueError)
    assert isinstance(outcomes[2], BadUserInput)
    assert outcomes[3] is None
    assert await verify(audit_db, KEYRING) == verified(2)
