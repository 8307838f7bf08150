"""``fortemi shard`` as an operator runs it (the installed script, against the test
database): an export encrypted for a recipient, imported with that recipient's key."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.notes import NoteService
from tests.integration.documents.shards.helpers import populate, table_counts

FORTEMI = str(Path(sys.executable).parent / "fortemi")
PASSPHRASE = "a long enough passphrase"


async def _fortemi(folder: Path, urls: ServiceUrls, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORTEMI_", "OIDC_"))}
    env.update(
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
    tmp_path: Path,
) -> None:
    await populate(db, notes, memory)
    await _fortemi(tmp_path, service_urls, "pke", "keygen", "-o", "carol")
    printed = await _fortemi(
        tmp_path,
        service_urls,
        "shard", "export", "--memory", memory, "-o", "m.shard", "--encrypt-for", "carol.pub",
    )  # fmt: skip
    assert "encrypted for mm:" in printed
    assert (tmp_path / "m.shard").read_bytes().startswith(b"MMPKE01\n")
    empty = await table_counts(db, target)

    await _fortemi(
        tmp_path,
        service_urls,
        "shard", "import", "--memory", target, "m.shard", "--key", "carol.key", "--dry-run",
    )  # fmt: skip
    assert await table_counts(db, target) == empty
    await _fortemi(
        tmp_path,
        service_urls,
        "shard", "import", "--memory", target, "m.shard", "--key", "carol.key",
    )  # fmt: skip

    assert await table_counts(db, target) == await table_counts(db, memory)
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
