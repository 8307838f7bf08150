"""Every refused import writes nothing: the rows of every table are counted before and
after, and each refusal carries its stable reason."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from fortemi.documents.shards import ImportOptions, Limits, ShardService
from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, Conflict, FortemiError
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from tests.integration.documents.shards.helpers import (
    populate,
    read_members,
    table_counts,
    write_members,
)


@pytest.fixture
async def shard(
    db: Database, shards: ShardService, notes: NoteService, memory: str, tmp_path: Path
) -> Path:
    await populate(db, notes, memory)
    path = tmp_path / "good.shard"
    with path.open("wb") as sink:
        await shards.export(memory, sink, profile="full-v1")
    return path


async def _refused(
    db: Database,
    shards: ShardService,
    target: str,
    path: Path,
    options: ImportOptions | None = None,
) -> FortemiError:
    # The target holds a note of its own, so "nothing written" is checked on a memory
    # with data, not only on an empty one.
    before = await table_counts(db, target)
    with pytest.raises(FortemiError) as caught:
        await shards.import_(target, path, options or ImportOptions())
    assert await table_counts(db, target) == before
    return caught.value


async def test_altered_component_is_refused_by_its_checksum_and_writes_nothing(
    db: Database, shards: ShardService, shard: Path, target: str, tmp_path: Path
) -> None:
    members = read_members(shard)
    members["components/links.jsonl"] = members["components/links.jsonl"].replace(
        b'"explicit"', b'"Explicit"'
    )
    forged = tmp_path / "forged.shard"
    write_members(forged, members, reseal=False)
    error = await _refused(db, shards, target, forged)
    assert isinstance(error, BadUserInput)
    assert error.extensions["reason"] == "shard_checksum_mismatch"


async def test_truncated_archive_is_refused_and_writes_nothing(
    db: Database, shards: ShardService, shard: Path, target: str, tmp_path: Path
) -> None:
    cut = _truncated(shard, tmp_path / "cut.shard")
    error = await _refused(db, shards, target, cut)
    assert error.extensions["reason"] == "shard_truncated"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m: {**m, "profile": "everything"}, "shard_bad_manifest"),
        (lambda m: {k: v for k, v in m.items() if k != "components"}, "shard_bad_manifest"),
        (lambda m: {**m, "surprise": 1}, "shard_bad_manifest"),
        (lambda m: {**m, "min_reader_version": 99}, "shard_reader_too_old"),
    ],
)
async def test_bad_manifest_is_refused_and_writes_nothing(
    db: Database,
    shards: ShardService,
    shard: Path,
    target: str,
    tmp_path: Path,
    change: object,
    reason: str,
) -> None:
    members = read_members(shard)
    manifest = json.loads(members["manifest.json"])
    members["manifest.json"] = json.dumps(change(manifest)).encode()  # type: ignore[operator]
    forged = tmp_path / "forged.shard"
    write_members(forged, members, reseal=False)
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == reason


async def test_reference_to_a_note_in_neither_shard_nor_memory_is_refused(
    db: Database, shards: ShardService, shard: Path, target: str, tmp_path: Path
) -> None:
    members = read_members(shard)
    manifest = json.loads(members["manifest.json"])
    # Keep only the links: every note they name is missing from shard and memory.
    manifest["components"] = [c for c in manifest["components"] if c["name"] == "links"]
    forged_members = {"manifest.json": json.dumps(manifest).encode()}
    forged_members["components/links.jsonl"] = b"".join(
        line + b"\n"
        for line in members["components/links.jsonl"].splitlines()
        if b'"note_link"' in line and b'"explicit"' in line
    )
    forged = tmp_path / "dangling.shard"
    write_members(forged, forged_members)
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == "shard_dangling_reference"


async def test_conflict_under_the_default_policy_is_refused_and_writes_nothing(
    db: Database, shards: ShardService, shard: Path, target: str
) -> None:
    await shards.import_(target, shard, ImportOptions())
    error = await _refused(db, shards, target, shard)
    assert isinstance(error, Conflict)
    assert error.extensions["reason"] == "shard_conflict"


async def test_dry_run_validates_and_reports_but_writes_nothing(
    db: Database, shards: ShardService, shard: Path, target: str
) -> None:
    before = await table_counts(db, target)
    report = await shards.import_(target, shard, ImportOptions(dry_run=True))
    assert await table_counts(db, target) == before
    assert report.incoming["note"] == 4
    assert report.written == {}


async def test_dry_run_refuses_what_the_import_refuses(
    db: Database, shards: ShardService, shard: Path, target: str
) -> None:
    await shards.import_(target, shard, ImportOptions())
    error = await _refused(db, shards, target, shard, ImportOptions(dry_run=True))
    assert error.extensions["reason"] == "shard_conflict"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("components/notes.jsonl", tarfile.SYMTYPE),
        ("components/notes.jsonl", tarfile.LNKTYPE),
        ("components", tarfile.DIRTYPE),
        ("components/notes.jsonl", tarfile.CHRTYPE),
        ("../evil", tarfile.REGTYPE),
        ("/etc/cron.d/evil", tarfile.REGTYPE),
    ],
)
async def test_links_devices_directories_and_foreign_paths_are_refused(
    db: Database,
    shards: ShardService,
    shard: Path,
    target: str,
    tmp_path: Path,
    name: str,
    kind: bytes,
) -> None:
    manifest = read_members(shard)["manifest.json"]
    forged = tmp_path / "unsafe.shard"
    with gzip.open(forged, "wb") as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        head = tarfile.TarInfo("manifest.json")
        head.size = len(manifest)
        tar.addfile(head, io.BytesIO(manifest))
        extra = tarfile.TarInfo(name)
        extra.type = kind
        if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
            extra.linkname = "/etc/passwd"
        if kind == tarfile.REGTYPE:
            extra.size = 1
            tar.addfile(extra, io.BytesIO(b"x"))
        else:
            tar.addfile(extra)
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == "shard_unsafe_member"


async def test_replace_takes_the_shard_rows_but_never_revives_a_tombstone(
    db: Database,
    shards: ShardService,
    notes: NoteService,
    shard: Path,
    target: str,
) -> None:
    await shards.import_(target, shard, ImportOptions())
    async with db.memory_transaction(target) as conn:
        alpha = await conn.fetchval("SELECT id FROM note WHERE title = 'Alpha'")
        beta = await conn.fetchval("SELECT id FROM note WHERE title = 'Beta'")
    await notes.update(target, alpha, NotePatch(title="Changed here"), actor="t")
    await notes.delete(target, beta, actor="t")

    await shards.import_(target, shard, ImportOptions(on_conflict="replace"))

    async with db.memory_transaction(target) as conn:
        title = await conn.fetchval("SELECT title FROM note WHERE id = $1", alpha)
        deleted = await conn.fetchval("SELECT deleted_at FROM note WHERE id = $1", beta)
    assert title == "Alpha"
    assert deleted is not None


async def test_merge_keeps_the_newer_local_note_and_skip_keeps_every_local_row(
    db: Database, shards: ShardService, notes: NoteService, shard: Path, target: str
) -> None:
    await shards.import_(target, shard, ImportOptions())
    async with db.memory_transaction(target) as conn:
        alpha = await conn.fetchval("SELECT id FROM note WHERE title = 'Alpha'")
    await notes.update(target, alpha, NotePatch(title="Newer here"), actor="t")
    own = await notes.create(target, NoteDraft(title="Own", content="own"), actor="t")

    merged = await shards.import_(target, shard, ImportOptions(on_conflict="merge"))
    skipped = await shards.import_(target, shard, ImportOptions(on_conflict="skip"))

    async with db.memory_transaction(target) as conn:
        title = await conn.fetchval("SELECT title FROM note WHERE id = $1", alpha)
        kept = await conn.fetchval("SELECT count(*) FROM note WHERE id = $1", own.id)
    assert title == "Newer here"
    assert kept == 1
    assert merged.written.get("note", 0) == 0
    assert skipped.written.get("note", 0) == 0


def _truncated(shard: Path, cut: Path) -> Path:
    data = shard.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    return cut


async def test_counts_that_disagree_with_the_rows_are_refused(
    db: Database, shards: ShardService, shard: Path, target: str, tmp_path: Path
) -> None:
    members = read_members(shard)
    manifest = json.loads(members["manifest.json"])
    links = next(c for c in manifest["components"] if c["name"] == "links")
    links["tables"][0]["count"] += 1
    links["count"] += 1
    members["manifest.json"] = json.dumps(manifest).encode()
    forged = tmp_path / "counts.shard"
    write_members(forged, members, reseal=False)
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == "shard_count_mismatch"


async def test_a_shard_over_the_size_limits_is_refused(
    db: Database, shards: ShardService, shard: Path, target: str
) -> None:
    small = ImportOptions(limits=Limits(max_total_bytes=1024))
    error = await _refused(db, shards, target, shard, small)
    assert error.extensions["reason"] == "shard_too_large"


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # a row with a column its table does not list
        (lambda line: line.replace(b'"row":{', b'"row":{"evil":1,', 1), "shard_bad_row"),
        # a line that is not JSON
        (lambda line: line[:-5], "shard_bad_row"),
        # a row of a table the component does not list
        (lambda line: line.replace(b'"table":"note"', b'"table":"lex_doc"', 1), "shard_bad_row"),
    ],
)
async def test_rows_that_do_not_match_the_manifest_are_refused(
    db: Database,
    shards: ShardService,
    shard: Path,
    target: str,
    tmp_path: Path,
    edit: object,
    reason: str,
) -> None:
    members = read_members(shard)
    lines = members["components/notes.jsonl"].splitlines()
    lines[0] = edit(lines[0])  # type: ignore[operator]
    members["components/notes.jsonl"] = b"\n".join(lines) + b"\n"
    forged = tmp_path / "rows.shard"
    write_members(forged, members)  # checksums and sizes made to match: the rows are wrong
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == reason


async def test_a_column_this_memory_does_not_have_is_refused(
    db: Database, shards: ShardService, shard: Path, target: str, tmp_path: Path
) -> None:
    members = read_members(shard)
    manifest = json.loads(members["manifest.json"])
    notes = next(c for c in manifest["components"] if c["name"] == "notes")
    notes["tables"][0]["columns"].append("future")
    members["manifest.json"] = json.dumps(manifest).encode()
    members["components/notes.jsonl"] = members["components/notes.jsonl"].replace(
        b'"row":{', b'"row":{"future":1,'
    )
    forged = tmp_path / "future.shard"
    write_members(forged, members)
    error = await _refused(db, shards, target, forged)
    assert error.extensions["reason"] == "shard_unknown_column"
