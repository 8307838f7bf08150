"""SQL runs only in repositories (a lint, as a test): a module outside them that calls
asyncpg's query methods with a statement is reported."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "fortemi"
_QUERY_METHODS = frozenset({"fetch", "fetchrow", "fetchval", "execute", "executemany", "cursor"})
# Where SQL may run besides a feature's repository.py (or a second repository beside it,
# named *_repository.py):
_ALLOWED = frozenset(
    {
        "auth/audit/registry.py",  # the audit segment registry's repository
        "platform/database.py",  # the tenant choke point: transactions and search_path
        "platform/migrations.py",  # the migration runner and its bookkeeping table
        "mcp/gateway.py",  # schema.execute: a GraphQL operation, not a SQL statement
        "retrieval/sets.py",  # the embedding_set repository (one module per table)
        "runtime.py",  # the readiness probe's SELECT 1
    }
)


def _runs_sql(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _QUERY_METHODS
        and bool(node.args)
        and not isinstance(node.args[0], ast.Starred)
        for node in ast.walk(tree)
    )


def test_only_repositories_run_sql() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if path.name == "repository.py" or path.name.endswith("_repository.py"):
            continue
        if name in _ALLOWED:
            continue
        if _runs_sql(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(name)
    assert offenders == []


def test_the_lint_sees_a_statement_run_outside_a_repository() -> None:
    tree = ast.parse("async def f(conn):\n    await conn.fetchrow('SELECT 1')\n")

    assert _runs_sql(tree)
    assert not _runs_sql(ast.parse("async def f(pipe):\n    await pipe.execute()\n"))
