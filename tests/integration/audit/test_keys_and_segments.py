"""The keyed chain across key rotations, segments chained in their registry, segments from
before keyed chaining, and exported heads that catch what the database alone cannot."""

from __future__ import annotations

import io
import json

import pytest

from fortemi.auth.audit import AuditKeyring, AuditWriter, export_heads, read_heads, verify
from fortemi.auth.audit.chain import unkeyed_chain_hash, unkeyed_genesis_hash
from fortemi.auth.audit.keys import key_id
from fortemi.auth.audit.repository import COLUMNS, entry_from_row
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from tests.integration.audit.helpers import KEY, KEYRING, execute, head_row, record, verified

OLD_KEY = bytes(range(100, 132))


async def _write(db: Database, keyring: AuditKeyring, segment: str, rows: int) -> None:
    async with AuditWriter(db, keyring=keyring, segment=segment) as writer:
        for i in range(rows):
            await writer.record([record(user_id=f"{segment}-{i}")])


async def _heads(db: Database) -> list[dict[str, object]]:
    out = io.StringIO()
    await export_heads(db, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_after_a_key_rotation_old_segments_verify_with_the_retired_key(
    audit_db: Database,
) -> None:
    await _write(audit_db, AuditKeyring(OLD_KEY), "before", 3)
    rotated = AuditKeyring(KEY, retired=[OLD_KEY])
    await _write(audit_db, rotated, "after", 2)
    assert await verify(audit_db, rotated) == verified(5)
    # The rotation is recorded in the chained registry: each segment names its key.
    recorded = {h["segment"]: h["key_id"] for h in await _heads(audit_db)}
    assert recorded == {"before": key_id(OLD_KEY), "after": key_id(KEY)}
    result = await verify(audit_db, AuditKeyring(KEY))
    assert result.ok is False
    assert result.problem is not None
    assert key_id(OLD_KEY) in result.problem
    assert "FORTEMI_AUDIT_RETIRED_KEYS" in result.problem


async def test_resuming_a_segment_needs_the_key_it_was_chained_under(audit_db: Database) -> None:
    await _write(audit_db, AuditKeyring(OLD_KEY), "old", 1)
    with pytest.raises(ValueError, match="start a new segment"):
        await AuditWriter(audit_db, keyring=AuditKeyring(KEY), segment="old").start()
    await _write(audit_db, AuditKeyring(KEY, retired=[OLD_KEY]), "old", 1)
    assert await verify(audit_db, AuditKeyring(KEY, retired=[OLD_KEY])) == verified(2)


async def test_deleting_an_older_segment_and_its_head_breaks_at_the_next_segment(
    audit_db: Database,
) -> None:
    for name in ("one", "two", "three"):
        await _write(audit_db, KEYRING, name, 2)
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = 'two'")
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = 'two'")
    first_of_three = await audit_db.fetchval(
        "SELECT id FROM rbac_audit_log WHERE segment = 'three' AND seq = 1"
    )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, first_of_three)
    assert result.problem is not None
    assert "'three'" in result.problem
    assert "deleted" in result.problem


async def test_renumbering_the_registry_after_deleting_a_segment_is_detected(
    audit_db: Database,
) -> None:
    for name in ("one", "two"):
        await _write(audit_db, KEYRING, name, 2)
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = 'one'")
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = 'one'")
    await execute(audit_db, "UPDATE rbac_audit_segment SET ordinal = 1, prev_link = $1", "0" * 64)
    result = await verify(audit_db, KEYRING)
    assert result.ok is False
    assert result.problem is not None
    assert "altered" in result.problem


async def test_a_segment_edited_with_a_rolled_back_head_fails_the_pin_of_the_next_one(
    audit_db: Database,
) -> None:
    await _write(audit_db, KEYRING, "one", 4)
    pinned = await head_row(audit_db, "one")
    await _write(audit_db, KEYRING, "two", 1)
    # The newest two rows of "one" go, and its head is set back to the row now last.
    async with audit_db.connection() as conn:
        last = await conn.fetchrow(
            "SELECT id, chain_hash FROM rbac_audit_log WHERE segment = 'one' AND seq = 2"
        )
    assert last is not None
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = 'one' AND seq > 2")
    await execute(
        audit_db,
        "UPDATE rbac_audit_segment SET last_seq = 2, last_hash = $1 WHERE segment = 'one'",
        last["chain_hash"],
    )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, last["id"])
    assert result.problem is not None
    assert f"seq {pinned[0]}" in result.problem


async def test_exported_heads_catch_the_newest_rows_and_segments_deleted_later(
    audit_db: Database,
) -> None:
    await _write(audit_db, KEYRING, "one", 2)
    await _write(audit_db, KEYRING, "two", 3)
    out = io.StringIO()
    assert await export_heads(audit_db, out) == 2
    heads = read_heads(out.getvalue().splitlines())
    # Without the heads, the newest segment deleted whole is indistinguishable from a log
    # that never had it: this is what the exported heads are for.
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = 'two'")
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = 'two'")
    assert (await verify(audit_db, KEYRING)).ok is True
    result = await verify(audit_db, KEYRING, heads=heads)
    assert result.ok is False
    assert result.problem is not None
    assert "'two'" in result.problem
    assert "exported heads" in result.problem


