"""The registry of shard components, in import order (a row's references come first).

Adding a kind of data to shards is one module here: a :class:`Component` naming its
tables, and one line in :data:`COMPONENTS`. Every memory table is either carried by a
component, listed in :data:`DERIVED` (rebuilt by the database on import) or in
:data:`LOCAL` (bookkeeping of one database's history); a unit test reads the memory
migrations and fails on a table none accounts for.
"""

from __future__ import annotations

from fortemi.documents.shards.components import (
    attachments,
    document_types,
    embedding_sets,
    graph,
    links,
    notes,
    vectors,
    versions,
    vocabulary,
)
from fortemi.documents.shards.components.base import (
    CORE,
    FULL,
    PROFILES,
    ColumnLoss,
    Component,
    Ref,
    Table,
)

__all__ = [
    "COMPONENTS",
    "CORE",
    "DERIVED",
    "FULL",
    "LOCAL",
    "PROFILES",
    "ColumnLoss",
    "Component",
    "Ref",
    "Table",
    "component_named",
    "table_named",
]

COMPONENTS: tuple[Component, ...] = (
    notes.COMPONENT,
    versions.COMPONENT,
    embedding_sets.COMPONENT,
    vectors.COMPONENT,
    vocabulary.COMPONENT,
    links.COMPONENT,
    graph.COMPONENT,
    document_types.COMPONENT,
    attachments.COMPONENT,
)

# Tables a shard never carries because the note triggers rebuild them from the imported
# notes (the lexical index of live notes).
DERIVED: dict[str, str] = {
    "lex_posting": "lexical postings, rebuilt by the note triggers",
    "lex_doc": "lexical document lengths, rebuilt by the note triggers",
}

# Tables a shard never carries because they describe this database's own history, which
# an imported memory starts without.
LOCAL: dict[str, str] = {
    "lex_gone": "lexical tombstones that in-process segments read; a new memory has none",
    "graph_change": "the graph's change log that in-process traversal segments read; a new "
    "memory has none",
}

_TABLES = {table.name: table for component in COMPONENTS for table in component.tables}
_COMPONENTS = {component.name: component for component in COMPONENTS}


def component_named(name: str) -> Component | None:
    return _COMPONENTS.get(name)


def table_named(name: str) -> Table | None:
    return _TABLES.get(name)
