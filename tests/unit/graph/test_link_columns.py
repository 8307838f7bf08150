"""The graph's statements on ``note_link`` name only the columns its one declaration
(``NOTE_LINK``) holds: the traversal's and maintenance's hand-written SQL included."""

from __future__ import annotations

import re
from types import ModuleType
from uuid import uuid4

import pytest

from fortemi.graph.linking import repository as linking
from fortemi.graph.links import repository as links
from fortemi.graph.links.repository import NOTE_LINK
from fortemi.graph.maintenance import repository as maintenance
from fortemi.graph.traversal import repository as traversal
from fortemi.platform.sql import Query

_ALIAS = re.compile(r"\bnote_link\s+(?:AS\s+)?([a-z_]\w*)")
_INSERTED = re.compile(r"\bINSERT\s+INTO\s+note_link\s*\(([^)]*)\)")


def undeclared(sql: str) -> set[str]:
    """The ``note_link`` columns ``sql`` names (through an alias, ``note_link.``,
    ``excluded.`` of an insert into it, or an insert's column list) that NOTE_LINK lacks."""
    qualifiers = {"note_link", *_ALIAS.findall(sql)}
    inserted = _INSERTED.search(sql)
    named: set[str] = set()
    if inserted is not None:
        qualifiers.add("excluded")
        named.update(column.strip() for column in inserted.group(1).split(","))
    for qualifier in qualifiers:
        named.update(re.findall(rf"(?<![\w.]){re.escape(qualifier)}\.([a-z_]\w*)", sql))
    return named - set(NOTE_LINK.columns)


def _statements(module: ModuleType) -> dict[str, str]:
    return {
        name: value.sql
        for name, value in vars(module).items()
        if isinstance(value, Query) and "note_link" in value.sql
    }


@pytest.mark.parametrize("module", [links, linking, maintenance, traversal])
def test_every_link_column_a_graph_statement_names_is_declared(module: ModuleType) -> None:
    statements = _statements(module)

    assert statements
    assert {name: undeclared(sql) for name, sql in statements.items() if undeclared(sql)} == {}


def test_the_walk_names_the_columns_it_reads_through_its_alias() -> None:
    sql, _ = traversal.walk_statement(
        uuid4(),
        depth=2,
        max_nodes=10,
        min_score=0.0,
        max_edges_per_node=3,
        gamma=1.0,
        visibility=None,
    )

    assert undeclared(sql) == set()
    assert {"kind", "score", "pruned", "source_id", "target_id"} <= set(
        re.findall(r"\bl\.([a-z_]\w*)", sql)
    )


@pytest.mark.parametrize(
    ("sql", "missing"),
    [
        pytest.param("SELECT l.weight FROM note_link l", {"weight"}, id="alias"),
        pytest.param("UPDATE note_link SET x = note_link.scor", {"scor"}, id="table-name"),
        pytest.param(
            "INSERT INTO note_link (source_id, strength) VALUES (1, 2) "
            "ON CONFLICT DO UPDATE SET score = excluded.strength",
            {"strength"},
            id="insert",
        ),
        pytest.param("SELECT w.weight FROM wiki_link w", set(), id="another-table"),
    ],
)
def test_the_check_finds_a_column_the_declaration_lacks(sql: str, missing: set[str]) -> None:
    assert undeclared(sql) == missing
