"""A memory holding every kind of data a shard carries, and tools to take shards apart
and put them back together (to forge the broken ones import must refuse)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from fortemi.documents.shards.components import COMPONENTS, DERIVED
from fortemi.graph.maintenance.plan import MaintenanceSettings, Step
from fortemi.graph.maintenance.service import GraphMaintenance
from fortemi.graph.vocabulary import VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService

SCHEME, TOPIC, SUBTOPIC, COLLECTION = uuid4(), uuid4(), uuid4(), uuid4()
ATTACHMENT, CHILD_ATTACHMENT = uuid4(), uuid4()


async def populate(db: Database, notes: NoteService, memory: str) -> dict[str, UUID]:
    """Notes through the note service (versions, tags, project, skill, tombstone), the
    rest as the features store it (vocabulary, links of each kind, wiki references,
    embeddings, a custom document type), then a real graph maintenance run."""
    a = await notes.create(
        memory,
        NoteDraft(title="Alpha", content="alpha [[Beta]] [[Nowhere]]", tags=("x", "y/z")),
        actor="alice",
    )
    b = await notes.create(
        memory, NoteDraft(title="Beta", content="beta", project="apollo", starred=True), actor="bob"
    )
    c = await notes.create(
        memory,
        NoteDraft(title="Gamma", content="gamma", skill="SKILL-writing", metadata={"k": [1]}),
        actor=None,
    )
    gone = await notes.create(memory, NoteDraft(title="Gone", content="gone"), actor="alice")
    await notes.update(memory, a.id, NotePatch(content="alpha two [[Beta]]"), actor="alice")
    await notes.delete(memory, gone.id, actor="alice")
    async with db.memory_transaction(memory) as conn:
        await conn.execute(
            "UPDATE note SET external_source = 'obsidian', external_id = 'c.md' WHERE id = $1",
            c.id,
        )
        set_id = await conn.fetchval(
            "INSERT INTO embedding_set (name, model, dimension, composition) "
            "VALUES ('m-3', 'm', 3, '{\"title\": true}') RETURNING id"
        )
        for note, vector in ((a.id, "[0.1,0.2,0.3]"), (b.id, "[0.3,0.2,0.125]")):
            chunk = await conn.fetchval(
                "INSERT INTO chunk (note_id, ordinal, text, start_offset, end_offset, heading, "
                "content_hash) VALUES ($1, 0, 'text', 0, 4, NULL, 'h') RETURNING id",
                note,
            )
            await conn.execute(
                "INSERT INTO chunk_embedding VALUES ($1, $2, $3, 'th', $4::text::vector)",
                set_id,
                chunk,
                note,
                vector,
            )
            await conn.execute(
                "INSERT INTO note_embedding (set_id, note_id, embedding) "
                "VALUES ($1, $2, $3::text::vector)",
                set_id,
                note,
                vector,
            )
        await conn.execute(
            "INSERT INTO concept_scheme (id, uri, title, is_default) VALUES ($1, 'urn:s', 'S', true)",
            SCHEME,
        )
        for concept, notation in ((TOPIC, "T"), (SUBTOPIC, None)):
            await conn.execute(
                "INSERT INTO concept (id, scheme_id, notation, status, dimension) "
                "VALUES ($1, $2, $3, 'controlled', 'topic')",
                concept,
                SCHEME,
                notation,
            )
        await conn.execute(
            "INSERT INTO concept_label (concept_id, kind, lang, label) VALUES "
            "($1, 'pref', 'en', 'Topic'), ($1, 'alt', '', 'Subject'), ($2, 'pref', 'en', 'Sub')",
            TOPIC,
            SUBTOPIC,
        )
        await conn.execute(
            "INSERT INTO concept_note VALUES ($1, 'definition', 'fr', 'Un sujet')", TOPIC
        )
        await conn.execute(
            "INSERT INTO concept_relation (source_id, target_id, kind, confidence) "
            "VALUES ($1, $2, 'broader', 0.5)",
            SUBTOPIC,
            TOPIC,
        )
        await conn.execute(
            "INSERT INTO concept_collection (id, scheme_id, label, ordered) VALUES ($1, $2, 'C', true)",
            COLLECTION,
            SCHEME,
        )
        await conn.execute(
            "INSERT INTO concept_collection_member VALUES ($1, $2, 0)", COLLECTION, TOPIC
        )
        await conn.execute(
            "INSERT INTO note_concept (note_id, concept_id, source, is_primary) "
            "VALUES ($1, $2, 'user', true)",
            a.id,
            TOPIC,
        )
        await conn.execute(
            "INSERT INTO note_link (source_id, target_id, kind, score, rank, set_id, model, snn) "
            "VALUES ($1, $2, 'explicit', 1, NULL, NULL, NULL, NULL), "
            "($2, $3, 'semantic', 0.75, 1, $4, 'm', 0.5)",
            a.id,
            b.id,
            c.id,
            set_id,
        )
        await conn.execute(
            "INSERT INTO note_link (source_id, target_id, kind, score) VALUES ($1, $2, 'wiki', 1) "
            "ON CONFLICT DO NOTHING",
            a.id,
            b.id,
        )
        await conn.execute(
            "INSERT INTO wiki_link (source_id, ordinal, target, target_key, target_id, resolution, "
            "matches, vault) VALUES ($1, 0, 'Beta', 'beta', $2, 'title', 1, NULL), "
            "($1, 1, 'Nowhere', 'nowhere', NULL, 'dangling', 0, 'v') ON CONFLICT DO NOTHING",
            a.id,
            b.id,
        )
        await conn.execute(
            "INSERT INTO wiki_link_candidate VALUES ($1, 1, 0, 'path', 'v\u241fpath\u241fnowhere') "
            "ON CONFLICT DO NOTHING",
            a.id,
        )
        await conn.execute(
            "INSERT INTO note_wiki_key VALUES ($1, 'title', 'beta') ON CONFLICT DO NOTHING", b.id
        )
        await conn.execute(
            "INSERT INTO document_type (name, category, definition, created_by, updated_by) "
            "VALUES ('notes-x', 'prose', '{\"name\": \"notes-x\"}', 'admin', 'admin')"
        )
        # An attachment with its blob row and an extracted chunk, and an e-mail child.
        digest = "ab" * 32
        await conn.execute("INSERT INTO blob (digest, size) VALUES ($1, 5)", digest)
        await conn.execute(
            "INSERT INTO attachment (id, note_id, blob_digest, filename, size, mime_detected, "
            "document_type, detection_method, detection_confidence, extraction_status, "
            "extracted_text, extracted_from) VALUES ($1, $2, $3, 'a.txt', 5, 'text/plain', "
            "'plaintext', 'extension', 0.9, 'done', 'hello', NULL), ($4, $2, $3, 'b.txt', 5, "
            "'text/plain', 'plaintext', 'extension', 0.9, 'done', 'hello', $1)",
            ATTACHMENT, a.id, digest, CHILD_ATTACHMENT,
        )  # fmt: skip
        await conn.execute(
            "INSERT INTO attachment_chunk (attachment_id, ordinal, text, start_offset, "
            "end_offset) VALUES ($1, 0, 'hello', 0, 5)",
            ATTACHMENT,
        )
        await conn.execute("INSERT INTO note_tagged (note_id, version) VALUES ($1, 1)", a.id)
    # A real maintenance run: SNN, PFNET, Louvain communities and its snapshot.
    maintenance = GraphMaintenance(db, VocabularyService(db), MaintenanceSettings())
    report = await maintenance.run(memory, list(Step), allow_aggressive_pruning=True, actor="admin")
    assert report.snapshot is not None
    async with db.memory_transaction(memory) as conn:
        # A community named by a concept, as concept naming leaves some.
        await conn.execute(
            "INSERT INTO graph_community (community, label, concept_id, size) "
            "VALUES (999, 'named', $1, 1)",
            TOPIC,
        )
    return {"a": a.id, "b": b.id, "c": c.id, "gone": gone.id}


def carried_tables() -> list[str]:
    return [t.name for c in COMPONENTS for t in c.tables]


async def table_counts(db: Database, memory: str) -> dict[str, int]:
    """Rows of every table a shard touches, and of the tables the triggers derive."""
    counts = {}
    async with db.memory_transaction(memory) as conn:
        for name in [*carried_tables(), *DERIVED]:
            counts[name] = int(await conn.fetchval(f"SELECT count(*) FROM {name}"))  # noqa: S608
    return counts


def read_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        out = {}
        for member in tar.getmembers():
            source = tar.extractfile(member)
            assert source is not None
            out[member.name] = source.read()
    return out


def write_members(path: Path, members: dict[str, bytes], *, reseal: bool = True) -> None:
    """A shard of ``members`` (manifest first); ``reseal``: the manifest's checksums,
    sizes and counts are made to match the components again."""
    manifest: dict[str, Any] = json.loads(members["manifest.json"])
    if reseal:
        for entry in manifest["components"]:
            data = members[entry["path"]]
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            entry["bytes"] = len(data)
            tables = [_table_of(line) for line in data.splitlines()]
            for table in entry["tables"]:
                table["count"] = tables.count(table["name"])
            entry["count"] = sum(table["count"] for table in entry["tables"])
        members = {**members, "manifest.json": json.dumps(manifest).encode()}
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _table_of(line: bytes) -> str | None:
    try:
        table = json.loads(line)["table"]
    except (ValueError, KeyError, TypeError):
        return None  # a forged line: counted nowhere
    return str(table)
