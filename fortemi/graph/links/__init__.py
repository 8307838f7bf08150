"""Links between notes: explicit links, ``[[wiki links]]`` resolved from content (with
dangling references kept), and every note's outgoing links and backlinks."""

from fortemi.graph.links.indexer import WikiLinkIndexer, link_change_events
from fortemi.graph.links.models import (
    DanglingRef,
    ExplicitLink,
    LinkedNote,
    LinkKind,
    NoteLink,
    NoteLinks,
)
from fortemi.graph.links.resolution import KeyRules
from fortemi.graph.links.service import LinkService

__all__ = [
    "DanglingRef",
    "ExplicitLink",
    "KeyRules",
    "LinkKind",
    "LinkService",
    "LinkedNote",
    "NoteLink",
    "NoteLinks",
    "WikiLinkIndexer",
    "link_change_events",
]
