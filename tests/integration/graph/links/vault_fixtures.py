"""Vault notes as the vault sync writes them (external source ``vault:V``, external id and
``metadata.path`` the vault-relative path, project and skill from the folders), and the
stored wiki links read back by path."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from uuid import UUID

from fortemi.graph.links.wiki import front_matter
from fortemi.platform.database import Database
from fortemi.platform.notes import ChangePolicy, ExternalItem, NoteService

VAULTS = Path(__file__).resolve().parents[3] / "data" / "vaults"


def vault_files(root: Path) -> list[tuple[str, str]]:
    """(vault-relative path, content) of every markdown file under ``root``, by path."""
    return [
        (file.relative_to(root).as_posix(), file.read_text(encoding="utf-8"))
        for file in sorted(root.rglob("*.md"))
    ]


def vault_item(vault: str, path: str, content: str, *, flavour: str | None = None) -> ExternalItem:
    parts = path.split("/")
    project = parts[1] if parts[0] == "projects" and len(parts) > 2 else None
    skill = parts[2] if parts[:2] == ["shared", "skills"] and len(parts) > 3 else None
    title = front_matter(content).get("title") or PurePosixPath(path).stem
    metadata: dict[str, object] = {"path": path, "vault": vault}
    if flavour is not None:
        metadata["flavour"] = flavour
    return ExternalItem(
        external_id=path,
        title=str(title),
        content=content,
        metadata=metadata,
        project=project,
        skill=skill,
    )


async def sync(
    notes: NoteService,
    memory: str,
    vault: str,
    files: Iterable[tuple[str, str]],
    *,
    flavour: str | None = None,
) -> dict[str, UUID]:
    """Write ``files`` as notes of ``vault`` in one batch; their ids by path."""
    items = [vault_item(vault, path, content, flavour=flavour) for path, content in files]
    results = await notes.upsert_external(
        memory, f"vault:{vault}", items, ChangePolicy.VERSION, actor="test"
    )
    return {result.external_id: result.note.id for result in results}


@dataclass(frozen=True, slots=True)
class StoredLink:
    target: str
    resolution: str
    to: str | None  # the target's path
    type: str
    heading: str | None = None
    block: str | None = None
    label: str | None = None
    matches: int = 1


async def stored_links(db: Database, memory: str) -> dict[tuple[str, str], StoredLink]:
    """Every wiki reference by (source path, target as written)."""
    async with db.memory_transaction(memory) as conn:
        rows = await conn.fetch(
            "SELECT s.metadata ->> 'path' AS source, l.target, l.resolution, l.target_type,"
            " t.metadata ->> 'path' AS target_path, l.heading, l.block, l.label, l.matches"
            " FROM wiki_link l JOIN note s ON s.id = l.source_id"
            " LEFT JOIN note t ON t.id = l.target_id"
        )
    found = {
        (row["source"], row["target"]): StoredLink(
            target=row["target"],
            resolution=row["resolution"],
            to=row["target_path"],
            type=row["target_type"],
            heading=row["heading"],
            block=row["block"],
            label=row["label"],
            matches=row["matches"],
        )
        for row in rows
    }
    assert len(found) == len(rows), "a test names each link by source and target: keep them apart"
    return found