async def test_a_malformed_heads_file_is_bad_input() -> None:
    with pytest.raises(BadUserInput, match="line 2"):
        read_heads(['{"segment": "a", "last_seq": 1, "last_hash": "x"}', '{"segment": 1}'])


async def _make_unkeyed(db: Database, segment: str, rows: int) -> None:
    """A segment as a writer from before keyed chaining left it: no ordinal, no key."""
    await execute(
        db,
        "INSERT INTO rbac_audit_segment (segment, last_seq, last_hash) VALUES ($1, 0, $2)",
        segment,
        unkeyed_genesis_hash(segment),
    )
    await _append_unkeyed(db, segment, rows)


async def _append_unkeyed(db: Database, segment: str, rows: int) -> list[int]:
    """Rows chained with the unkeyed formula after the segment's head; their ids."""
    seq, prev = await head_row(db, segment)
    ids = []
    async with db.connection() as conn:
        for _ in range(rows):
            seq += 1
            row = record(user_id=f"{segment}-{seq}")
            current = unkeyed_chain_hash(prev, segment, seq, row)
            new_id = await conn.fetchval(
                """INSERT INTO rbac_audit_log (at, user_id, groups, resource_type,
                       resource_name, memory, action, decision, reason, policy_version,
                       client_addr, details, segment, seq, prev_hash, chain_hash)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}', $12, $13,
                       $14, $15) RETURNING id""",
                row.at, row.user_id, list(row.groups), row.resource_type,
                row.resource_name, row.memory, row.action, row.decision, row.reason,
                row.policy_version, row.client_addr, segment, seq, prev, current,
            )  # fmt: skip
            ids.append(new_id)
            prev = current
        await conn.execute(
            "UPDATE rbac_audit_segment SET last_seq = $2, last_hash = $3 WHERE segment = $1",
            segment,
            seq,
            prev,
        )
    return ids


async def test_segments_from_before_keyed_chaining_verify_once_a_keyed_one_anchors_them(
    audit_db: Database,
) -> None:
    await _make_unkeyed(audit_db, "legacy", 3)
    unanchored = await verify(audit_db, KEYRING)
    assert unanchored.ok is False
    assert unanchored.problem is not None
    assert "unkeyed" in unanchored.problem
    await _write(audit_db, KEYRING, "keyed", 1)
    assert await verify(audit_db, KEYRING) == verified(4)


async def test_a_log_rewritten_as_unkeyed_segments_is_detected(audit_db: Database) -> None:
    await _write(audit_db, KEYRING, "one", 2)
    await _write(audit_db, KEYRING, "two", 2)
    # Downgrade: every registration made unkeyed, every row re-chained without the key.
    await execute(
        audit_db,
        "UPDATE rbac_audit_segment SET ordinal = NULL, key_id = NULL, pins = NULL, "
        "prev_link = NULL, link = NULL",
    )
    for segment in ("one", "two"):
        prev = unkeyed_genesis_hash(segment)
        async with audit_db.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {COLUMNS} FROM rbac_audit_log WHERE segment = $1 ORDER BY seq",  # noqa: S608
                segment,
            )
            for row in rows:
                entry = entry_from_row(row)
                current = unkeyed_chain_hash(prev, segment, entry.seq, entry.record)
                await conn.execute(
                    "UPDATE rbac_audit_log SET prev_hash = $2, chain_hash = $3 WHERE id = $1",
                    entry.id,
                    prev,
                    current,
                )
                prev = current
            await conn.execute(
                "UPDATE rbac_audit_segment SET last_hash = $2 WHERE segment = $1", segment, prev
            )
    result = await verify(audit_db, KEYRING)
    assert result.ok is False
    assert result.problem is not None
    assert "unkeyed" in result.problem


async def test_an_unkeyed_segment_edited_after_the_anchor_is_detected(audit_db: Database) -> None:
    await _make_unkeyed(audit_db, "legacy", 3)
    await _write(audit_db, KEYRING, "keyed", 1)
    target = await audit_db.fetchval(
        "SELECT id FROM rbac_audit_log WHERE segment = 'legacy' AND seq = 2"
    )
    await execute(audit_db, "UPDATE rbac_audit_log SET decision = 'deny' WHERE id = $1", target)
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, target)


async def test_unkeyed_rows_added_after_the_keyed_anchor_are_detected(
    audit_db: Database,
) -> None:
    await _make_unkeyed(audit_db, "legacy", 2)
    await _write(audit_db, KEYRING, "keyed", 1)
    [forged] = await _append_unkeyed(audit_db, "legacy", 1)
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, forged)
    assert result.problem is not None
    assert "without the key" in result.problem
