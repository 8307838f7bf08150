"""The writer stores every record, in order, in a valid chain, with group commit."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from datetime import timedelta

import pytest

from fortemi.auth.audit import AuditEntry, AuditWriter, list_entries, verify
from fortemi.platform.database import Database
from fortemi.platform.errors import Unavailable
from tests.integration.audit.helpers import (
    BASE_TIME,
    KEYRING,
    head_row,
    ids_by_seq,
    record,
    verified,
)


async def test_records_round_trip_with_every_field(writer: AuditWriter, audit_db: Database) -> None:
    written = record(
        user_id='bob "the" builder; é 日本',
        groups=("eng", "ops;x", ""),
        resource_type="skill",
        resource_name=None,
        memory=None,
        action="write",
        decision="deny",
        reason="explicit_deny",
        policy_version="sha:abc",
        trace_id="trace-1",
        client_addr="::1",
        job_id="job-9",
        details={"checker": "role", "n": [1, 2.5, None, True], "nested": {"z": "ü", "a": {}}},
    )
    [entry] = await writer.append([written])
    page = await list_entries(audit_db)
    [(_, stored)] = page.items
    assert stored == entry
    assert stored.record == written
    link = await audit_db.fetchval(
        "SELECT link FROM public.rbac_audit_segment WHERE segment = 'seg-a'"
    )
    assert (stored.segment, stored.seq, stored.prev_hash) == ("seg-a", 1, link)
    assert await head_row(audit_db, "seg-a") == (1, entry.chain_hash)


async def test_details_that_jsonb_rewrites_still_verify(
    writer: AuditWriter, audit_db: Database
) -> None:
    details = {
        "big": 1e20,
        "huge": -1.5e300,
        "negzero": -0.0,
        "tiny": 1.5e-7,
        "third": 1 / 3,
        "int": 10**30,
        "tuple": (1, "a"),
        "key order": {"b": 1, "a": 2, "ä": 3, "A": 4},
    }
    [entry] = await writer.append([record(details=details)])
    [(_, stored)] = (await list_entries(audit_db)).items
    assert stored.record.details == entry.record.details
    # Types too (1e20 == its int, but they encode differently); key order is jsonb's own.
    assert json.dumps(stored.record.details, sort_keys=True) == json.dumps(
        entry.record.details, sort_keys=True
    )
    assert await verify(audit_db, KEYRING) == verified(1)


async def test_500_concurrent_calls_are_all_stored_in_order_and_the_chain_verifies(
    audit_db: Database,
) -> None:
    batches: list[int] = []

    async def committed(entries: Sequence[AuditEntry]) -> None:
        batches.append(len(entries))

    async with AuditWriter(
        audit_db, keyring=KEYRING, segment="busy", max_batch=100, on_committed=committed
    ) as w:

        async def call(i: int) -> list[AuditEntry]:
            records = [
                record(user_id=f"u{i}", details={"call": i, "pos": p}) for p in range(1 + i % 4)
            ]
            return await w.append(records)

        results = await asyncio.gather(*(call(i) for i in range(500)))

    total = sum(1 + i % 4 for i in range(500))
    stored = await ids_by_seq(audit_db, "busy")
    assert sorted(stored) == list(range(1, total + 1))
    # ids follow the chain, so "newest first" (id order) is also chain order.
    assert [stored[seq] for seq in sorted(stored)] == sorted(stored.values())
    for i, entries in enumerate(results):
        seqs = [e.seq for e in entries]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"call {i} not contiguous"
        assert [e.record.details["pos"] for e in entries] == list(range(len(entries)))
        assert all(stored[e.seq] == e.id for e in entries)
    # Group commit: far fewer transactions than calls, none larger than max_batch.
    assert sum(batches) == total
    assert len(batches) < 500
    assert max(batches) <= 100
    assert await verify(audit_db, KEYRING) == verified(total)


async def test_a_call_larger_than_max_batch_is_stored_whole_and_contiguous(
    audit_db: Database,
) -> None:
    async with AuditWriter(audit_db, keyring=KEYRING, segment="small", max_batch=3) as w:
        big = [record(details={"pos": p}) for p in range(7)]
        results = await asyncio.gather(
            w.append([record(user_id="x")]), w.append(big), w.append([record(user_id="y")])
        )
    seqs = [e.seq for e in results[1]]
    assert seqs == list(range(seqs[0], seqs[0] + 7))
    assert [e.record.details["pos"] for e in results[1]] == list(range(7))
    assert (await verify(audit_db, KEYRING)).ok


async def test_a_restarted_writer_continues_its_segment(audit_db: Database) -> None:
    async with AuditWriter(audit_db, keyring=KEYRING, segment="again") as first:
        await first.record([record(), record()])
    async with AuditWriter(audit_db, keyring=KEYRING, segment="again") as second:
        [entry] = await second.append([record()])
    assert entry.seq == 3
    assert await verify(audit_db, KEYRING) == verified(3)


async def test_writers_get_distinct_default_segments(audit_db: Database) -> None:
    async with (
        AuditWriter(audit_db, keyring=KEYRING) as a,
        AuditWriter(audit_db, keyring=KEYRING) as b,
    ):
        await asyncio.gather(a.record([record()]), b.record([record()]))
    assert a.segment != b.segment
    assert await verify(audit_db, KEYRING) == verified(2)


async def test_close_commits_what_is_queued_then_refuses_new_records(audit_db: Database) -> None:
    w = AuditWriter(audit_db, keyring=KEYRING, segment="closing")
    await w.start()
    pending = [asyncio.create_task(w.append([record(details={"i": i})])) for i in range(20)]
    await asyncio.sleep(0)  # the calls are queued
    await w.close()
    assert all(task.done() for task in pending)
    assert sorted(len(task.result()) for task in pending) == [1] * 20
    assert len(await ids_by_seq(audit_db, "closing")) == 20
    with pytest.raises(Unavailable, match="audit log is unavailable"):
        await w.record([record()])
    await w.close()  # closing again is harmless


async def test_record_before_start_is_a_programming_error(audit_db: Database) -> None:
    with pytest.raises(RuntimeError, match="start"):
        await AuditWriter(audit_db, keyring=KEYRING).record([record()])


async def test_on_committed_sees_every_batch_in_order_and_its_failure_is_only_logged(
    audit_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[int] = []

    async def flaky(entries: Sequence[AuditEntry]) -> None:
        seen.extend(e.seq for e in entries)
        raise ConnectionError("redis is down")

    with caplog.at_level(logging.ERROR, logger="fortemi.auth.audit.writer"):
        async with AuditWriter(audit_db, keyring=KEYRING, segment="pub", on_committed=flaky) as w:
            for i in range(3):
                await w.record([record(details={"i": i}), record(details={"i": i})])
    assert seen == [1, 2, 3, 4, 5, 6]
    assert sum("on_committed failed" in r.getMessage() for r in caplog.records) == 3


async def test_a_slow_subscriber_does_not_hold_up_the_audit_write(audit_db: Database) -> None:
    release = asyncio.Event()
    announced: list[int] = []

    async def slow(entries: Sequence[AuditEntry]) -> None:
        await release.wait()
        announced.extend(e.seq for e in entries)

    async with AuditWriter(audit_db, keyring=KEYRING, segment="slow", on_committed=slow) as w:
        for _ in range(5):
            await w.record([record()])  # returns although the subscriber is stuck
        assert announced == []
        release.set()
    assert announced == [1, 2, 3, 4, 5]


async def test_a_second_writer_on_the_same_segment_cannot_fork_the_chain(
    audit_db: Database,
) -> None:
    async with (
        AuditWriter(audit_db, keyring=KEYRING, segment="twin") as a,
        AuditWriter(audit_db, keyring=KEYRING, segment="twin") as b,
    ):
        await a.record([record(), record(), record()])
        # b still believes the head is at seq 0: its batch is refused, nothing is written.
        with pytest.raises(Unavailable):
            await b.record([record(user_id="b")])
        assert await head_row(audit_db, "twin") == a.head
        assert a.head is not None
        assert a.head[0] == 3
        # ... and then it re-reads the head and continues the one chain,
        [entry] = await b.append([record(user_id="b")])
        assert entry.seq == 4
        # which a now finds moved: one refusal, then it continues after b.
        with pytest.raises(Unavailable):
            await a.record([record(user_id="a")])
        [entry] = await a.append([record(user_id="a")])
        assert entry.seq == 5
    assert await verify(audit_db, KEYRING) == verified(5)


async def test_stored_times_keep_their_microseconds(
    writer: AuditWriter, audit_db: Database
) -> None:
    at = BASE_TIME + timedelta(microseconds=123457)
    await writer.record([record(at=at)])
    [(_, stored)] = (await list_entries(audit_db)).items
    assert stored.record.at == at
