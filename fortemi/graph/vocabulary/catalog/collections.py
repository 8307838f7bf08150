"""SKOS collections of a memory's concepts, ordered or not (governance: memory admin)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID, uuid4

from fortemi.graph.vocabulary.catalog.changes import Governed, missing
from fortemi.graph.vocabulary.models import Collection
from fortemi.graph.vocabulary.validation import check_label, check_uri
from fortemi.platform.errors import BadUserInput

__all__ = ["CollectionCatalog"]


class CollectionCatalog(Governed):
    """Collections: a label, a scheme, members in position order."""

    async def collections(self, memory: str, scheme_id: UUID | None = None) -> list[Collection]:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.collections(conn, scheme_id)

    async def collection(self, memory: str, collection_id: UUID) -> Collection | None:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.collection(conn, collection_id)

    async def create_collection(
        self,
        memory: str,
        *,
        scheme_id: UUID,
        label: str,
        ordered: bool = False,
        uri: str | None = None,
        members: Sequence[UUID] = (),
        actor: str | None,
    ) -> Collection:
        collection = Collection(
            id=uuid4(),
            scheme_id=scheme_id,
            uri=check_uri(uri),
            label=check_label(label),
            ordered=bool(ordered),
            created_at=datetime.now(UTC),
            members=_members(members),
        )
        async with self._changing(memory, actor, "collection_created", collection.id) as conn:
            if await self._repo.scheme(conn, scheme_id) is None:
                raise missing("concept scheme", scheme_id)
            await self._free_uri(conn, collection.uri, collection.id)
            await self._known(conn, collection.members)
            await self._repo.insert_collection(conn, collection)
            found = await self._repo.collection(conn, collection.id)
            if found is None:
                raise RuntimeError("a collection inserted in this transaction is missing")
            return found

    async def set_collection_members(
        self, memory: str, collection_id: UUID, members: Sequence[UUID], *, actor: str | None
    ) -> Collection:
        """Replace the members (in this order, which an ordered collection keeps)."""
        wanted = _members(members)
        async with self._changing(memory, actor, "collection_updated", collection_id) as conn:
            if await self._repo.collection(conn, collection_id) is None:
                raise missing("collection", collection_id)
            await self._known(conn, wanted)
            await self._repo.set_members(conn, collection_id, wanted)
            found = await self._repo.collection(conn, collection_id)
            if found is None:
                raise missing("collection", collection_id)
            return found

    async def delete_collection(
        self, memory: str, collection_id: UUID, *, actor: str | None
    ) -> None:
        async with self._changing(memory, actor, "collection_deleted", collection_id) as conn:
            if not await self._repo.delete_collection(conn, collection_id):
                raise missing("collection", collection_id)


def _members(members: Sequence[UUID]) -> tuple[UUID, ...]:
    unique = tuple(dict.fromkeys(members))
    if len(unique) != len(members):
        raise BadUserInput("A collection lists each member once", field="members")
    return unique
