"""Exports stream every row in id order and parse back to the same rows."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from fortemi.auth.audit import AuditEntry, AuditWriter, export, list_entries
from fortemi.auth.audit.chain import chain_hash
from fortemi.auth.audit.export import FIELDS
from fortemi.auth.audit.models import AuditRecord
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from tests.integration.audit.helpers import BASE_TIME, KEY, record

NULLABLE = {"resource_name", "memory", "trace_id", "client_request_id", "client_addr", "job_id"}


@pytest.fixture
async def entries(writer: AuditWriter, audit_db: Database) -> list[AuditEntry]:
    """Seven rows, one hour apart, with awkward text; in id order."""
    await writer.record(
        [
            record(
                at=BASE_TIME + timedelta(hours=i, microseconds=i),
                user_id=f'user "{i}", with\nnewline',
                groups=("eng", "ops") if i % 2 else (),
                resource_name=None if i == 3 else f"proj-{i}-é",
                trace_id=f"t{i}" if i % 3 else None,
                details={"i": i, "text": "a,b;c", "nested": {"x": [i, 1.5, None]}},
            )
            for i in range(7)
        ]
    )
    page = await list_entries(audit_db)
    return [entry for _, entry in reversed(page.items)]


def _expected_json(entry: AuditEntry) -> dict[str, Any]:
    r = entry.record
    return {
        "id": entry.id,
        "at": r.at,
        **{name: getattr(r, name) for name in FIELDS if hasattr(r, name) and name != "at"},
        "groups": list(r.groups),
        "segment": entry.segment,
        "seq": entry.seq,
        "prev_hash": entry.prev_hash,
        "chain_hash": entry.chain_hash,
    }


async def test_json_lines_parse_back_to_the_same_rows(
    audit_db: Database, entries: list[AuditEntry]
) -> None:
    out = io.StringIO()
    assert await export(audit_db, out, fmt="jsonl") == 7
    lines = out.getvalue().splitlines()
    assert len(lines) == 7
    parsed = [json.loads(line) for line in lines]
    for row in parsed:
        assert list(row) == list(FIELDS)
        row["at"] = datetime.fromisoformat(row["at"])
    assert parsed == [_expected_json(e) for e in entries]


async def test_json_lines_carry_what_an_auditor_needs_to_recheck_the_chain(
    audit_db: Database, entries: list[AuditEntry]
) -> None:
    out = io.StringIO()
    await export(audit_db, out, fmt="jsonl")
    for line in out.getvalue().splitlines():
        row = json.loads(line)
        content = {name: row[name] for name in FIELDS if name in AuditRecord.__dataclass_fields__}
        rebuilt = AuditRecord(
            **{**content, "at": datetime.fromisoformat(row["at"]), "groups": tuple(row["groups"])}
        )
        assert (
            chain_hash(KEY, row["prev_hash"], row["segment"], row["seq"], rebuilt)
            == row["chain_hash"]
        )


async def test_csv_parses_back_to_the_same_rows(
    audit_db: Database, entries: list[AuditEntry]
) -> None:
    out = io.StringIO(newline="")
    assert await export(audit_db, out, fmt="csv") == 7
    reader = csv.reader(io.StringIO(out.getvalue(), newline=""))
    header, *rows = list(reader)
    assert header == list(FIELDS)
    assert len(rows) == 7
    for cells, entry in zip(rows, entries, strict=True):
        row = dict(zip(header, cells, strict=True))
        expected = _expected_json(entry)
        assert int(row["id"]) == entry.id
        assert datetime.fromisoformat(row["at"]) == entry.record.at
        assert (row["groups"].split(";") if row["groups"] else []) == expected["groups"]
        assert json.loads(row["details"]) == entry.record.details
        assert (int(row["seq"]), row["prev_hash"], row["chain_hash"]) == (
            entry.seq,
            entry.prev_hash,
            entry.chain_hash,
        )
        for name in FIELDS:
            if name in {"id", "at", "groups", "details", "seq"}:
                continue
            value = None if name in NULLABLE and row[name] == "" else row[name]
            assert value == expected[name], name


async def test_since_and_until_bound_the_export(
    audit_db: Database, entries: list[AuditEntry]
) -> None:
    out = io.StringIO()
    since, until = BASE_TIME + timedelta(hours=2), BASE_TIME + timedelta(hours=5)
    assert await export(audit_db, out, fmt="jsonl", since=since, until=until) == 3
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == [
        e.id for e in entries[2:5]
    ]


async def test_an_empty_export_of_csv_is_just_the_header(audit_db: Database) -> None:
    out = io.StringIO(newline="")
    assert await export(audit_db, out, fmt="csv") == 0
    assert out.getvalue() == ",".join(FIELDS) + "\r\n"


async def test_an_unknown_format_is_bad_input(audit_db: Database) -> None:
    with pytest.raises(BadUserInput, match="jsonl or csv"):
        await export(audit_db, io.StringIO(), fmt="xml")  # type: ignore[arg-type]
