"""verify() passes an untouched log and points at the first row any tampering broke."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fortemi.auth.audit import AuditWriter, verify
from fortemi.auth.audit.chain import chain_hash
from fortemi.auth.audit.repository import COLUMNS, entry_from_row
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from tests.integration.audit.helpers import (
    BASE_TIME,
    KEY,
    KEYRING,
    execute,
    ids_by_seq,
    record,
    verified,
)

ROWS = 6  # per segment


@pytest.fixture
async def log(audit_db: Database) -> dict[str, dict[int, int]]:
    """Two segments of ROWS rows each, written interleaved; {segment: {seq: id}}."""
    async with (
        AuditWriter(audit_db, keyring=KEYRING, segment="seg-a") as a,
        AuditWriter(audit_db, keyring=KEYRING, segment="seg-b") as b,
    ):
        for i in range(ROWS):
            at = BASE_TIME.replace(hour=i)
            await a.record([record(at=at, user_id=f"a{i}")])
            await b.record([record(at=at, user_id=f"b{i}")])
    return {name: await ids_by_seq(audit_db, name) for name in ("seg-a", "seg-b")}


async def test_an_untouched_log_verifies(audit_db: Database, log: object) -> None:
    assert await verify(audit_db, KEYRING) == verified(2 * ROWS)


async def test_an_empty_log_verifies(audit_db: Database) -> None:
    assert await verify(audit_db, KEYRING) == verified(0)


async def test_an_updated_row_is_the_first_broken_one(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    target = log["seg-b"][3]
    await execute(audit_db, "UPDATE rbac_audit_log SET decision = 'deny' WHERE id = $1", target)
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, target)
    assert result.problem is not None
    assert "altered" in result.problem


async def test_an_edit_with_a_recomputed_hash_breaks_the_next_link(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    target = log["seg-a"][2]
    async with audit_db.connection() as conn:
        row = await conn.fetchrow(
            f"SELECT {COLUMNS} FROM rbac_audit_log WHERE id = $1",  # noqa: S608
            target,
        )
        assert row is not None
        entry = entry_from_row(row)
        forged = replace(entry.record, user_id="mallory")
        new_hash = chain_hash(KEY, entry.prev_hash, entry.segment, entry.seq, forged)
        await conn.execute(
            "UPDATE rbac_audit_log SET user_id = 'mallory', chain_hash = $2 WHERE id = $1",
            target,
            new_hash,
        )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, log["seg-a"][3])


async def test_a_deleted_middle_row_breaks_the_row_after_it(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE id = $1", log["seg-a"][3])
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, log["seg-a"][4])


async def test_a_deleted_last_row_is_reported_at_the_row_now_last(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE id = $1", log["seg-a"][ROWS])
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, log["seg-a"][ROWS - 1])
    assert result.problem is not None
    assert "deleted" in result.problem


async def test_a_segment_emptied_entirely_is_reported(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE segment = 'seg-b'")
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, None)
    assert result.problem is not None
    assert "seg-b" in result.problem


async def test_a_deleted_segment_head_is_reported(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "DELETE FROM rbac_audit_segment WHERE segment = 'seg-b'")
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, log["seg-b"][1])
    assert result.problem is not None
    assert "no registration" in result.problem


async def test_two_rows_with_swapped_content_break_at_the_lower_id(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    low, high = log["seg-a"][2], log["seg-a"][5]
    await execute(
        audit_db,
        """UPDATE rbac_audit_log AS t SET user_id = s.user_id, at = s.at
           FROM rbac_audit_log AS s
           WHERE (t.id, s.id) IN (($1, $2), ($2, $1))""",
        low,
        high,
    )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, low)


async def test_two_rows_with_swapped_seqs_break_at_the_lower_id(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    low, high = log["seg-b"][3], log["seg-b"][4]
    # The unique (segment, seq) constraint forbids the swap in one step; a tamperer who can
    # write the table can still do it in three.
    await execute(audit_db, "ALTER TABLE rbac_audit_log DROP CONSTRAINT rbac_audit_log_seq_check")
    await execute(audit_db, "UPDATE rbac_audit_log SET seq = -seq WHERE id IN ($1, $2)", low, high)
    await execute(
        audit_db,
        "UPDATE rbac_audit_log SET seq = CASE id WHEN $1 THEN 4 ELSE 3 END WHERE id IN ($1, $2)",
        low,
        high,
    )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, low)


async def test_a_forged_row_appended_past_the_head_is_reported(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    columns = COLUMNS.removeprefix("id, ")
    async with audit_db.connection() as conn:
        forged = await conn.fetchval(
            f"""INSERT INTO rbac_audit_log ({columns})
                SELECT {columns.replace("seq,", "seq + 1,")}
                FROM rbac_audit_log WHERE id = $1 RETURNING id""",  # noqa: S608
            log["seg-a"][ROWS],
        )
    result = await verify(audit_db, KEYRING)
    assert (result.ok, result.first_broken_id) == (False, forged)


async def test_only_the_lowest_broken_id_is_reported_across_segments(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    early, late = log["seg-b"][1], log["seg-a"][5]
    await execute(
        audit_db, "UPDATE rbac_audit_log SET reason = 'x' WHERE id IN ($1, $2)", early, late
    )
    assert (await verify(audit_db, KEYRING)).first_broken_id == early


async def test_verify_since_starts_each_segment_at_its_first_row_then(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    since = BASE_TIME.replace(hour=3)
    # Rows before ``since`` purged (say, by retention): the full walk fails, ``since`` passes.
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE at < $1", since)
    assert (await verify(audit_db, KEYRING)).ok is False
    assert await verify(audit_db, KEYRING, since=since) == verified(2 * (ROWS - 3))
    # ... and still finds tampering after ``since``.
    await execute(audit_db, "UPDATE rbac_audit_log SET action = 'x' WHERE id = $1", log["seg-b"][5])
    assert (await verify(audit_db, KEYRING, since=since)).first_broken_id == log["seg-b"][5]


async def test_a_forged_anchor_for_verify_since_is_reported_not_trusted(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    since = BASE_TIME.replace(hour=3)
    anchor = log["seg-a"][4]  # the first row of seg-a at or after ``since``
    await execute(audit_db, "UPDATE rbac_audit_log SET prev_hash = 'ünhex' WHERE id = $1", anchor)
    result = await verify(audit_db, KEYRING, since=since)
    assert (result.ok, result.first_broken_id) == (False, anchor)


async def test_verify_since_still_detects_a_deleted_tail_after_it(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    since = BASE_TIME.replace(hour=ROWS - 1)
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE at >= $1", since)
    result = await verify(audit_db, KEYRING, since=since)
    assert (result.ok, result.first_broken_id) == (False, log["seg-a"][ROWS - 1])


async def test_verify_one_segment_ignores_breaks_in_others(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "UPDATE rbac_audit_log SET action = 'x' WHERE id = $1", log["seg-b"][2])
    assert await verify(audit_db, KEYRING, segment="seg-a") == verified(ROWS)
    assert (await verify(audit_db, KEYRING, segment="seg-b")).first_broken_id == log["seg-b"][2]


async def test_verify_walks_in_pages_smaller_than_a_segment(
    audit_db: Database, log: dict[str, dict[int, int]]
) -> None:
    await execute(audit_db, "DELETE FROM rbac_audit_log WHERE id = $1", log["seg-b"][5])
    result = await verify(audit_db, KEYRING, page_size=2)
    assert (result.checked, result.first_broken_id) == (2 * ROWS - 1, log["seg-b"][6])


async def test_a_naive_since_is_bad_input(audit_db: Database) -> None:
    with pytest.raises(BadUserInput):
        await verify(audit_db, KEYRING, since=BASE_TIME.replace(tzinfo=None))
