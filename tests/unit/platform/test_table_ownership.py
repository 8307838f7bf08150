"""Each table of the memory template belongs to one feature (a lint, as a test).

DESIGN.md: a feature reaches another through its *service*, never its repository or SQL,
and each table's columns are declared once, in its feature's repository. Every
``CREATE TABLE`` of ``migrations/memory/`` has an owner in :data:`OWNERS` (a set of
package folders), and every module under ``fortemi/`` is parsed with :mod:`ast`:

* a table is **written** (``INSERT INTO``, ``UPDATE``, ``DELETE FROM``, ``TRUNCATE``,
  ``MERGE INTO``, or ``insert``/a writing ``query`` on its :class:`~fortemi.platform.sql.Table`)
  only from its owner's modules: so never from two features;
* a table is **named** in SQL (``FROM``, ``JOIN``, the writes above, ``'t'::regclass``, a
  ``Table("t", ...)`` or an imported ``Table`` constant of it) only by its owner's modules,
  except the tables in :data:`SHARED_READS`, the core domain every feature stands on, which
  anyone may read, and the reads :data:`EXEMPT` lists with their reason;
* a table's ``Table`` declarations all live in one module.

SQL is recognised by its upper-case keywords (as this codebase writes it) in string
constants, docstrings excluded, so prose mentioning a table is never a finding.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "fortemi"
MEMORY_MIGRATIONS = ROOT / "migrations" / "memory"

_NOTES = ("platform/notes",)
_RETRIEVAL = ("retrieval",)
_VOCABULARY = ("graph/vocabulary",)
# The link graph: explicit and wiki links (links), automatic ones (linking), their
# maintenance and the traversal are sub-packages of one feature over one table.
_LINK_GRAPH = ("graph/links", "graph/linking", "graph/maintenance", "graph/traversal")

OWNERS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(("note", "note_original", "note_version"), _NOTES),
    **dict.fromkeys(
        (
            "lex_posting",
            "lex_doc",
            "lex_gone",
            "lex_term",
            "embedding_set",
            "chunk",
            "chunk_embedding",
        ),
        _RETRIEVAL,
    ),
    **dict.fromkeys(
        (
            "concept_scheme",
            "concept",
            "concept_label",
            "concept_note",
            "concept_relation",
            "concept_collection",
            "concept_collection_member",
            "note_concept",
        ),
        _VOCABULARY,
    ),
    **dict.fromkeys(
        (
            "note_link",
            "wiki_link",
            "note_wiki_key",
            "wiki_link_candidate",
            "note_embedding",
            "note_community",
            "graph_community",
            "graph_snapshot",
            "graph_change",
        ),
        _LINK_GRAPH,
    ),
    **dict.fromkeys(("document_type", "blob", "attachment", "attachment_chunk"), ("documents",)),
    # Which note version the tagging chain last finished on (the backfill sweep reads it).
    "note_tagged": ("graph/tagging",),
}
# Read by every feature: the notes are the platform's core domain (DESIGN.md: features
# stand on platform), and a link, a chunk or a concept is always some note's.
SHARED_READS = frozenset({"note"})
# (module, table): why that module reads another feature's table.
EXEMPT: Mapping[tuple[str, str], str] = {
    (
        "platform/notes/repository.py",
        "note_concept",
    ): "the notes' concept filters are a predicate before ranking (DESIGN.md: lists and "
    "searches never post-filter), and platform may import nothing of graph to ask for one",
}

_WRITE = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|MERGE\s+INTO)"
    r"\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*|\{table\})"
)
_READ = re.compile(r"\b(?:FROM|JOIN)\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*|\{table\})")
_REGCLASS = re.compile(r"'([a-z_][a-z0-9_]*)'::regclass")
_CREATE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)", re.I)


@dataclass(frozen=True)
class Use:
    module: str  # relative to the package folder, e.g. "graph/linking/repository.py"
    table: str
    write: bool


@dataclass(frozen=True)
class Finding:
    module: str
    table: str
    problem: str

    def __str__(self) -> str:
        return f"fortemi/{self.module}: {self.problem} {self.table}"


def memory_tables() -> set[str]:
    return {
        match.group(1)
        for path in MEMORY_MIGRATIONS.glob("*.sql")
        for match in _CREATE.finditer(path.read_text(encoding="utf-8"))
    }


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of ``tree``'s module, classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(first := node.body[0], ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            found.add(id(first.value))
    return found


def _table_declarations(tree: ast.Module) -> dict[str, str]:
    """``NAME = Table("t", ...)`` at module level: NAME -> t."""
    declared = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(call := node.value, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "Table"
            and call.args
            and isinstance(first := call.args[0], ast.Constant)
            and isinstance(first.value, str)
        ):
            declared[node.targets[0].id] = first.value
    return declared


def module_name(path: str) -> str:
    return ".".join(["fortemi", *Path(path).with_suffix("").parts])


def uses_of(source: str, path: str, tables: Mapping[tuple[str, str], str]) -> Iterator[Use]:
    """Every use of a memory table in ``source`` (the file ``path``); ``tables`` maps
    (module, constant) to the table of every ``Table`` constant of the package."""
    tree = ast.parse(source, filename=path)
    local = {name: t for name, t in _table_declarations(tree).items() if t in OWNERS}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported = tables.get((node.module, alias.name))
                if imported is not None and imported in OWNERS:
                    local[alias.asname or alias.name] = imported
    for table in set(local.values()):
        yield Use(path, table, write=False)
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield from _uses_in_text(path, node.value, None)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in local
        ):
            table = local[node.func.value.id]
            if node.func.attr == "insert":
                yield Use(path, table, write=True)
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield from _uses_in_text(path, arg.value, table)


def _uses_in_text(path: str, text: str, table: str | None) -> Iterator[Use]:
    """The tables ``text`` names as SQL; ``{table}`` is ``table`` (a Table's query)."""
    for pattern, write in ((_WRITE, True), (_READ, False), (_REGCLASS, False)):
        for match in pattern.finditer(text):
            name = table if match.group(1) == "{table}" else match.group(1)
            if name is not None and name in OWNERS:
                yield Use(path, name, write=write)


def _owned_by(module: str, table: str) -> bool:
    return any(module.startswith(owner + "/") for owner in OWNERS[table])


def findings(uses: Iterable[Use]) -> list[Finding]:
    """One finding per (module, table) not the module's to use: a write, else a read."""
    writes: dict[tuple[str, str], bool] = {}
    for use in uses:
        if not _owned_by(use.module, use.table):
            key = (use.module, use.table)
            writes[key] = writes.get(key, False) or use.write
    found = [
        Finding(module, table, "writes another feature's table")
        if write
        else Finding(module, table, "names another feature's table")
        for (module, table), write in writes.items()
        if write or (table not in SHARED_READS and (module, table) not in EXEMPT)
    ]
    return sorted(found, key=str)


def _sources() -> dict[str, str]:
    return {
        path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def package_tables(sources: Mapping[str, str]) -> dict[tuple[str, str], str]:
    return {
        (module_name(path), name): table
        for path, source in sources.items()
        for name, table in _table_declarations(ast.parse(source)).items()
    }


def package_uses(sources: Mapping[str, str]) -> list[Use]:
    tables = package_tables(sources)
    return [use for path, source in sources.items() for use in uses_of(source, path, tables)]


# -- the package -----------------------------------------------------------------------


def test_every_memory_table_has_one_owner() -> None:
    assert memory_tables() == set(OWNERS)


def test_every_table_is_written_by_its_owner_only() -> None:
    # Owners are disjoint, so this is also: no table is written from two features.
    writes = [use for use in package_uses(_sources()) if use.write]

    assert writes
    assert [str(f) for f in findings(writes)] == []


def test_no_module_names_another_features_table() -> None:
    assert [str(f) for f in findings(package_uses(_sources()))] == []


def test_each_tables_columns_are_declared_in_one_module() -> None:
    declared: dict[str, set[str]] = {}
    for (module, _), table in package_tables(_sources()).items():
        declared.setdefault(table, set()).add(module)

    assert {t: sorted(m) for t, m in declared.items() if len(m) > 1} == {}


def test_every_exemption_is_still_needed() -> None:
    uses = {(u.module, u.table) for u in package_uses(_sources())}

    assert set(EXEMPT) <= uses


# -- the checker, on modules written for the purpose ------------------------------------


def _check(
    path: str, source: str, tables: Mapping[tuple[str, str], str] | None = None
) -> list[str]:
    return [str(f) for f in findings(uses_of(source, path, tables or {}))]


@pytest.mark.parametrize(
    ("path", "source", "finding"),
    [
        pytest.param(
            "graph/tagging/repository.py",
            '_PAIRS = Query("""\nSELECT a.concept_id, count(*)\nFROM note_concept a\n'
            'JOIN note n ON n.id = a.note_id\n""")\n',
            "fortemi/graph/tagging/repository.py: names another feature's table note_concept",
            id="tagging-counts-the-vocabularys-note-concepts",
        ),
        pytest.param(
            "graph/linking/repository.py",
            '_CHUNK_VECTORS = Query(\n    "SELECT embedding FROM chunk_embedding '
            'WHERE set_id = :set_id AND note_id = :note_id"\n)\n',
            "fortemi/graph/linking/repository.py: names another feature's table chunk_embedding",
            id="linking-reads-retrievals-chunk-vectors",
        ),
        pytest.param(
            "graph/linking/repository.py",
            "_SET_MODEL = Query('SELECT model FROM embedding_set WHERE id = :set_id')\n",
            "fortemi/graph/linking/repository.py: names another feature's table embedding_set",
            id="linking-reads-retrievals-sets",
        ),
        pytest.param(
            "retrieval/repository.py",
            "async def f(conn):\n    await conn.execute(f'DELETE FROM note_link WHERE x = {1}')\n",
            "fortemi/retrieval/repository.py: writes another feature's table note_link",
            id="a-second-feature-writes-the-links",
        ),
        pytest.param(
            "graph/vocabulary/repository.py",
            "_X = Query('UPDATE note SET title = :t WHERE id = :id')\n",
            "fortemi/graph/vocabulary/repository.py: writes another feature's table note",
            id="a-shared-read-is-no-shared-write",
        ),
        pytest.param(
            "graph/maintenance/repository.py",
            "_N = Query(\"SELECT pg_stat_get_live_tuples('chunk_embedding'::regclass)\")\n",
            "fortemi/graph/maintenance/repository.py: names another feature's table "
            "chunk_embedding",
            id="regclass",
        ),
        pytest.param(
            "graph/tagging/repository.py",
            "T = Table('note_concept', NoteConcept)\n",
            "fortemi/graph/tagging/repository.py: names another feature's table note_concept",
            id="a-second-declaration",
        ),
    ],
)
def test_the_checker_catches_another_features_table(path: str, source: str, finding: str) -> None:
    assert _check(path, source) == [finding]


def test_the_checker_follows_an_imported_table_constant() -> None:
    tables = {("fortemi.graph.vocabulary.repository", "NOTE_CONCEPT"): "note_concept"}
    source = (
        "from fortemi.graph.vocabulary.repository import NOTE_CONCEPT as NC\n"
        "_ADD = NC.insert(('note_id', 'concept_id'))\n"
        "_ALL = NC.query('DELETE FROM {table} WHERE note_id = :id')\n"
    )

    found = findings(uses_of(source, "graph/tagging/jobs.py", tables))

    assert [(f.table, f.problem) for f in found] == [
        ("note_concept", "writes another feature's table")
    ]
    reading = "from fortemi.graph.vocabulary.repository import NOTE_CONCEPT\n"
    assert [str(f) for f in findings(uses_of(reading, "graph/tagging/jobs.py", tables))] == [
        "fortemi/graph/tagging/jobs.py: names another feature's table note_concept"
    ]


@pytest.mark.parametrize(
    ("path", "source"),
    [
        pytest.param(
            "graph/maintenance/repository.py",
            "_D = Query('DELETE FROM note_link l WHERE l.kind = :kind')\n",
            id="a-sub-package-of-the-link-graph-writes-its-table",
        ),
        pytest.param(
            "graph/links/repository.py",
            "_W = Query('SELECT DISTINCT updated_by FROM note WHERE id = ANY(:ids)')\n",
            id="anyone-reads-notes",
        ),
        pytest.param(
            "graph/tagging/related.py",
            '"""Counts ``note_concept`` rows FROM note_concept."""\n'
            "MESSAGE = 'the concept was deleted from note_concept by someone'\n",
            id="prose-and-docstrings",
        ),
        pytest.param(
            "graph/linking/repository.py",
            "_Q = Query('DO UPDATE SET x = 1 FOR UPDATE')\n_C = 'FROM unnest(:ids) AS u'\n",
            id="keywords-that-name-no-table",
        ),
    ],
)
def test_the_checker_accepts_an_owners_or_a_shared_use(path: str, source: str) -> None:
    assert _check(path, source) == []
