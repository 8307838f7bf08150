"""The component registry accounts for every memory table the migrations create."""

from __future__ import annotations

import re
from pathlib import Path

from fortemi.documents.shards.components import (
    COMPONENTS,
    DERIVED,
    LOCAL,
    PROFILES,
    table_named,
)

MIGRATIONS = Path(__file__).resolve().parents[4] / "migrations" / "memory"
_CREATE = re.compile(
    r"^\s*CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I | re.M
)
_DROP = re.compile(r"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)", re.I | re.M)


def memory_tables() -> set[str]:
    tables: set[str] = set()
    for path in sorted(MIGRATIONS.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        tables |= set(_CREATE.findall(text))
        tables -= set(_DROP.findall(text))
    return tables


def test_every_memory_table_is_carried_by_a_component_or_derived() -> None:
    carried = {t.name for c in COMPONENTS for t in c.tables}
    unaccounted = memory_tables() - carried - set(DERIVED) - set(LOCAL)
    assert not unaccounted, (
        f"memory tables no shard component carries nor DERIVED or LOCAL lists: "
        f"{sorted(unaccounted)}; "
        "add a component (fortemi/documents/shards/components/) or a loss entry"
    )
    assert carried | set(DERIVED) | set(LOCAL) <= memory_tables()  # nothing registered is gone


def test_the_parser_sees_tables_created_and_dropped_by_the_migrations() -> None:
    tables = memory_tables()
    assert {"note", "note_link", "graph_snapshot", "document_type"} <= tables
    assert "lex_term" not in tables  # created by 0003, dropped by 0004


def test_every_reference_names_a_table_imported_before_it() -> None:
    seen: set[str] = set()
    for component in COMPONENTS:
        for table in component.tables:
            for ref in table.refs:
                assert table_named(ref.table) is not None
                assert ref.table in seen | {table.name}, (table.name, ref.table)
            seen.add(table.name)


def test_each_profile_names_every_component_it_omits_by_a_distinct_code() -> None:
    codes = [c.loss_code for c in COMPONENTS]
    assert len(codes) == len(set(codes))
    for profile in PROFILES:
        assert all(re.fullmatch(r"[a-z][a-z0-9-]+", c.loss_code) for c in COMPONENTS)
        assert any(profile in c.profiles for c in COMPONENTS)
