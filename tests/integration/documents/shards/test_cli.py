"""``fortemi shard`` as an operator runs it (the installed script, against the test
database): an export encrypted for a recipient, imported with that recipient's key."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from fortemi.auth.audit import AuditKeyring
from fortemi.documents.attachments.storage import LocalBlobStore
from fortemi.documents.shards import BlobBytes
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.notes import NoteService
from fortemi.platform.settings import Settings
from tests.integration.documents.shards.helpers import (
    HELLO,
    HELLO_DIGEST,
    populate,
    read_members,
    table_counts,
)

FORTEMI = str(Path(sys.executable).parent / "fortemi")
PASSPHRASE = "a long enough passphrase"


async def _fortemi(folder: Path, urls: ServiceUrls, settings: Settings, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    # The operator's CLI keys the audit chain with the servers' key, as every process
    # writing one database must (FORTEMI_AUDIT_KEY shared): the session's chain stays whole.
    audit_key = base64.b64encode(AuditKeyring.from_settings(settings).current).decode()
    env.update(
        FORTEMI_AUDIT_KEY=audit_key,
        FORTEMI_HOME=str(folder / "home"),
        FORTEMI_LOG_LEVEL="WARNING",
        FORTEMI_PKE_PASSPHRASE=PASSPHRASE,
        DATABASE_URL=urls.database,
        REDIS_URL=urls.redis,
    )
    result = await asyncio.to_thread(
        subprocess.run,
        [FORTEMI, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_encrypted_export_imports_with_the_recipients_key_and_both_are_audited(
    db: Database,
    notes: NoteService,
    memory: str,
    target: str,
    service_urls: ServiceUrls,
    settings: Settings,
    tmp_path: Path,
) -> None:
    # The CLI's blob store: FORTEMI_HOME/blobs, as the server keeps it.
    store = LocalBlobStore(tmp_path / "home" / "blobs")
    await populate(db, notes, memory, BlobBytes(store, tmp_path / "home" / "blobs" / ".staging"))
    await _fortemi(tmp_path, service_urls, settings, "pke", "keygen", "-o", "carol")
    printed = await _fortemi(
        tmp_path,
        service_urls,
        settings,
        "shard", "export", "--memory", memory, "-o", "m.shard", "--encrypt-for", "carol.pub",
    )  # fmt: skip
    assert "encrypted for mm:" in printed
    assert (tmp_path / "m.shard").read_bytes().startswith(b"MMPKE01\n")
    empty = await table_counts(db, target)

    await _fortemi(
        tmp_path,
        service_urls,
        settings,
        "shard", "import", "--memory", target, "m.shard", "--key", "carol.key", "--dry-run",
    )  # fmt: skip
    assert await table_counts(db, target) == empty
    await _fortemi(
        tmp_path,
        service_urls,
        settings,
        "shard", "import", "--memory", target, "m.shard", "--key", "carol.key",
    )  # fmt: skip

    assert await table_counts(db, target) == await table_counts(db, memory)
    assert await store.read_all(target, HELLO_DIGEST, 100) == HELLO  # the bytes came along
    async with db.shared_transaction() as conn:
        audited = await conn.fetch(
            "SELECT resource_name, details->>'operation' AS operation FROM rbac_audit_log "
            "WHERE reason = 'operator_database_access' AND resource_name = ANY($1::text[]) "
            "ORDER BY id",
            [memory, target],
        )
    assert [(r["resource_name"], r["operation"]) for r in audited] == [
        (memory, "shard_export"),
        (target, "shard_import"),
        (target, "shard_import"),
    ]


async def test_a_core_export_carries_the_bytes_only_with_the_option(
    db: Database,
    notes: NoteService,
    memory: str,
    service_urls: ServiceUrls,
    settings: Settings,
    tmp_path: Path,
) -> None:
    store = LocalBlobStore(tmp_path / "home" / "blobs")
    await populate(db, notes, memory, BlobBytes(store, tmp_path / "home" / "blobs" / ".staging"))
    export = ("shard", "export", "--memory", memory, "--profile", "core-v1")
    bare = json.loads(await _fortemi(tmp_path, service_urls, settings, *export, "-o", "bare.shard"))
    carried = json.loads(
        await _fortemi(
            tmp_path,
            service_urls,
            settings,
            *export,
            "--with-attachment-bytes",
            "-o",
            "carried.shard",
        )
    )

    assert bare["blobs"] is None
    assert "attachment-bytes-outside-profile" in [e["code"] for e in bare["loss"]]
    assert carried["blobs"] == {"count": 1, "bytes": len(HELLO)}
    assert read_members(tmp_path / "carried.shard")[f"blobs/{HELLO_DIGEST}"] == HELLO
