"""One query for the concepts of every note a GraphQL response lists.

``Note.concepts`` on a page of 50 notes would otherwise be 50 queries. The loader batches
the notes resolved together into one ``note_concepts`` call per memory. It is kept per
request (per connection over a WebSocket) beside the request object, weakly, so the shared
GraphQL context needs no field for it; and it does not cache (``cache=False``): a WebSocket
connection lives across operations, and a cached answer would go stale.
"""

from __future__ import annotations

from uuid import UUID
from weakref import WeakKeyDictionary

from strawberry.dataloader import DataLoader

from fortemi.graph.vocabulary.models import NoteConcept
from fortemi.graphql.context import Info

__all__ = ["note_concepts_loader"]

_Loader = DataLoader[UUID, list[NoteConcept]]
_LOADERS: WeakKeyDictionary[object, dict[str, _Loader]] = WeakKeyDictionary()


def note_concepts_loader(info: Info, memory: str) -> _Loader:
    per_request = _LOADERS.setdefault(info.context.request, {})
    loader = per_request.get(memory)
    if loader is None:
        vocabulary = info.context.services.vocabulary

        async def load(note_ids: list[UUID]) -> list[list[NoteConcept]]:
            found = await vocabulary.note_concepts(memory, note_ids)
            return [found.get(note_id, []) for note_id in note_ids]

        loader = DataLoader(load_fn=load, cache=False)
        per_request[memory] = loader
    return loader
